import Foundation
import Redis

/// Replies collected by index from completions on I/O threads.
final class Replies: @unchecked Sendable {
    private let lock = NSLock()
    private var replies: [Result<RESPValue, RedisError>?]
    private var left: Int
    private var waiter: CheckedContinuation<[Result<RESPValue, RedisError>], Never>?

    init(count: Int) {
        replies = Array(repeating: nil, count: count)
        left = count
    }

    func set(_ index: Int, _ reply: Result<RESPValue, RedisError>) {
        let done: (CheckedContinuation<[Result<RESPValue, RedisError>], Never>, [Result<RESPValue, RedisError>])? = lock.withLock {
            replies[index] = reply
            left -= 1
            guard left == 0, let waiter else { return nil }
            self.waiter = nil
            return (waiter, replies.map { $0! })
        }
        if let (waiter, all) = done { waiter.resume(returning: all) }
    }

    func wait() async -> [Result<RESPValue, RedisError>] {
        await withCheckedContinuation { continuation in
            let all: [Result<RESPValue, RedisError>]? = lock.withLock {
                if left == 0 { return replies.map { $0! } }
                waiter = continuation
                return nil
            }
            if let all { continuation.resume(returning: all) }
        }
    }
}
