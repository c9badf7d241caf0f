/// A part of the service that can fail without making its answers wrong,
/// such as a state file that cannot be written. `/readyz` stays 200 and
/// names it under `degraded`: taking the only instance out of a load
/// balancer would turn a disk problem into an outage, while the operator
/// still has to hear of it before the service stops.
public protocol ReadinessDetail: Sendable {
    /// The member of `degraded` that names it, e.g. `stateFile`.
    var name: String { get }
    /// What is wrong, in an operator's words; nil while all is well.
    func problem() -> String?
}
