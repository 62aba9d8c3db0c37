import Foundation
import Testing

/// The servers the delivery tests send to, each started by its test on a spare 127.0.0.1 port
/// with folders the test made (README "Delivering finished photos"): Apache with mod_dav
/// (WebDAV), vsftpd (FTP and explicit FTPS), an SMTP server (aiosmtpd, with STARTTLS and a
/// login), moto's S3 server; OpenSSH's sshd is `SSHServer` (ShareLab.swift). Each keeps what it
/// receives where the test reads it back, and can be stopped and started again (same port,
/// same keys). What the server writes lives on a small tmpfs (`ShareLab.mountTmpfs`) when the
/// test fills its disk.
enum DeliveryServers {
    /// Why a server cannot run here, or nil.
    static func missing(_ programs: [String]) -> String? {
        if getuid() != 0 { return "needs root (servers that switch to nobody, a tmpfs for the full disk)" }
        for p in programs where !FileManager.default.isExecutableFile(atPath: p) {
            return "\(p) is not installed (scripts/bootstrap installs it)"
        }
        return nil
    }

    /// A self-signed certificate for 127.0.0.1 (`cert.pem`, `key.pem` in `dir`): the CA file the
    /// destination's `caFile` names.
    static func certificate(in dir: String) throws -> (cert: String, key: String) {
        let cert = dir + "/cert.pem", key = dir + "/key.pem"
        let r = try Harness.exec("/usr/bin/openssl", ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=127.0.0.1",
                                                      "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", key, "-out", cert],
                                 deadline: .seconds(60))
        guard r.status == 0 else {
            Issue.record("openssl: \(r.stderr)")
            throw POSIXError(.EIO)
        }
        chmod(key, 0o644)
        return (cert, key)
    }

    /// Every regular file under `folder`, relative to it, sorted.
    static func files(under folder: String) -> [String] { HotFolderFixture.files(under: folder) }
}

/// A server run in the foreground as a child of the test (Apache, vsftpd, aiosmtpd, moto).
class ForegroundServer {
    let port = ShareLab.sparePort()
    let dir: String
    private var process: Process?
    private let command: (Int) -> (String, [String], [String: String])
    private let name: String

    init(name: String, dir: String, command: @escaping (Int) -> (String, [String], [String: String])) {
        self.name = name
        self.dir = dir
        self.command = command
    }

    func start() throws {
        let (program, args, environment) = command(port)
        let p = try ShareLab.spawn(program, args, log: dir + "/\(name).log", environment: environment)
        process = p
        if !Poll.until(.seconds(60), { ShareLab.listening(self.port) || !p.isRunning }) || !p.isRunning {
            Issue.record("\(name) did not listen: \((try? String(contentsOfFile: dir + "/\(name).log", encoding: .utf8)) ?? "")")
            throw POSIXError(.ECONNREFUSED)
        }
    }

    /// Stops the server and every connection it serves (a forking server's children would
    /// carry on a session under way), as a server going down does.
    func stop() {
        if let process {
            let children = ShareLab.descendants(of: process.processIdentifier)
            for child in children { kill(child, SIGKILL) }
            ShareLab.end(process, SIGKILL)
        }
        process = nil
    }

    var log: String { (try? String(contentsOfFile: dir + "/\(name).log", encoding: .utf8)) ?? "" }

    deinit { stop() }
}

/// Apache with mod_dav and mod_dav_fs: `root` served at `/dav/`, Basic login `studio`/`password`.
final class WebDAVServer: ForegroundServer {
    static let user = "studio", password = "pf-dav-secret"
    let root: String

    init(dir: String, root: String) throws {
        self.root = root
        let modules = "/usr/lib/apache2/modules"
        let config = dir + "/httpd.conf"
        try FileManager.default.createDirectory(atPath: dir + "/run", withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: dir + "/lock", withIntermediateDirectories: true)
        try ShareLab.giveToNobody(dir + "/lock")
        _ = try Harness.exec("/usr/bin/htpasswd", ["-cbB", dir + "/htpasswd", Self.user, Self.password], deadline: .seconds(30))
        chmod(dir + "/htpasswd", 0o644)
        // -X: one process, no children (stopped, it is gone at once, connections and all).
        super.init(name: "apache", dir: dir) { _ in ("/usr/sbin/apache2", ["-f", config, "-X"], [:]) }
        try Harness.write("""
            ServerRoot \(dir)
            DefaultRuntimeDir \(dir)/run
            PidFile \(dir)/run/httpd.pid
            Listen 127.0.0.1:\(port)
            ServerName 127.0.0.1
            User nobody
            Group nogroup
            ErrorLog \(dir)/apache-error.log
            LogLevel warn
            LoadModule mpm_event_module \(modules)/mod_mpm_event.so
            LoadModule authz_core_module \(modules)/mod_authz_core.so
            LoadModule authz_user_module \(modules)/mod_authz_user.so
            LoadModule authn_core_module \(modules)/mod_authn_core.so
            LoadModule authn_file_module \(modules)/mod_authn_file.so
            LoadModule auth_basic_module \(modules)/mod_auth_basic.so
            LoadModule alias_module \(modules)/mod_alias.so
            LoadModule dav_module \(modules)/mod_dav.so
            LoadModule dav_fs_module \(modules)/mod_dav_fs.so
            DavLockDB \(dir)/lock/davlock
            Alias /dav \(root)
            <Directory \(root)>
                Dav On
                AuthType Basic
                AuthName "PhotoFinish test"
                AuthUserFile \(dir)/htpasswd
                Require valid-user
            </Directory>
            """, to: config)
        try start()
    }
}

