internal import CExempi
internal import CCerr
import Foundation

/// The namespaces PhotoFinish reads and writes, by URI (what exempi calls a schema).
public enum XMPNamespace {
    public static let dc = "http://purl.org/dc/elements/1.1/"
    public static let photoshop = "http://ns.adobe.com/photoshop/1.0/"
    public static let exif = "http://ns.adobe.com/exif/1.0/"
    public static let exifEX = "http://cipa.jp/exif/1.0/"
    public static let tiff = "http://ns.adobe.com/tiff/1.0/"
    public static let xmp = "http://ns.adobe.com/xap/1.0/"
    public static let xmpRights = "http://ns.adobe.com/xap/1.0/rights/"
    public static let xmpNote = "http://ns.adobe.com/xmp/note/"
    public static let iptcCore = "http://iptc.org/std/Iptc4xmpCore/1.0/xmlns/"
    public static let iptcExt = "http://iptc.org/std/Iptc4xmpExt/2008-02-29/"
    /// MWG regions (`mwg-rs:Regions`): faces, pets, focus areas.
    public static let mwgRegions = "http://www.metadataworkinggroup.com/schemas/regions/"
    /// `stArea`: a region's area (centre x, centre y, width, height).
    public static let area = "http://ns.adobe.com/xmp/sType/Area#"
    /// `stDim`: dimensions (w, h, unit).
    public static let dimensions = "http://ns.adobe.com/xap/1.0/sType/Dimensions#"

    /// The prefixes paths are written with (`"mwg-rs:Regions/mwg-rs:RegionList[1]"`),
    /// registered before any packet is parsed so they are always these.
    static let prefixes: [(uri: String, prefix: String)] = [
        (dc, "dc"), (photoshop, "photoshop"), (exif, "exif"), (exifEX, "exifEX"), (tiff, "tiff"), (xmp, "xmp"),
        (xmpRights, "xmpRights"), (xmpNote, "xmpNote"), (iptcCore, "Iptc4xmpCore"), (iptcExt, "Iptc4xmpExt"),
        (mwgRegions, "mwg-rs"), (area, "stArea"), (dimensions, "stDim"),
    ]
}

/// Why an XMP packet could not be read (or written back): exempi's message where it gave one.
public struct XMPUnreadable: Error, Equatable, Sendable {
    public let reason: String
}

/// One XMP packet, parsed by exempi (Adobe's XMP Toolkit): read, change, serialize. The
/// only owner of its `XmpPtr`.
///
/// Properties are named as in exempi: a namespace URI and a path whose steps carry the
/// prefixes of `XMPNamespace.prefixes` (`"dc:creator"`, `"dc:creator[1]"`,
/// `"mwg-rs:Regions/mwg-rs:RegionList[2]/mwg-rs:Area/stArea:x"`; array indexes start at 1).
/// One packet belongs to one thread at a time.
public final class XMPPacket {
    private let xmp: XmpPtr

    /// exempi's global set-up, once per process, before the first packet.
    private static let library: Bool = {
        guard xmp_init() else { return false }
        for (uri, prefix) in XMPNamespace.prefixes {
            let registered = xmp_string_new()
            _ = xmp_register_namespace(uri, prefix, registered)
            xmp_string_free(registered)
        }
        return true
    }()

    private init(owning xmp: XmpPtr) { self.xmp = xmp }

    /// An empty packet.
    public convenience init() {
        precondition(Self.library, "exempi failed to initialise")
        guard let xmp = xmp_new_empty() else { preconditionFailure("exempi: out of memory") }
        self.init(owning: xmp)
    }

    /// Parses a serialized packet (with or without its `<?xpacket?>` wrapper); nil when it is
    /// not XMP the toolkit can read, or not XMP it can write so that it reads again. See
    /// `init(reading:)`, which says why.
    public convenience init?(_ bytes: [UInt8]) {
        try? self.init(reading: bytes)
    }

