import MicroHTTPD
import TopChromeCore

/// What the API reads from a request besides its route: the token's scope,
/// `Prefer: wait`, preconditions, and the body.
extension SessionAPI {
    /// `/v1` and everything under `/v1/`: what the bearer token guards.
    static func isUnderV1(_ path: [UInt8]) -> Bool {
        path.starts(with: "/v1".utf8) && (path.count == 3 || path[3] == UInt8(ascii: "/"))
    }

    /// `Prefer: wait=N` (RFC 7240), capped; nil when absent or 0. Values
    /// may be quoted and preferences may carry parameters (`wait=5; x=y`).
    /// A number of seconds too large for an `Int` is still a long wait: the cap.
    static func preferredWait(_ request: MicroHTTPDRequest, cap: Int) -> Int? {
        guard let prefer = request.headers.combined("Prefer") else { return nil }
        for preference in prefer.split(separator: ",") {
            let token = preference.split(separator: ";", maxSplits: 1).first ?? ""
            let parts = token.split(separator: "=", maxSplits: 1).map { String($0.trimmingOWS) }
            guard parts.count == 2, parts[0].lowercased() == "wait" else { continue }
            let value = parts[1].hasPrefix("\"") && parts[1].hasSuffix("\"") && parts[1].count >= 2
                ? String(parts[1].dropFirst().dropLast()) : parts[1]
            if let seconds = Int(value), seconds > 0 { return min(seconds, cap) }
            if !value.isEmpty, value.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }),
               value.contains(where: { $0 != "0" }) {
                return cap
            }
        }
        return nil
    }


    static func preconditions(of request: MicroHTTPDRequest) throws(Problem) -> Preconditions {
        try Preconditions(ifMatch: request.headers.combined("If-Match" as StaticString),
                          ifNoneMatch: request.headers.combined("If-None-Match" as StaticString))
    }

    /// Checks the media type, then reads the body with `read`.
    func body<Value>(
        of request: MicroHTTPDRequest, _ read: ([UInt8]) throws(BodyError) -> Value
    ) throws(Problem) -> Value {
        // An empty body has no media type to speak of (`curl -X POST -d ''` labels it a form).
        // `application/json` exactly, as nearly every client sends it, is checked without making a String.
        if !request.body.isEmpty, !request.headers.first("Content-Type", is: "application/json"),
           let type = request.headers["Content-Type"], !Self.isJSON(type) {
            throw Problem(status: 415, detail: "Bodies must be JSON (Content-Type: application/json), not \"\(type.prefix(64))\". With curl, use --json instead of -d.")
        }
        do {
            return try read(request.body)
        } catch {
            throw .badRequest(error.detail)
        }
    }

    /// `application/json` or any `+json` type, parameters allowed.
    static func isJSON(_ contentType: String) -> Bool {
        let mediaType = contentType.split(separator: ";", maxSplits: 1).first?
            .trimmingOWS.lowercased() ?? ""
        return mediaType == "application/json" || (mediaType.hasPrefix("application/") && mediaType.hasSuffix("+json"))
    }

    /// `"<version>.<tag>"`: the version, and the tag that tells this state
}
