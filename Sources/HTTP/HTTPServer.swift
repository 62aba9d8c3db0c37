internal import CMicroHTTPD
internal import CWebShims
import Glibc
import Synchronization

/// An HTTP server on one listening socket it was given (systemd's, or a test's): GNU
/// libmicrohttpd, never a parser of our own. A few threads each wait in `epoll` on their
/// share of the connections, so an idle or slow connection holds a descriptor, never a
/// thread; every connection has an idle time-out and a memory limit for its head, and the
/// server at most `connectionLimit` connections. The threads run at a lower CPU priority
/// (`nice`) whenever `busy` says the CPU is needed elsewhere (always, without `busy`): then
/// the photo workers come first.
///
/// One owner for the C objects: the libmicrohttpd daemon (stopped and freed by `stop` or
/// `deinit`), the listening socket (closed then), the retained handler context (released
/// after the daemon's threads ended).
public final class HTTPServer: Sendable {
    /// How the server runs.
    public struct Settings: Sendable {
        /// Polling threads.
        public var threads = 2
        /// Connections open at once (more are closed as they come).
        public var connectionLimit = 1000
        /// Connections open at once from one address (more from it are closed as they come; 0:
        /// no limit): one client cannot take every connection. Behind a reverse proxy every
        /// connection comes from the proxy's address.
        public var perAddressLimit = 0
        /// A connection idle for this long is closed (a slow or stalled client).
        public var idleSeconds = 30
        /// Per connection: the request head (larger heads answer 431) and the read buffer.
        public var connectionMemory = 64 << 10
        /// The threads' CPU priority (`nice`, 0–19) while `busy` says true, or always when
        /// there is no `busy`.
        public var nice: Int32 = 10
        /// Asked as each request's head is in (keep it cheap): false runs the thread that
        /// serves the request at nice 0 (nothing else wants the CPU), true at `nice`. A thread
        /// keeps the priority of the last head it saw, for that request's body and the other
        /// connections it serves meanwhile.
        public var busy: (@Sendable () -> Bool)?
        /// HTTPS (GnuTLS): the private key and certificate chain, PEM text.
        public var tls: (key: String, certificate: String)?

        public init() {}
    }

    /// Why a server did not start.
    public struct StartError: Error, CustomStringConvertible, Sendable {
        public var description: String
    }

    fileprivate final class Context: @unchecked Sendable {
        let handler: any HTTPHandler
        let isTLS: Bool
        let nice: Int32
        let busy: (@Sendable () -> Bool)?
        private let sink: @Sendable (String) -> Void
        /// What libmicrohttpd said while starting (why a start failed).
        let startMessages = Mutex<[String]?>([])

        init(handler: any HTTPHandler, log: @escaping @Sendable (String) -> Void, isTLS: Bool, nice: Int32,
             busy: (@Sendable () -> Bool)?) {
            self.handler = handler
            self.nice = nice
            self.busy = busy
            self.sink = log
            self.isTLS = isTLS
        }

        func log(_ message: String) {
            startMessages.withLock { $0?.append(message) }
            sink(message)
        }
    }

    private struct Running: @unchecked Sendable {
        var server: OpaquePointer?
        var socket: Int32
        var context: Unmanaged<Context>
    }

    private let running: Mutex<Running?>

    /// Whether this libmicrohttpd can serve HTTPS (Debian's is built with GnuTLS).
    public static var hasTLS: Bool { pf_http_has_tls() != 0 }

