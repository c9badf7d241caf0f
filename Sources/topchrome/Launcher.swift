#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import TopChromeServer

/// Reads the configuration, starts the service, reloads its secrets on
/// SIGHUP, and stops gracefully on SIGTERM or SIGINT.
enum Launcher {
    static func run() -> Never {
        // Before the signal mask below: an exec'd program inherits it.
        if CommandLine.arguments.dropFirst().first == "watch" { runWatch() }

        // Block the signals we act on before any thread starts, so every
        // thread inherits the mask and only `sigwait` below receives them
        // (SIGHUP's default would end the process without its last
        // snapshot). This also undoes an inherited "ignore SIGINT" (servers
        // started with `&`).
        var handled = Self.handledSignals
        pthread_sigmask(SIG_BLOCK, &handled, nil)
        signal(SIGPIPE, SIG_IGN)

        var arguments = Array(CommandLine.arguments.dropFirst())
        if arguments.first == "state-file" {
            guard let command = StateFileCommand(arguments: Array(arguments.dropFirst())) else { fail(StateFileCommand.usage, status: 2) }
            for line in command.output { print(line) }
            for line in command.problems { printToStandardError("topchrome state-file: \(line)") }
            exit(command.exitStatus)
        }
        var subcommand = ["healthcheck", "check-config"].first { $0 == arguments.first }
        if arguments.first == "redis-functions" {
            guard let action = arguments.dropFirst().first, ["load", "list", "delete-unused"].contains(action) else {
                fail("topchrome: usage: topchrome redis-functions load|list|delete-unused --store redis://HOST:PORT (or rediss://HOST:PORT, redis-sentinel://HOST:PORT/MASTERNAME) [--redis-username NAME --redis-password-file PATH]", status: 2)
            }
            subcommand = "redis-functions " + action
            arguments.removeFirst()
        }
        if subcommand != nil { arguments.removeFirst() }
        let command: ServiceConfiguration.Command
        do {
            command = try ServiceConfiguration.parse(
                arguments: arguments, environment: ProcessInfo.processInfo.environment)
        } catch {
            fail("topchrome: \(error)", status: 2)
        }

        switch command {
        case .help:
            print(ServiceConfiguration.usage, terminator: "")
            exit(0)
        case .version:
            print(TopChromeService.versionLine)
            exit(0)
        case let .serve(configuration) where subcommand == "healthcheck":
            exit(HealthCheck.run(host: configuration.http.host, port: configuration.http.port))
        case let .serve(configuration) where subcommand == "check-config":
            exit(checkConfiguration(configuration))
        case let .serve(configuration) where subcommand == "redis-functions load":
            exit(loadFunctionLibrary(configuration))
        case let .serve(configuration) where subcommand == "redis-functions list":
            exit(listFunctionLibraries(configuration, deleteUnused: false))
        case let .serve(configuration) where subcommand == "redis-functions delete-unused":
            exit(listFunctionLibraries(configuration, deleteUnused: true))
        case let .serve(configuration):
            serve(configuration)
        }
    }

    private static func serve(_ configuration: ServiceConfiguration) -> Never {
        let service = TopChromeService(configuration: configuration)
        let logger = service.logger
        for warning in configuration.warnings {
            logger.log(.warn, "topchrome: \(warning)", always: true)
        }
        let started: TopChromeService.StartOutcome
        do {
            started = try service.start()
        } catch {
            logger.log(.error, "topchrome: \(error)", always: true)
            exit(error.exitStatus)
        }
        logStart(of: service, started)

        // SIGHUP reloads, as operators of nginx, Consul and Caddy expect,
        // and never stops the server; SIGTERM and SIGINT stop it.
        var handled = Self.handledSignals
        var received: Int32 = 0
        while sigwait(&handled, &received) == 0, received == SIGHUP {
            service.reload()
        }

        logger.log(.info, "topchrome stopping", ["signal": .int(Int(received)),
                                                 "timeout_ms": .int(Int(configuration.http.shutdownTimeout * 1000))],
                   always: true)
        let outcome = service.stop()
        if outcome.lostSessions != nil {
            // An orchestrator sees a failed stop; the error line says why.
            logger.log(.error, "topchrome stopped without saving its sessions; sessions changed since the last good snapshot are lost", always: true)
            exit(1)
        }
        if outcome.snapshotFailure != nil {
            logger.log(.warn, "topchrome stopped; its last snapshot failed, but the journal holds every change and the next start reads it", always: true)
            exit(0)
        }
        if outcome.requestsFinished {
            logger.log(.info, "topchrome stopped", always: true)
        } else {
            logger.log(.warn, "topchrome stopped; some requests did not finish in time", always: true)
        }
        exit(0)
    }

