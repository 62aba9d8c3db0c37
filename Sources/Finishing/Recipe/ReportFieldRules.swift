/// How an optional field appears in `report.json` when it has nothing to say. A plain
/// optional property is left out when nil; these wrappers say otherwise, in the property's
/// own declaration, so a report type needs no hand-written `Codable` and its field order is
/// its declaration order (see `JSONValue(encoding:)`).

/// A field written as `null` when nil, never left out (reference, The report: `crop: null`, `icc:
/// null`, `inbox: null`).
@propertyWrapper
public struct NullWhenNil<Value: Codable & Sendable & Equatable>: Codable, Sendable, Equatable {
    public var wrappedValue: Value?

    public init(wrappedValue: Value?) { self.wrappedValue = wrappedValue }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        if let wrappedValue { try container.encode(wrappedValue) } else { try container.encodeNil() }
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        wrappedValue = container.decodeNil() ? nil : try container.decode(Value.self)
    }
}

/// A flag written only when true (`clamped: true`), left out when false.
@propertyWrapper
public struct OmittedWhenFalse: Codable, Sendable, Equatable {
    public var wrappedValue: Bool

    public init(wrappedValue: Bool) { self.wrappedValue = wrappedValue }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(wrappedValue)
    }

    public init(from decoder: any Decoder) throws {
        wrappedValue = try decoder.singleValueContainer().decode(Bool.self)
    }
}

/// A list left out when nil or empty (an item's `warnings`, `skipped`).
@propertyWrapper
public struct OmittedWhenEmpty<Element: Codable & Sendable & Equatable>: Codable, Sendable, Equatable {
    public var wrappedValue: [Element]?

    public init(wrappedValue: [Element]?) { self.wrappedValue = wrappedValue }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(wrappedValue ?? [])
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        wrappedValue = container.decodeNil() ? nil : try container.decode([Element].self)
    }
}

extension KeyedEncodingContainer {
    public mutating func encode(_ value: OmittedWhenFalse, forKey key: Key) throws {
        if value.wrappedValue { try encode(true, forKey: key) }
    }

    public mutating func encode<Element>(_ value: OmittedWhenEmpty<Element>, forKey key: Key) throws {
        if let list = value.wrappedValue, !list.isEmpty { try encode(list, forKey: key) }
    }
}

extension KeyedDecodingContainer {
    public func decode<Value>(_ type: NullWhenNil<Value>.Type, forKey key: Key) throws -> NullWhenNil<Value> {
        NullWhenNil(wrappedValue: try decodeIfPresent(Value.self, forKey: key))
    }

    public func decode(_ type: OmittedWhenFalse.Type, forKey key: Key) throws -> OmittedWhenFalse {
        OmittedWhenFalse(wrappedValue: try decodeIfPresent(Bool.self, forKey: key) ?? false)
    }

    public func decode<Element>(_ type: OmittedWhenEmpty<Element>.Type, forKey key: Key) throws -> OmittedWhenEmpty<Element> {
        OmittedWhenEmpty(wrappedValue: try decodeIfPresent([Element].self, forKey: key))
    }
}