    /// Starts serving on `socket` (a listening stream socket, now this server's: closed by
    /// `stop`).
    /// - Parameters:
    ///   - log: libmicrohttpd's own messages (a TLS handshake that failed, a connection limit hit).
    /// - Throws: `StartError` when libmicrohttpd refuses (a bad key or certificate, no TLS support).
    public init(socket: Int32, settings: Settings = Settings(), handler: any HTTPHandler,
                log: @escaping @Sendable (String) -> Void) throws(StartError) {
        if settings.tls != nil && !Self.hasTLS {
            close(socket)
            throw StartError(description: "this libmicrohttpd has no TLS support")
        }
        _ = fcntl(socket, F_SETFD, FD_CLOEXEC)
        let context = Unmanaged.passRetained(Context(handler: handler, log: log, isTLS: settings.tls != nil,
                                                          nice: settings.nice, busy: settings.busy))
        let key = settings.tls.map { strdup($0.key) } ?? nil
        let certificate = settings.tls.map { strdup($0.certificate) } ?? nil
        defer {
            // libmicrohttpd has copied what it needs of the key; wipe ours.
            if let key { memset(key, 0, strlen(key)); free(key) }
            free(certificate)
        }
        var options = pf_http_options(
            listen_fd: socket, threads: UInt32(max(1, settings.threads)),
            connection_limit: UInt32(settings.connectionLimit), per_address_limit: UInt32(max(0, settings.perAddressLimit)),
            timeout_seconds: UInt32(settings.idleSeconds),
            memory_limit: settings.connectionMemory, tls_key_pem: key.map { UnsafePointer($0) },
            tls_cert_pem: certificate.map { UnsafePointer($0) },
            handler: accessHandler, handler_cls: context.toOpaque(),
            completed: requestCompleted, completed_cls: context.toOpaque(),
            log: { cls, message in
                guard let cls, let message else { return }
                Unmanaged<Context>.fromOpaque(cls).takeUnretainedValue().log(String(cString: message))
            }, log_cls: context.toOpaque())
        guard let server = pf_http_start(&options) else {
            let why = context.takeUnretainedValue().startMessages.withLock { $0 ?? [] }.joined(separator: "; ")
            context.release()
            close(socket)
            throw StartError(description: why.isEmpty ? "libmicrohttpd would not start" : why)
        }
        context.takeUnretainedValue().startMessages.withLock { $0 = nil }
        running = Mutex(Running(server: server, socket: socket, context: context))
    }

    /// Stops accepting, closes every connection (an upload under way is abandoned: its
    /// receiver undoes it), waits for the threads, and closes the listening socket. Safe to
    /// call twice.
    public func stop() {
        guard let r = running.withLock({ r -> Running? in defer { r = nil }; return r }) else { return }
        pf_http_stop(r.server)
        close(r.socket)
        r.context.release()
    }

    deinit { stop() }
}

/// Per request with a form, kept in libmicrohttpd's request pointer from the head to the end.
private final class RequestState {
    let receiver: any HTTPFormReceiver
    var processor: OpaquePointer?
    var partOpen = false
    /// The body's bytes so far, and how many it may have (`HTTPReply.receiveForm`).
    var received = 0
    let limit: Int
    /// An answer given before the body ended (sent once the body is in).
    var early: HTTPResponse?
    var done = false

    init(receiver: any HTTPFormReceiver, limit: Int) {
        self.receiver = receiver
        self.limit = limit
    }

    /// The post processor's calls, turned into parts: a piece at offset 0 starts a new part.
    func piece(name: String, filename: [UInt8]?, contentType: String?, data: UnsafeRawBufferPointer, offset: UInt64) -> Bool {
        if offset == 0 {
            if partOpen, let answer = receiver.partEnds() { return stop(answer) }
            partOpen = true
            if let answer = receiver.partBegins(name: name, filename: filename, contentType: contentType) { return stop(answer) }
        }
        if !data.isEmpty, let answer = receiver.partData(data) { return stop(answer) }
        return true
    }

    private func stop(_ answer: HTTPResponse) -> Bool {
        early = answer
        return false
    }

    /// Ends the processor: true when the body was well formed.
    func closeProcessor() -> Bool {
        guard let p = processor else { return true }
        processor = nil
        return MHD_destroy_post_processor(p) == .YES
    }
}

private let formIterator: MHD_PostDataIterator = { cls, _, key, filename, contentType, _, data, offset, size in
    guard let cls else { return .NO }
    let state = Unmanaged<RequestState>.fromOpaque(cls).takeUnretainedValue()
    if state.done && state.early != nil { return .NO }  // answered: nothing more is looked at
    let name = key.map { String(cString: $0) } ?? ""
    let file = filename.map { Array(UnsafeBufferPointer(start: UnsafeRawPointer($0).assumingMemoryBound(to: UInt8.self), count: strlen($0))) }
    let type = contentType.map { String(cString: $0) }
    let piece = UnsafeRawBufferPointer(start: data, count: data == nil ? 0 : size)
    return state.piece(name: name, filename: file, contentType: type, data: piece, offset: offset) ? .YES : .NO
}