    /// Parses a serialized packet (with or without its `<?xpacket?>` wrapper).
    /// - Throws: `XMPUnreadable` with exempi's own message ("XML parsing failure", "Duplicate
    ///   property or field node") when it is not XMP the toolkit can read, or not XMP it can
    ///   write so that it reads again (what the outputs carry must parse). Exempi reads some
    ///   packets it then writes wrong (found by the metadata fuzz target): stray bytes that are
    ///   not UTF-8 (refused before parsing: every format that carries a packet here stores UTF-8),
    ///   and a namespace URI holding `"`, which it writes unescaped inside a double-quoted `xmlns`
    ///   (`xmlns:x="http://a"b/"`), so it is serialized once here and parsed again. Exempi's
    ///   message is taken from std::cerr, where it writes it (CCerr), and never reaches stderr.
    public convenience init(reading bytes: [UInt8]) throws(XMPUnreadable) {
        guard Self.library else { throw XMPUnreadable(reason: "exempi failed to initialise") }
        guard !bytes.isEmpty else { throw XMPUnreadable(reason: "the packet is empty") }
        guard String(validating: bytes, as: UTF8.self) != nil else {
            throw XMPUnreadable(reason: "the packet is not UTF-8")
        }
        self.init(owning: try Self.parse(bytes))
        do throws(XMPUnreadable) {
            xmp_free(try Self.parse(try written()))
        } catch {
            throw XMPUnreadable(reason: "exempi writes it back wrong (\(error.reason))")
        }
    }

    /// Exempi's packet for `bytes`, owned by the caller.
    private static func parse(_ bytes: [UInt8]) throws(XMPUnreadable) -> XmpPtr {
        let (parsed, message) = Self.taking {
            bytes.withUnsafeBufferPointer { buffer in
                buffer.withMemoryRebound(to: CChar.self) { xmp_new($0.baseAddress, $0.count) }
            }
        }
        guard let parsed else { throw XMPUnreadable(reason: message ?? "exempi error \(xmp_get_error())") }
        return parsed
    }

    /// Calls `body` (exempi calls) with this thread's writes to std::cerr kept, and returns them:
    /// exempi's messages, one line each, joined by "; " (nil when it wrote none).
    private static func taking<T>(_ body: () -> T) -> (T, String?) {
        pf_cerr_take()
        let result = body()
        var buffer = [CChar](repeating: 0, count: 512)
        let length = pf_cerr_taken(&buffer, buffer.count)
        guard length > 0 else { return (result, nil) }
        let text = buffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
        let lines = text.split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { !$0.isEmpty }
        return (result, lines.isEmpty ? nil : lines.joined(separator: "; "))
    }

    deinit { xmp_free(xmp) }

    /// A packet of its own with the same properties.
    public func copy() -> XMPPacket {
        guard let copied = xmp_copy(xmp) else { preconditionFailure("exempi: out of memory") }
        return XMPPacket(owning: copied)
    }

    /// The packet as UTF-8 text: compact RDF, no `<?xpacket?>` wrapper and no padding (the
    /// outputs are finished files, not edited in place); empty when exempi cannot write it.
    public func serialized() -> [UInt8] {
        (try? written()) ?? []
    }

    /// `serialized()`, or why exempi could not write the packet.
    private func written() throws(XMPUnreadable) -> [UInt8] {
        let (text, message) = Self.taking {
            withString { out in
                xmp_serialize(xmp, out, UInt32(XMP_SERIAL_OMITPACKETWRAPPER | XMP_SERIAL_USECOMPACTFORMAT), 0)
            }
        }
        guard let text, !text.isEmpty else { throw XMPUnreadable(reason: message ?? "exempi wrote nothing") }
        return Array(text.utf8)
    }

    /// True when nothing is in it.
    public var isEmpty: Bool { properties(in: nil).isEmpty }

    // MARK: Reading

