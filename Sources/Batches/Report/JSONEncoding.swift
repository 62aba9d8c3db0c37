/// Encodes any `Encodable` into a `JSONValue` whose objects keep the order their keys were encoded
/// in. A synthesized `Codable` conformance encodes properties in declaration order, so the report's
/// field order (reference: The report) is simply the order of its types' properties: a new field is
/// one new property, in its place.
extension JSONValue {
    /// The JSON form of `value`, objects in encoding order.
    /// - Throws: whatever `value`'s `encode(to:)` throws (this encoder itself never does).
    public init(encoding value: some Encodable) throws {
        let node = Node()
        try node.set(value, codingPath: [])
        self = node.json
    }
}

/// One value under construction: a leaf, an object whose pairs keep their order, or an array.
private final class Node {
    enum Content {
        case unset
        case leaf(JSONValue)
        case object([(String, Node)])
        case array([Node])
    }

    var content = Content.unset

    var json: JSONValue {
        switch content {
        case .unset: .object([])
        case .leaf(let value): value
        case .object(let pairs): .object(pairs.map { ($0.0, $0.1.json) })
        case .array(let nodes): .array(nodes.map(\.json))
        }
    }

    /// Encodes `value` into this node: plain values directly, the rest through their
    /// `encode(to:)`.
    func set(_ value: some Encodable, codingPath: [any CodingKey]) throws {
        if let leaf = Self.leaf(value) {
            content = .leaf(leaf)
        } else {
            try value.encode(to: NodeEncoder(node: self, codingPath: codingPath))
        }
    }

    private static func leaf(_ value: some Encodable) -> JSONValue? {
        switch value {
        case let v as String: .string(v)
        case let v as Bool: .bool(v)
        case let v as Int: .int(v)
        case let v as Double: .double(v)
        case let v as Float: .double(Double(v))
        case let v as any BinaryInteger: Int(exactly: v).map(JSONValue.int) ?? .double(Double(v))
        default: nil
        }
    }

    /// The child for `key`, replacing an earlier value under the same key in place.
    func child(forKey key: String) -> Node {
        var pairs: [(String, Node)] = []
        if case .object(let existing) = content { pairs = existing }
        let node = Node()
        if let i = pairs.firstIndex(where: { $0.0 == key }) {
            pairs[i].1 = node
        } else {
            pairs.append((key, node))
        }
        content = .object(pairs)
        return node
    }

    func appendChild() -> Node {
        var nodes: [Node] = []
        if case .array(let existing) = content { nodes = existing }
        let node = Node()
        nodes.append(node)
        content = .array(nodes)
        return node
    }

    var count: Int {
        if case .array(let nodes) = content { return nodes.count }
        return 0
    }

    func becomeObject() { if case .object = content {} else { content = .object([]) } }
    func becomeArray() { if case .array = content {} else { content = .array([]) } }
}

private struct IndexKey: CodingKey {
    var intValue: Int?
    var stringValue: String { String(intValue ?? 0) }
    init(_ index: Int) { intValue = index }
    init?(stringValue: String) { return nil }
    init?(intValue: Int) { self.intValue = intValue }
}

private struct NodeEncoder: Encoder {
    let node: Node
    let codingPath: [any CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        node.becomeObject()
        return KeyedEncodingContainer(Keyed<Key>(node: node, codingPath: codingPath))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        node.becomeArray()
        return Unkeyed(node: node, codingPath: codingPath)
    }

    func singleValueContainer() -> any SingleValueEncodingContainer {
        Single(node: node, codingPath: codingPath)
    }
}

private struct Keyed<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let node: Node
    let codingPath: [any CodingKey]

    mutating func encodeNil(forKey key: Key) throws {
        node.child(forKey: key.stringValue).content = .leaf(.null)
    }

    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
        try node.child(forKey: key.stringValue).set(value, codingPath: codingPath + [key])
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type,
                                                        forKey key: Key) -> KeyedEncodingContainer<NestedKey> {
        let child = node.child(forKey: key.stringValue)
        child.becomeObject()
        return KeyedEncodingContainer(Keyed<NestedKey>(node: child, codingPath: codingPath + [key]))
    }

    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
        let child = node.child(forKey: key.stringValue)
        child.becomeArray()
        return Unkeyed(node: child, codingPath: codingPath + [key])
    }

    mutating func superEncoder() -> any Encoder {
        NodeEncoder(node: node.child(forKey: "super"), codingPath: codingPath)
    }

    mutating func superEncoder(forKey key: Key) -> any Encoder {
        NodeEncoder(node: node.child(forKey: key.stringValue), codingPath: codingPath + [key])
    }
}

private struct Unkeyed: UnkeyedEncodingContainer {
    let node: Node
    let codingPath: [any CodingKey]
    var count: Int { node.count }

    mutating func encodeNil() throws { node.appendChild().content = .leaf(.null) }

    mutating func encode<T: Encodable>(_ value: T) throws {
        let key = IndexKey(count)
        try node.appendChild().set(value, codingPath: codingPath + [key])
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type) -> KeyedEncodingContainer<NestedKey> {
        let key = IndexKey(count), child = node.appendChild()
        child.becomeObject()
        return KeyedEncodingContainer(Keyed<NestedKey>(node: child, codingPath: codingPath + [key]))
    }

    mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
        let key = IndexKey(count), child = node.appendChild()
        child.becomeArray()
        return Unkeyed(node: child, codingPath: codingPath + [key])
    }

    mutating func superEncoder() -> any Encoder {
        let key = IndexKey(count)
        return NodeEncoder(node: node.appendChild(), codingPath: codingPath + [key])
    }
}

private struct Single: SingleValueEncodingContainer {
    let node: Node
    let codingPath: [any CodingKey]

    mutating func encodeNil() throws { node.content = .leaf(.null) }

    mutating func encode<T: Encodable>(_ value: T) throws {
        try node.set(value, codingPath: codingPath)
    }
}
