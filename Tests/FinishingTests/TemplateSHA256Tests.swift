import Testing
@testable import Finishing
import System

@Suite struct TemplateSHA256Tests {
    @Test(arguments: [
        ("", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
        ("abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"),
        // 56 bytes: the padding needs a second block.
        ("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
         "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"),
    ])
    func knownVectors(input: String, expected: String) {
        #expect(SHA256.hex(of: Array(input.utf8)) == expected)
    }

    /// Expected values from `sha256sum` over the same bytes, computed when writing the test:
    /// `python3 -c "import sys; sys.stdout.buffer.write(bytes(i%251 for i in range(1048576)))" | sha256sum`.
    static let oneMiB = (0..<1_048_576).map { UInt8($0 % 251) }
    static let oneMiBHash = "631b84027d6b9e52b539c4e8373622d23032dfadc64d60af87339c9037e4f769"

    @Test func oneMebibyteInOneCall() {
        #expect(SHA256.hex(of: Self.oneMiB) == Self.oneMiBHash)
    }

    @Test(arguments: [1, 63, 64, 65, 1000, 65_536])
    func streamingInChunksGivesTheSameHash(chunk: Int) {
        var hash = SHA256()
        var start = 0
        while start < Self.oneMiB.count {
            let end = min(start + chunk, Self.oneMiB.count)
            hash.update(Array(Self.oneMiB[start..<end]))
            start = end
        }
        #expect(hash.finalize() == Self.oneMiBHash)
    }

    @Test func rawBufferUpdateMatches() {
        var hash = SHA256()
        Self.oneMiB.withUnsafeBytes { hash.update($0) }
        #expect(hash.finalize() == Self.oneMiBHash)
    }

    @Test("a hash is moved, never copied: fed half here, handed on, finished there")
    func handedOn() {
        func finish(_ hash: consuming SHA256, with rest: ArraySlice<UInt8>) -> String {
            hash.update(Array(rest))
            return hash.finalize()
        }
        var hash = SHA256()
        hash.update(Array(Self.oneMiB[..<1000]))
        #expect(finish(hash, with: Self.oneMiB[1000...]) == Self.oneMiBHash)
    }

    @Test func millionAs() {
        // FIPS 180-2 appendix B.3.
        let input = [UInt8](repeating: UInt8(ascii: "a"), count: 1_000_000)
        #expect(SHA256.hex(of: input) == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0")
    }
}
