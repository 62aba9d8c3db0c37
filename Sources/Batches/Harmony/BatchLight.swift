import Codecs
import Finishing
import Foundation
import Pixels
import Synchronization

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

    /// The part photo `index` (0-based) takes with it to be finished, nil when its light is
    /// unknown (the finish then fails, or warns).
    func photo(_ index: Int) -> PhotoLight? {
        guard let light = lights[index] else { return nil }
        let look = looks[index]
        return PhotoLight(set: set, before: look?.light ?? light, faces: look?.faces ?? [],
                          fromThumbnail: look?.source == "thumbnail", again: again[index])
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
    /// is looked at (`PhotoLook`, `workers` at a time, within the worker slots and memory budget
    /// the photos take), then the reference is chosen.
    /// - Parameters:
    ///   - photos: the batch's photos, in batch order.
    ///   - known: lights already known by 0-based index (photos finished earlier: their records).
    ///   - look: photos to look at although their light is known (0-based; their look's faces
    ///     are wanted).
    public func lightPlan(_ photos: [Source], known: [Int: LightEstimate] = [:], look: Set<Int> = []) async -> LightPlan? {
        guard let settings = template.harmonize else { return nil }
        let wanted = photos.indices.filter { known[$0] == nil || look.contains($0) }
        var looks = [PhotoLook.Look?](repeating: nil, count: photos.count)
        await withTaskGroup(of: (Int, PhotoLook.Look?).self) { group in
            var next = 0
            func add() {
                guard next < wanted.count else { return }
                let index = wanted[next]
                next += 1
                group.addTask { (index, await self.look(at: photos[index])) }
            }
            for _ in 0..<limits.effectiveWorkers { add() }
            for await (index, found) in group {
                looks[index] = found
                add()
            }
        }
        let lights = photos.indices.map { known[$0] ?? looks[$0]?.light }
        let set = SetLight.choose(settings, lights: lights, names: photos.map(\.name))
        return LightPlan(set: set, lights: lights, looks: looks)
    }

    /// One photo's look, in a worker slot and within the memory budget; nil when it cannot be
    /// read (its finish says why).
    func look(at source: Source) async -> PhotoLook.Look? {
        await limits.sharedSlots?.acquire()
        defer { limits.sharedSlots?.release() }
        guard let bytes = try? SourceFile.read(source.path, maxBytes: limits.maxFileBytes) else { return nil }
        let cost = limits.memoryBudget == nil ? 0 : MemoryBudget.cost(ofPhoto: bytes, finisher: finisher, maxFileBytes: limits.maxFileBytes)
        await limits.memoryBudget?.acquire(cost)
        defer { limits.memoryBudget?.release(cost) }
        var decodeLimits = DecodeLimits(maxPixels: limits.maxPixels, maxFileBytes: limits.maxFileBytes, damaged: template.damaged)
        decodeLimits.deadline = .now + limits.itemTimeout
        return try? PhotoLook.take(bytes: bytes, limits: decodeLimits)
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
