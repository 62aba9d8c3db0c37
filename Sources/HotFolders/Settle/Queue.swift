/// A first-in-first-out queue: an array and the index of its head, compacted once half of it
/// is taken (`removeFirst` on an array moves every element).
public struct Queue<Element: Sendable>: Sendable {
    private var storage: [Element] = []
    private var head = 0

    public init() {}

    public var first: Element? { head < storage.count ? storage[head] : nil }
    public var elements: ArraySlice<Element> { storage[head...] }
    public var isEmpty: Bool { head == storage.count }
    public var count: Int { storage.count - head }

    public mutating func append(_ element: Element) {
        storage.append(element)
    }

    public mutating func removeFirst() {
        head += 1
        if head == storage.count {
            storage.removeAll(keepingCapacity: true)
            head = 0
        } else if head > 1024 && head * 2 > storage.count {
            storage.removeFirst(head)
            head = 0
        }
    }

    public mutating func removeAll() {
        storage.removeAll()
        head = 0
    }
}