/// A stream's retained box, released by libmicrohttpd's free callback.
private final class StreamBox {
    let stream: any HTTPBodyStream
    init(_ stream: any HTTPBodyStream) { self.stream = stream }
}

private let accessHandler: MHD_AccessHandlerCallback = { cls, connection, url, method, _, uploadData, uploadSize, requestPointer in
    guard let cls, let connection, let url, let method, let uploadSize, let requestPointer else { return .NO }
    let context = Unmanaged<HTTPServer.Context>.fromOpaque(cls).takeUnretainedValue()
    return context.handle(connection, url: url, method: method, uploadData: uploadData, uploadSize: uploadSize,
                          requestPointer: requestPointer)
}

private let requestCompleted: MHD_RequestCompletedCallback = { _, _, requestPointer, _ in
    guard let requestPointer, let raw = requestPointer.pointee else { return }
    let state = Unmanaged<RequestState>.fromOpaque(raw).takeRetainedValue()
    requestPointer.pointee = nil
    if !state.done {
        state.done = true
        state.early = state.early ?? HTTPResponse(status: 500, text: "abandoned\n")
        state.receiver.abandon()
    }
    // Freed while the state is still alive; its last calls are ignored (the request is over).
    _ = state.closeProcessor()
}

extension HTTPServer.Context {
    func handle(_ connection: OpaquePointer, url: UnsafePointer<CChar>, method: UnsafePointer<CChar>,
                uploadData: UnsafePointer<CChar>?, uploadSize: UnsafeMutablePointer<Int>,
                requestPointer: UnsafeMutablePointer<UnsafeMutableRawPointer?>) -> MHD_Result {
        guard let raw = requestPointer.pointee else {
            // The head is in.
            pf_http_set_priority(busy?() == false ? 0 : nice)
            let request = Self.request(connection, url: url, method: method, isTLS: isTLS)
            switch handler.reply(to: request) {
            case .response(let response):
                return Self.queue(response, on: connection) ? .YES : .NO
            case .receiveForm(let receiver, let limit):
                let state = RequestState(receiver: receiver, limit: limit)
                let pointer = Unmanaged.passRetained(state).toOpaque()
                state.processor = MHD_create_post_processor(connection, 64 << 10, formIterator, pointer)
                guard state.processor != nil else {
                    Unmanaged<RequestState>.fromOpaque(pointer).release()
                    let type = request.header("content-type") ?? "none"
                    return Self.queue(HTTPResponse(status: 415, text: "a form is expected (multipart/form-data or application/x-www-form-urlencoded), not \(type)\n"),
                                      on: connection) ? .YES : .NO
                }
                requestPointer.pointee = pointer
                return .YES
            }
        }
        let state = Unmanaged<RequestState>.fromOpaque(raw).takeUnretainedValue()
        if uploadSize.pointee > 0, let uploadData {
            let size = uploadSize.pointee
            uploadSize.pointee = 0
            // A body past its limit (chunked: its size was not known from its head) is cut
            // here, whether it is still being read or only discarded after an early answer:
            // the connection closes, nothing more of it is read.
            state.received += size
            if state.received > state.limit {
                if !state.done {
                    state.done = true
                    state.receiver.abandon()
                }
                log("a request body passed its limit of \(state.limit) bytes (sent without a length): the connection is cut")
                return .NO
            }
            if state.done { return .YES }  // discarded: the answer is given
            guard let processor = state.processor, MHD_post_process(processor, uploadData, size) == .YES else {
                // libmicrohttpd 0.9.75 queues a response only before the body or after all of
                // it: the rest is read and thrown away, then the answer goes.
                state.early = state.early ?? HTTPResponse(status: 400, text: "the form is malformed\n")
                state.done = true
                state.receiver.abandon()
                return .YES
            }
            return .YES
        }
        // The body is complete.
        if let early = state.early {
            return Self.queue(early, on: connection) ? .YES : .NO
        }
        state.done = true
        guard state.closeProcessor() else {
            // The processor's last bytes (held back to find the boundary) may have passed a
            // limit: that answer, else the body was malformed.
            state.receiver.abandon()
            let answer = state.early ?? HTTPResponse(status: 400, text: "the form ends early or is malformed\n")
            return Self.queue(answer, on: connection) ? .YES : .NO
        }
        if state.partOpen, let answer = state.receiver.partEnds() {
            state.receiver.abandon()
            return Self.queue(answer, on: connection) ? .YES : .NO
        }
        return Self.queue(state.receiver.finish(), on: connection) ? .YES : .NO
    }

