/// A binary min-heap: the smallest element first, `push` and `pop` in O(log n). What the
/// settle batcher takes its batches from (files in arrival order) and what the service's loop
/// takes its next deadline from. Elements that went stale are the caller's to skip (lazy
/// deletion: cheaper than finding them inside).
public struct MinHeap<Element: Comparable & Sendable>: Sendable {
    private var items: [Element] = []

    public init() {}

    public var count: Int { items.count }
    public var isEmpty: Bool { items.isEmpty }

    /// The smallest element, or `nil` when empty.
    public var first: Element? { items.first }

    public mutating func push(_ element: Element) {
        items.append(element)
        var child = items.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard items[child] < items[parent] else { break }
            items.swapAt(child, parent)
            child = parent
        }
    }

    /// Removes and returns the smallest element.
    @discardableResult
    public mutating func pop() -> Element? {
        guard !items.isEmpty else { return nil }
        items.swapAt(0, items.count - 1)
        let smallest = items.removeLast()
        var parent = 0
        while true {
            let left = 2 * parent + 1, right = left + 1
            var least = parent
            if left < items.count && items[left] < items[least] { least = left }
            if right < items.count && items[right] < items[least] { least = right }
            if least == parent { break }
            items.swapAt(parent, least)
            parent = least
        }
        return smallest
    }

    public mutating func removeAll() {
        items.removeAll()
    }
}
