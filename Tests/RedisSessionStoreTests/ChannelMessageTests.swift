import RedisSessionStore
import Testing
import TopChromeCore

/// Messages of a session's change channel, read without a server.
struct ChannelMessageTests {
    let id = SessionID(high: 1, low: 2)

    @Test func messagesAsTheLibraryWritesThemAreRead() {
        #expect(ChromeFunctions.event(Array("3 47 0 10".utf8), of: id)
            == .changed(Session(id: id, state: ChromeState(inset: 47, isRevealed: false, version: 3, lastAppliedSeq: 10))))
        #expect(ChromeFunctions.event(Array("1 0.10000000000000001 1".utf8), of: id)
            == .changed(Session(id: id, state: ChromeState(inset: 0.1, isRevealed: true, version: 1, lastAppliedSeq: nil))))
        #expect(ChromeFunctions.event(Array("gone".utf8), of: id) == .removed(id))
        #expect(ChromeFunctions.event(Array("3 47 2".utf8), of: id) == nil)
    }

    /// Found by the `functions` fuzz target: a non-finite inset was taken,
    /// and watchers would have been sent it as `"inset":nan`, which is not JSON.
    @Test(arguments: ["2 nan 1", "2 -nan 0 4", "2 inf 1", "2 -infinity 1", "2 1e400 1"])
    func aNonFiniteInsetIsRefused(_ message: String) {
        #expect(ChromeFunctions.event(Array(message.utf8), of: id) == nil)
    }
}
