/// Everything an operator can set, from flags or their `TOPCHROME_*`
/// environment twins (flags win, so a one-off run can override a container's
/// environment), grouped by the part each configures. Each group holds its
/// defaults (which `--help` reads, through ``ServiceConfiguration/Option``),
/// its options and its own checks.
public struct ServiceConfiguration: Sendable, Equatable {
    public var http = HTTPSettings()
    public var tls = TLSSettings()
    public var auth = AuthSettings()
    public var tokens = TokenSettings()
    public var limits = LimitSettings()
    public var sessions = SessionSettings()
    public var logging = LogSettings()
    public var store = SessionStorage.memory
    public var redis = RedisSettings()
    public var stateFile = StateFileSettings()

    public init() {}

    /// What a command line asked for.
    public enum Command: Equatable, Sendable {
        case serve(ServiceConfiguration)
        case help
        case version
    }

    /// A bad flag or value; the message names it and says what is allowed.
    public struct UsageError: Error, Equatable, CustomStringConvertible {
        public let description: String
    }

    /// Reads `arguments` (without the program name) over `environment`.
    public static func parse(
        arguments: [String], environment: [String: String]
    ) throws(UsageError) -> Command {
        // `topchrome help`, as `git help` and `go help` have it.
        if arguments.first == "help" { return .help }
        // `topchrome version`, likewise; `-v` as most tools read it (never "verbose" here).
        if arguments.first == "version" { return .version }
        var flags: [(Option, String)] = []
        var remaining = arguments[...]
        while let argument = remaining.popFirst() {
            if argument == "--help" || argument == "-h" { return .help }
            if argument == "--version" || argument == "-v" { return .version }
            let (name, inlineValue) = split(argument)
            guard let option = options.first(where: { "--" + $0.name == name }) else {
                throw UsageError(description: "unknown option '\(argument)' (see --help)")
            }
            guard let value = inlineValue ?? remaining.popFirst() else {
                throw UsageError(description: "--\(option.name) needs a value")
            }
            flags.append((option, value))
        }
        var configuration = ServiceConfiguration()
        // The environment first, then flags over it; a variable a flag
        // overrides is not read at all, so its value cannot stop the start.
        let flagged = Set(flags.map(\.0.name))
        /// Where each option given came from, as messages name it.
        var given: [String: String] = [:]
        for option in options where !flagged.contains(option.name) {
            if let value = environment[option.environmentName] {
                try option.apply(value, option.environmentName, &configuration)
                given[option.name] = option.environmentName
            }
        }
        for (option, value) in flags {
            try option.apply(value, "--\(option.name)", &configuration)
            given[option.name] = "--\(option.name)"
        }
        try configuration.tls.check(given)
        try configuration.redis.secure(configuration.store, given)
        try configuration.tokens.check(given, globalToken: configuration.auth.token != nil)
        // An option that would do nothing with the store chosen is refused:
        // an operator who set it expects it to hold.
        switch configuration.store {
        case .memory:
            if let source = options.lazy.filter(\.redisOnly).compactMap({ given[$0.name] }).first {
                throw UsageError(description: "\(source) is for a Redis store and does nothing with the memory store; add --store redis://HOST:PORT, or remove it")
            }
            try configuration.stateFile.check(given)
        case .redis:
            if let source = given["state-file"] {
                throw UsageError(description: "\(source) is for the memory store; Redis keeps sessions itself (RDB or AOF persistence)")
            }
            if let source = given["snapshot-interval"] ?? given["fsync"] {
                throw UsageError(description: "\(source) is for the memory store's state file; Redis keeps sessions itself (RDB or AOF persistence)")
            }
            if let source = given["max-sessions"] {
                throw UsageError(description: "\(source) is for the memory store; a Redis store is bounded by Redis's own maxmemory (with maxmemory-policy noeviction, a full Redis makes creates 503)")
            }
        }
        return .serve(configuration)
    }

    private static func split(_ argument: String) -> (String, String?) {
        guard argument.hasPrefix("--"), let equals = argument.firstIndex(of: "=") else { return (argument, nil) }
        return (String(argument[..<equals]), String(argument[argument.index(after: equals)...]))
    }
}
