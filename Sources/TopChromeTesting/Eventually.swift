import Foundation

/// Polls `condition` for up to `seconds`: servers and the API free
/// resources and close connections asynchronously.
public func eventually(within seconds: Double = 5, _ condition: () -> Bool) -> Bool {
    let clock = ContinuousClock()
    let deadline = clock.now + .milliseconds(Int(seconds * 1000))
    while clock.now < deadline {
        if condition() { return true }
        Thread.sleep(forTimeInterval: 0.005)
    }
    return condition()
}
