import Foundation
import Testing

/// The `topchrome` commands besides serving, run as operators run them:
/// `--version`, `check-config`, `healthcheck`.
@Suite struct CommandLineTests {
    typealias RunningServer = ProcessLifecycleTests.RunningServer

    /// The commit this checkout is at, as the build embeds it; "unknown"
    /// where git cannot tell (then the build cannot either).
    static let commitBuilt: String = {
        let git = Process()
        git.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        git.arguments = ["git", "-C", URL(fileURLWithPath: #filePath).deletingLastPathComponent().path,
                         "rev-parse", "--short", "HEAD"]
        let output = Pipe()
        git.standardOutput = output
        git.standardError = FileHandle.nullDevice
        guard (try? git.run()) != nil else { return "unknown" }
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        git.waitUntilExit()
        let commit = text.trimmingCharacters(in: .whitespacesAndNewlines)
        return git.terminationStatus == 0 && !commit.isEmpty ? commit : "unknown"
    }()

    /// Runs `topchrome` with `arguments` to its end: status, stdout, stderr.
    static func run(_ arguments: [String], environment: [String: String]? = nil,
                    within seconds: Double = 10) throws -> (status: Int32?, output: String, errors: String) {
        let process = try RunningServer(arguments, environment: environment)
        let status = process.waitForExit(within: seconds)
        let errors = process.standardError  // waits for the last chunk
        return (status, process.standardOutput, errors)
    }

    /// `--version`, `-v` and `topchrome version` all name the build: the
    /// version and the commit it was built from.
    @Test func versionNamesTheBuild() throws {
        for arguments in [["--version"], ["-v"], ["version"], ["--port", "1", "--version"]] {
            let run = try Self.run(arguments)
            #expect(run.status == 0, "\(arguments)")
            #expect(run.output == "topchrome 1.0.0 (commit \(Self.commitBuilt))\n", "\(arguments): \(run.output)")
        }
    }
}
