import AccessTokens
#if canImport(Glibc)
import Glibc
#endif
import TopChromeCore

/// Verified access tokens, found again by their raw bytes as the request
/// carries them: an app reports with one token many times a second, and a
/// signature check costs more than the whole request. A lookup copies and
/// parses nothing; a token is found by a hash of its signature's last bytes
/// and its length, then compared whole, so a forged payload under a known
/// signature is never taken for the token it copies.
struct RememberedTokens {
    /// A verified token with what a request's check reads, decided once.
    struct Grant {
        let access: AccessToken
        let session: SessionID?
    }

    private struct Entry {
        let bytes: [UInt8]
        let grant: Grant
    }

    /// One entry per hash: a second token with the same hash is verified
    /// each time instead of chained, so crafted tokens cannot slow a lookup.
    private var entries: [UInt64: Entry] = [:]

    var count: Int { entries.count }

    func grant(for credentials: ArraySlice<UInt8>) -> Grant? {
        credentials.withContiguousStorageIfAvailable { bytes -> Grant? in
            guard let entry = entries[Self.hash(bytes)], entry.bytes.count == bytes.count else { return nil }
            let same = entry.bytes.withUnsafeBufferPointer { memcmp($0.baseAddress!, bytes.baseAddress!, bytes.count) == 0 }
            return same ? entry.grant : nil
        } ?? nil
    }

    mutating func remember(_ grant: Grant, as credentials: ArraySlice<UInt8>) {
        // Its own copy: the request's buffer is reused by the connection's next request.
        let bytes = Array(credentials)
        entries[bytes.withUnsafeBufferPointer { Self.hash($0) }] = Entry(bytes: bytes, grant: grant)
    }

    mutating func forget(_ credentials: ArraySlice<UInt8>) {
        guard grant(for: credentials) != nil,
              let key = credentials.withContiguousStorageIfAvailable({ Self.hash($0) }) else { return }
        entries[key] = nil
    }

    mutating func keep(where isKept: (Grant) -> Bool) {
        entries = entries.filter { isKept($0.value.grant) }
    }

    mutating func removeAll() {
        entries.removeAll()
    }

    /// The last 16 bytes are the signature's (random to anyone without the
    /// key), mixed with the length; the whole token is compared on a hit.
    private static func hash(_ bytes: UnsafeBufferPointer<UInt8>) -> UInt64 {
        var tail: (UInt64, UInt64) = (0, 0)
        let taken = min(bytes.count, 16)
        withUnsafeMutableBytes(of: &tail) { raw in
            guard taken > 0 else { return }
            raw.copyMemory(from: UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(bytes)[(bytes.count - taken)...]))
        }
        var mixed = UInt64(bytes.count) &* 0x9E37_79B9_7F4A_7C15
        mixed = (mixed ^ tail.0) &* 0xBF58_476D_1CE4_E5B9
        mixed = (mixed ^ tail.1) &* 0x94D0_49BB_1331_11EB
        return mixed ^ (mixed >> 31)
    }
}
