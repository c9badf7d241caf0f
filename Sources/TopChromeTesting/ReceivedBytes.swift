#if canImport(Glibc)
import Glibc
#endif

/// What a test's client has read from its socket and not yet taken: the
/// HTTP and the WebSocket test clients read their answers through it.
public struct ReceivedBytes {
    private let fd: Int32
    /// Read, not yet taken.
    public private(set) var bytes: [UInt8] = []

    public init(from fd: Int32) {
        self.fd = fd
    }

    public var isEmpty: Bool { bytes.isEmpty }

    /// Reads until `count` bytes wait; throws `TestClientError.closed` if the socket ends first.
    public mutating func need(_ count: Int) throws {
        while bytes.count < count { try fill() }
    }

    /// The next `count` bytes.
    public mutating func take(_ count: Int) throws -> [UInt8] {
        try need(count)
        defer { bytes.removeFirst(count) }
        return Array(bytes[..<count])
    }

    /// The bytes before the next `marker`; the marker is taken too.
    public mutating func take(upTo marker: [UInt8]) throws -> [UInt8] {
        var searched = 0
        while true {
            if bytes.count >= marker.count {
                for start in max(0, searched - marker.count + 1)...(bytes.count - marker.count)
                where bytes[start..<start + marker.count].elementsEqual(marker) {
                    defer { bytes.removeFirst(start + marker.count) }
                    return Array(bytes[..<start])
                }
                searched = bytes.count
            }
            try fill()
        }
    }

    private mutating func fill() throws {
        var chunk = [UInt8](repeating: 0, count: 65_536)
        let n = recv(fd, &chunk, chunk.count, 0)
        guard n > 0 else { throw TestClientError.closed }
        bytes.append(contentsOf: chunk[..<n])
    }
}
