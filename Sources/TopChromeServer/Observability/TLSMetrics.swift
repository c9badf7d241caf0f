import Locking
import MicroHTTPD
import TopChromeAPI

/// The HTTPS certificate as `/metrics` shows it: when the one served expires,
/// and how its reloads went. A rotation that keeps failing leaves the old
/// certificate serving until it expires, and a restart would refuse the
/// files: an operator must see both while there is time to act.
final class TLSMetrics: MetricsFamilies, @unchecked Sendable {
    /// What a reload (SIGHUP) did with the certificate and key.
    enum ReloadResult: String, CaseIterable {
        case replaced, unchanged, failed
    }

    private let lock = PthreadLock()
    private var expiry: Int?
    private var reloads: [ReloadResult: Int] = [:]
    private var lastReloadFailed = false

    /// - Parameter served: the certificate and key the server starts with.
    init(served: TLSCredentials) {
        expiry = served.expiry
    }

    /// Counts a reload; `served` is what the server serves from now on when it replaced the certificate.
    func record(_ result: ReloadResult, served: TLSCredentials? = nil) {
        lock.withLock {
            reloads[result, default: 0] += 1
            lastReloadFailed = result == .failed
            if let served { expiry = served.expiry }
        }
    }

    func render() -> String {
        let (expiry, reloads, lastReloadFailed) = lock.withLock { (self.expiry, self.reloads, self.lastReloadFailed) }
        var text = MetricsText()
        if let expiry {
            text.family("topchrome_tls_certificate_expiry_timestamp_seconds", .gauge, help: "When the HTTPS certificate served now expires (its notAfter, Unix time).")
            text.sample("topchrome_tls_certificate_expiry_timestamp_seconds", expiry)
        }
        text.family("topchrome_tls_reloads_total", .counter, help: "Reloads (SIGHUP) of the TLS certificate and key, by result: replaced, unchanged, or failed (the old ones kept).")
        for result in ReloadResult.allCases {
            text.sample("topchrome_tls_reloads_total", ["result": result.rawValue], reloads[result, default: 0])
        }
        text.family("topchrome_tls_last_reload_successful", .gauge, help: "0 when the last reload could not use the certificate and key files (the old ones still serve; a restart would refuse the files), else 1.")
        text.sample("topchrome_tls_last_reload_successful", lastReloadFailed ? 0 : 1)
        return text.text
    }
}
