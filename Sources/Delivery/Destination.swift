import Foundation

/// Where a destination sends (`to:` of a `deliver` entry, docs/reference.md "Delivering
/// finished photos"): the URL taken apart and checked, without any secret.
///
/// `sftp://user@host[:port]/path/`, `ftp://…`, `ftps://…` (explicit TLS, `AUTH TLS`, required;
/// `?implicit` for the old port-990 kind), `webdav://host[:port]/path/`, `webdavs://…`,
/// `s3://bucket/prefix/?endpoint=URL&region=R`, `mailto:ADDR[,ADDR…]`, `file:///path/`.
public struct Destination: Sendable, Equatable, CustomStringConvertible {
    public enum Kind: String, Sendable, Equatable, CaseIterable {
        case sftp, ftp, ftps, webdav, webdavs, s3, mailto, file
    }

    public var kind: Kind
    /// The host (nil for `mailto:` and `file:`); for `s3:`, the endpoint's.
    public var host: String?
    public var port: Int?
    /// The login named in the URL (`sftp://user@host/`), if any.
    public var user: String?
    /// The folder files go into, with a trailing `/` (for `s3:`, the key prefix, no leading `/`;
    /// for `mailto:`, empty).
    public var path: String
    /// `s3:` only: the bucket.
    public var bucket: String?
    /// `s3:` only: the region SigV4 signs for (default `us-east-1`).
    public var region: String = "us-east-1"
    /// `s3:` only: the endpoint (`https://host[:port]`), or nil for AWS's own
    /// (`https://BUCKET.s3.REGION.amazonaws.com`).
    public var endpoint: String?
    /// `ftps:` only: TLS from the first byte (port 990), not `AUTH TLS`.
    public var implicitTLS = false
    /// `mailto:` only: the recipients.
    public var recipients: [String] = []

    /// The URL as given (it holds no secret: a password in it is refused).
    public var description: String

    /// Why a `to:` URL is refused.
    public struct Problem: Error, Sendable, Equatable, CustomStringConvertible {
        public var description: String
        init(_ text: String) { description = text }
    }

    /// Parses and checks a `to:` URL.
    /// - Throws: `Problem` saying what is wrong and what is expected.
    public static func parse(_ text: String) throws(Problem) -> Destination {
        guard let colon = text.firstIndex(of: ":"), let kind = Kind(rawValue: text[..<colon].lowercased()) else {
            throw Problem("must start with sftp://, ftp://, ftps://, webdav://, webdavs://, s3://, mailto: or file://, got \"\(text)\"")
        }
        var destination = Destination(kind: kind, path: "", description: text)
        if kind == .mailto {
            let list = text[text.index(after: colon)...].split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
            guard !list.isEmpty, list.allSatisfy(isMailAddress) else {
                throw Problem("mailto: needs one or more addresses (mailto:client@example.org,studio@example.org), got \"\(text)\"")
            }
            destination.recipients = list
            return destination
        }
        guard text.dropFirst(kind.rawValue.count).hasPrefix("://"), let components = URLComponents(string: text) else {
            throw Problem("is not a URL like \(kind.example), got \"\(text)\"")
        }
        if components.password != nil {
            throw Problem("must not hold a password: name an entry of the credentials file with credentials: NAME")
        }
        destination.user = components.user.flatMap { $0.removingPercentEncoding }
        destination.host = components.host.flatMap { $0.isEmpty ? nil : $0 }
        destination.port = components.port
        let query = Dictionary((components.queryItems ?? []).map { ($0.name, $0.value ?? "") }) { $1 }
        let path = components.percentEncodedPath.removingPercentEncoding ?? components.path
        switch kind {
        case .file:
            guard destination.host == nil, path.hasPrefix("/") else {
                throw Problem("must be file:///absolute/folder/ (three slashes: no host), got \"\(text)\"")
            }
        case .s3:
            guard let bucket = destination.host else { throw Problem("needs a bucket: s3://bucket/prefix/, got \"\(text)\"") }
            destination.bucket = bucket
            destination.host = nil
            if let region = query["region"], !region.isEmpty { destination.region = region }
            if let endpoint = query["endpoint"] {
                guard let url = URLComponents(string: endpoint), ["http", "https"].contains(url.scheme?.lowercased() ?? ""),
                      let host = url.host, !host.isEmpty, url.path.isEmpty || url.path == "/" else {
                    throw Problem("endpoint must be http(s)://host[:port] (no path), got \"\(endpoint)\"")
                }
                destination.endpoint = endpoint.hasSuffix("/") ? String(endpoint.dropLast()) : endpoint
                destination.host = host
                destination.port = url.port
            }
            for key in query.keys where !["region", "endpoint"].contains(key) {
                throw Problem("s3: knows the query keys endpoint and region, got \"\(key)\"")
            }
            var prefix = path.hasPrefix("/") ? String(path.dropFirst()) : path
            if !prefix.isEmpty && !prefix.hasSuffix("/") { prefix += "/" }
            destination.path = prefix
            return destination
        default:
            guard destination.host != nil else { throw Problem("needs a host: \(kind.example), got \"\(text)\"") }
        }
        if kind == .ftps { destination.implicitTLS = query["implicit"] != nil }
        for key in query.keys where !(kind == .ftps && key == "implicit") {
            throw Problem("\(kind.rawValue): takes no query key \"\(key)\"")
        }
        var folder = path.isEmpty ? "/" : path
        if !folder.hasSuffix("/") { folder += "/" }
        if folder.split(separator: "/").contains(where: { $0 == ".." }) {
            throw Problem("must not hold '..', got \"\(text)\"")
        }
        destination.path = folder
        return destination
    }


