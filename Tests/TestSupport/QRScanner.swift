import Foundation

/// Reads QR codes back the way a phone would, with zbarimg (Debian's zbar-tools): the tests
/// assert what a scanner finds, not how the code was drawn.
public enum QRScanner {
    /// zbarimg's path, or nil when zbar-tools is not installed (scripts/bootstrap installs it).
    public static let zbarimg: String? = ["/usr/bin/zbarimg", "/usr/local/bin/zbarimg"].first {
        FileManager.default.isExecutableFile(atPath: $0)
    }

    /// Why QR tests cannot run here, for a test's skip message; nil when they can.
    public static var unavailable: String? {
        zbarimg == nil ? "zbarimg not found: install zbar-tools (scripts/bootstrap)" : nil
    }

    /// The texts of every QR code zbarimg finds in the image file at `path` (PNG, JPEG…), in
    /// the order it reports them, one a line (a text holding a new line comes as two); empty
    /// when it finds none.
    public static func texts(inFile path: String) throws -> [String] {
        guard let zbarimg else { throw ScanError(description: unavailable ?? "") }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: zbarimg)
        // QR codes only; --raw: the bytes as encoded, no charset guess (zbar's --xml garbles UTF-8
        // text it base64-encodes); --nodbus: no system bus in a container.
        process.arguments = ["--quiet", "--nodbus", "--raw", "-Sdisable", "-Sqrcode.enable", path]
        let out = Pipe()
        process.standardOutput = out
        process.standardError = FileHandle.nullDevice
        try process.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        // 0: found; 4: nothing found.
        guard process.terminationStatus == 0 || process.terminationStatus == 4 else {
            throw ScanError(description: "zbarimg \(path) exited \(process.terminationStatus)")
        }
        return String(decoding: data, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false)
            .dropLast().map(String.init)
    }

    /// The texts of every QR code in `bytes` (an image file's bytes).
    public static func texts(in bytes: [UInt8], suffix: String = ".png") throws -> [String] {
        let path = TemporaryFolder.path("qr") + suffix
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        defer { try? FileManager.default.removeItem(atPath: path) }
        return try texts(inFile: path)
    }

    public struct ScanError: Error, CustomStringConvertible {
        public var description: String
    }
}
