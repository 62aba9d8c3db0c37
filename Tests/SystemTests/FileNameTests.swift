import Foundation
import System
import Testing

/// Byte-string names: what the report shows, what outputs are named, what JSON keeps.
struct FileNameTests {
    let latin1: FileName = FileName(bytes: Array("caf".utf8) + [0xE9] + Array(".jpg".utf8))!

    @Test func aLatin1NameIsShownEscapedAndReadAsLatin1() {
        #expect(latin1.string == nil)
        #expect(latin1.escaped == "caf\\xE9.jpg")
        #expect(latin1.readable == "café.jpg")
        #expect(!latin1.isPlainText)
    }

    @Test func aUTF8NameIsShownAsItIs() {
        let name: FileName = "Ünïcødé 灵感 (1).JPG"
        #expect(name.escaped == "Ünïcødé 灵感 (1).JPG")
        #expect(name.readable == name.escaped)
        #expect(name.isPlainText)
    }

    @Test func controlCharactersAndWindows1252BytesHaveAVisibleForm() {
        let name = FileName(bytes: Array("a\nb".utf8) + [0x80, 0x81, 0x9F, 0xFF])!
        #expect(name.escaped == "a\\x0Ab\\x80\\x81\\x9F\\xFF")
        #expect(name.readable == "a_b€_Ÿÿ")
    }

    @Test func bytesNoNameCanHaveAreRefused() {
        #expect(FileName(bytes: []) == nil)
        #expect(FileName(bytes: [0x61, 0x00]) == nil)
        // (A literal would be taken as a literal: these go through a String.)
        let slash = "a/b", dot = ".", dots = "..", three = "..."
        #expect(FileName(slash) == nil)
        #expect(FileName(dot) == nil && FileName(dots) == nil)
        #expect(FileName(three) != nil)
    }

    @Test(arguments: [[0x61, 0xE9, 0x2E, 0x6A], Array("plain.jpg".utf8), [0xC3, 0x28], Array("é".utf8)])
    func namesSurviveJSONByteForByte(_ bytes: [UInt8]) throws {
        let name = try #require(FileName(bytes: bytes))
        let data = try JSONEncoder().encode([name])
        let back = try JSONDecoder().decode([FileName].self, from: data)
        #expect(back == [name])
        // Valid UTF-8 stays a plain string (manifests written before byte names read the same).
        if name.string != nil { #expect(String(decoding: data, as: UTF8.self).hasPrefix("[\"")) }
    }

    @Test func aLongNameIsCutAtACharacterNotInside() {
        let e = Array("é".utf8)  // 2 bytes
        #expect(FileName.prefix(of: Array("ab".utf8) + e, maxCount: 3) == Array("ab".utf8))
        #expect(FileName.prefix(of: Array("ab".utf8) + e, maxCount: 4) == Array("ab".utf8) + e)
        #expect(FileName.prefix(of: Array("abc".utf8), maxCount: 2) == Array("ab".utf8))
    }

    @Test func temporaryNamesStayWithinNameMax() {
        let long = FileName(bytes: [UInt8](repeating: UInt8(ascii: "a"), count: 251) + Array(".jpg".utf8))!
        #expect(long.bytes.count == 255)
        let temp = AtomicFile.temporaryName(for: long)
        #expect(temp.bytes.count <= FileName.maxLength)
        #expect(temp.bytes.starts(with: AtomicFile.temporaryPrefix.utf8))
    }

    @Test func pathsJoinAndSplitOnBytes() {
        let folder: FilePath = "/srv/hot/drop/"
        let path = folder.appending(latin1)
        #expect(path.bytes == Array("/srv/hot/drop/".utf8) + latin1.bytes)
        #expect(path.lastComponent == latin1)
        #expect(path.parent == "/srv/hot/drop")
        #expect(path.description == "/srv/hot/drop/caf\\xE9.jpg")
        #expect(FilePath("/a").parent == "/")
        #expect(FilePath("a").parent == ".")
    }
}
