import Codecs
import Finishing
import Foundation
import Pixels
import Synchronization
import System

/// What a batch knows of its photos' light before it finishes them (reference: `harmonize`):
/// the reference, fixed now, and each photo's light and look.
public struct LightPlan: Sendable {
    public var set: SetLight
    /// Each photo's light (nil: it could not be read), in batch order.
    public var lights: [LightEstimate?]
    /// Each photo's look, for the photos looked at by this run.
    public var looks: [PhotoLook.Look?]
    /// Why a photo finished while the batch was open is finished again (0-based index).
    public var again: [Int: String] = [:]
    /// The photos decoded while their light was measured, held to be finished (0-based index).
    var held: [Int: HeldSource] = [:]

    /// What all the photos held by one batch may hold together (their outputs' pixels and
    /// previews; of their files only size and digest): beyond it, a photo is looked at
    /// (`PhotoLook`) and decoded again to be finished. 512 MiB, and never more than a quarter
    /// of the `memoryBudget` when there is one: what is held is not in the budget's count (the
    /// photos in flight are), so a small machine's budget bounds it too.
    public static func holdBytes(budget: Int?) -> Int {
        let most = 512 << 20
        return budget.map { min(most, $0 / 4) } ?? most
    }

    /// Takes `other`'s looks and the photos it holds (the same batch's photos, looked at again).
    public mutating func take(looksOf other: LightPlan) {
        looks = other.looks
        held = other.held
    }

    /// The part photo `index` (0-based) takes with it to be finished, nil when its light is
    /// unknown (the finish then fails, or warns).
    func photo(_ index: Int) -> PhotoLight? {
        guard let light = lights[index] else { return nil }
        let look = looks[index]
        return PhotoLight(set: set, before: look?.light ?? light, faces: look?.faces ?? [],
                          fromThumbnail: look?.source == "thumbnail", again: again[index], held: held[index])
    }
}

/// What the photos held by one batch may still hold, in bytes (`LightPlan.holdBytes`).
final class HoldRoom: Sendable {
    private let left: Mutex<Int>

    init(_ bytes: Int) {
        left = Mutex(bytes)
    }

    /// Takes `bytes` of the room; false when they are not left.
    func take(_ bytes: Int) -> Bool {
        left.withLock { left in
            guard left >= bytes else { return false }
            left -= bytes
            return true
        }
    }

    /// Gives back what a photo took and does not hold.
    func give(_ bytes: Int) {
        left.withLock { $0 += bytes }
    }
}

/// A photo decoded once and held (`HeldPhoto`) with the size and digest of the file it was
/// decoded from (checked against its claim as a file read to be finished is), until its task
/// takes it, once.
final class HeldSource: Sendable {
    /// The file a held photo was decoded from, as its item records it.
    struct File: Sendable {
        var bytes: Int
        var sha256: String
        /// Its share of the memory budget (`MemoryBudget.cost(ofPhoto:)`; 0 without a budget).
        var cost: Int

        init(of bytes: [UInt8], cost: Int) {
            self.bytes = bytes.count
            sha256 = SHA256.hex(of: bytes)
            self.cost = cost
        }
    }

    private let photo: Mutex<(held: HeldPhoto, file: File)?>

    init(_ held: HeldPhoto, file: File) {
        photo = Mutex((held, file))
    }

    /// The held photo and its file's size and digest; nil once taken.
    func take() -> (held: HeldPhoto, file: File)? {
        photo.withLock { photo in
            defer { photo = nil }
            return photo
        }
    }
}

/// One photo's part of its batch's harmonizing, as it is finished.
struct PhotoLight: Sendable {
    var set: SetLight
    /// Its light as it came.
    var before: LightEstimate
    /// Its faces (upright fractions), left out of the white measured after.
    var faces: [FocusBox]
    /// The light was read on an embedded thumbnail: checked against the finished photo.
    var fromThumbnail: Bool
    /// Why it is finished again, when it is.
    var again: String?
    /// The photo decoded while its light was measured, to be finished from (nil: it is decoded
    /// to be finished).
    var held: HeldSource?
}

/// The lights of an open batch's photos as their tasks look at them (photos start as they
/// settle): the reference known so far — the named photo's once it has come, else the median of
/// the photos looked at — which every photo finished early is corrected toward. When the batch
/// closes, the reference is fixed from every photo and those whose correction moves visibly are
/// finished again (`BatchWork`).
public final class OpenSetLight: Sendable {
    public let settings: Template.Harmonize
    private let known = Mutex<[(name: String, light: LightEstimate)]>([])

    public init(_ settings: Template.Harmonize) {
        self.settings = settings
    }

    /// Adds a photo's light (by its file name) and returns the reference as known now.
    public func add(_ name: String, _ light: LightEstimate) -> SetLight {
        let all = known.withLock { known in
            known.removeAll { $0.name == name }
            known.append((name, light))
            return known
        }
        return SetLight.choose(settings, lights: all.map(\.light), names: all.map(\.name))
    }
}

