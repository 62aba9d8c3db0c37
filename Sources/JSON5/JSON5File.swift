import System

/// Reading a whole small file, with errors in the same style as validation errors.
public enum JSON5File {
    /// Templates and configs are a few KiB; anything this big is the wrong file.
    public static let maxBytes = 1 << 20

    /// The bytes of the file at `path` (a final symlink followed, as a shell would).
    /// - Throws: `JSON5Errors` with one error naming the file and what is wrong with it.
    public static func read(_ path: String) throws(JSON5Errors) -> [UInt8] {
        func failure(_ message: String) -> JSON5Errors {
            JSON5Errors(errors: [JSON5Error(file: path, line: nil, keyPath: "", message: message)])
        }
        guard let status = try? Files.statusFollowingLinks(path) else {
            throw failure("no such file")
        }
        if status.isDirectory { throw failure("is a folder, not a template or config file") }
        guard Files.isReadable(path) else {
            throw failure("cannot be read by this user (check its permissions)")
        }
        // One byte past the limit is enough to know the file is too big; its size is stat's.
        let read: [UInt8]?
        do {
            read = try Files.contents(of: path, limit: maxBytes + 1)
        } catch {
            throw failure("cannot read the file: \(error.reason)")
        }
        guard let bytes = read else { throw failure("no such file") }
        guard bytes.count <= maxBytes else {
            throw JSON5Errors(errors: [JSON5Error(
                file: path, line: nil, keyPath: "",
                message: "is \(max(Int64(bytes.count), status.size)) bytes; a template or config is at most \(maxBytes) bytes: is this the right file?")])
        }
        return bytes
    }
}
