#if canImport(Glibc)
import Glibc
#endif
import Foundation

extension Process {
    /// Waits for the program to end and returns its `terminationStatus`,
    /// as `waitUntilExit()` does, but never for ever.
    ///
    /// `waitUntilExit()` waits for Foundation to hear of the exit, and with
    /// tests starting programs in parallel that word can be late or lost:
    /// a process that outlives the program holding what it inherited (a
    /// Redis another test started meanwhile) keeps Foundation thinking it
    /// runs. A program that is a zombie for two seconds while Foundation
    /// still thinks it runs is reaped here.
    @discardableResult
    public func waitForExit() -> Int32 {
        // Without a deadline only an exit ends the wait.
        waitForExit(until: nil) ?? terminationStatus
    }

    /// As ``waitForExit()``, but nil if the program still runs after
    /// `seconds` (times `testTimeScale`); ending it is the caller's.
    public func waitForExit(within seconds: Double) -> Int32? {
        waitForExit(until: .now + .milliseconds(Int(seconds * testTimeScale * 1000)))
    }

    private func waitForExit(until deadline: ContinuousClock.Instant?) -> Int32? {
        let pid = processIdentifier
        var zombieSince: ContinuousClock.Instant?
        var polls = 0
        while isRunning {
            if let deadline, ContinuousClock.now >= deadline { return nil }
            polls += 1
            // Foundation hears of most exits within milliseconds: look at /proc only now and then.
            if polls % 100 == 0, Self.isZombie(pid) {
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

    /// Read with POSIX calls: `String(contentsOfFile:)` leaks its buffer
    /// on a `/proc` file (LeakSanitizer, 4 KiB a call).
    private static func isZombie(_ pid: Int32) -> Bool {
        let file = open("/proc/\(pid)/stat", O_RDONLY)
        guard file >= 0 else { return false }
        defer { close(file) }
        var bytes = [UInt8](repeating: 0, count: 512)
        let count = read(file, &bytes, bytes.count)
        guard count > 0 else { return false }
        // "pid (name) S ...": the state follows the name's last parenthesis.
        guard let parenthesis = bytes[..<count].lastIndex(of: UInt8(ascii: ")")), parenthesis + 2 < count else { return false }
        return bytes[parenthesis + 2] == UInt8(ascii: "Z")
    }
}
