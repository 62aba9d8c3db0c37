// swift-tools-version: 6.0
// PhotoFinish: finishes sets of photos dropped into hot folders.
// Layout: C libraries behind thin `systemLibrary` wrappers, the C that must be C in
// `CShims` (OS glue) and `CCodecs` (codec glue), then Swift modules from pixels up to the
// command line (see README, Architecture).
import PackageDescription

/// Fast code in the pixel loops: bounds are checked by construction (buffers are sized
/// once per photo), so exclusivity checks only cost time there. Optimised in debug builds
/// too: unoptimised SIMD code runs generic metadata lookups for every vector operation, so a
/// debug resampler is about 50 times slower, and the tests spend most of their time there.
let hotLoops: [SwiftSetting] = [.unsafeFlags(["-enforce-exclusivity=unchecked"]),
                                .unsafeFlags(["-O"], .when(configuration: .debug))]

let package = Package(
    name: "photofinish",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "photofinish", targets: ["photofinish"]),
    ],
    targets: [
        // C libraries from Debian, found with pkg-config.
        .systemLibrary(name: "CJPEG", pkgConfig: "libjpeg",
                       providers: [.apt(["libjpeg62-turbo-dev"])]),
        .systemLibrary(name: "CPNG", pkgConfig: "libpng",
                       providers: [.apt(["libpng-dev"])]),
        .systemLibrary(name: "CHeif", pkgConfig: "libheif",
                       providers: [.apt(["libheif-dev"])]),
        .systemLibrary(name: "CLCMS", pkgConfig: "lcms2",
                       providers: [.apt(["liblcms2-dev"])]),
        .systemLibrary(name: "CCrypto", pkgConfig: "libcrypto",
                       providers: [.apt(["libssl-dev"])]),
        .systemLibrary(name: "CExif", pkgConfig: "libexif",
                       providers: [.apt(["libexif-dev"])]),
        .systemLibrary(name: "CExempi", pkgConfig: "exempi-2.0",
                       providers: [.apt(["libexempi-dev"])]),
        .systemLibrary(name: "CWebP", pkgConfig: "libwebp",
                       providers: [.apt(["libwebp-dev"])]),
        // No pkgConfig: libraw_r.pc's Libs carry -fopenmp, a flag SwiftPM refuses (with a
        // warning on every build); the header is <libraw/libraw.h> in the default include path
        // and the modulemap links raw_r, which is all it takes.
        .systemLibrary(name: "CLibRaw", providers: [.apt(["libraw-dev"])]),
        .systemLibrary(name: "CFreeType", pkgConfig: "freetype2",
                       providers: [.apt(["libfreetype-dev"])]),
        .systemLibrary(name: "CHarfBuzz", pkgConfig: "harfbuzz",
                       providers: [.apt(["libharfbuzz-dev"])]),
        .systemLibrary(name: "CFontconfig", pkgConfig: "fontconfig",
                       providers: [.apt(["libfontconfig-dev"])]),
        .systemLibrary(name: "CSystemd", pkgConfig: "libsystemd",
                       providers: [.apt(["libsystemd-dev"])]),
        .systemLibrary(name: "CCurl", pkgConfig: "libcurl",
                       providers: [.apt(["libcurl4-openssl-dev"])]),
        .systemLibrary(name: "CPostgres", pkgConfig: "libpq",
                       providers: [.apt(["libpq-dev"])]),
        // The web console (Sources/Web, Sources/HTTP): HTTP with GnuTLS, ZIP streams, yescrypt.
        .systemLibrary(name: "CMicroHTTPD", pkgConfig: "libmicrohttpd",
                       providers: [.apt(["libmicrohttpd-dev"])]),
        .systemLibrary(name: "CArchive", pkgConfig: "libarchive",
                       providers: [.apt(["libarchive-dev"])]),
        .systemLibrary(name: "CLibcrypt", pkgConfig: "libcrypt",
                       providers: [.apt(["libcrypt-dev"])]),
        // Share links' QR codes (the console, report.html, /s/TOKEN/qr.svg, the template's qr mark).
        .systemLibrary(name: "CQREncode", pkgConfig: "libqrencode",
                       providers: [.apt(["libqrencode-dev"])]),
        // libmicrohttpd's variadic calls (start, connection info, its log), made once in C.
        .target(name: "CWebShims", dependencies: ["CMicroHTTPD"]),
        // The little C that must be C, in two parts: the libc and Linux calls Swift's Glibc
        // does not show (System, the command line), and libjpeg's and libpng's longjmp error
        // exits (Codecs), with the scaled IDCTs a JPEG decoded at 3/8–7/8 runs (SSE2 and AVX2
        // builds that give the same bytes: no fused multiply-adds).
        .target(name: "CShims"),
        .target(name: "CCodecs", dependencies: ["CJPEG", "CPNG"],
                cSettings: [.unsafeFlags(["-O3", "-ffp-contract=off"])]),
        // What C++ libraries write to std::cerr (exempi: every error it raises), kept for the
        // thread that called them, so a message reaches the report of its photo, not the journal
        // as a line that names nothing.
        .target(name: "CCerr"),
        // The face detector: dlib's HOG frontal face detector searched by dlib's own code
        // (libdlib-dev's headers: nothing of dlib is linked), its five filters compiled in
        // from model.c, behind a C interface, every C++ object owned in faces.cpp.
        // Optimised in debug builds too: dlib's templates unoptimised are ten times slower.
        .target(name: "CFaces",
                cxxSettings: [.unsafeFlags(["-O2"], .when(configuration: .debug))]),
        // dlib's detector as dlib makes and runs it, for the tests alone (FaceModelTests,
        // scripts/face-model): CFaces' model.c is written from it and checked against it.
        // dlib linked statically (its shared library pulls libdlib-data's 100 MB model).
        .target(name: "CFacesReference",
                cxxSettings: [.unsafeFlags(["-O2"], .when(configuration: .debug))],
                linkerSettings: [.linkedLibrary(":libdlib.a"), .linkedLibrary("lapack"), .linkedLibrary("blas")]),
        // The resampler's inner loops, for SSE2 and AVX2 (chosen at run time by CPU feature).
        .target(name: "CResample", cSettings: [.unsafeFlags(["-O3"])]),

        // Swift modules, lowest first.
        // The Linux calls on files (one owner per descriptor, one EINTR retry, one SystemError):
        // byte-string names, atomic files, the claim primitive, inotify, statfs. Every module
        // that touches a file does it through System (no FileManager elsewhere).
        .target(name: "System", dependencies: ["CShims", "CCrypto"]),
        .target(name: "Pixels", dependencies: ["CLCMS", "CResample"], swiftSettings: hotLoops),
        .target(name: "Codecs", dependencies: ["Pixels", "CCodecs", "CCerr", "CJPEG", "CPNG", "CHeif", "CExif", "CExempi", "CWebP", "CLibRaw", "CLCMS"]),
        .target(name: "Typesetting", dependencies: ["Pixels", "CFreeType", "CHarfBuzz", "CFontconfig"],
                swiftSettings: hotLoops),
        .target(name: "JSON5", dependencies: ["System"]),
        // Delivery of finished batches to destinations (SFTP, FTP(S), WebDAV, S3, mail, a folder)
        // through libcurl, with verified receipts: destinations, transfers and journals, no photo.
        .target(name: "Delivery", dependencies: ["JSON5", "System", "CCurl", "CArchive"]),
        .target(name: "Configuration", dependencies: ["JSON5", "System", "Delivery", "Notifications"]),
        // QR code symbols (libqrencode) and their drawings: SVG, pixels, PNG.
        .target(name: "QR", dependencies: ["CQREncode", "Pixels", "Codecs", "System"]),
        .target(name: "Finishing", dependencies: ["Pixels", "Codecs", "Typesetting", "JSON5", "CCrypto", "CFaces", "System", "QR"]),
        .target(name: "Batches", dependencies: ["Finishing", "QR", "Sharing", "Codecs", "Pixels", "Configuration", "System"]),
        .target(name: "HotFolders", dependencies: ["Batches", "Finishing", "Codecs", "JSON5", "System"]),
        // A cluster of hosts coordinated by PostgreSQL (issue 21): the link to the database (one
        // owner per PGconn), the schema and its migrations, photo tasks and their leases, hosts.
        .target(name: "Cluster", dependencies: ["CPostgres"]),
        // Share links (tokens signed with a hot folder's key, their store in .work/shares/, what a
        // link answers) and approvals: a module that knows batches by name, no photo.
        .target(name: "Sharing", dependencies: ["System"]),
        // Notifications of a hot folder's batches (finished, held, approved, delivered, failed) to
        // mail addresses and signed webhooks: the events, their bodies, the queue that retries.
        .target(name: "Notifications", dependencies: ["System"]),
        // An HTTP server on sockets it is given (libmicrohttpd): GET /metrics and the console.
        .target(name: "HTTP", dependencies: ["System", "CMicroHTTPD", "CWebShims", "CSystemd"]),
        .target(name: "Service", dependencies: ["HotFolders", "Batches", "Finishing", "Typesetting", "Configuration", "JSON5", "System", "HTTP", "Cluster", "Delivery", "Notifications", "Sharing", "CSystemd", "CCurl"]),
        // The web console: logins, pages, uploads into drop/, a batch's files and its ZIP.
        .target(name: "Web", dependencies: ["Service", "HTTP", "HotFolders", "Batches", "Finishing", "Configuration", "JSON5", "System", "CArchive", "CLibcrypt", "CWebShims", "Sharing", "QR", "Notifications"]),
        .executableTarget(name: "photofinish", dependencies: ["Service", "Web", "Sharing", "QR", "Cluster", "Delivery", "HotFolders", "Batches", "Finishing", "Configuration", "JSON5", "Codecs", "Pixels", "System", "CShims"]),
        // Fuzzing (scripts/fuzz, Fuzz/): the targets as a library, so the tests replay every
        // seed and every crash file found; the executable is libFuzzer's when built with
        // --sanitize=fuzzer -DFUZZING, a replay tool otherwise.
        .target(name: "FuzzTargets", dependencies: ["Codecs", "Configuration", "Finishing", "JSON5", "Pixels", "System"]),
        .executableTarget(name: "photofinish-fuzz", dependencies: ["FuzzTargets", "System"]),

        .testTarget(name: "PixelsTests", dependencies: ["Pixels", "TestSupport"]),
        .testTarget(name: "TypesettingTests", dependencies: ["Typesetting", "Pixels", "TestSupport"]),
        .testTarget(name: "CodecsTests", dependencies: ["Codecs", "Pixels", "TestSupport"], exclude: ["Fixtures"]),
        .testTarget(name: "JSON5Tests", dependencies: ["JSON5", "TestSupport"]),
        .testTarget(name: "ConfigurationTests", dependencies: ["Configuration", "JSON5", "TestSupport"]),
        .testTarget(name: "FinishingTests", dependencies: ["Finishing", "QR", "System", "JSON5", "Codecs", "Pixels", "Typesetting", "CFaces", "CFacesReference", "TestSupport"]),
        .testTarget(name: "BatchesTests", dependencies: ["Batches", "Finishing", "Codecs", "Pixels", "System", "TestSupport"]),
        .testTarget(name: "SystemTests", dependencies: ["System", "TestSupport"]),
        .testTarget(name: "HotFoldersTests", dependencies: ["HotFolders", "Batches", "Finishing", "Codecs", "Pixels", "System", "TestSupport"]),
        .testTarget(name: "ServiceTests", dependencies: ["Service", "HotFolders", "Batches", "Configuration", "JSON5", "Cluster", "TestSupport"]),
        .testTarget(name: "EndToEndTests", dependencies: ["Codecs", "Pixels", "Finishing", "Cluster", "Notifications", "PostgresHarness", "TestSupport"]),
        // What every test target shares: decoding a written image whole, polling with a
        // deadline, a locked value, temporary folders, threads of their own for async tests.
        .target(name: "TestSupport", dependencies: ["Codecs", "Pixels"], path: "Tests/TestSupport"),
        // The tests' own PostgreSQL servers (initdb + pg_ctl into temporary folders), for the
        // cluster's tests and the daemons' end-to-end tests alike.
        .target(name: "PostgresHarness", path: "Tests/PostgresHarness"),
        .testTarget(name: "DeliveryTests", dependencies: ["Delivery", "System", "TestSupport"]),
        .testTarget(name: "ClusterTests", dependencies: ["Cluster", "PostgresHarness", "TestSupport"]),
        .testTarget(name: "FuzzTargetsTests", dependencies: ["FuzzTargets", "TestSupport"]),
        .testTarget(name: "WebTests", dependencies: ["Web", "HTTP", "Service", "HotFolders", "Batches", "Finishing", "Codecs", "Pixels", "Configuration", "JSON5", "System", "TestSupport"]),
        .testTarget(name: "SharingTests", dependencies: ["Sharing", "System", "TestSupport"]),
        .testTarget(name: "NotificationsTests", dependencies: ["Notifications", "System", "TestSupport"]),
        .testTarget(name: "QRTests", dependencies: ["QR", "Pixels", "TestSupport"]),
    ],
    cxxLanguageStandard: .cxx17
)
