import Redis
import RedisSessionStore

/// `topchrome redis-functions list` and `… delete-unused`: each build loads
/// its own library, named by a digest of its text, so libraries of older
/// builds stay behind on every primary until an operator deletes them,
/// once no replica of those builds is left. The user needs
/// `+function|list` (and `+function|delete` to delete).
public struct FunctionLibraries: Sendable {
    /// One line per library per primary: `<primary> <name>`, and
    /// ` (this build)` or ` deleted`.
    public var lines: [String] = []
    public var failures: [String] = []

    /// 0 when every primary answered (and every deletion was made), 1 otherwise.
    public var exitStatus: Int32 { failures.isEmpty ? 0 : 1 }

    public init(endpoints: RedisEndpoints, configuration: RedisConfiguration, deleteUnused: Bool) {
        let found = RedisPrimaries.of(endpoints, configuration, &failures)
        for node in found ?? [] {
            switch RedisPrimaries.ask(node, ["FUNCTION", "LIST", "LIBRARYNAME", "topchrome_*"], configuration) {
            case let .success(.array(libraries)):
                for name in Self.names(libraries) {
                    guard name != ChromeFunctions.libraryName else {
                        lines.append("\(node) \(name) (this build)")
                        continue
                    }
                    guard deleteUnused else {
                        lines.append("\(node) \(name)")
                        continue
                    }
                    switch RedisPrimaries.ask(node, ["FUNCTION", "DELETE", name], configuration) {
                    case let .success(.error(message)): failures.append("\(node) did not delete \(name): \(message)")
                    case .success: lines.append("\(node) \(name) deleted")
                    case let .failure(error): failures.append("\(node): \(error)")
                    }
                }
            case let .success(other):
                failures.append("\(node) answered FUNCTION LIST with \(RedisPrimaries.words(other))")
            case let .failure(error):
                failures.append("\(node): \(error)")
            }
        }
    }

    /// The names in `FUNCTION LIST`'s reply (`library_name` of each), ours only:
    /// `LIBRARYNAME` takes a glob pattern.
    static func names(_ libraries: [RESPValue]) -> [String] {
        libraries.compactMap { library in
            guard case let .array(fields) = library, let at = fields.firstIndex(where: { $0.string == "library_name" }),
                  at + 1 < fields.count, let name = fields[at + 1].string, name.hasPrefix("topchrome_") else { return nil }
            return name
        }.sorted()
    }
}
