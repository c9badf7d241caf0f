/// Families a part of the service adds to `/metrics` in the Prometheus text
/// format (e.g. the Redis store's round trips), each with its HELP and TYPE.
public protocol MetricsFamilies: Sendable {
    func render() -> String
}
