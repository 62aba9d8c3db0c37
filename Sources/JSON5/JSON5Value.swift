import Foundation

/// A JSON5 value as Foundation read it. Numbers are `Double` (every number in a template
/// or config fits exactly).
public enum JSON5Value: Decodable, Sendable, Equatable {
    case object([String: JSON5Value])
    case array([JSON5Value])
    case string(String)
    case number(Double)
    case bool(Bool)
    case null

    private struct AnyKey: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    public init(from decoder: any Decoder) throws {
        // The container probes throw a type mismatch for the other kinds; that only means
        // "not this kind", so trying the next one is the intended use, not a lost reason.
        if let container = try? decoder.container(keyedBy: AnyKey.self) {
            var members: [String: JSON5Value] = [:]
            for key in container.allKeys {
                members[key.stringValue] = try container.decode(JSON5Value.self, forKey: key)
            }
            self = .object(members)
        } else if var container = try? decoder.unkeyedContainer() {
            var elements: [JSON5Value] = []
            while !container.isAtEnd { elements.append(try container.decode(JSON5Value.self)) }
            self = .array(elements)
        } else {
            let single = try decoder.singleValueContainer()
            if single.decodeNil() {
                self = .null
            } else if let bool = try? single.decode(Bool.self) {
                self = .bool(bool)
            } else if let number = try? single.decode(Double.self) {
                self = .number(number)
            } else {
                self = .string(try single.decode(String.self))
            }
        }
    }

    /// The value as an error message shows it after "got".
    public var shown: String {
        switch self {
        case .object: "an object"
        case .array: "a list"
        case .string(let string): "\"\(string)\""
        case .number(let number): number.shown
        case .bool(let bool): "\(bool)"
        case .null: "null"
        }
    }
}

extension Double {
    /// `3` rather than `3.0`; other numbers as Swift prints them.
    var shown: String {
        if self == rounded(), abs(self) < 1e15 { return String(Int(self)) }
        return "\(self)"
    }
}

/// The range a number must fall in, and how to say it.
public struct NumberRange: Sendable {
    public var lower: Double
    public var lowerOpen: Bool
    public var upper: Double?
    public var upperOpen: Bool

    /// From `lower` (excluded when `lowerOpen`) up to `upper` (none when `nil`; excluded when `upperOpen`).
    public init(lower: Double, lowerOpen: Bool = false, upper: Double? = nil, upperOpen: Bool = false) {
        self.lower = lower
        self.lowerOpen = lowerOpen
        self.upper = upper
        self.upperOpen = upperOpen
    }

    /// Whether `x` is finite and inside the range.
    public func contains(_ x: Double) -> Bool {
        guard x.isFinite else { return false }
        if lowerOpen ? x <= lower : x < lower { return false }
        if let upper, upperOpen ? x >= upper : x > upper { return false }
        return true
    }

    /// "between 0 and 0.5", "greater than 0 and at most 0.5", "at least 0", …
    public var phrase: String {
        let low = lower.shown
        guard let upper else { return lowerOpen ? "greater than \(low)" : "at least \(low)" }
        let high = upper.shown
        switch (lowerOpen, upperOpen) {
        case (false, false): return "between \(low) and \(high)"
        case (true, false): return "greater than \(low) and at most \(high)"
        case (false, true): return "at least \(low) and less than \(high)"
        case (true, true): return "greater than \(low) and less than \(high)"
        }
    }
}

