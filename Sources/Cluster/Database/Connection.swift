internal import CPostgres
import Foundation
import Glibc

/// One connection to PostgreSQL, the one owner of its `PGconn` (closed once: by `close()` or
/// when the value goes). A `PGconn` serves one caller at a time: `Database` hands its command
/// connection out under a lock, and its listening connection belongs to the link's thread.
/// (So it is handed from thread to thread, never used by two at once: hence `@unchecked`.)
///
/// Every statement is sent, then its answer waited for with `poll` up to a deadline, so a
/// server that stops answering (a network cut, a frozen host) costs at most that long, never a
/// thread forever; the connection is then dropped (its state unknown) and the caller told the
/// database is unreachable.
final class Connection: @unchecked Sendable {
    private var conn: OpaquePointer?
    /// Counted by the owner of this connection (the database's round trips).
    private let roundTrip: @Sendable () -> Void
    /// How long a statement may take to answer, unless the call says otherwise.
    let timeout: Duration

    /// Opens a connection from a libpq connection string (key=value pairs or a URI: TCP, Unix
    /// sockets, TLS, `.pgpass` as libpq documents them). `defaults` come first, so the string
    /// overrides any of them (libpq keeps the last value of a repeated key).
    /// - Throws: `.unreachable` with libpq's words when the server cannot be reached or refuses
    ///   us; `.configuration` when the string cannot be parsed.
    init(conninfo: String, defaults: [(String, String)], timeout: Duration = .seconds(10),
         roundTrip: @escaping @Sendable () -> Void = {}) throws(ClusterError) {
        self.roundTrip = roundTrip
        self.timeout = timeout
        if let problem = Self.problem(in: conninfo) { throw ClusterError(.configuration, problem) }
        let pairs = defaults + [("dbname", conninfo)]
        let keys = pairs.map { strdup($0.0) }, values = pairs.map { strdup($0.1) }
        defer { (keys + values).forEach { free($0) } }
        var keyPointers = keys.map { UnsafePointer($0) } + [nil]
        var valuePointers = values.map { UnsafePointer($0) } + [nil]
        conn = PQconnectdbParams(&keyPointers, &valuePointers, 1)
        roundTrip()
        guard let conn, PQstatus(conn) == CONNECTION_OK else {
            let words = conn.map { Self.words(PQerrorMessage($0)) } ?? "out of memory"
            close()
            throw ClusterError(.unreachable, words.isEmpty ? "cannot connect" : words)
        }
        // The server's notices (the migration's "schema … already exists, skipping") are no
        // news: libpq would print each on stderr, into the daemon's journal.
        PQsetNoticeProcessor(conn, { _, _ in }, nil)
    }

    deinit { close() }

    /// Closes the connection (safe to call twice).
    func close() {
        if let conn { PQfinish(conn) }
        conn = nil
    }

    var isOpen: Bool { conn.map { PQstatus($0) == CONNECTION_OK } ?? false }

    /// The descriptor to wait on for the server's messages (notifications).
    var socket: Int32 { conn.map { PQsocket($0) } ?? -1 }

    /// "PostgreSQL 15.18 on /run/postgresql" — what this connection reached, for status.
    var server: String {
        guard let conn else { return "closed" }
        let v = Int(PQserverVersion(conn))
        let version = v >= 100_000 ? "\(v / 10000).\(v % 10000)" : "\(v / 10000).\(v / 100 % 100).\(v % 100)"
        let host = PQhost(conn).map { String(cString: $0) } ?? "?"
        let place = host.hasPrefix("/") ? host : host + ":" + (PQport(conn).map { String(cString: $0) } ?? "")
        let tls = PQsslInUse(conn) == 1 ? ", TLS" : ""
        return "PostgreSQL \(version) at \(place)\(tls)"
    }

    /// Runs one statement with text parameters `$1…` (the extended protocol: no quoting of
    /// values, ever) and waits for its answer until `timeout`.
    func execute(_ sql: String, _ parameters: [String?] = [], timeout: Duration) throws(ClusterError) -> Rows {
        let conn = try open()
        let copies = parameters.map { $0.map { strdup($0) } ?? nil }
        defer { copies.forEach { free($0) } }
        var pointers = copies.map { UnsafePointer($0) }
        let sent = PQsendQueryParams(conn, sql, Int32(parameters.count), nil, &pointers, nil, nil, 0)
        guard sent == 1 else { throw lost("cannot send a statement") }
        return try answer(timeout: timeout)
    }

    /// Runs a script of several statements (the simple protocol: no parameters), as the schema's
    /// migrations are written. The last statement's rows are returned.
    func run(script: String, timeout: Duration) throws(ClusterError) -> Rows {
        let conn = try open()
        guard PQsendQuery(conn, script) == 1 else { throw lost("cannot send a statement") }
        return try answer(timeout: timeout)
    }

    /// Reads what the server sent without a statement of ours (notifications), without waiting.
    /// - Throws: `.unreachable` when the connection is gone (the server stopped).
    func consumeInput() throws(ClusterError) {
        let conn = try open()
        guard PQconsumeInput(conn) == 1 else { throw lost("the connection was closed") }
    }

