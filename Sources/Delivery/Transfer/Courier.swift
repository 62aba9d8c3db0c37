import Foundation
import Glibc
import System

/// The server side of a delivery's steps, protocol by protocol, all through libcurl
/// (`CurlSession`): write a file (under its temporary name), rename it to its own name, verify
/// what is there, or send one mail. One attempt's worth: made for an attempt, dropped after it.
final class Courier {
    typealias Failure = DeliveryMachine.Failure

    /// What a verification found.
    enum Found: Equatable {
        case same(DeliveryJournal.Verification)
        case different(String)
    }

    private let settings: DestinationSettings
    private let session: CurlSession
    private let mail: MailSettings?
    /// WebDAV: the collections made (or found) this attempt.
    private var collections: Set<String> = []
    private var destination: Destination { settings.destination }

    init(settings: DestinationSettings, credential: Credential?, mail: MailSettings?,
         shouldStop: @escaping @Sendable () -> Bool) throws(Failure) {
        self.settings = settings
        self.mail = mail
        session = try CurlSession(settings: settings, credential: credential, shouldStop: shouldStop)
    }

    /// Writes `file` to `name` (a path relative to the destination's folder).
    func write(_ file: DeliveryJournal.File, as name: String) throws(Failure) {
        switch destination.kind {
        case .sftp, .ftp, .ftps:
            _ = try session.upload(file.local, bytes: file.bytes, to: destination.url(name))
        case .webdav, .webdavs:
            try makeCollections(for: name)
            let response = try session.upload(file.local, bytes: file.bytes, to: destination.url(name))
            if let problem = session.httpProblem(response, doing: "PUT \(name)") { throw problem }
        case .s3:
            let response = try session.upload(file.local, bytes: file.bytes, to: destination.url(name), headers: [
                "x-amz-content-sha256: \(file.sha256)",
                "x-amz-checksum-sha256: \(Self.base64(hex: file.sha256))",
                // The algorithm named as the SDKs name it: servers that keep checksums only when
                // told (moto, some S3-compatible ones) keep this one, and give it back on HEAD.
                "x-amz-sdk-checksum-algorithm: SHA256",
                "Content-Type: \(CurlSession.mediaType(name))",
            ])
            if let problem = session.httpProblem(response, doing: "PUT \(name)") { throw problem }
        case .file:
            // The folder itself must be there: an unmounted disk's mount point is never filled
            // instead (only the batch's folders below it are made).
            guard Files.isDirectory(destination.path) else {
                throw Failure("\(destination.path) is not there (a disk not mounted?)", retryable: true)
            }
            let target = destination.path + name
            do throws(SystemError) {
                try Files.makeDirectories(FilePath(target).parent, permissions: 0o755)
            } catch {
                throw Self.local(error)
            }
            do throws(Failure) {
                _ = try session.upload(file.local, bytes: file.bytes, to: destination.url(name))
            } catch {
                throw Self.fullFolder(error, destination.path, needs: file.bytes)
            }
            do throws(SystemError) {
                // On a mounted folder too: the bytes are on its disk before the rename shows them.
                let written = try FileDescriptor.open(target, .read)
                defer { written.close() }
                try written.sync()
            } catch {
                throw Self.local(error)
            }
        case .mailto:
            preconditionFailure("a mail is sent whole (sendMessage)")
        }
    }

    /// Renames `from` (the temporary name) to `file`'s own name, replacing a file of that name
    /// (the same file, sent by an attempt a kill cut off after its rename).
    func rename(_ file: DeliveryJournal.File, from: String) throws(Failure) {
        let folder = Self.folder(of: file.name)
        switch destination.kind {
        case .sftp:
            // SFTP v3's rename refuses to replace: the old one goes first ('*': if there is one).
            let old = Self.quoted(destination.path + from), new = Self.quoted(destination.path + file.name)
            _ = try session.command(destination.url(folder), after: ["*rm \(new)", "rename \(old) \(new)"])
        case .ftp, .ftps:
            // After the request the session is in the file's folder: plain names.
            _ = try session.command(destination.url(folder), after: ["RNFR \(Self.base(of: from))", "RNTO \(Self.base(of: file.name))"])
        case .webdav, .webdavs:
            let response = try session.command(destination.url(from), method: "MOVE",
                                               headers: ["Destination: \(destination.url(file.name))", "Overwrite: T"])
            if let problem = session.httpProblem(response, doing: "MOVE \(from) to \(file.name)") { throw problem }
        case .file:
            do throws(SystemError) {
                if Glibc.rename(destination.path + from, destination.path + file.name) != 0 {
                    throw SystemError("rename", destination.path + from, errno: errno)
                }
                try Files.syncDirectory(FilePath(destination.path + file.name).parent)
            } catch {
                throw Self.local(error)
            }
        case .s3, .mailto:
            preconditionFailure("\(destination.kind) writes under the file's own name")
        }
    }

