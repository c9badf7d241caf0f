import Testing
@testable import TopChromeServer

@Suite struct DescriptorBudgetTests {
    /// Connections stop a reserve short of the limit, watchers an eighth
    /// short of connections, so requests still find a connection.
    @Test func connectionsAndWatchersStopShortOfTheLimit() {
        let reserve = DescriptorBudget.reserve(threads: 2, redisConnections: nil)
        let budget = DescriptorBudget(limit: 256, reserve: reserve)
        #expect(reserve == 72)
        #expect(budget.connections == 184)
        #expect(budget.watchers == 161)
        #expect(DescriptorBudget.reserve(threads: 2, redisConnections: 2) > reserve, "Redis connections are kept room for")
        #expect(DescriptorBudget(limit: 10, reserve: 72).connections == 1, "never none")
    }
}
