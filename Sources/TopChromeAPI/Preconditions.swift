import TopChromeCore

/// `If-Match` and `If-None-Match` (RFC 9110 §13), read against a session's
/// entity tag, `"<version>.<tag>"`. They let a client change a session only
/// if nobody changed it since the client last read it.
struct Preconditions {
    /// A parsed field: `*`, or the states its tags name.
    enum Tags: Equatable {
        case any
        case states(strong: Set<EntityTag>, weak: Set<EntityTag>)

        /// Tags that are not ours (not `"<version>.<tag>"` exactly as ETag
        /// gives it; a bare `"3"` of the format before tags neither) can never match;
        /// nil when the field is not a list of entity tags at all (RFC 9110
        /// §8.8.3: `W/` optional, then a quoted string without quotes inside),
        /// such as a bare `7`: a client that sent it meant something the
        /// server cannot know, and an answer to a guess would mislead it.
        init?(_ field: String) {
            var strong: Set<EntityTag> = [], weak: Set<EntityTag> = []
            var any = false
            let bytes = Array(field.utf8)
            var index = 0
            func skipWhitespace() {
                while index < bytes.count, bytes[index] == UInt8(ascii: " ") || bytes[index] == UInt8(ascii: "\t") { index += 1 }
            }
            while index < bytes.count {
                skipWhitespace()
                // Empty elements of a list are allowed (RFC 9110 §5.6.1.2).
                if index == bytes.count || bytes[index] == UInt8(ascii: ",") {
                    index += 1
                    continue
                }
                if bytes[index] == UInt8(ascii: "*") {
                    any = true
                    index += 1
                } else {
                    let isWeak = bytes[index...].starts(with: "W/".utf8)
                    if isWeak { index += 2 }
                    guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { return nil }
                    let start = index + 1
                    // etagc: visible ASCII but the quote, or obs-text.
                    guard let end = bytes[start...].firstIndex(where: { !($0 == 0x21 || (0x23...0x7E).contains($0) || $0 >= 0x80) }),
                          bytes[end] == UInt8(ascii: "\"") else { return nil }
                    if let tag = EntityTag(bytes[start..<end]) {
                        if isWeak { weak.insert(tag) } else { strong.insert(tag) }
                    }
                    index = end + 1
                }
                skipWhitespace()
                guard index == bytes.count || bytes[index] == UInt8(ascii: ",") else { return nil }
            }
            self = any ? .any : .states(strong: strong, weak: weak)
        }
    }

    let ifMatch: Tags?
    let ifNoneMatch: Tags?

    init(ifMatch: String?, ifNoneMatch: String?) throws(Problem) {
        self.ifMatch = try ifMatch.map { field throws(Problem) in try Self.tags(field, "If-Match") }
        self.ifNoneMatch = try ifNoneMatch.map { field throws(Problem) in try Self.tags(field, "If-None-Match") }
    }

    private static func tags(_ field: String, _ name: String) throws(Problem) -> Tags {
        guard let tags = Tags(field) else {
            throw .badRequest("\(name) must be * or entity tags quoted as ETag gives them (\"7.0a1b2c3d4e5f\", not 7.0a1b2c3d4e5f), not '\(field.prefix(64))'; nothing was changed.")
        }
        return tags
    }

    /// `If-Match` compares strongly: a weak tag never matches.
    var matchCondition: VersionCondition {
        switch ifMatch {
        case nil, .any: .always
        case let .states(strong, _): .oneOf(strong)
        }
    }

    /// `If-None-Match` compares weakly; `*` fails on any existing session.
    var noneMatchCondition: VersionCondition {
        switch ifNoneMatch {
        case nil: .always
        case .any: .never
        case let .states(strong, weak): .noneOf(strong.union(weak))
        }
    }

    /// For methods that change the session: both must hold, else 412.
    var forChange: VersionCondition {
        switch (matchCondition, noneMatchCondition) {
        case (.always, let other), (let other, .always): other  // nearly every request: build nothing
        case let (match, noneMatch): .all([match, noneMatch])
        }
    }
}
