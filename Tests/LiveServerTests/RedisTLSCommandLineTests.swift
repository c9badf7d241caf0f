import Foundation
import RedisTestSupport
import Testing

/// `check-config` and `redis-functions load` connect as the service would:
/// over TLS, as the ACL user, with the CA given.
@Suite struct RedisTLSCommandLineTests {
    @Test func checkConfigAndFunctionLoadUseTheUserAndTLS() throws {
        let pki = try TestPKI()
        let redis = try RedisServer(tls: pki)
        try redis.cli(["ACL", "SETUSER", "admin", "on", ">admin-password", "~*", "&*", "+@all"])
        try redis.cli(TestPKI.documentedACL(password: "service-password"))
        let folder = try CheckConfigTests.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let service = folder.appendingPathComponent("service").path, admin = folder.appendingPathComponent("admin").path
        try "service-password\n".write(toFile: service, atomically: true, encoding: .utf8)
        try "admin-password\n".write(toFile: admin, atomically: true, encoding: .utf8)
        let store = ["--store", "rediss://127.0.0.1:\(redis.port)", "--redis-ca-file", pki.caFile]

        let answered = try CheckConfigTests.check(store + ["--redis-password-file", service],
                                                  // The variable beside the test's own environment: under the
                                                  // sanitizers that carries their options to the child.
                                                  environment: ProcessInfo.processInfo.environment
                                                      .merging(["TOPCHROME_REDIS_USERNAME": "topchrome"]) { $1 })
        #expect(answered.status == 0, "\(answered.errors)")
        #expect(answered.output.contains("answered PING over TLS after AUTH as topchrome"), "\(answered.output)")

        let otherCA = try TestPKI().caFile
        // A timeout no loaded machine reaches: the refusal comes when the
        // handshake ends, however slow, not when a second has passed.
        let refused = try CheckConfigTests.check(["--store", "rediss://127.0.0.1:\(redis.port)", "--redis-ca-file", otherCA,
                                                  "--redis-timeout", "30"])
        #expect(refused.status == 2, "\(refused.errors)")
        #expect(refused.errors.contains("TLS: the certificate of 127.0.0.1 was refused"), "\(refused.errors)")
        #expect(refused.errors.contains("(check --redis-ca-file:"), "\(refused.errors)")

        // The service's user may not load the library; an operator's may, over TLS.
        let denied = try CommandLineTests.run(["redis-functions", "load", "--redis-username", "topchrome",
                                               "--redis-password-file", service] + store)
        #expect(denied.status == 1, "\(denied.output)")
        let loaded = try CommandLineTests.run(["redis-functions", "load", "--redis-username", "admin",
                                               "--redis-password-file", admin] + store)
        #expect(loaded.status == 0, "\(loaded.errors)")
        #expect(loaded.output.contains("loaded topchrome_"), "\(loaded.output)")
    }
}

extension RedisTLSCommandLineTests {
    /// A Redis that wants a client certificate refuses one without: that
    /// is configuration to fix (2), not a Redis away (3).
    @Test func aMissingClientCertificateIsConfiguration() throws {
        let pki = try TestPKI()
        let redis = try RedisServer(tls: pki)
        try redis.cli(["CONFIG", "SET", "tls-auth-clients", "yes"])
        let refused = try CheckConfigTests.check(["--store", "rediss://127.0.0.1:\(redis.port)", "--redis-ca-file", pki.caFile,
                                                  "--redis-timeout", "30"])
        #expect(refused.status == 2, "\(refused.output) \(refused.errors)")
        #expect(refused.errors.contains("--redis-cert and --redis-key"), "\(refused.errors)")
    }
}
