import RedisSessionStore
import Testing
import TopChromeCore

/// Messages of a session's change channel, read without a server.
struct ChannelMessageTests {
    let id = SessionID(high: 1, low: 2)

    @Test func messagesAsTheLibraryWritesThemAreRead() {
        let tag = StateTag(bits: 0x0123_4567_89ab)
        #expect(ChromeFunctions.event(Array("3.0123456789ab 47 0 10".utf8), of: id)
            == .changed(Session(id: id, state: ChromeState(inset: 47, isRevealed: false, version: 3, lastAppliedSeq: 10), tag: tag)))
        #expect(ChromeFunctions.event(Array("1.0123456789ab 0.10000000000000001 1".utf8), of: id)
            == .changed(Session(id: id, state: ChromeState(inset: 0.1, isRevealed: true, version: 1, lastAppliedSeq: nil), tag: tag)))
        #expect(ChromeFunctions.event(Array("gone".utf8), of: id) == .removed(id))
        #expect(ChromeFunctions.event(Array("3.0123456789ab 47 2".utf8), of: id) == nil)
        #expect(ChromeFunctions.event(Array("3 47 0".utf8), of: id) == nil, "an older library's message names no state")
        #expect(ChromeFunctions.event(Array("3.0123456789AB 47 0".utf8), of: id) == nil)
    }

    /// Found by the `functions` fuzz target: a non-finite inset was taken,
    /// and watchers would have been sent it as `"inset":nan`, which is not JSON.
    @Test(arguments: ["2.0123456789ab nan 1", "2.0123456789ab -nan 0 4", "2.0123456789ab inf 1", "2.0123456789ab -infinity 1",
                      "2.0123456789ab 1e400 1"])
    func aNonFiniteInsetIsRefused(_ message: String) {
        #expect(ChromeFunctions.event(Array(message.utf8), of: id) == nil)
    }
}