extension BatchRunner {
    /// Fixes the batch's light (reference: `harmonize`): every photo whose light is not `known`
    /// is measured (`workers` at a time, within the worker slots and memory budget the photos
    /// take), then the reference is chosen. With the batch's id, a photo is decoded as it is to
    /// be finished and held (`HeldPhoto`, up to `LightPlan.holdBytes` for the batch), its light
    /// measured on its preview: it is finished from what is held, with no second decode. A photo
    /// beyond that, or without the batch's id, is looked at (`PhotoLook`: its embedded thumbnail,
    /// or a small decode).
    /// - Parameters:
    ///   - photos: the batch's photos, in batch order.
    ///   - known: lights already known by 0-based index (photos finished earlier: their records).
    ///   - look: photos to look at although their light is known (0-based; their look's faces
    ///     are wanted).
    ///   - batch: the batch's id, for the facts its photos are finished with (nil: none is held).
    public func lightPlan(_ photos: [Source], known: [Int: LightEstimate] = [:], look: Set<Int> = [],
                          batch: String? = nil) async -> LightPlan? {
        guard let settings = template.harmonize else { return nil }
        let wanted = photos.indices.filter { known[$0] == nil || look.contains($0) }
        var looks = [PhotoLook.Look?](repeating: nil, count: photos.count)
        var held: [Int: HeldSource] = [:]
        let stems = OutputNames.uniqueStems(photos.map(\.readableName), maxBytes: OutputNames.stemRoom(template))
        let room = HoldRoom(LightPlan.holdBytes(budget: limits.memoryBudget?.bytes))
        // The files are read into a few buffers handed from photo to photo (`SourceBuffers`):
        // a held photo keeps its pixels, and of its file only its size and digest.
        let buffers = SourceBuffers()
        await withTaskGroup(of: (Int, PhotoLook.Look?, HeldSource?).self) { group in
            var next = 0
            func add() {
                guard next < wanted.count else { return }
                let index = wanted[next]
                next += 1
                let facts = batch.map { self.facts(photos[index], index: index, count: photos.count, stem: stems[index], batch: $0) }
                group.addTask {
                    let (look, kept) = await self.measure(photos[index], facts: facts, room: room, buffers: buffers)
                    return (index, look, kept)
                }
            }
            for _ in 0..<limits.effectiveWorkers { add() }
            for await (index, found, kept) in group {
                looks[index] = found
                held[index] = kept
                add()
            }
        }
        let lights = photos.indices.map { known[$0] ?? looks[$0]?.light }
        let set = SetLight.choose(settings, lights: lights, names: photos.map(\.name))
        return LightPlan(set: set, lights: lights, looks: looks, held: held)
    }

    /// One photo's light, in a worker slot and within the memory budget: decoded and held when
    /// `facts` are given and the batch's `room` (bytes) has space for it, else looked at; nil
    /// when it cannot be read (its finish says why). Its file is read into one of `buffers`,
    /// given back once the decoder has let go of it.
    func measure(_ source: Source, facts: PhotoFacts?, room: HoldRoom,
                 buffers: SourceBuffers) async -> (PhotoLook.Look?, HeldSource?) {
        await limits.sharedSlots?.acquire()
        defer { limits.sharedSlots?.release() }
        var bytes = buffers.take()
        guard (try? SourceFile.read(source.path, maxBytes: limits.maxFileBytes, into: &bytes)) != nil else { return (nil, nil) }
        let cost = limits.memoryBudget == nil ? 0 : MemoryBudget.cost(ofPhoto: bytes, finisher: finisher, maxFileBytes: limits.maxFileBytes)
        await limits.memoryBudget?.acquire(cost)
        defer { limits.memoryBudget?.release(cost) }
        let found = measure(bytes, facts: facts, room: room, cost: cost)
        buffers.give(consume bytes)
        return found
    }

    /// `measure`, on the file's bytes (nothing else holds them once it returns).
    private func measure(_ bytes: [UInt8], facts: PhotoFacts?, room: HoldRoom, cost: Int) -> (PhotoLook.Look?, HeldSource?) {
        var decodeLimits = DecodeLimits(maxPixels: limits.maxPixels, maxFileBytes: limits.maxFileBytes, damaged: template.damaged)
        decodeLimits.deadline = .now + limits.itemTimeout
        if let facts, let decoder = try? openDecoder(bytes: bytes, limits: decodeLimits) {
            let holding = HeldPhoto.byteCount(of: decoder, template: template)
            if room.take(holding) {
                // A photo that does not decode is left to its finish, which says why.
                guard let photo = try? finisher.hold(decoder: decoder, limits: decodeLimits, facts: facts) else {
                    room.give(holding)
                    return (nil, nil)
                }
                return (PhotoLook.take(preview: photo.preview), HeldSource(photo, file: .init(of: bytes, cost: cost)))
            }
        }
        return (try? PhotoLook.take(bytes: bytes, limits: decodeLimits), nil)
    }

    /// The batch's light in its report: the reference and the spread of the photos' lights
    /// before and after (`nil` without `harmonize`).
    static func summary(_ plan: LightPlan?, items: [Report.Item]) -> Report.HarmonizeSummary? {
        guard let plan else { return nil }
        let records = items.compactMap { $0.outputs?.first?.applied.harmonize }
        let before = LightEstimate.spread(records.map(\.before))
        let after = LightEstimate.spread(records.compactMap(\.after))
        return Report.HarmonizeSummary(reference: plan.set.name, light: plan.set.reference,
                                       spread: .init(before: .init(white: before.white, exposure: before.exposure),
                                                     after: .init(white: after.white, exposure: after.exposure)))
    }
}
