import Foundation
import JSON5
import System

/// A login for a destination (an entry of the credentials file, or a systemd credential of the
/// same name): never in the config, the report, the journal or the console, and never logged.
public struct Credential: Sendable, Equatable {
    public var user: String?
    public var password: String?
    /// SFTP: the private key file (OpenSSH or PEM), and its passphrase.
    public var privateKey: String?
    /// SFTP: the public key beside it (default: `privateKey` + `.pub` when that exists).
    public var publicKey: String?
    public var passphrase: String?
    /// S3: the access key id and the secret key (SigV4), and a session token (temporary keys).
    public var accessKey: String?
    public var secretKey: String?
    public var sessionToken: String?
    /// A notification webhook's signing secret (`notify: [{ webhook: URL, secret: NAME }]`).
    public var secret: String?

    public init() {}

    static let keys = ["user", "password", "privateKey", "publicKey", "passphrase", "accessKey", "secretKey", "sessionToken",
                       "secret"]
}

/// The logins by name: the credentials file (config key `credentials`, default
/// `/etc/photofinish/credentials.json5`, mode 0600 or stricter, owned by the daemon's user), and
/// the systemd credentials in `$CREDENTIALS_DIRECTORY` (`LoadCredential=NAME:/path`), each a file
/// holding one entry's object. A systemd credential wins over the file's entry of the same name.
///
/// ```json5
/// { "client-sftp": { user: "studio", privateKey: "/etc/photofinish/keys/client" },
///   "bucket": { accessKey: "AKIA…", secretKey: "…" } }
/// ```
public struct CredentialStore: Sendable {
    private let entries: [String: Credential]
    /// The systemd credentials that could not be read, and why, by name.
    private let broken: [String: String]
    /// Why the file could not be used (read when a destination needs an entry), or nil.
    public let problem: String?
    public let path: String

    public static let defaultPath = "/etc/photofinish/credentials.json5"

    /// Reads the file at `path` (a missing file is no entry, not an error) and the systemd
    /// credentials of `environment`'s `CREDENTIALS_DIRECTORY`.
    public init(path: String, environment: [String: String] = ProcessInfo.processInfo.environment) {
        self.path = path
        var entries: [String: Credential] = [:]
        var broken: [String: String] = [:]
        var problem: String?
        do throws(CredentialError) {
            if let text = try Self.readPrivate(path) {
                entries = try Self.parse(text, file: path)
            }
        } catch {
            problem = error.description
        }
        if let folder = environment["CREDENTIALS_DIRECTORY"], !folder.isEmpty {
            for name in Files.textNames(in: folder) {
                do throws(SystemError) {
                    guard let bytes = try Files.read(folder + "/" + name) else { continue }
                    do throws(CredentialError) {
                        entries[name] = try Self.entry(String(decoding: bytes, as: UTF8.self), file: folder + "/" + name)
                    } catch {
                        broken[name] = "the systemd credential \(name): \(error)"
                    }
                } catch {
                    broken[name] = "the systemd credential \(name): \(error)"
                }
            }
        }
        self.entries = entries
        self.broken = broken
        self.problem = problem
    }

    init(entries: [String: Credential]) {
        self.entries = entries
        broken = [:]
        problem = nil
        path = "(given)"
    }

    /// The login called `name`.
    /// - Throws: `CredentialError` naming the file and the entry when there is none.
    public func credential(_ name: String) throws(CredentialError) -> Credential {
        if let why = broken[name] { throw CredentialError(why) }
        if let entry = entries[name] { return entry }
        if let problem { throw CredentialError(problem) }
        throw CredentialError("no entry \"\(name)\" in \(path) (nor a systemd credential of that name)")
    }

    /// The names it holds (for `photofinish check`: never the secrets).
    public var names: [String] { entries.keys.sorted() }

    public struct CredentialError: Error, Sendable, Equatable, CustomStringConvertible {
        public var description: String
        init(_ text: String) { description = text }
    }

    /// The file's text, or nil when there is none; refused when others may read it.
    static func readPrivate(_ path: String) throws(CredentialError) -> String? {
        let descriptor: FileDescriptor
        do throws(SystemError) {
            descriptor = try FileDescriptor.open(path, .read)
        } catch where error.code == ENOENT {
            return nil
        } catch {
            throw CredentialError("cannot read \(path): \(error)")
        }
        defer { descriptor.close() }
        let permissions: UInt32
        let bytes: [UInt8]
        do throws(SystemError) {
            permissions = try descriptor.status().permissions
            bytes = try descriptor.readAll(limit: 1 << 20)
        } catch {
            throw CredentialError("cannot read \(path): \(error)")
        }
        if permissions & 0o077 != 0 {
            throw CredentialError("\(path) may be read by others (mode \(String(permissions & 0o777, radix: 8))): chmod 600 \(path)")
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    static func parse(_ text: String, file: String) throws(CredentialError) -> [String: Credential] {
        var document = JSON5Document(text: text, file: file)
        guard case .object(let all)? = document.root.map(JSON5Value.object) else {
            throw CredentialError("\(file): " + (document.sortedErrors.first.map { "\($0)" } ?? "must be an object of named entries"))
        }
        var entries: [String: Credential] = [:]
        for (name, value) in all {
            if let entry = read(value, at: [.key(name)], &document) { entries[name] = entry }
        }
        if let first = document.sortedErrors.first { throw CredentialError("\(first)") }
        return entries
    }

    static func entry(_ text: String, file: String) throws(CredentialError) -> Credential {
        var document = JSON5Document(text: text, file: file)
        guard let root = document.root, let entry = read(.object(root), at: [], &document) else {
            throw CredentialError(document.sortedErrors.first.map { "\($0)" } ?? "\(file): not an entry")
        }
        return entry
    }

    private static func read(_ value: JSON5Value, at path: [KeyPathComponent], _ document: inout JSON5Document) -> Credential? {
        guard let members = document.object(value, at: path, allowed: Credential.keys) else { return nil }
        var entry = Credential()
        for key in Credential.keys {
            guard let value = members[key], let text = document.string(value, at: path + [.key(key)], nonEmpty: false) else { continue }
            switch key {
            case "user": entry.user = text
            case "password": entry.password = text
            case "privateKey": entry.privateKey = text
            case "publicKey": entry.publicKey = text
            case "passphrase": entry.passphrase = text
            case "accessKey": entry.accessKey = text
            case "secretKey": entry.secretKey = text
            case "secret": entry.secret = text
            default: entry.sessionToken = text
            }
        }
        return entry
    }
}