    private static func request(_ connection: OpaquePointer, url: UnsafePointer<CChar>, method: UnsafePointer<CChar>,
                                isTLS: Bool) -> HTTPRequest {
        var headers: [String: String] = [:]
        var cookies: [String: String] = [:]
        var arguments: [(String, String?)] = []
        withUnsafeMutablePointer(to: &headers) { pointer in
            _ = MHD_get_connection_values(connection, .HEADER_KIND, { cls, _, key, value in
                guard let cls, let key else { return .YES }
                let headers = cls.assumingMemoryBound(to: [String: String].self)
                let name = String(cString: key).lowercased()
                let text = value.map { String(cString: $0) } ?? ""
                // A field sent twice: both values, as HTTP lists join them.
                headers.pointee[name] = headers.pointee[name].map { $0 + ", " + text } ?? text
                return .YES
            }, pointer)
        }
        withUnsafeMutablePointer(to: &cookies) { pointer in
            _ = MHD_get_connection_values(connection, .COOKIE_KIND, { cls, _, key, value in
                guard let cls, let key else { return .YES }
                let cookies = cls.assumingMemoryBound(to: [String: String].self)
                let name = String(cString: key)
                if cookies.pointee[name] == nil { cookies.pointee[name] = value.map { String(cString: $0) } ?? "" }
                return .YES
            }, pointer)
        }
        withUnsafeMutablePointer(to: &arguments) { pointer in
            _ = MHD_get_connection_values(connection, .GET_ARGUMENT_KIND, { cls, _, key, value in
                guard let cls, let key else { return .YES }
                cls.assumingMemoryBound(to: [(String, String?)].self).pointee
                    .append((String(cString: key), value.map { String(cString: $0) }))
                return .YES
            }, pointer)
        }
        // The arguments are as sent (the server does not unescape): decoded as a form.
        let query = HTTPRequest.formFields(arguments.map { $0.0 + ($0.1.map { "=" + $0 } ?? "") }.joined(separator: "&"))
        var address = [CChar](repeating: 0, count: 64)
        pf_http_client_address(connection, &address, address.count)
        return HTTPRequest(method: String(cString: method), path: String(cString: url), query: query,
                           headers: headers, cookies: cookies, client: String(decoding: address.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self), isTLS: isTLS)
    }

    /// The libmicrohttpd response for `response` (its body handed over), or nil.
    private static func make(_ response: HTTPResponse) -> OpaquePointer? {
        let made: OpaquePointer?
        switch response.body {
        case .bytes(let bytes):
            made = bytes.withUnsafeBytes { MHD_create_response_from_buffer(bytes.count, UnsafeMutableRawPointer(mutating: $0.baseAddress), .RESPMEM_MUST_COPY) }
        case .file(let file, let offset, let size):
            // libmicrohttpd closes its own copy of the descriptor when the response is freed.
            guard let fd = try? file.duplicateForHandOff() else { return nil }
            made = MHD_create_response_from_fd_at_offset64(UInt64(size), fd, UInt64(offset))
            if made == nil { close(fd) }
        case .stream(let stream):
            let box = Unmanaged.passRetained(StreamBox(stream)).toOpaque()
            made = MHD_create_response_from_callback(UInt64.max, 64 << 10, { cls, _, buffer, max in
                guard let cls, let buffer else { return -2 }
                let box = Unmanaged<StreamBox>.fromOpaque(cls).takeUnretainedValue()
                guard let n = box.stream.read(into: UnsafeMutableRawBufferPointer(start: buffer, count: max)) else { return -2 }
                return n == 0 ? -1 : n
            }, box, { cls in
                guard let cls else { return }
                Unmanaged<StreamBox>.fromOpaque(cls).release()
            })
            if made == nil { Unmanaged<StreamBox>.fromOpaque(box).release() }
        }
        guard let made else { return nil }
        for (name, value) in response.headers {
            _ = MHD_add_response_header(made, name, value)
        }
        return made
    }

    private static func queue(_ response: HTTPResponse, on connection: OpaquePointer) -> Bool {
        guard let made = make(response) else { return false }
        defer { MHD_destroy_response(made) }
        return MHD_queue_response(connection, UInt32(response.status), made) == .YES
    }
}
