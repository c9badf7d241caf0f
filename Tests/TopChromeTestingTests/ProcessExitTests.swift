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
