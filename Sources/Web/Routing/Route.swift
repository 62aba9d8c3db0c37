import Batches
import HTTP
import System

/// Where a request goes (the routes of reference, Routes, plus the console's own assets), read from
/// the path as sent. Pure: tested with plain strings.
///
/// Each segment of the path is percent-decoded on its own, and a segment is refused (404) when
/// it is empty inside the path, `.` or `..` before or after decoding, a broken escape, or
/// decodes to a `/` or a NUL: `%2e%2e`, `..%2f`, `a%2fb` never reach the file system. A file
/// under a batch is named by its decoded segments (byte strings, any encoding), each a
/// `FileName` that does not start with `.`.
enum Route: Equatable {
    case login
    case logout
    /// `/`: the hot folders the user may see.
    case dashboard
    /// `/static/<name>`: the stylesheet and the script.
    case asset(String)
    /// `/inbox/NAME` without its slash (redirected to it).
    case folderWithoutSlash(String)
    /// `/inbox/NAME/`: its batches, the proof sheet, the upload form.
    case folder(String)
    /// `/inbox/NAME/upload`.
    case upload(String)
    /// `/inbox/NAME/proof.png`: the template's proof sheet.
    case proof(String)
    /// `/inbox/NAME/batch/ID` without its slash.
    case batchWithoutSlash(String, String)
    /// `/inbox/NAME/batch/ID/`: the batch, its report and its files.
    case batch(String, String)
    /// `/inbox/NAME/batch/ID/<path>`: one file of `out/ID/`.
    case batchFile(String, String, [FileName])
    /// `/inbox/NAME/batch/ID.zip`: the batch's photos as one ZIP (`?report=1`: its report too).
    case zip(String, String)
    /// `POST /inbox/NAME/batch/ID/retry|redo|delete|share|revoke|approve`: an action on a published batch.
    case batchAction(String, String, BatchAction)
    /// `/inbox/NAME/original/ID/<name>`: a source the batch filed (in `originals/ID/` or `failed/ID/`).
    case original(String, String, FileName)
    /// `/inbox/NAME/track?f=…`: where the photos an upload landed are now, and their batches'
    /// progress (JSON, for the upload form's script).
    case track(String)
    /// `/account`: change my password.
    case account
    /// `/users`: the logins (admins).
    case users
    /// `POST /users/NAME`: one login changed or removed (admins).
    case user(String)
    case notFound

    /// What a person may do to a published batch.
    enum BatchAction: String {
        /// Its failed photos (or the one named) tried again, as a new batch.
        case retry
        /// The whole batch finished again with the folder's template, as a new batch.
        case redo
        /// The batch's outputs and filed sources removed (admins).
        case delete
        /// A share link to the batch made (reference: Share links, QR codes).
        case share
        /// One of its share links ended (`share`: its name).
        case revoke
        /// The batch approved by the studio, photo by photo (`approve: "owner"`; reference: Approval).
        case approve
    }

    /// The inbox a route is about (checked against the user's folders), if any.
    var inbox: String? {
        switch self {
        case .folderWithoutSlash(let n), .folder(let n), .upload(let n), .proof(let n), .batchWithoutSlash(let n, _),
             .batch(let n, _), .batchFile(let n, _, _), .zip(let n, _), .batchAction(let n, _, _), .original(let n, _, _),
             .track(let n): n
        default: nil
        }
    }

