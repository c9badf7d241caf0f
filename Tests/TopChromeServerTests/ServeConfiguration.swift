@testable import TopChromeServer

/// The configuration `topchrome` would serve with, given these arguments
/// and environment; any other command is an error here.
func serve(_ arguments: [String], _ environment: [String: String] = [:]) throws -> ServiceConfiguration {
    guard case let .serve(configuration) = try ServiceConfiguration.parse(arguments: arguments, environment: environment) else {
        throw ServiceConfiguration.UsageError(description: "not a serve command")
    }
    return configuration
}