    /// Checks what is on the server under `file`'s own name: read back and hashed (SFTP, FTP,
    /// WebDAV, a folder), or the server's SHA-256 (S3), or at least its size.
    func verify(_ file: DeliveryJournal.File) throws(Failure) -> Found {
        switch destination.kind {
        case .s3:
            let response = try session.command(destination.url(file.name), method: "HEAD", headers: ["x-amz-checksum-mode: ENABLED"])
            if let problem = session.httpProblem(response, doing: "HEAD \(file.name)") { throw problem }
            if let checksum = response.headers["x-amz-checksum-sha256"] {
                let theirs = Self.hex(base64: checksum)
                return theirs == file.sha256 ? .same(.sha256) : .different("its SHA-256 is \(theirs ?? checksum), sent \(file.sha256)")
            }
            let size = Int(response.headers["content-length"] ?? "")
            guard size == file.bytes else { return .different("\(size.map(String.init) ?? "no") bytes, sent \(file.bytes)") }
            // A single-part upload's ETag is the MD5 of its bytes (a multipart one's has a '-').
            if let etag = Self.singlePartETag(response.headers["etag"]) {
                let ours: String
                do throws(SystemError) {
                    ours = try MD5.hex(ofFile: file.local)
                } catch {
                    throw Failure("cannot read \(file.local) to check the server's ETag: \(error)", retryable: false)
                }
                return etag == ours ? .same(.etag) : .different("its ETag (MD5) is \(etag), sent \(ours)")
            }
            return .same(.size)
        case .mailto:
            preconditionFailure("a mail is accepted, not read back")
        default:
            let got = try session.download(destination.url(file.name))
            if destination.kind.isHTTP, let problem = session.httpProblem(got.response, doing: "GET \(file.name)") { throw problem }
            if got.sha256 == file.sha256 { return .same(.sha256) }
            return .different("\(got.bytes) bytes with SHA-256 \(got.sha256), sent \(file.bytes) bytes with \(file.sha256)")
        }
    }

    /// Sends the batch as one mail: its files attached when they add up to at most
    /// `maxAttachBytes`, else its link.
    func sendMessage(_ journal: DeliveryJournal, link: String?) throws(Failure) {
        guard let mail else {
            throw Failure("mailto: needs the mail server: set mail: { server: \"smtps://host\", from: \"…\" } in the config", retryable: false)
        }
        let total = journal.bytes
        let attach = total <= settings.maxAttachBytes
        var text = "The photos of batch \(journal.batch)" + (journal.inbox.map { " (\($0))" } ?? "") + " are finished.\n\n"
        if attach {
            text += "\(journal.files.count) file\(journal.files.count == 1 ? " is" : "s are") attached (\(total) bytes).\n"
        } else if let link {
            text += "They are here: \(link)\n"
        } else {
            throw Failure("the files (\(total) bytes) are more than maxAttachBytes (\(settings.maxAttachBytes)) and the batch has no link to send instead",
                          retryable: false)
        }
        let headers = ["From: \(mail.from)", "To: \(destination.recipients.joined(separator: ", "))",
                       "Subject: \(mail.subject(batch: journal.batch, inbox: journal.inbox))",
                       "Message-ID: <\(journal.batch).\(journal.token)@photofinish>"]
        let response = try session.mail(mail.server, from: mail.address, recipients: destination.recipients, headers: headers,
                                        text: text, attachments: attach ? journal.files.map { ($0.local, Self.base(of: $0.name)) } : [])
        _ = response
    }

    /// WebDAV: MKCOL for the folders of `name` not known to be there. The deepest is asked
    /// first: made (201) or there (405, or 301 for a folder), so are its parents — one request
    /// a batch, not one a folder; a parent missing (409) makes them one by one from the top.
    private func makeCollections(for name: String) throws(Failure) {
        let parts = destination.path.split(separator: "/").map(String.init) + name.split(separator: "/").dropLast().map(String.init)
        let paths = parts.indices.map { parts[...$0].joined(separator: "/") + "/" }
        guard let deepest = paths.last, !collections.contains(deepest) else { return }
        if try makeCollection(deepest, parentMayBeMissing: true) {
            collections.formUnion(paths)
            return
        }
        for path in paths where !collections.contains(path) {
            _ = try makeCollection(path, parentMayBeMissing: false)
            collections.insert(path)
        }
    }

