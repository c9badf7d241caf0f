/// `topchrome --help`: the commands, then every option with its default
/// and its environment variable, from the option table.
extension ServiceConfiguration {
    public static var usage: String {
        var text = """
        Usage: topchrome [options]
               topchrome healthcheck [options]   (exit 0 if the server at --host/--port is healthy;
                                                  else exit 1, saying why on stderr)
               topchrome check-config [options]  (check the options, environment, token, TLS and
                                                  state files and the Redis store, without serving:
                                                  exit 0 valid, 2 to fix, 3 Redis not reached)
               topchrome redis-functions load [options]
                                                 (load the Redis function library on every primary of
                                                  --store, so the service may run as a user who only calls it)
               topchrome redis-functions list|delete-unused [options]
                                                 (list the libraries of every build on each primary, this
                                                  build's marked; or delete all but this build's)
               topchrome state-file check PATH   (read the state file and its journals as a start would:
                                                  exit 0 readable, 2 damaged, naming each line and byte)
               topchrome state-file repair PATH  (keep every readable session in a new state file,
                                                  the old files kept beside it; the server stopped)
               topchrome version                 (also -v, --version: the version and commit)
               topchrome watch [--auth-token-file FILE] URL ID
                                                 (print each state of session ID as it arrives;
                                                  topchrome watch --help says more)

        Serves the top chrome state (inset, isRevealed) of app sessions over HTTP.
        Every option also reads from its environment variable; options win.
        SIGTERM or SIGINT stops gracefully; SIGHUP never stops: it reads the
        token file and the TLS certificate and key again, keeping the old ones
        if the new ones cannot be used, and logs what it did.

        Options:

        """
        let defaults = ServiceConfiguration()
        let rows = options.map { ("--\($0.name) \($0.placeholder)", "\($0.help(defaults)) [\($0.environmentName)]") }
            + [("--help", "Show this help (also: topchrome help)."), ("--version", "Show the version and the commit built (also: -v, topchrome version).")]
        // The longest flag sets the column, so no description runs into its flag.
        let width = rows.map(\.0.count).max() ?? 0
        for (flag, help) in rows {
            text += "  " + flag + String(repeating: " ", count: width - flag.count + 2) + help + "\n"
        }
        return text
    }
}