    /// The operator's first questions after a start: which store, did the
    /// sessions come back, was the last stop clean, and was anything dropped.
    private static func logStart(of service: TopChromeService, _ started: TopChromeService.StartOutcome) {
        let logger = service.logger
        var fields: [(String, LogValue)] = [("store", .string(service.configuration.store.description))]
        if let recovery = started.recovery {
            fields.append(("sessions_restored", .int(recovery.sessions.count)))
            fields.append(("last_stop", .string(recovery.stoppedCleanly.map { $0 ? "clean" : "unclean" } ?? "none")))
            if let age = recovery.snapshotAge { fields.append(("snapshot_age_ms", .milliseconds(age * 1000))) }
            fields.append(("sessions_from_journal", .int(recovery.fromJournal)))
            fields.append(("sessions_removed_by_journal", .int(recovery.removedByJournal)))
            fields.append(("records_dropped", .int(recovery.dropped.count)))
        }
        if started.leftoversRemoved > 0 {
            logger.log(.warn, "removed a snapshot's temp file left by a stop during a write",
                       ["temp_files_removed": .int(started.leftoversRemoved)], always: true)
        }
        for torn in started.recovery?.dropped ?? [] {
            logger.log(.warn, "state file journal \(torn)", ["dropped_bytes": .int(torn.length)], always: true)
        }
        if let failure = started.foldFailure {
            logger.log(.warn, "could not fold the journals into a snapshot at start; they are kept and read again at the next start",
                       ["error": .string("\(failure)")], always: true)
        }
        logger.log(.info, "topchrome listening on \(service.url)", fieldList: fields, always: true)
    }

    /// `topchrome check-config`: what was checked on stdout, what failed on
    /// stderr, and the exit status a deploy acts on (see `ConfigurationCheck`).
    /// Loads the Redis function library on every primary, for a service
    /// that runs as a Redis user who may only call it.
    private static func loadFunctionLibrary(_ configuration: ServiceConfiguration) -> Int32 {
        guard case let .redis(endpoints) = configuration.store else {
            fail("topchrome redis-functions load: needs --store redis://HOST:PORT[,HOST:PORT...] (rediss:// over TLS) or redis-sentinel://HOST:PORT[,HOST:PORT...]/MASTERNAME", status: 2)
        }
        let load = FunctionLibraryLoad(endpoints: endpoints, configuration: configuration.redis.client,
                                       keyPrefix: configuration.redis.keyPrefix, needs: configuration.redis.permissionsNeeded)
        for line in load.loaded + load.notes { print(line) }
        for failure in load.problems + load.failures {
            printToStandardError("topchrome redis-functions load: \(failure)")
        }
        return load.exitStatus
    }

    /// `redis-functions list`: the libraries of every build on each primary,
    /// this build's marked; `delete-unused` deletes the others.
    private static func listFunctionLibraries(_ configuration: ServiceConfiguration, deleteUnused: Bool) -> Int32 {
        guard case let .redis(endpoints) = configuration.store else {
            fail("topchrome redis-functions: needs --store redis://HOST:PORT[,HOST:PORT...] (rediss:// over TLS) or redis-sentinel://HOST:PORT[,HOST:PORT...]/MASTERNAME", status: 2)
        }
        let listing = FunctionLibraries(endpoints: endpoints, configuration: configuration.redis.client, deleteUnused: deleteUnused)
        for line in listing.lines { print(line) }
        for failure in listing.failures { printToStandardError("topchrome redis-functions: \(failure)") }
        return listing.exitStatus
    }

    private static func checkConfiguration(_ configuration: ServiceConfiguration) -> Int32 {
        let check = ConfigurationCheck(configuration)
        for line in check.checked { print("ok: " + line) }
        for line in check.problems + check.unreachable {
            printToStandardError("topchrome check-config: \(line)")
        }
        for line in configuration.warnings + check.warnings {
            printToStandardError("topchrome check-config: warning: \(line)")
        }
        switch check.exitStatus {
        case 0: print("topchrome check-config: the configuration is valid")
        case 3: print("topchrome check-config: the configuration is valid, but the Redis store did not answer")
        default: break
        }
        return check.exitStatus
    }

    /// `topchrome watch …` runs `topchrome-watch`, found next to this
    /// executable or on PATH: the server binary does not link the client.
    private static func runWatch() -> Never {
        var link = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let length = max(0, readlink("/proc/self/exe", &link, link.count - 1))
        let executable = String(decoding: link[..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        let folders = [String(executable[..<(executable.lastIndex(of: "/") ?? executable.startIndex)])]
            + (getenv("PATH").map { String(cString: $0) } ?? "").split(separator: ":").map(String.init)
        guard let program = folders.filter({ !$0.isEmpty }).map({ $0 + "/topchrome-watch" })
            .first(where: { access($0, X_OK) == 0 }) else {
            fail("topchrome: watch needs the topchrome-watch program next to topchrome or on PATH", status: 2)
        }
        let arguments = [program] + CommandLine.arguments.dropFirst(2)
        var argv = arguments.map { strdup($0) } + [nil]
        execv(program, &argv)
        fail("topchrome: cannot run \(program): \(String(cString: strerror(errno)))", status: 2)
    }

    private static var handledSignals: sigset_t {
        var set = sigset_t()
        sigemptyset(&set)
        sigaddset(&set, SIGTERM)
        sigaddset(&set, SIGINT)
        sigaddset(&set, SIGHUP)
        return set
    }

    private static func fail(_ message: String, status: Int32) -> Never {
        printToStandardError(message)
        exit(status)
    }
}

/// `line` and a newline on stderr, written at once (nothing buffered
/// that an exit could lose).
func printToStandardError(_ line: String) {
    let text = line + "\n"
    _ = write(STDERR_FILENO, text, text.utf8.count)
}
