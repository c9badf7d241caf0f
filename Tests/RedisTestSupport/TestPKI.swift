import Foundation
import TopChromeTesting

/// A throwaway CA, a server certificate it signed and a client certificate,
/// made with openssl at test time: nothing secret is kept in the repository,
/// and each run's CA is trusted by nothing else.
public struct TestPKI: Sendable {
    public let directory: URL
    public var caFile: String { directory.appendingPathComponent("ca.pem").path }
    public var serverCertificate: String { directory.appendingPathComponent("server.pem").path }
    public var serverKey: String { directory.appendingPathComponent("server.key").path }
    public var clientCertificate: String { directory.appendingPathComponent("client.pem").path }
    public var clientKey: String { directory.appendingPathComponent("client.key").path }

    /// - Parameter names: the server certificate's subjectAltName.
    public init(names: String = "DNS:localhost,IP:127.0.0.1") throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("redis-pki-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let dir = directory.path
        try "subjectAltName=\(names)\n".write(toFile: "\(dir)/san.cnf", atomically: true, encoding: .utf8)
        var steps: [[String]] = [
            ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "\(dir)/ca.key", "-out", "\(dir)/ca.pem",
             "-days", "1", "-subj", "/CN=TopChrome Redis Test CA"],
        ]
        for (name, extensions) in [("server", ["-extfile", "\(dir)/san.cnf"]), ("client", [])] {
            steps.append(["req", "-newkey", "rsa:2048", "-nodes", "-keyout", "\(dir)/\(name).key", "-out", "\(dir)/\(name).csr",
                          "-subj", "/CN=\(name)"])
            steps.append(["x509", "-req", "-in", "\(dir)/\(name).csr", "-CA", "\(dir)/ca.pem", "-CAkey", "\(dir)/ca.key",
                          "-CAcreateserial", "-out", "\(dir)/\(name).pem", "-days", "1"] + extensions)
        }
        for step in steps {
            let (status, text) = try Process.runToEnd("/usr/bin/openssl", step)
            guard status == 0 else {
                throw RedisTestSetupError(description: "openssl \(step[0]) failed: \(text)")
            }
        }
    }

    /// The minimal ACL the service needs, as docs/redis.md gives it to
    /// operators: the tests run as exactly that user, so a command the
    /// service sends and the line lacks fails them.
    public static func documentedACL(password: String) throws -> [String] {
        let docs = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("docs/redis.md")
        let text = try String(contentsOf: docs, encoding: .utf8)
        guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix("ACL SETUSER topchrome ") }) else {
            throw RedisTestSetupError(description: "docs/redis.md has no line starting ACL SETUSER topchrome")
        }
        return line.split(separator: " ").map { $0 == "><password>" ? ">\(password)" : String($0) }
    }
}