/// vsftpd, plain FTP and explicit FTPS (`AUTH TLS`) on one port, with a real login: the user
/// `studio` and its password, checked by PAM's `pam_userdb` against a Berkeley DB file the test
/// writes (Debian's python3 `dbm.ndbm` makes that format), through a PAM service of the test's
/// own (`/etc/pam.d/pf-test-ftp-<pid>-<random>`, removed with the server: PAM reads services only
/// there); it has no session part (vsftpd opens none). A check by `pam_exec` hung logins here;
/// `pam_userdb` only reads its file. The login is a virtual user acting as
/// `www-data` with local rights, its folder `root` (`in/` is where it writes). Any other
/// password is refused ("530 Login incorrect."). `isolate=NO`: its login process in namespaces
/// of its own is refused in a container.
final class FTPServer: ForegroundServer {
    static let user = "studio", password = "pf-ftp-secret"
    let root: String
    let certificate: String
    private let pamService: String

    init(dir: String, root: String) throws {
        self.root = root
        let (cert, key) = try DeliveryServers.certificate(in: dir)
        certificate = cert
        chown(root, 0, 0)
        chmod(root, 0o755)
        _ = try Harness.exec("/bin/chown", ["-R", "33:33", root + "/in"], deadline: .seconds(20))
        try FileManager.default.createDirectory(atPath: dir + "/empty", withIntermediateDirectories: true)
        chmod(dir + "/empty", 0o755)
        let users = dir + "/ftp-users"
        let made = try Harness.exec("/usr/bin/python3", ["-c", """
            import dbm.ndbm, sys
            db = dbm.ndbm.open(sys.argv[1], "n", 0o600)
            db[sys.argv[2].encode()] = sys.argv[3].encode()
            db.close()
            """, users, Self.user, Self.password], deadline: .seconds(30))
        guard made.status == 0 else {
            Issue.record("cannot make vsftpd's user file: \(made.stderr)")
            throw POSIXError(.EIO)
        }
        // Those of test runs that ended without removing theirs (killed) go first.
        for name in (try? FileManager.default.contentsOfDirectory(atPath: "/etc/pam.d")) ?? [] where name.hasPrefix("pf-test-ftp-") {
            let parts = name.split(separator: "-")
            if parts.count > 3, let pid = Int32(parts[3]), kill(pid, 0) != 0, errno == ESRCH { unlink("/etc/pam.d/" + name) }
        }
        pamService = "pf-test-ftp-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try Harness.write("""
            auth required pam_userdb.so db=\(users)
            account required pam_permit.so

            """, to: "/etc/pam.d/" + pamService)
        let config = dir + "/vsftpd.conf"
        super.init(name: "vsftpd", dir: dir) { _ in ("/usr/sbin/vsftpd", [config], [:]) }
        try Harness.write("""
            listen=YES
            listen_address=127.0.0.1
            listen_port=\(port)
            background=NO
            anonymous_enable=NO
            local_enable=YES
            guest_enable=YES
            guest_username=www-data
            virtual_use_local_privs=YES
            pam_service_name=\(pamService)
            local_root=\(root)
            write_enable=YES
            local_umask=022
            secure_chroot_dir=\(dir)/empty
            seccomp_sandbox=NO
            isolate=NO
            isolate_network=NO
            pasv_enable=YES
            pasv_address=127.0.0.1
            ssl_enable=YES
            rsa_cert_file=\(cert)
            rsa_private_key_file=\(key)
            force_local_logins_ssl=NO
            force_local_data_ssl=NO
            require_ssl_reuse=NO
            xferlog_enable=NO

            """, to: config)
        chmod(config, 0o600)
        try start()
    }

    deinit { unlink("/etc/pam.d/" + pamService) }
}

/// An SMTP server (Debian's aiosmtpd) that requires STARTTLS and a login, and keeps each
/// message it accepts as a file in `maildir/new/`.
final class SMTPServer: ForegroundServer {
    static let user = "studio", password = "pf-smtp-secret"
    let maildir: String
    let certificate: String

    init(dir: String, maildir: String) throws {
        self.maildir = maildir
        let (cert, key) = try DeliveryServers.certificate(in: dir)
        certificate = cert
        let script = dir + "/smtp.py"
        super.init(name: "smtp", dir: dir) { _ in ("/usr/bin/python3", [script], [:]) }
        try Harness.write("""
            import asyncio, mailbox, ssl
            from aiosmtpd.controller import Controller
            from aiosmtpd.handlers import Mailbox
            from aiosmtpd.smtp import AuthResult, LoginPassword
            context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
            context.load_cert_chain("\(cert)", "\(key)")
            # handled=False: aiosmtpd answers 535 itself (True leaves the client waiting).
            def check(server, session, envelope, mechanism, auth_data):
                ok = isinstance(auth_data, LoginPassword) and auth_data.login == b"\(Self.user)" and auth_data.password == b"\(Self.password)"
                return AuthResult(success=ok, handled=False)
            controller = Controller(Mailbox("\(maildir)"), hostname="127.0.0.1", port=\(port), tls_context=context,
                                    require_starttls=True, authenticator=check, auth_required=True)
            controller.start()
            print("listening", flush=True)
            asyncio.new_event_loop().run_forever()
            """, to: script)
        try start()
    }

    /// The attachments of each message whose subject names `batch` (file name → bytes), read
    /// with Python's own MIME parser.
    func attachments(batch: String) -> [[String: [UInt8]]] {
        var out: [[String: [UInt8]]] = []
        for (n, name) in DeliveryServers.files(under: maildir + "/new").enumerated() {
            let into = dir + "/unpacked-\(batch)-\(n)"
            let script = """
                import email, os, sys
                m = email.message_from_binary_file(open(sys.argv[1], "rb"))
                if sys.argv[3] not in (m["Subject"] or ""): sys.exit(3)
                os.makedirs(sys.argv[2], exist_ok=True)
                for part in m.walk():
                    if part.get_filename():
                        open(os.path.join(sys.argv[2], part.get_filename()), "wb").write(part.get_payload(decode=True))
                """
            guard let r = try? Harness.exec("/usr/bin/python3", ["-c", script, maildir + "/new/" + name, into, batch], deadline: .seconds(30)),
                  r.status == 0 else { continue }
            out.append(DeliveryStory.read(folder: into))
        }
        return out
    }
}

/// moto's S3 server (`scripts/s3-server` installs it from PyPI into a virtual environment of its
/// own), read back by the test with signed GETs. `login()` makes it check logins as S3 does: an
/// IAM user with a key of moto's making, every other key or secret refused.
///
/// moto keeps each object in a spooled temporary file: with `disk`, every object goes to a file
/// there at once (`TMPDIR`, `MOTO_S3_DEFAULT_KEY_BUFFER_SIZE=1`), so a full disk fails a PUT as
/// it fails on a server's own disk (moto answers 500, saying no more). moto keeps the SHA-256 a
/// PUT names and gives it back on HEAD; S3-compatible servers that keep none (older MinIO and
/// Ceph RGW, most gateways) give back the ETag only: `quietBucket`'s answers are given without
/// moto's `x-amz-checksum-*` headers (a filter in front of moto's own WSGI application, in
/// moto's Python), so a delivery there is verified by moto's ETag, the MD5 it took of the bytes.
final class S3Server: ForegroundServer {
    static func program() -> String? {
        if let given = ProcessInfo.processInfo.environment["PF_S3_SERVER"] { return given }
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("scripts/s3-server").path
        guard let r = try? Harness.exec("/bin/bash", [script], deadline: .seconds(900)), r.status == 0 else { return nil }
        return r.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// The key the test signs with (moto's own after `login()`).
    private(set) var accessKey = "AKIAPHOTOFINISHTEST", secretKey = "pf-s3-secret"

    init(dir: String, program: String, disk: String? = nil, quietBucket: String = "etag-only") throws {
        let script = dir + "/s3-server.py"
        try Harness.write("""
            import sys
            from werkzeug.serving import run_simple
            from moto.moto_server.werkzeug_app import DomainDispatcherApplication, MotoRequestHandler, create_backend_app
            moto = DomainDispatcherApplication(create_backend_app)
            quiet = "/" + sys.argv[2] + "/"
            def server(environ, start_response):
                def start(status, headers, exc_info=None):
                    if environ.get("PATH_INFO", "").startswith(quiet):
                        headers = [(k, v) for k, v in headers if not k.lower().startswith("x-amz-checksum-")]
                    return start_response(status, headers, exc_info)
                return moto(environ, start)
            run_simple("127.0.0.1", int(sys.argv[1]), server, threaded=True, request_handler=MotoRequestHandler)
            """, to: script)
        // The virtual environment's Python, beside its moto_server.
        let python = URL(fileURLWithPath: program).deletingLastPathComponent().appendingPathComponent("python").path
        let environment = disk.map { ["TMPDIR": $0, "MOTO_S3_DEFAULT_KEY_BUFFER_SIZE": "1"] } ?? [:]
        super.init(name: "moto", dir: dir) { port in (python, [script, "\(port)", quietBucket], environment) }
        try start()
    }

    var endpoint: String { "http://127.0.0.1:\(port)" }

    /// Makes an IAM user allowed everything with a key (moto draws its secret), then turns
    /// moto's login checks on (`/moto-api/reset-auth`): from here every request must be signed
    /// with that key. Returns the key.
    func login() throws -> (accessKey: String, secretKey: String) {
        func iam(_ form: String) throws -> String {
            let r = try Harness.exec("/usr/bin/curl", ["-sf", "--user", "\(accessKey):\(secretKey)", "--aws-sigv4", "aws:amz:us-east-1:iam",
                                                      "-d", form + "&Version=2010-05-08", endpoint + "/"], deadline: .seconds(30))
            guard r.status == 0 else {
                Issue.record("IAM \(form) failed: \(r.stderr)")
                throw POSIXError(.EIO)
            }
            return r.stdout
        }
        _ = try iam("Action=CreateUser&UserName=studio")
        let policy = #"{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"*","Resource":"*"}]}"#
        _ = try iam("Action=PutUserPolicy&UserName=studio&PolicyName=all&PolicyDocument="
                    + policy.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!)
        let made = try iam("Action=CreateAccessKey&UserName=studio")
        func field(_ name: String) -> String? {
            made.components(separatedBy: "<\(name)>").dropFirst().first?.components(separatedBy: "</\(name)>").first
        }
        guard let key = field("AccessKeyId"), let secret = field("SecretAccessKey") else {
            Issue.record("no access key in \(made)")
            throw POSIXError(.EIO)
        }
        let on = try Harness.exec("/usr/bin/curl", ["-sSf", "-X", "POST", "-H", "Content-Type: text/plain", "--data-binary", "0", endpoint + "/moto-api/reset-auth"], deadline: .seconds(30))
        guard on.status == 0 else {
            Issue.record("moto did not turn its login checks on: \(on.stderr)")
            throw POSIXError(.EIO)
        }
        (accessKey, secretKey) = (key, secret)
        return (key, secret)
    }

    /// curl's options for a signed S3 request without a body (S3 wants the payload's hash on
    /// every request).
    private var signed: [String] {
        ["-sf", "--user", "\(accessKey):\(secretKey)", "--aws-sigv4", "aws:amz:us-east-1:s3",
         "-H", "x-amz-content-sha256: e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"]
    }

    /// A GET of `key` in `bucket`: its bytes, or nil.
    func object(_ bucket: String, _ key: String) -> [UInt8]? {
        guard let r = try? Harness.exec("/usr/bin/curl", signed + ["\(endpoint)/\(bucket)/\(key)", "-o", dir + "/got"], deadline: .seconds(30)),
              r.status == 0 else {
            Issue.record("GET \(bucket)/\(key) failed")
            return nil
        }
        return try? Harness.read(dir + "/got")
    }

    /// The keys in `bucket`.
    func keys(_ bucket: String) -> [String] {
        guard let r = try? Harness.exec("/usr/bin/curl", signed + ["\(endpoint)/\(bucket)?list-type=2"], deadline: .seconds(30)) else { return [] }
        return r.stdout.components(separatedBy: "<Key>").dropFirst().compactMap { $0.components(separatedBy: "</Key>").first }.sorted()
    }

    func makeBucket(_ bucket: String) throws {
        let r = try Harness.exec("/usr/bin/curl", ["-sf", "-X", "PUT", "\(endpoint)/\(bucket)"], deadline: .seconds(30))
        guard r.status == 0 else {
            Issue.record("cannot make bucket \(bucket): \(r.stderr)")
            throw POSIXError(.EIO)
        }
    }
}
