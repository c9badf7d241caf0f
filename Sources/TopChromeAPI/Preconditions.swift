import TopChromeCore

/// `If-Match` and `If-None-Match` (RFC 9110 §13), read against a session's
/// version, which is its entity tag. They let a client change a session only
/// if nobody changed it since the client last read it.
struct Preconditions {
    /// A parsed field: `*`, or the versions its tags name.
    enum Tags: Equatable {
        case any
        case versions(strong: Set<UInt64>, weak: Set<UInt64>)

        /// Tags that are not ours (not a quoted version) can never match.
        init(_ field: String) {
            var strong: Set<UInt64> = [], weak: Set<UInt64> = []
            for part in field.split(separator: ",") {
                var tag = part.trimmingOWS
                if tag == "*" {
                    self = .any
                    return
                }
                let isWeak = tag.hasPrefix("W/")
                if isWeak { tag = tag.dropFirst(2) }
                guard tag.count >= 3, tag.first == "\"", tag.last == "\"",
                      let version = Preconditions.version(tag.dropFirst().dropLast()) else { continue }
                if isWeak { weak.insert(version) } else { strong.insert(version) }
            }
            self = .versions(strong: strong, weak: weak)
        }
    }

    /// The version an entity tag's text names, compared as text as RFC 9110
    /// wants: only the exact digits we send (`"3"`, never `"03"` or `"+3"`).
    fileprivate static func version(_ text: Substring) -> UInt64? {
        guard let first = text.first, first != "0", text.allSatisfy({ $0.isASCII && $0.isNumber }) else { return nil }
        return UInt64(text)
    }

    let ifMatch: Tags?
    let ifNoneMatch: Tags?

    init(ifMatch: String?, ifNoneMatch: String?) {
        self.ifMatch = ifMatch.map(Tags.init)
        self.ifNoneMatch = ifNoneMatch.map(Tags.init)
    }

    /// `If-Match` compares strongly: a weak tag never matches.
    var matchCondition: VersionCondition {
        switch ifMatch {
        case nil, .any: .always
        case let .versions(strong, _): .versionIn(strong)
        }
    }

    /// `If-None-Match` compares weakly; `*` fails on any existing session.
    var noneMatchCondition: VersionCondition {
        switch ifNoneMatch {
        case nil: .always
        case .any: .never
        case let .versions(strong, weak): .versionNotIn(strong.union(weak))
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
