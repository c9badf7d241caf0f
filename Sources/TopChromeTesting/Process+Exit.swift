#if canImport(Glibc)
import Glibc
#endif
import Foundation

extension Process {
    /// Waits for the program to end and returns its `terminationStatus`,
    /// as `waitUntilExit()` does, but never for ever.
    ///
    /// `waitUntilExit()` waits for Foundation to hear of the exit (a
    /// `SIGCHLD`), and with tests starting programs in parallel that word
    /// can be lost: a TSan run hung 25 minutes on a `redis-cli` that had
    /// long exited, a zombie nobody reaped. A program that is a zombie for
    /// two seconds while Foundation still thinks it runs is reaped here.
    @discardableResult
    public func waitForExit() -> Int32 {
        let pid = processIdentifier
        var zombieSince: ContinuousClock.Instant?
        while isRunning {
            if Self.isZombie(pid) {
                let since = zombieSince ?? .now
                zombieSince = since
                var raw: Int32 = 0
                if ContinuousClock.now - since > .seconds(2), waitpid(pid, &raw, WNOHANG) == pid {
                    // WIFEXITED / WEXITSTATUS / WTERMSIG, which Swift does not import.
                    return raw & 0x7F == 0 ? (raw >> 8) & 0xFF : 128 + (raw & 0x7F)
                }
            }
            usleep(1_000)
        }
        return terminationStatus
    }

    private static func isZombie(_ pid: Int32) -> Bool {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let state = stat.split(separator: ")").last?.split(separator: " ").first else { return false }
        return state == "Z"
    }
}
