import Foundation
import JSON5
import System

/// The console's logins: the users file (config key `users`, default
/// `/var/lib/photofinish/users.json5`), written by `photofinish user add|remove` and the console's logins page, read by the
/// console whenever it changes.
///
/// ```json5
/// {
///   users: [
///     { name: "anna", hash: "$y$j9T$…", inboxes: ["shop"] },   // sees and uploads into shop only
///     { name: "owner", hash: "$y$j9T$…", admin: true },         // sees every hot folder
///   ],
/// }
/// ```
public struct Users: Sendable, Equatable {
    /// One login.
    public struct User: Sendable, Equatable {
        /// The login name (letters, digits, `.`, `_`, `-`, `@`; at most 64).
        public var name: String
        /// Its yescrypt hash (`$y$…`, libcrypt's `crypt_r`).
        public var hash: String
        /// The hot folders it may see and upload into (by inbox name).
        public var inboxes: [String]
        /// Sees every hot folder.
        public var admin: Bool

        public init(name: String, hash: String, inboxes: [String] = [], admin: Bool = false) {
            self.name = name
            self.hash = hash
            self.inboxes = inboxes
            self.admin = admin
        }

        /// Whether it may see the hot folder called `inbox`.
        public func mayUse(_ inbox: String) -> Bool { admin || inboxes.contains(inbox) }

        /// What it may see, in words (`admin: every hot folder`, `shop, studio`).
        public var scope: String { admin ? "admin: every hot folder" : inboxes.isEmpty ? "no hot folder" : inboxes.joined(separator: ", ") }
    }

    public var users: [User]

    public init(users: [User] = []) {
        self.users = users
    }

    public subscript(name: String) -> User? { users.first { $0.name == name } }

    /// Whether `name` can be a login name.
    public static func isValidName(_ name: String) -> Bool {
        !name.isEmpty && name.utf8.count <= 64 && !name.hasPrefix(".") && !name.hasPrefix("-")
            && name.unicodeScalars.allSatisfy {
                ("a"..."z").contains($0) || ("A"..."Z").contains($0) || ("0"..."9").contains($0)
                    || $0 == "." || $0 == "_" || $0 == "-" || $0 == "@"
            }
    }

    /// Reads and validates the users file at `path`.
    /// - Throws: `JSON5Errors` with every problem (file, line, key).
    public static func load(path: String) throws(JSON5Errors) -> Users {
        let bytes = try JSON5File.read(path)
        return try parse(text: String(decoding: bytes, as: UTF8.self), file: path)
    }

    /// Validates users-file text already in memory.
    /// - Throws: `JSON5Errors` with every problem.
    public static func parse(text: String, file: String) throws(JSON5Errors) -> Users {
        var doc = JSON5Document(text: text, file: file)
        var users: [User] = []
        if let root = doc.root {
            _ = doc.object(.object(root), at: [], allowed: ["users"])
            if let list = root["users"] {
                if case .array(let entries) = list {
                    var seen: Set<String> = []
                    for (index, entry) in entries.enumerated() {
                        let path: [KeyPathComponent] = [.key("users"), .index(index)]
                        guard let members = doc.object(entry, at: path, allowed: ["name", "hash", "inboxes", "admin"]) else { continue }
                        guard let nameValue = members["name"], let name = doc.string(nameValue, at: path + [.key("name")]) else {
                            if members["name"] == nil { doc.fail(path, "missing key 'name'") }
                            continue
                        }
                        guard isValidName(name) else {
                            doc.fail(path + [.key("name")], "must be letters, digits, '.', '_', '-' or '@' (at most 64, not starting with '.' or '-'), got \"\(name)\"")
                            continue
                        }
                        guard seen.insert(name).inserted else {
                            doc.fail(path + [.key("name")], "\"\(name)\" is listed twice")
                            continue
                        }
                        guard let hashValue = members["hash"], let hash = doc.string(hashValue, at: path + [.key("hash")]) else {
                            if members["hash"] == nil { doc.fail(path, "missing key 'hash' (set one with: photofinish user add \(name))") }
                            continue
                        }
                        var inboxes: [String] = []
                        if let value = members["inboxes"] {
                            if case .array(let names) = value {
                                for (i, n) in names.enumerated() {
                                    if let inbox = doc.string(n, at: path + [.key("inboxes"), .index(i)]) { inboxes.append(inbox) }
                                }
                            } else {
                                doc.fail(path + [.key("inboxes")], "must be a list of inbox names, got \(value.shown)")
                            }
                        }
                        var admin = false
                        if let value = members["admin"], let flag = doc.bool(value, at: path + [.key("admin")]) { admin = flag }
                        users.append(User(name: name, hash: hash, inboxes: inboxes, admin: admin))
                    }
                } else {
                    doc.fail([.key("users")], "must be a list of { name, hash, inboxes | admin }, got \(list.shown)")
                }
            }
        }
        guard doc.errors.isEmpty else { throw JSON5Errors(errors: doc.sortedErrors) }
        return Users(users: users)
    }