    /// A simple property's value (or an array item's, a struct field's), nil when absent.
    public func string(_ namespace: String, _ path: String) -> String? {
        withString { value in
            var options: UInt32 = 0
            return xmp_get_property(xmp, namespace, path, value, &options)
        }
    }

    /// True when the property exists (of any form).
    public func has(_ namespace: String, _ path: String) -> Bool {
        xmp_has_property(xmp, namespace, path)
    }

    /// The `x-default` (or first) text of a language alternative (`dc:rights`, `dc:title`).
    public func localizedText(_ namespace: String, _ path: String) -> String? {
        withString { value in
            let actual = xmp_string_new()
            defer { xmp_string_free(actual) }
            var options: UInt32 = 0
            return xmp_get_localized_text(xmp, namespace, path, nil, "x-default", actual, value, &options)
        }
    }

    /// The number of items in an array property (0 when absent).
    public func count(_ namespace: String, _ path: String) -> Int {
        var n = 0
        while has(namespace, "\(path)[\(n + 1)]") { n += 1 }
        return n
    }

    /// The simple items of an array property, in order.
    public func items(_ namespace: String, _ path: String) -> [String] {
        (1...max(1, count(namespace, path))).compactMap { string(namespace, "\(path)[\($0)]") }
    }

    /// Every top-level property, as (namespace, path): what a policy walks to decide what stays.
    public func properties(in namespace: String?) -> [(namespace: String, path: String)] {
        guard let iterator = xmp_iterator_new(xmp, namespace, nil, XMP_ITER_JUSTCHILDREN) else { return [] }
        defer { xmp_iterator_free(iterator) }
        var found: [(String, String)] = []
        let schema = xmp_string_new(), path = xmp_string_new(), value = xmp_string_new()
        defer { xmp_string_free(schema); xmp_string_free(path); xmp_string_free(value) }
        var options: UInt32 = 0
        var schemas: [String] = []
        while xmp_iterator_next(iterator, schema, path, value, &options) {
            let p = String(cString: xmp_string_cstr(path))
            if p.isEmpty { schemas.append(String(cString: xmp_string_cstr(schema))) } else {
                found.append((String(cString: xmp_string_cstr(schema)), p))
            }
        }
        // At the root the children are the schemas: their children are the properties.
        if namespace == nil { return schemas.flatMap { properties(in: $0) } }
        return found
    }

    // MARK: Writing

    /// Sets a simple property (or an existing array item, a struct field).
    public func set(_ namespace: String, _ path: String, _ value: String) {
        _ = xmp_set_property(xmp, namespace, path, value, 0)
    }

    /// Removes a property and everything under it (nothing when absent).
    public func delete(_ namespace: String, _ path: String) {
        _ = xmp_delete_property(xmp, namespace, path)
    }

    /// Sets the `x-default` text of a language alternative, replacing every language.
    public func setLocalizedText(_ namespace: String, _ path: String, _ value: String) {
        delete(namespace, path)
        _ = xmp_set_localized_text(xmp, namespace, path, "", "x-default", value, 0)
    }

    /// Replaces an array property by these simple items (`ordered`: a Seq, else a Bag).
    public func setItems(_ namespace: String, _ path: String, _ values: [String], ordered: Bool) {
        delete(namespace, path)
        let form = ordered ? XMP_PROP_ARRAY_IS_ORDERED.rawValue : XMP_PROP_VALUE_IS_ARRAY.rawValue
        for value in values { _ = xmp_append_array_item(xmp, namespace, path, UInt32(form), value, 0) }
    }

    /// Calls `body` with a fresh exempi string and returns its text when `body` succeeded.
    private func withString(_ body: (XmpStringPtr) -> Bool) -> String? {
        guard let string = xmp_string_new() else { return nil }
        defer { xmp_string_free(string) }
        guard body(string), let text = xmp_string_cstr(string) else { return nil }
        return String(cString: text)
    }
}
