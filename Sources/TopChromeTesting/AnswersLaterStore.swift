import Foundation
import LaterAnswers
import TopChromeCore

/// A store whose every answer comes later, on another thread, after a
/// short delay: a store in this process made to behave like one in
/// another (Redis), so the API's path for answers that come later runs in
/// tests without a network. What it answers is what the wrapped store
/// answers, asked at once; only the delivery waits.
public final class AnswersLaterStore: SessionStore, SessionChangeFeed {
    private let store: any SessionStore & SessionChangeFeed
    private let delay: Duration

    public init(wrapping store: any SessionStore & SessionChangeFeed, delay: Duration = .milliseconds(2)) {
        self.store = store
        self.delay = delay
    }

    public var readiness: StoreReadiness { store.readiness }
    public var sessionCount: Int? { store.sessionCount }
    public var subscriberCount: Int { store.subscriberCount }
    public func allSubscribers() -> [any SessionSubscriber] { store.allSubscribers() }
    public func endAllSubscriptions() -> [any SessionSubscriber] { store.endAllSubscriptions() }

    public func requestCreate(inset: Double, settings: RevealSettings) -> StoreAnswer<Session> {
        later(store.requestCreate(inset: inset, settings: settings))
    }

    public func requestSession(_ id: SessionID) -> StoreAnswer<Session?> {
        later(store.requestSession(id))
    }

    public func requestApply(_ inputs: [ChromeInput], to id: SessionID, if condition: VersionCondition) -> StoreAnswer<StoreOutcome> {
        later(store.requestApply(inputs, to: id, if: condition))
    }

    public func requestApply(_ input: ChromeInput, to id: SessionID, if condition: VersionCondition) -> StoreAnswer<StoreOutcome> {
        later(store.requestApply(input, to: id, if: condition))
    }

    public func requestRemove(_ id: SessionID, if condition: VersionCondition) -> StoreAnswer<StoreOutcome> {
        later(store.requestRemove(id, if: condition))
    }

    /// A refusal still comes at once, as the feed's contract says.
    public func requestSubscribe(_ subscriber: any SessionSubscriber, to id: SessionID)
        throws(SubscriptionRefusal) -> StoreAnswer<Session?> {
        later(try store.requestSubscribe(subscriber, to: id))
    }

    public func unsubscribe(_ subscriber: any SessionSubscriber, from id: SessionID) {
        store.unsubscribe(subscriber, from: id)
    }

    /// Delivered on a thread of its own, as a networked store's I/O thread
    /// would: not on Dispatch's pool, which blocked tests could starve.
    private func later<Value: Sendable>(_ answer: StoreAnswer<Value>) -> StoreAnswer<Value> {
        let pending = PendingAnswer<Value>()
        let delay = Double(delay.components.seconds) + Double(delay.components.attoseconds) / 1e18
        Thread {
            Thread.sleep(forTimeInterval: delay)
            switch answer {
            case let .now(result): pending.complete(with: result)
            case let .later(inner): inner.whenAnswered { pending.complete(with: $0) }
            }
        }.start()
        return .later(pending)
    }
}
