// The cluster's cost per photo (issue 21): the task board's round trips against a real
// PostgreSQL (bench/cluster/run.sh starts one, fsync on), through ClusterMember as a daemon
// uses it — photos added as they are claimed, taken by every host's free workers (FOR UPDATE
// SKIP LOCKED), completed with their report item (~1.3 KB of JSON), the batch closed and its
// outputs task completed — and the lease renewals a photo costs while it is finished. No photo
// is finished: what is measured is what the cluster adds to each one.
//
// Usage: bench [CONNINFO] [--photos N] [--hosts H] [--workers W] [--claim C] [--batches B]
//              [--postmaster PID] [--photo-cpu SECONDS]
import Foundation

var arguments = Array(CommandLine.arguments.dropFirst())
func option(_ name: String, _ fallback: Int) -> Int {
    guard let i = arguments.firstIndex(of: "--" + name), i + 1 < arguments.count, let v = Int(arguments[i + 1]) else { return fallback }
    return v
}
let conninfo = arguments.first { !$0.hasPrefix("--") && Int($0) == nil } ?? "host=/tmp dbname=photofinish"
let photos = option("photos", 200), hostCount = option("hosts", 3), workers = option("workers", 2)
let claim = option("claim", 1), batches = option("batches", 3), postmaster = Int32(option("postmaster", 0))
let photoCPU = arguments.firstIndex(of: "--photo-cpu").flatMap { Double(arguments[$0 + 1]) } ?? 0.13

/// user+sys of this process, in seconds.
func selfCPU() -> Double {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
}

