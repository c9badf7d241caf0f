import StrictJSON

/// The keys tokens are verified with, read from a JWKS document
/// (`{"keys": [...]}`, RFC 7517 §5). A token names its key by `kid`; a set
/// of one key also takes tokens that name none.
public struct KeySet: Sendable {
    public let keys: [VerificationKey]

    public init(keys: [VerificationKey]) {
        self.keys = keys
    }

    public init(jwks bytes: [UInt8]) throws(KeySetError) {
        let document: JSONValue
        do {
            document = try JSONReader.parse(bytes)
        } catch {
            throw KeySetError("not JSON (\(error.message) at byte \(error.offset))")
        }
        guard case let .object(members) = document, case let .array(entries)? = members["keys"] else {
            throw KeySetError("not a JWKS: no 'keys' array")
        }
        guard !entries.isEmpty else { throw KeySetError("the 'keys' array is empty") }
        var keys: [VerificationKey] = []
        for entry in entries { keys.append(try VerificationKey(jwk: entry)) }
        if keys.count > 1 {
            var seen = Set<String>()
            for key in keys {
                guard let id = key.id else { throw KeySetError("a set of several keys needs a 'kid' on each") }
                guard seen.insert(id).inserted else { throw KeySetError("two keys have the kid '\(id)'") }
            }
        }
        self.keys = keys
    }

    func key(named id: String?) -> VerificationKey? {
        guard let id else { return keys.count == 1 ? keys[0] : nil }
        return keys.first { $0.id == id }
    }
}
