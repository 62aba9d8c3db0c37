import Foundation

/// Reading a whole small file, with errors in the same style as validation errors.
public enum JSON5File {
    /// Templates and configs are a few KiB; anything this big is the wrong file.
    public static let maxBytes = 1 << 20

    /// The bytes of the file at `path`.
    /// - Throws: `JSON5Errors` with one error naming the file and what is wrong with it.
    public static func read(_ path: String) throws(JSON5Errors) -> [UInt8] {
        func failure(_ message: String) -> JSON5Errors {
            JSON5Errors(errors: [JSON5Error(file: path, line: nil, keyPath: "", message: message)])
        }
        var isFolder: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isFolder) else {
            throw failure("no such file")
        }
        if isFolder.boolValue { throw failure("is a folder, not a template or config file") }
        guard FileManager.default.isReadableFile(atPath: path) else {
            throw failure("cannot be read by this user (check its permissions)")
        }
        let data: Data
        do {
            data = try Data(contentsOf: URL(fileURLWithPath: path))
        } catch {
            throw failure("cannot read the file: \(error.localizedDescription)")
        }
        guard data.count <= maxBytes else {
            throw JSON5Errors(errors: [JSON5Error(
                file: path, line: nil, keyPath: "",
                message: "is \(data.count) bytes; a template or config is at most \(maxBytes) bytes: is this the right file?")])
        }
        return [UInt8](data)
    }
}