/// user+sys of the PostgreSQL server (the postmaster and its children), in seconds.
func serverCPU() -> Double {
    guard postmaster > 0 else { return 0 }
    let ticks = Double(sysconf(Int32(_SC_CLK_TCK)))
    var total = 0.0
    for name in (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? [] where Int32(name) != nil {
        guard let stat = try? String(contentsOfFile: "/proc/\(name)/stat", encoding: .utf8),
              let close = stat.lastIndex(of: ")") else { continue }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        // After the name: state(0) ppid(1) … utime(11) stime(12).
        guard fields.count > 12, let ppid = Int32(fields[1]) else { continue }
        if Int32(name) == postmaster || ppid == postmaster {
            total += (Double(fields[11]) ?? 0) / ticks + (Double(fields[12]) ?? 0) / ticks
        }
    }
    return total
}

/// A report item as a daemon records it (~1.3 KB).
func item(_ n: Int) -> String {
    """
    {"index":\(n),"source":"IMG_\(String(format: "%04d", n)).jpg","bytes":3412876,"sha256":"\(String(repeating: "ab", count: 32))",\
    "format":"jpeg","size":[4032,3024],"orientation":1,"status":"ok","ms":131,"host":"bench-0","outputs":[{"file":"IMG_\(n).jpg",\
    "size":[2048,1536],"bytes":612345,"applied":{"decodeScale":"1/1","crop":null,"resizedTo":[2048,1536],"text":{"capHeightPx":31,\
    "box":[1701,1481,312,31],"text":"© Example Studio"},"logo":{"box":[41,41,200,100],"scale":0.49},"icc":"sRGB IEC61966-2.1 (kept)",\
    "removed":["GPS","MakerNote"]}},{"file":"IMG_\(n)-thumb.jpg","size":[480,360],"bytes":41234,"applied":{"decodeScale":"1/8",\
    "crop":null,"resizedTo":[480,360],"icc":null,"removed":["GPS","MakerNote"]}}],"warnings":[],"color":"#5a7d9a",\
    "thumbnail":"thumbs/IMG_\(n).jpg","original":"originals/20261202-120000-ab12/IMG_\(n).jpg"}
    """
}

/// A flag the workers share.
final class Flag: @unchecked Sendable {
    private let lock = NSLock()
    private var value = false
    func load() -> Bool { lock.lock(); defer { lock.unlock() }; return value }
    func store(_ v: Bool) { lock.lock(); value = v; lock.unlock() }
}

/// Latencies of one kind of statement.
final class Timings: @unchecked Sendable {
    private let lock = NSLock()
    private var samples: [String: [Double]] = [:]
    func time<T>(_ kind: String, _ body: () throws -> T) rethrows -> T {
        let start = ContinuousClock.now
        defer {
            let ms = Double((ContinuousClock.now - start) / .microseconds(1)) / 1000
            lock.lock(); samples[kind, default: []].append(ms); lock.unlock()
        }
        return try body()
    }
    func row(_ kind: String) -> (count: Int, mean: Double, p50: Double, p95: Double) {
        lock.lock(); defer { lock.unlock() }
        let s = (samples[kind] ?? []).sorted()
        guard !s.isEmpty else { return (0, 0, 0, 0) }
        return (s.count, s.reduce(0, +) / Double(s.count), s[s.count / 2], s[min(s.count - 1, s.count * 95 / 100)])
    }
}

let members = (0..<hostCount).map { h in
    ClusterMember(conninfo: conninfo, identity: HostIdentity(name: "bench-\(h)", version: "bench", workers: workers),
                  inboxes: ["shop"], lease: .seconds(30))
}
for member in members {
    guard member.start(waitingUpTo: .seconds(30)).isUp else { print("the database does not answer: \(member.health)"); exit(1) }
}
// The schema made, every host registered: what is counted from here is the work.
Thread.sleep(forTimeInterval: 0.5)
let timings = Timings()
let trips0 = members.reduce(0) { $0 + $1.database.roundTrips }
let cpu0 = selfCPU(), server0 = serverCPU(), wall0 = ContinuousClock.now

for b in 0..<batches {
    let batch = "20261202-12000\(b)-bench"
    // Claims: `claim` photos at a time, as they settle.
    var n = 1
    while n <= photos {
        let tasks = (n..<min(photos + 1, n + claim)).map { NewTask(photo: $0, source: "IMG_\(String(format: "%04d", $0)).jpg") }
        _ = try timings.time("add") { try members[0].add(tasks, inbox: "shop", batch: batch) }
        n += claim
    }
    // Every host's free workers take and complete until the batch's outputs are done.
    let published = Flag()
    let group = DispatchGroup()
    var closed: PhotoTask?
    for member in members {
        for _ in 0..<workers {
            group.enter()
            Thread.detachNewThread {
                defer { group.leave() }
                while !published.load() {
                    guard let task = (try? timings.time("take") { try member.take(limit: 1) })?.first else {
                        member.waitForWork(upTo: .milliseconds(20))
                        continue
                    }
                    let outcome = try? timings.time(task.key.photo == 0 ? "complete outputs" : "complete") {
                        try member.complete(task, item: task.key.photo == 0 ? nil : item(task.key.photo))
                    }
                    if task.key.photo == 0 { published.store(true); continue }
                    if case .completed(let outputs?)? = outcome {
                        _ = try? timings.time("complete outputs") { try member.complete(outputs, item: nil) }
                        published.store(true)
                    }
                }
            }
        }
    }
    closed = try timings.time("close") { try members[0].close(inbox: "shop", batch: batch) }
    if let closed { _ = try timings.time("complete outputs") { try members[0].complete(closed, item: nil) }; published.store(true) }
    group.wait()
}
let trips = members.reduce(0) { $0 + $1.database.roundTrips } - trips0
let cpu = selfCPU() - cpu0, server = serverCPU() - server0
let wall = Double((ContinuousClock.now - wall0) / .microseconds(1)) / 1e6
let total = photos * batches

// Renewals: one statement per host every third of a lease, for every task it holds.
let renewCPU0 = selfCPU(), renewServer0 = serverCPU()
let renewals = 200
for _ in 0..<renewals {
    _ = try timings.time("renew") { try members[0].board.renew([], inboxes: ["shop"]) }
}
let renewCPU = (selfCPU() - renewCPU0) / Double(renewals), renewServer = (serverCPU() - renewServer0) / Double(renewals)
for member in members { member.stop() }

print("\(total) photos (\(batches) batches of \(photos)), \(hostCount) hosts × \(workers) workers, claims of \(claim) photo\(claim == 1 ? "" : "s"); PostgreSQL on this machine, Unix socket")
print("")
print("| statement | count | mean ms | p50 ms | p95 ms |")
print("|---|---:|---:|---:|---:|")
for kind in ["add", "take", "complete", "close", "complete outputs", "renew"] {
    let r = timings.row(kind)
    print(String(format: "| %@ | %d | %.2f | %.2f | %.2f |", kind, r.count, r.mean, r.p50, r.p95))
}
let takes = timings.row("take")
let perPhotoTrips = Double(trips) / Double(total)
print("")
print(String(format: "round trips per photo: %.2f (takes that found nothing: %d of %d)", perPhotoTrips,
             max(0, takes.count - total - batches), takes.count))
print(String(format: "per photo: client CPU %.2f ms, server CPU %.2f ms, wall %.2f ms (%d workers at once)",
             cpu / Double(total) * 1000, server / Double(total) * 1000, wall / Double(total) * 1000, hostCount * workers))
// A photo held for photoCPU seconds is renewed photoCPU / (lease/3) times (lease 30 s: every 10 s).
let renewalsPerPhoto = photoCPU / 10
let perPhotoCPU = cpu / Double(total) + renewCPU * renewalsPerPhoto
let perPhotoServer = server / Double(total) + renewServer * renewalsPerPhoto
print(String(format: "renewal: client CPU %.3f ms, server CPU %.3f ms each; %.3f per photo of %.2f s at a lease of 30 s",
             renewCPU * 1000, renewServer * 1000, renewalsPerPhoto, photoCPU))
print(String(format: "share of a %.2f s photo: client CPU %.2f %%, client+server CPU %.2f %% (goal ≤ 3 %%)",
             photoCPU, perPhotoCPU / photoCPU * 100, (perPhotoCPU + perPhotoServer) / photoCPU * 100))