    /// A `NOTIFY` received.
    struct Notification: Sendable, Equatable {
        var channel: String
        var payload: String
    }

    /// The notifications libpq has read so far (`consumeInput`, or with any answer).
    func notifications() -> [Notification] {
        guard let conn else { return [] }
        var all: [Notification] = []
        while let note = PQnotifies(conn) {
            all.append(Notification(channel: String(cString: note.pointee.relname),
                                    payload: String(cString: note.pointee.extra)))
            PQfreemem(note)
        }
        return all
    }

    // MARK: - Answers

    private func open() throws(ClusterError) -> OpaquePointer {
        guard let conn, PQstatus(conn) == CONNECTION_OK else {
            throw ClusterError(.unreachable, "the connection was lost")
        }
        return conn
    }

    /// Waits for every result of the statement sent, up to `timeout`; the first failure wins
    /// (libpq must still be read to the end for the connection to be usable again).
    private func answer(timeout: Duration) throws(ClusterError) -> Rows {
        guard let conn else { throw ClusterError(.unreachable, "the connection was lost") }
        let deadline = ContinuousClock.now + timeout
        var rows = Rows()
        var failure: ClusterError?
        while true {
            while PQisBusy(conn) == 1 {
                guard wait(readable: PQsocket(conn), until: deadline) else {
                    close()
                    throw ClusterError(.unreachable, "no answer within \(timeout)")
                }
                guard PQconsumeInput(conn) == 1 else { throw lost("the connection was closed") }
            }
            guard let result = PQgetResult(conn) else { break }
            defer { PQclear(result) }
            switch PQresultStatus(result) {
            case PGRES_TUPLES_OK, PGRES_COMMAND_OK:
                rows = Self.rows(of: result)
            case PGRES_EMPTY_QUERY:
                rows = Rows()
            default:
                if failure == nil { failure = error(of: result) }
            }
        }
        roundTrip()
        if let failure { throw failure }
        return rows
    }

    /// Waits until `fd` has something to read (or an error libpq will name) or `deadline` passes.
    private func wait(readable fd: Int32, until deadline: ContinuousClock.Instant) -> Bool {
        let left = deadline - ContinuousClock.now
        return left > .zero && Bell.poll([fd], timeout: left)[0]
    }

    private static func rows(of result: OpaquePointer) -> Rows {
        let rowCount = Int(PQntuples(result)), columnCount = Int(PQnfields(result))
        let columns = (0..<columnCount).map { String(cString: PQfname(result, Int32($0))) }
        var values: [[String?]] = []
        values.reserveCapacity(rowCount)
        for r in 0..<Int32(rowCount) {
            values.append((0..<Int32(columnCount)).map { c in
                PQgetisnull(result, r, c) == 1 ? nil : String(cString: PQgetvalue(result, r, c))
            })
        }
        let affected = PQcmdTuples(result).flatMap { Int(String(cString: $0)) } ?? rowCount
        return Rows(columns: columns, values: values, affected: affected)
    }

    /// The error a failed result carries: unreachable when the connection went with it, or the
    /// server is shutting down; otherwise the statement's own failure.
    private func error(of result: OpaquePointer) -> ClusterError {
        let state = PQresultErrorField(result, pf_pg_diag_sqlstate).map { String(cString: $0) }
        let primary = PQresultErrorField(result, pf_pg_diag_message_primary).map { String(cString: $0) }
        let detail = PQresultErrorField(result, pf_pg_diag_message_detail).map { String(cString: $0) }
        var message = primary ?? Self.words(PQresultErrorMessage(result))
        if let detail, !detail.isEmpty { message += " (\(detail))" }
        if let conn, PQstatus(conn) != CONNECTION_OK { return ClusterError(.unreachable, message, sqlstate: state) }
        if let state, ClusterError.isUnreachable(sqlstate: state) {
            return ClusterError(.unreachable, message, sqlstate: state)
        }
        return ClusterError(.query, message, sqlstate: state)
    }

    /// The connection broke: libpq's words, and the connection closed (it cannot be used again).
    private func lost(_ what: String) -> ClusterError {
        let words = conn.map { Self.words(PQerrorMessage($0)) } ?? ""
        close()
        return ClusterError(.unreachable, words.isEmpty ? what : words)
    }

    private static func words(_ text: UnsafePointer<CChar>?) -> String {
        guard let text else { return "" }
        return String(cString: text).split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { !$0.isEmpty }.joined(separator: "; ")
    }

    /// What is wrong with a connection string, or nil when libpq can parse it.
    static func problem(in conninfo: String) -> String? {
        // A URI or key=value pairs; a bare word is a database name (libpq's own rule), and an
        // empty string means "all from the environment".
        guard conninfo.contains("=") || conninfo.contains("://") else { return nil }
        var message: UnsafeMutablePointer<CChar>?
        guard let options = PQconninfoParse(conninfo, &message) else {
            defer { if let message { PQfreemem(message) } }
            return message.map { words(UnsafePointer($0)) } ?? "cannot be parsed"
        }
        PQconninfoFree(options)
        return nil
    }
}
