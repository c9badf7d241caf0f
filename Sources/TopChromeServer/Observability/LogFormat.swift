public enum LogFormat: String, Sendable, CaseIterable {
    /// One JSON object per line, for log collectors.
    case json
    /// `time level message key=value …`, for people.
    case text
}
