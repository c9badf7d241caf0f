import Foundation

/// How many times longer than written a test waits for what must happen:
/// under a sanitizer the code runs several times slower, on a loaded
/// machine slower again, and a bound meant as "it does happen" must not
/// fail for that. `TOPCHROME_TEST_TIME_SCALE` (Tests/scripts/swift-test.sh sets
/// it for sanitizer runs); 1 when unset.
public let testTimeScale: Double = {
    guard let text = ProcessInfo.processInfo.environment["TOPCHROME_TEST_TIME_SCALE"], let scale = Double(text), scale >= 1 else {
        return 1
    }
    return scale
}()

/// Polls `condition` for up to `seconds` (times `testTimeScale`): servers
/// and the API free resources and close connections asynchronously.
public func eventually(within seconds: Double = 5, _ condition: () -> Bool) -> Bool {
    let clock = ContinuousClock()
    let deadline = clock.now + .milliseconds(Int(seconds * testTimeScale * 1000))
    while clock.now < deadline {
        if condition() { return true }
        Thread.sleep(forTimeInterval: 0.005)
    }
    return condition()
}
