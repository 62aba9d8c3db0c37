import Codecs
import System

extension BatchContents {
    /// How much of each file `sniff` is shown: enough for every magic number and a TIFF's
    /// first directory (a raw's maker).
    static let headBytes = 64 << 10

    /// Sorts a batch's files by their names, folders and first bytes (see `sort`). A file that
    /// cannot be read is a photo of its own: it fails as `io-error` when it is finished.
    public static func read(_ sources: [BatchRunner.Source]) -> BatchContents {
        sort(names: sources.map(\.readableName), kinds: sources.map { source in
            (try? head(of: source.path)).map(sniff)
        }, folders: sources.map(\.path.parent))
    }

    /// The first `headBytes` of a file.
    static func head(of path: FilePath) throws(SystemError) -> [UInt8] {
        let file = try FileDescriptor.open(path, .read)
        var bytes = [UInt8](repeating: 0, count: headBytes)
        var got = 0
        while got < bytes.count {
            let n = try bytes.withUnsafeMutableBytes { buffer in
                Result { () throws(SystemError) in try file.read(into: UnsafeMutableRawBufferPointer(rebasing: buffer[got...])) }
            }.get()
            if n == 0 { break }
            got += n
        }
        return Array(bytes.prefix(got))
    }
}
