/// A first-in first-out queue of the commands awaiting replies: Redis answers
/// a connection's commands in the order they were sent.
struct FIFO<Element> {
    private var items: [Element] = []
    private var head = 0

    var isEmpty: Bool { head == items.count }
    var count: Int { items.count - head }
    var first: Element? { isEmpty ? nil : items[head] }
    var indices: Range<Int> { head..<items.count }

    subscript(index: Int) -> Element {
        get { items[index] }
        set { items[index] = newValue }
    }

    mutating func append(_ element: Element) {
        items.append(element)
    }

    mutating func popFirst() -> Element? {
        guard !isEmpty else { return nil }
        let element = items[head]
        head += 1
        if head == items.count {
            items.removeAll(keepingCapacity: true)
            head = 0
        } else if head >= 1024, head * 2 >= items.count {
            items.removeFirst(head)
            head = 0
        }
        return element
    }

    mutating func removeAll() -> [Element] {
        defer { items.removeAll(keepingCapacity: true); head = 0 }
        return Array(items[head...])
    }
}
