// The cluster's cost per photo (issue 21): the task board's round trips against a real
// PostgreSQL (bench/cluster/run.sh starts one, fsync on), through ClusterMember as a daemon
// uses it — photos added as they are claimed, taken by every host's free workers (FOR UPDATE
// SKIP LOCKED), completed with their report item (~1.3 KB of JSON), the batch closed and its
// outputs task completed — and the lease renewals a photo costs while it is finished. No photo
// is finished: what is measured is what the cluster adds to each one.
//
// Usage: bench [CONNINFO] [--photos N] [--hosts H] [--workers W] [--claim C] [--batches B]
//              [--postmaster PID] [--photo-cpu SECONDS] [--work-ms M] [--feed]
// --work-ms: each worker spends M ms on a photo (a sleep standing for the finishing), so the
// wait a worker has for the database between photos shows beside it; --feed: the workers take
// and complete through TaskFeed (taken ahead, completed from its own thread) instead of in line.
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
let workMS = option("work-ms", 0), useFeed = arguments.contains("--feed")

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

/// A task handed from an async call to a thread.
final class Box: @unchecked Sendable {
    var task: PhotoTask?
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
    func record(_ kind: String, _ d: Duration) {
        lock.lock(); samples[kind, default: []].append(Double(d / .microseconds(1)) / 1000); lock.unlock()
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
    let feeds = useFeed ? members.map { TaskFeed(member: $0, ahead: 1, poll: .milliseconds(500)) } : []
    for (h, member) in members.enumerated() {
        for _ in 0..<workers {
            group.enter()
            Thread.detachNewThread {
                defer { group.leave() }
                var waited = ContinuousClock.now  // since the last photo was done (empty takes count)
                while !published.load() {
                    let task: PhotoTask?
                    if useFeed {
                        let box = Box()
                        let got = DispatchSemaphore(value: 0)
                        Task { box.task = await feeds[h].next(); got.signal() }
                        got.wait()
                        task = box.task
                        guard let task else { return }
                        if task.key.photo == 0 {
                            feeds[h].complete(task, item: nil) { _ in published.store(true) }
                            continue
                        }
                    } else {
                        task = (try? timings.time("take") { try member.take(limit: 1) })?.first
                        guard task != nil else {
                            member.waitForWork(upTo: .milliseconds(20))
                            continue
                        }
                    }
                    guard let task else { continue }
                    var wait = ContinuousClock.now - waited
                    if workMS > 0 { Thread.sleep(forTimeInterval: Double(workMS) / 1000) }
                    let sent = ContinuousClock.now
                    if useFeed {
                        feeds[h].complete(task, item: item(task.key.photo)) { outcome in
                            if case .completed(let outputs?) = outcome {
                                _ = try? member.complete(outputs, item: nil)
                                published.store(true)
                            }
                        }
                    } else {
                        let outcome = try? timings.time(task.key.photo == 0 ? "complete outputs" : "complete") {
                            try member.complete(task, item: task.key.photo == 0 ? nil : item(task.key.photo))
                        }
                        if task.key.photo == 0 { published.store(true); continue }
                        if case .completed(let outputs?)? = outcome {
                            _ = try? timings.time("complete outputs") { try member.complete(outputs, item: nil) }
                            published.store(true)
                        }
                    }
                    wait += ContinuousClock.now - sent
                    timings.record("worker's wait per photo", wait)
                    waited = ContinuousClock.now
                }
            }
        }
    }
    closed = try timings.time("close") { try members[0].close(inbox: "shop", batch: batch) }
    if let closed { _ = try timings.time("complete outputs") { try members[0].complete(closed, item: nil) }; published.store(true) }
    while !published.load() { Thread.sleep(forTimeInterval: 0.01) }
    for feed in feeds { feed.stop() }
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

print("\(total) photos (\(batches) batches of \(photos)), \(hostCount) hosts × \(workers) workers, claims of \(claim) photo\(claim == 1 ? "" : "s")"
      + (workMS > 0 ? ", \(workMS) ms of work a photo" : "") + (useFeed ? ", through TaskFeed" : ", take and complete in line")
      + "; PostgreSQL on this machine, Unix socket")
print("")
print("| statement | count | mean ms | p50 ms | p95 ms |")
print("|---|---:|---:|---:|---:|")
for kind in ["add", "take", "complete", "close", "complete outputs", "renew", "worker's wait per photo"] {
    let r = timings.row(kind)
    print(String(format: "| %@ | %d | %.2f | %.2f | %.2f |", kind, r.count, r.mean, r.p50, r.p95))
}
let takes = timings.row("take")
let perPhotoTrips = Double(trips) / Double(total)
print("")
print(String(format: "round trips per photo: %.2f", perPhotoTrips)
      + (useFeed ? "" : " (takes that found nothing: \(max(0, takes.count - total - batches)) of \(takes.count))"))
let waits = timings.row("worker's wait per photo")
print(String(format: "a worker waits %.2f ms per photo for the database (p95 %.2f ms): %.1f %% of a %.2f s photo's wall",
             waits.mean, waits.p95, waits.mean / 1000 / photoCPU * 100, photoCPU))
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
