import MicroHTTPD

extension SessionAPI {
    /// Requests the server refuses from their head alone (ambiguous
    /// framing, a missing or doubled Host) get the same problem+json as any
    /// other error, though the API never sees them.
    public func refusal(of fault: RequestHeadFault) -> CompleteResponse {
        Problem(status: fault.status, detail: fault.explanation).response
    }
}
