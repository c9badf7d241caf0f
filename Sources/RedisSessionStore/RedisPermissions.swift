/// The Redis commands the store needs its user's ACL to allow: those the
/// library's functions run (as the caller, so Redis checks them against the
/// caller's ACL) and those the client sends itself. The library's are read
/// from its text, so the list cannot drift from it; `check-config`,
/// `redis-functions load` and the start ask Redis (`ACL DRYRUN`) about each,
/// and docs/redis.md's ACL is held to it by a test.
public struct RedisPermission: Sendable, Hashable {
    /// When the store sends the command.
    public enum Need: Sendable, Hashable {
        /// Always.
        case always
        /// With a Redis Cluster only.
        case cluster
        /// With `--redis-wait-replicas` only.
        case waitingForReplicas
        /// To load the library (`redis-functions load`, or the service where
        /// it finds it missing): a user that may only call it does without.
        case loadingTheLibrary
        /// To name its connections (`CLIENT SETNAME`): refused, it is let
        /// be, so it is granted but never checked.
        case naming
    }

    /// As `ACL SETUSER` grants it: `+hset`, `+cluster|slots`.
    public let grant: String
    /// The command as `ACL DRYRUN` takes it after the user's name, with a
    /// session's key and channel where it has them (the ACL's key and
    /// channel patterns count too).
    public let dryRun: [String]
    public let need: Need
}

public enum RedisPermissions {
    /// The commands the library's functions run, in upper case, as its text
    /// names them (`redis.call('HSET'`, and `permitted('SPUBLISH'`, which
    /// checks one before the change's first write).
    public static let libraryCommands: [String] = {
        var names = Set<String>()
        for marker in ["redis.call('", "redis.pcall('", "permitted('"] {
            for part in ChromeFunctions.library.split(separator: marker).dropFirst() {
                if let end = part.firstIndex(of: "'") { names.insert(part[..<end].uppercased()) }
            }
        }
        return names.sorted()
    }()

    /// Every command the store may send, for a user of `keyPrefix`'s keys:
    /// the library's and the client's own.
    public static func all(keyPrefix: String) -> [RedisPermission] {
        let key = keyPrefix + "{acl-check}", channel = key + ":changes"
        let function = ChromeFunctions.libraryName
        func sample(_ command: String) -> [String] {
            switch command {
            case "DEL", "EXISTS": [command, key]
            case "HMGET": [command, key, "v"]
            case "HSET": [command, key, "e", "1.000000000000"]
            case "PEXPIRE": [command, key, "1"]
            case "SPUBLISH": [command, channel, "gone"]
            // A command the library takes up must be given its arguments here.
            default: [command]
            }
        }
        let library = libraryCommands.map { RedisPermission(grant: "+" + $0.lowercased(), dryRun: sample($0), need: .always) }
        let client: [RedisPermission] = [
            RedisPermission(grant: "+ping", dryRun: ["PING"], need: .always),
            RedisPermission(grant: "+info", dryRun: ["INFO", "cluster"], need: .always),
            RedisPermission(grant: "+fcall", dryRun: ["FCALL", function + "_apply", "1", key], need: .always),
            RedisPermission(grant: "+fcall_ro", dryRun: ["FCALL_RO", function + "_read", "1", key], need: .always),
            // keepAlive slides a watched session's expiry, or asks whether it exists.
            RedisPermission(grant: "+exists", dryRun: ["EXISTS", key], need: .always),
            RedisPermission(grant: "+pexpire", dryRun: ["PEXPIRE", key, "1"], need: .always),
            // A change that ran on a node importing its slot is published again.
            RedisPermission(grant: "+spublish", dryRun: ["SPUBLISH", channel, "gone"], need: .always),
            RedisPermission(grant: "+ssubscribe", dryRun: ["SSUBSCRIBE", channel], need: .always),
            RedisPermission(grant: "+sunsubscribe", dryRun: ["SUNSUBSCRIBE", channel], need: .always),
            // A change's deadline on the node's clock.
            RedisPermission(grant: "+time", dryRun: ["TIME"], need: .always),
            RedisPermission(grant: "+cluster|slots", dryRun: ["CLUSTER", "SLOTS"], need: .cluster),
            RedisPermission(grant: "+cluster|nodes", dryRun: ["CLUSTER", "NODES"], need: .cluster),
            RedisPermission(grant: "+asking", dryRun: ["ASKING"], need: .cluster),
            RedisPermission(grant: "+wait", dryRun: ["WAIT", "1", "1"], need: .waitingForReplicas),
            RedisPermission(grant: "+client|setname", dryRun: ["CLIENT", "SETNAME", "topchrome"], need: .naming),
            RedisPermission(grant: "+function|load", dryRun: ["FUNCTION", "LOAD", "REPLACE", "#!lua name=x\n"], need: .loadingTheLibrary),
        ]
        var seen = Set<String>()
        return (library + client).filter { seen.insert($0.grant).inserted }
    }

    /// The least ACL the service runs with (docs/redis.md prints it): every
    /// command but `FUNCTION LOAD`, and `AUTH`, which every user may send.
    public static func leastACL(keyPrefix: String) -> [String] {
        ["+auth"] + all(keyPrefix: keyPrefix).filter { $0.need != .loadingTheLibrary }.map(\.grant)
    }
}