    static func parse(_ path: String) -> Route {
        guard path.hasPrefix("/") else { return .notFound }
        let raw = path.dropFirst().split(separator: "/", omittingEmptySubsequences: false)
        let trailingSlash = raw.count > 1 && raw.last == ""
        let parts = trailingSlash ? Array(raw.dropLast()) : Array(raw)
        var segments: [[UInt8]] = []
        for part in parts {
            guard let bytes = HTTPRequest.percentDecoded(part), !bytes.isEmpty || parts == [""],
                  !bytes.contains(0), !bytes.contains(UInt8(ascii: "/")),
                  part != ".", part != "..", bytes != [0x2E], bytes != [0x2E, 0x2E] else { return .notFound }
            segments.append(bytes)
        }
        let text = segments.map { String(decoding: $0, as: UTF8.self) }
        switch text.count {
        case 1 where text[0] == "": return .dashboard
        case 1 where text[0] == "login" && !trailingSlash: return .login
        case 1 where text[0] == "logout" && !trailingSlash: return .logout
        case 1 where text[0] == "account" && !trailingSlash: return .account
        case 1 where text[0] == "users" && !trailingSlash: return .users
        case 2 where text[0] == "users" && !trailingSlash && Users.isValidName(text[1]): return .user(text[1])
        case 2 where text[0] == "static" && !trailingSlash: return .asset(text[1])
        default: break
        }
        guard text.count >= 2, text[0] == "inbox", isInboxName(text[1]) else { return .notFound }
        let inbox = text[1]
        if text.count == 2 { return trailingSlash ? .folder(inbox) : .folderWithoutSlash(inbox) }
        if text.count == 3 && !trailingSlash {
            switch text[2] {
            case "upload": return .upload(inbox)
            case "proof.png": return .proof(inbox)
            case "track": return .track(inbox)
            default: return .notFound
            }
        }
        if text[2] == "original", text.count == 5, !trailingSlash, BatchID.isValid(text[3]) {
            guard segments[4].first != UInt8(ascii: "."), let name = FileName(bytes: segments[4]) else { return .notFound }
            return .original(inbox, text[3], name)
        }
        guard text[2] == "batch", text.count >= 4 else { return .notFound }
        let id = text[3]
        if text.count == 4 {
            if !trailingSlash, id.hasSuffix(".zip"), BatchID.isValid(String(id.dropLast(4))) {
                return .zip(inbox, String(id.dropLast(4)))
            }
            guard BatchID.isValid(id) else { return .notFound }
            return trailingSlash ? .batch(inbox, id) : .batchWithoutSlash(inbox, id)
        }
        guard BatchID.isValid(id), !trailingSlash else { return .notFound }
        // An action: no output is named so (every output has an extension).
        if text.count == 5, let action = BatchAction(rawValue: text[4]) { return .batchAction(inbox, id, action) }
        var names: [FileName] = []
        for bytes in segments.dropFirst(4) {
            guard bytes.first != UInt8(ascii: "."), let name = FileName(bytes: bytes) else { return .notFound }
            names.append(name)
        }
        return .batchFile(inbox, id, names)
    }

    /// An inbox name as the config allows them (letters, digits, `.`, `_`, `-`).
    static func isInboxName(_ s: String) -> Bool {
        !s.isEmpty && !s.hasPrefix(".") && s.utf8.count <= 128
            && s.unicodeScalars.allSatisfy {
                ("a"..."z").contains($0) || ("A"..."Z").contains($0) || ("0"..."9").contains($0)
                    || $0 == "." || $0 == "_" || $0 == "-"
            }
    }
}

/// Paths of the console, percent-encoded for links.
enum Paths {
    static func folder(_ inbox: String) -> String { "/inbox/\(encode(inbox))/" }
    static func upload(_ inbox: String) -> String { "/inbox/\(encode(inbox))/upload" }
    static func proof(_ inbox: String) -> String { "/inbox/\(encode(inbox))/proof.png" }
    static func batch(_ inbox: String, _ id: String) -> String { "/inbox/\(encode(inbox))/batch/\(encode(id))/" }
    static func zip(_ inbox: String, _ id: String, report: Bool = false) -> String {
        "/inbox/\(encode(inbox))/batch/\(encode(id)).zip" + (report ? "?report=1" : "")
    }
    static func action(_ inbox: String, _ id: String, _ action: Route.BatchAction) -> String { batch(inbox, id) + action.rawValue }
    static func original(_ inbox: String, _ id: String, _ name: FileName) -> String {
        "/inbox/\(encode(inbox))/original/\(encode(id))/\(encode(name.bytes))"
    }
    static func track(_ inbox: String) -> String { "/inbox/\(encode(inbox))/track" }
    static func user(_ name: String) -> String { "/users/\(encode(name))" }

    /// A file under a batch: each segment's bytes percent-encoded.
    static func batchFile(_ inbox: String, _ id: String, _ relative: [FileName]) -> String {
        batch(inbox, id) + relative.map { encode($0.bytes) }.joined(separator: "/")
    }

    /// Everything but unreserved characters (`A-Z a-z 0-9 - . _ ~`) as `%XX`.
    static func encode(_ text: String) -> String { encode(Array(text.utf8)) }

    static func encode(_ bytes: [UInt8]) -> String {
        var out = ""
        for b in bytes {
            switch b {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                 UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
                out.unicodeScalars.append(Unicode.Scalar(b))
            default:
                out += "%" + String(b, radix: 16, uppercase: true).leftPadded(to: 2)
            }
        }
        return out
    }
}

extension String {
    func leftPadded(to width: Int, with pad: Character = "0") -> String {
        count >= width ? self : String(repeating: pad, count: width - count) + self
    }
}
