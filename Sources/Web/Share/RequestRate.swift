/// How fast one address may ask for share pages (reference: Share links, QR codes): a bucket
/// of `burst` requests per address, refilled at `perSecond`; an empty bucket answers how long to
/// wait (429). A phone opening a gallery of a few hundred photos never meets it; a script
/// walking tokens or pulling a ZIP in a loop does. Pure: tested with plain instants.
struct RequestRate: Sendable {
    struct Bucket: Sendable, Equatable {
        var tokens: Double
        var at: ContinuousClock.Instant
    }

    var burst = 300.0
    var perSecond = 5.0
    /// Addresses kept at most: past it, those whose bucket is full again are forgotten.
    var limit = 50_000
    private(set) var buckets: [String: Bucket] = [:]

    /// Takes one request of `address` at `now`: nil when it may go on, else how long to wait.
    mutating func take(_ address: String, now: ContinuousClock.Instant) -> Duration? {
        if buckets.count >= limit { buckets = buckets.filter { level($0.value, now) < burst } }
        var bucket = buckets[address].map { Bucket(tokens: level($0, now), at: now) } ?? Bucket(tokens: burst, at: now)
        guard bucket.tokens >= 1 else {
            buckets[address] = bucket
            return .milliseconds(Int(((1 - bucket.tokens) / perSecond * 1000).rounded(.up)))
        }
        bucket.tokens -= 1
        buckets[address] = bucket
        return nil
    }

    private func level(_ bucket: Bucket, _ now: ContinuousClock.Instant) -> Double {
        let elapsed = now - bucket.at
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        return min(burst, bucket.tokens + seconds * perSecond)
    }
}
