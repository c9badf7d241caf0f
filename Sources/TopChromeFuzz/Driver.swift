#if canImport(Glibc)
import Glibc
#endif
import Foundation

/// One fuzz target: runs one input and returns, or stops the process through
/// `check`/`fail` when an invariant does not hold.
struct FuzzTarget: Sendable {
    let name: String
    let summary: String
    let run: @Sendable ([UInt8]) -> Void
}

/// Picks the target from the first argument and hands the rest to libFuzzer
/// (built with `-DFUZZING`) or, in a plain build, replays the given files so
/// the seed corpora double as a quick regression check.
enum FuzzDriver {
    static let targets: [FuzzTarget] = [JSONTarget.target, RequestTarget.target, BodyTarget.target, SnapshotTarget.target,
                                           JournalTarget.target, EventStreamTarget.target, RESPTarget.target, ClusterTarget.target,
                                           FunctionsTarget.target, WebSocketFrameTarget.target,
                                           TokenTarget.target]

    /// Set from the first argument and exported, so processes libFuzzer
    /// starts itself (`-fork`, `-jobs`, `-merge`) run the same target.
    static let environmentKey = "TOPCHROME_FUZZ_TARGET"

    static func main() -> Never {
        var arguments = CommandLine.arguments
        let program = arguments.isEmpty ? "TopChromeFuzz" : arguments.removeFirst()
        let named = arguments.first.flatMap { name in targets.first { $0.name == name } }
        if named != nil { arguments.removeFirst() }
        guard let target = named ?? ProcessInfo.processInfo.environment[environmentKey]
            .flatMap({ name in targets.first { $0.name == name } }) else {
            usage(program)
        }
        setenv(environmentKey, target.name, 1)
        selected = target
        #if FUZZING
        exit(runLibFuzzer(program: program, arguments: arguments))
        #else
        exit(replay(target, paths: arguments))
        #endif
    }

    private static func usage(_ program: String) -> Never {
        var text = "usage: \(program) TARGET [libFuzzer flags] [CORPUS_DIR | FILE]...\n\ntargets:\n"
        for target in targets {
            text += "  " + target.name.padding(toLength: 11, withPad: " ", startingAt: 0) + target.summary + "\n"
        }
        #if !FUZZING
        text += "\nThis build has no libFuzzer (build with -DFUZZING, see Tests/scripts/fuzz.sh): it replays the given files.\n"
        #endif
        FileHandle.standardError.write(Data(text.utf8))
        exit(2)
    }

    /// The target the libFuzzer callback runs; set once, before fuzzing starts.
    nonisolated(unsafe) static var selected: FuzzTarget?

    static func runOne(_ data: UnsafePointer<UInt8>?, _ size: Int) {
        guard let target = selected else { return }
        let bytes = data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? []
        target.run(bytes)
    }

    #if !FUZZING
    /// Runs every file named, or found in a named folder, through `target` once.
    private static func replay(_ target: FuzzTarget, paths: [String]) -> Int32 {
        var count = 0
        for path in paths where !path.hasPrefix("-") {
            var isFolder: ObjCBool = false
            guard FileManager.default.fileExists(atPath: path, isDirectory: &isFolder) else {
                FileHandle.standardError.write(Data("no such file: \(path)\n".utf8))
                return 1
            }
            let files = isFolder.boolValue
                ? ((try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []).sorted().map { path + "/" + $0 }
                : [path]
            for file in files {
                guard let data = FileManager.default.contents(atPath: file) else { continue }
                target.run(Array(data))
                count += 1
            }
        }
        print("\(target.name): replayed \(count) inputs, all invariants held")
        return 0
    }
    #endif
}

#if FUZZING
/// libFuzzer's driver, for programs with their own `main` (SwiftPM gives
/// every executable one, so libFuzzer's `main` is never linked in).
@_silgen_name("LLVMFuzzerRunDriver")
private func llvmFuzzerRunDriver(
    _ argc: UnsafeMutablePointer<CInt>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
    _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt
) -> CInt

/// The argument vector libFuzzer keeps for the whole run (never freed).
nonisolated(unsafe) private var fuzzerArgv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?

extension FuzzDriver {
    /// libFuzzer sees the command line without the target's name.
    static func runLibFuzzer(program: String, arguments: [String]) -> CInt {
        let all = [program] + arguments
        let argv = UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>.allocate(capacity: all.count + 1)
        for (index, argument) in all.enumerated() { argv[index] = strdup(argument) }
        argv[all.count] = nil
        fuzzerArgv = argv
        var argc = CInt(all.count)
        var argvPointer: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = argv
        return llvmFuzzerRunDriver(&argc, &argvPointer) { data, size in
            FuzzDriver.runOne(data, size)
            return 0
        }
    }
}
#endif
