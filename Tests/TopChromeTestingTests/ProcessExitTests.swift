import Foundation
import Testing
import TopChromeTesting

/// Waiting for the programs the tests run: their status as they ended.
@Suite struct ProcessExitTests {
    @Test func theProgramsExitStatusIsTold() throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", "exit 3"]
        try process.run()
        #expect(process.waitForExit() == 3)
        #expect(!process.isRunning)
    }
}

/// Running a program to its end for what it printed.
@Suite struct ProcessOutputTests {
    @Test func whatAProgramPrintedComesBackWithItsStatus() throws {
        let (status, output) = try Process.runToEnd("/bin/sh", ["-c", "echo out; echo err >&2; exit 4"])
        #expect(status == 4)
        #expect(output == "out\nerr\n")
        #expect(try Process.runToEnd("/bin/sh", ["-c", "echo out; echo err >&2"], keepingErrors: false).output == "out\n")
    }

    /// A process that outlives the program and holds its output open (as a
    /// Redis started meanwhile by another test inherits it) does not hold
    /// the run up: it ends when the program does.
    @Test func aProcessHoldingTheOutputOpenDoesNotHoldTheRunUp() throws {
        let (status, output) = try Process.runToEnd("/bin/sh", ["-c", "sleep 120 & echo $!"])
        let holder = try #require(Int32(output.trimmingCharacters(in: .whitespacesAndNewlines)))
        defer { kill(holder, SIGKILL) }
        #expect(status == 0)
        #expect(kill(holder, 0) == 0, "the run ended only when the holder did")
    }
}
