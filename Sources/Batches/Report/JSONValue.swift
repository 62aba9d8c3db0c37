import Foundation

/// A JSON value whose objects keep their key order, so `report.json` reads in the order of
/// the reference (Foundation's encoder does not keep key order).
public indirect enum JSONValue: Sendable, Equatable {
    case object([(String, JSONValue)])
    case array([JSONValue])
    case string(String)
    case int(Int)
    case double(Double)
    case bool(Bool)
    case null

    public static func == (a: JSONValue, b: JSONValue) -> Bool { a.serialized() == b.serialized() }

    /// Pretty-printed text: two-space indents; arrays of plain numbers on one line.
    public func serialized() -> String {
        var out = ""
        write(into: &out, indent: 0)
        out.append("\n")
        return out
    }

    private func write(into out: inout String, indent: Int) {
        let pad = String(repeating: "  ", count: indent + 1), end = String(repeating: "  ", count: indent)
        switch self {
        case .object(let pairs):
            if pairs.isEmpty { out.append("{}"); return }
            out.append("{\n")
            for (i, (key, value)) in pairs.enumerated() {
                out.append(pad); out.append(Self.quoted(key)); out.append(": ")
                value.write(into: &out, indent: indent + 1)
                out.append(i == pairs.count - 1 ? "\n" : ",\n")
            }
            out.append(end); out.append("}")
        case .array(let items):
            if items.isEmpty { out.append("[]"); return }
            if items.allSatisfy(\.isScalar) {
                out.append("[")
                for (i, item) in items.enumerated() {
                    if i > 0 { out.append(", ") }
                    item.write(into: &out, indent: indent)
                }
                out.append("]")
                return
            }
            out.append("[\n")
            for (i, item) in items.enumerated() {
                out.append(pad)
                item.write(into: &out, indent: indent + 1)
                out.append(i == items.count - 1 ? "\n" : ",\n")
            }
            out.append(end); out.append("]")
        case .string(let s): out.append(Self.quoted(s))
        case .int(let n): out.append(String(n))
        case .double(let d):
            out.append(d.isFinite ? (d == d.rounded() && abs(d) < 1e15 ? String(Int(d)) : String(d)) : "null")
        case .bool(let b): out.append(b ? "true" : "false")
        case .null: out.append("null")
        }
    }

    private var isScalar: Bool {
        switch self {
        case .int, .double, .bool, .null: true
        default: false
        }
    }

    static func quoted(_ s: String) -> String {
        var out = "\""
        for scalar in s.unicodeScalars {
            switch scalar {
            case "\"": out.append("\\\"")
            case "\\": out.append("\\\\")
            case "\n": out.append("\\n")
            case "\r": out.append("\\r")
            case "\t": out.append("\\t")
            default:
                if scalar.value < 0x20 {
                    out.append(String(format: "\\u%04x", scalar.value))
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        out.append("\"")
        return out
    }
}