    /// MKCOL of `path` (below the server's origin): true when it is there now; false when its
    /// parent is not (409) and `parentMayBeMissing`.
    private func makeCollection(_ path: String, parentMayBeMissing: Bool) throws(Failure) -> Bool {
        let target = destination.origin + "/" + path.split(separator: "/").map { Destination.encode(String($0)) }.joined(separator: "/") + "/"
        let response = try session.command(target, method: "MKCOL")
        // 201: made; 405: there already; 301: there, as a folder.
        if [201, 405, 301].contains(response.status) { return true }
        if response.status == 409, parentMayBeMissing { return false }
        if let problem = session.httpProblem(response, doing: "MKCOL \(path)") { throw problem }
        return true
    }

    /// The MD5 an S3 ETag holds (32 hex digits, quoted or not), or nil: none, or a multipart
    /// upload's (`"<md5 of the parts' md5s>-<parts>"`), which is no hash of the bytes.
    static func singlePartETag(_ etag: String?) -> String? {
        guard let etag else { return nil }
        let bare = etag.trimmingCharacters(in: CharacterSet(charactersIn: "\" ")).lowercased()
        guard bare.utf8.count == 32, bare.utf8.allSatisfy({ (48...57).contains($0) || (97...102).contains($0) }) else { return nil }
        return bare
    }

    static func folder(of name: String) -> String {
        name.lastIndex(of: "/").map { String(name[...$0]) } ?? ""
    }

    static func base(of name: String) -> String {
        name.lastIndex(of: "/").map { String(name[name.index(after: $0)...]) } ?? name
    }

    /// A path for libcurl's SFTP commands: in double quotes, `"` and `\` escaped.
    static func quoted(_ path: String) -> String {
        "\"" + path.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"") + "\""
    }

    static func base64(hex: String) -> String {
        var bytes: [UInt8] = []
        var index = hex.startIndex
        while index < hex.endIndex, let next = hex.index(index, offsetBy: 2, limitedBy: hex.endIndex),
              let byte = UInt8(hex[index..<next], radix: 16) {
            bytes.append(byte)
            index = next
        }
        return Data(bytes).base64EncodedString()
    }

    static func hex(base64: String) -> String? {
        Data(base64Encoded: base64).map { $0.map { String(format: "%02x", $0) }.joined() }
    }

    /// A write to a folder that failed for want of room says so: libcurl's `file://` says only
    /// "Failed sending data to the peer" (its errno is lost).
    private static func fullFolder(_ failure: Failure, _ path: String, needs bytes: Int) -> Failure {
        var st = statvfs()
        guard statvfs(path, &st) == 0 else { return failure }
        let free = Int64(clamping: st.f_bavail) &* Int64(clamping: st.f_frsize)
        guard free < Int64(bytes) else { return failure }
        return Failure("the disk of \(path) is full (\(free) bytes free, \(bytes) to write)", retryable: true)
    }

    private static func local(_ error: SystemError) -> Failure {
        Failure(error.description, retryable: error.code == ENOSPC || error.code == EIO || error.code == ENOTCONN || error.code == ESTALE)
    }
}

/// The mail server deliveries to `mailto:` go through (config key `mail`).
public struct MailSettings: Sendable, Equatable {
    /// `smtp://host[:port]` (STARTTLS, required with a login) or `smtps://host[:port]`.
    public var server: String
    /// The sender, `Name <address>` or an address.
    public var from: String
    /// The entry of the credentials file holding its login; nil: none.
    public var credentials: String?
    /// TLS: the CA certificates a server's certificate is checked against; nil: the system's.
    public var caFile: String?

    public init(server: String, from: String) {
        self.server = server
        self.from = from
    }

    /// The bare address of `from`.
    public var address: String {
        if let open = from.lastIndex(of: "<"), let close = from.lastIndex(of: ">"), open < close {
            return String(from[from.index(after: open)..<close])
        }
        return from
    }

    func subject(batch: String, inbox: String?) -> String {
        "Photos ready: " + (inbox.map { "\($0) " } ?? "") + batch
    }
}
