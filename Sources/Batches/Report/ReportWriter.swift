import Foundation

/// Serialises a `Report` in the order of SPEC §4 and writes it atomically.
public enum ReportWriter {
    /// The report as ordered JSON text.
    public static func json(_ r: Report) -> String {
        var top: [(String, JSONValue)] = [
            ("schema", .int(r.schema)), ("batch", .string(r.batch)),
            ("inbox", r.inbox.map(JSONValue.string) ?? .null),
            ("template", .object([("name", .string(r.template.name)), ("sha256", .string(r.template.sha256))])),
            ("started", .string(r.started)), ("finished", .string(r.finished)),
            ("status", .string(r.status.rawValue)),
            ("counts", .object([("items", .int(r.counts.items)), ("ok", .int(r.counts.ok)),
                                ("failed", .int(r.counts.failed)), ("skippedOutputs", .int(r.counts.skippedOutputs))])),
        ]
        top.append(("items", .array(r.items.map(item))))
        top.append(("outputs", .array(r.outputs.map { o in
            var pairs: [(String, JSONValue)] = [("file", .string(o.file)), ("size", ints(o.size))]
            if let items = o.items { pairs.append(("items", ints(items))) }
            return .object(pairs)
        })))
        if let w = r.warnings, !w.isEmpty { top.append(("warnings", .array(w.map(JSONValue.string)))) }
        return JSONValue.object(top).serialized()
    }

    /// Writes `report.json` into `folder` (atomically: SPEC §1, the report is the last file).
    public static func write(_ report: Report, toFolder folder: String) throws(FileError) {
        try AtomicFile.write(Array(json(report).utf8), to: folder + "/report.json")
    }

    private static func ints(_ v: [Int]) -> JSONValue { .array(v.map(JSONValue.int)) }

    private static func item(_ i: Report.Item) -> JSONValue {
        var p: [(String, JSONValue)] = [("index", .int(i.index)), ("source", .string(i.source))]
        if let v = i.bytes { p.append(("bytes", .int(v))) }
        if let v = i.sha256 { p.append(("sha256", .string(v))) }
        if let v = i.format { p.append(("format", .string(v))) }
        if let v = i.size { p.append(("size", ints(v))) }
        if let v = i.orientation { p.append(("orientation", .int(v))) }
        p.append(("status", .string(i.status.rawValue)))
        if let v = i.ms { p.append(("ms", .int(v))) }
        if let outputs = i.outputs { p.append(("outputs", .array(outputs.map(output)))) }
        if let skipped = i.skipped, !skipped.isEmpty {
            p.append(("skipped", .array(skipped.map {
                .object([("ratio", .string($0.ratio)), ("cut", .double(($0.cut * 1000).rounded() / 1000)),
                         ("reason", .string($0.reason))])
            })))
        }
        if let w = i.warnings, !w.isEmpty { p.append(("warnings", .array(w.map(JSONValue.string)))) }
        if let v = i.color { p.append(("color", .string(v))) }
        if let v = i.thumbnail { p.append(("thumbnail", .string(v))) }
        if let e = i.error {
            p.append(("error", .object([("code", .string(e.code)), ("message", .string(e.message))])))
        }
        if let v = i.original { p.append(("original", .string(v))) }
        return .object(p)
    }

    private static func output(_ o: Report.Output) -> JSONValue {
        let a = o.applied
        var applied: [(String, JSONValue)] = [
            ("decodeScale", .string(a.decodeScale)),
            ("crop", a.crop.map { .object([("ratio", .string($0.ratio)), ("box", ints($0.box))]) } ?? .null),
            ("resizedTo", ints(a.resizedTo)),
        ]
        if let f = a.frame { applied.append(("frame", .int(f))) }
        if let t = a.text {
            var text: [(String, JSONValue)] = [("capHeightPx", .int(t.capHeightPx)), ("box", ints(t.box))]
            if t.clamped == true { text.append(("clamped", .bool(true))) }
            applied.append(("text", .object(text)))
        }
        if let l = a.logo { applied.append(("logo", .object([("box", ints(l.box)), ("scale", .double(l.scale))]))) }
        if let t = a.tile {
            var tile: [(String, JSONValue)] = [("capHeightPx", .int(t.capHeightPx)), ("angle", .double(t.angle)),
                                               ("step", ints(t.step)), ("opacity", .double(t.opacity))]
            if t.clamped == true { tile.append(("clamped", .bool(true))) }
            applied.append(("tile", .object(tile)))
        }
        applied.append(("icc", a.icc.map(JSONValue.string) ?? .null))
        applied.append(("removed", .array(a.removed.map(JSONValue.string))))
        return .object([("file", .string(o.file)), ("size", ints(o.size)), ("bytes", .int(o.bytes)),
                        ("applied", .object(applied))])
    }
}
