#if canImport(Network)
import Dispatch
import Network

extension RemoteTopChrome {
    /// Reconnects the moment the device's network is usable again, instead
    /// of waiting out a backoff that grew while it was offline; returns when
    /// the calling task is cancelled. SwiftUI: a second
    /// `.task { await chrome.reconnectWhenTheNetworkReturns() }` beside the
    /// one that follows.
    public func reconnectWhenTheNetworkReturns() async {
        let monitor = NWPathMonitor()
        let statuses = AsyncStream<NWPath.Status> { continuation in
            monitor.pathUpdateHandler = { path in continuation.yield(path.status) }
            continuation.onTermination = { _ in monitor.cancel() }
            monitor.start(queue: DispatchQueue(label: "TopChromeClient.network"))
        }
        var last: NWPath.Status?
        for await status in statuses {
            if status == .satisfied, let last, last != .satisfied { reconnect() }
            last = status
        }
    }
}
#endif