    /// True for the kinds that log in with a user and password or key.
    public var takesLogin: Bool { kind != .file }

    /// True for the kinds that can rename a file on the server (so a file is sent under a
    /// temporary name first): SFTP, FTP(S), WebDAV(S) and a folder. S3 puts are atomic; a mail
    /// is one message.
    public var renames: Bool { [.sftp, .ftp, .ftps, .webdav, .webdavs, .file].contains(kind) }

    /// The URL libcurl is given for `path` (a remote path relative to the destination's
    /// folder, `/`-separated), each segment percent-encoded.
    public func url(_ relative: String) -> String {
        let encoded = relative.split(separator: "/", omittingEmptySubsequences: false).map { Self.encode(String($0)) }.joined(separator: "/")
        let folder = path.split(separator: "/", omittingEmptySubsequences: false).map { Self.encode(String($0)) }.joined(separator: "/")
        switch kind {
        case .sftp, .ftp: return "\(kind.rawValue)://\(authority)\(folder)\(encoded)"
        case .ftps: return "\(implicitTLS ? "ftps" : "ftp")://\(authority)\(folder)\(encoded)"
        case .webdav: return "http://\(authority)\(folder)\(encoded)"
        case .webdavs: return "https://\(authority)\(folder)\(encoded)"
        case .file: return "file://\(folder)\(encoded)"
        case .s3:
            if let endpoint { return "\(endpoint)/\(Self.encode(bucket ?? ""))/\(folder)\(encoded)" }
            return "https://\(bucket ?? "").s3.\(region).amazonaws.com/\(folder)\(encoded)"
        case .mailto: return ""
        }
    }

    /// `host[:port]` as a URL writes it.
    var authority: String { (host.map { $0.contains(":") ? "[\($0)]" : $0 } ?? "") + (port.map { ":\($0)" } ?? "") }

    /// WebDAV: `http(s)://host[:port]`.
    var origin: String { (kind == .webdavs ? "https" : "http") + "://" + authority }

    /// Percent-encodes one path segment (RFC 3986 unreserved characters kept, as SigV4 wants).
    static func encode(_ segment: String) -> String {
        var out = ""
        for byte in segment.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                 UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
                out.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                out += String(format: "%%%02X", byte)
            }
        }
        return out
    }

    /// True for `name@host.domain` (no spaces, no brackets).
    public static func isMailAddress(_ text: String) -> Bool {
        let parts = text.split(separator: "@", omittingEmptySubsequences: false)
        return parts.count == 2 && !parts[0].isEmpty && parts[1].contains(".")
            && !text.contains(where: { $0.isWhitespace || "<>\"\r\n".contains($0) })
    }
}

extension Destination.Kind {
    /// An example of this kind's URL, for messages.
    var example: String { Self.examples[self] ?? "" }

    static let examples: [Self: String] = [
        .sftp: "sftp://user@host[:port]/path/", .ftp: "ftp://user@host[:port]/path/", .ftps: "ftps://user@host[:port]/path/",
        .webdav: "webdav://host[:port]/path/", .webdavs: "webdavs://host[:port]/path/",
        .s3: "s3://bucket/prefix/?endpoint=https://host&region=R", .mailto: "mailto:client@example.org",
        .file: "file:///srv/outbox/",
    ]
}