    /// The file's text: a comment that says what it is, then one line per user.
    public var text: String {
        var out = """
            // PhotoFinish web console logins, written by `photofinish user add|remove|list`.
            // It holds password hashes: readable by root and the daemon's group only (0640 root:photofinish).
            {
              users: [

            """
        for user in users {
            var fields = ["name: \(Self.quoted(user.name))", "hash: \(Self.quoted(user.hash))"]
            if user.admin { fields.append("admin: true") }
            if !user.inboxes.isEmpty || !user.admin {
                fields.append("inboxes: [" + user.inboxes.map(Self.quoted).joined(separator: ", ") + "]")
            }
            out += "    { " + fields.joined(separator: ", ") + " },\n"
        }
        out += "  ],\n}\n"
        return out
    }

    /// A JSON string literal.
    private static func quoted(_ s: String) -> String {
        var out = "\""
        for scalar in s.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case _ where scalar.value < 0x20: out += String(format: "\\u%04x", scalar.value)
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }
}

extension Users {
    /// The group the daemon runs as (`photofinish.service`'s `Group=`): a new users file is
    /// made readable by it.
    public static let daemonGroup = "photofinish"

    /// Writes the users file atomically (temporary name, fsync, rename, fsync of the folder):
    /// mode 0640. Run as root (`photofinish user`): owner and group kept from the file it
    /// replaces, else the daemon's user `photofinish` (who then changes it from the console)
    /// when there is one, else root and group `photofinish`. Run as anyone else (the service,
    /// from the console): the file is theirs.
    /// - Returns: a warning for the person, when the daemon may be unable to read the file.
    /// - Throws: `SystemError` naming the path (nothing is left behind).
    @discardableResult
    public func write(to path: String) throws(SystemError) -> String? {
        let target = FilePath(path)
        guard let name = target.lastComponent else { throw SystemError("write", path, errno: EISDIR) }
        try Files.makeDirectories(target.parent, permissions: 0o755)
        let folder = try Directory(target.parent)
        var owner: (uid: uid_t, gid: gid_t)?
        var warning: String?
        var st = stat()
        if getuid() != 0 {
            owner = nil
        } else if stat(path, &st) == 0 {
            owner = (st.st_uid, st.st_gid)
        } else if getuid() == 0 {
            if let user = getpwnam(Self.daemonGroup), !path.hasPrefix("/etc/") {
                owner = (user.pointee.pw_uid, user.pointee.pw_gid)
            } else if let group = getgrnam(Self.daemonGroup) {
                owner = (0, group.pointee.gr_gid)
            } else if path.hasPrefix("/etc/") {
                // The system's users file, for a daemon that runs as photofinish (not a demo's).
                warning = "there is no group '\(Self.daemonGroup)': make \(path) readable by the user the daemon runs as"
            }
        }
        let temp = AtomicFile.temporaryName(for: name)
        do throws(SystemError) {
            let file = try folder.open(temp, .write, [.create, .exclusive], permissions: 0o640)
            try file.write(Array(text.utf8))
            try file.sync()
            let tempPath = target.parent.appending(temp).description
            if let owner, chown(tempPath, owner.uid, owner.gid) != 0 {
                throw SystemError("set the owner of", tempPath, errno: errno)
            }
            // The umask may have taken bits away, never given any: say 0640 exactly.
            if chmod(tempPath, 0o640) != 0 { throw SystemError("set the mode of", tempPath, errno: errno) }
            if rename(tempPath, path) != 0 { throw SystemError("rename", tempPath + " to " + name.escaped, errno: errno) }
        } catch {
            try? folder.remove(temp)
            throw error
        }
        try folder.sync()
        return warning
    }
}
