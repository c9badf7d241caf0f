/// What an operator should look at when Redis refuses the connection, from
/// the reason given: a password, or which part of TLS. One wording for the
/// log and for `check-config`.
enum RedisRefusalAdvice {
    static func check(_ reason: String) -> String {
        if reason.contains("hostname mismatch") || reason.contains("IP address mismatch") {
            return "that --store names the server as its certificate does (a host name or IP address it lists)"
        }
        if reason.contains("certificate required") || reason.contains("wants a client certificate") {
            return "--redis-cert and --redis-key: the server wants a client certificate"
        }
        if reason.hasPrefix("TLS") { return "--redis-ca-file: the CA that signed the server's certificate" }
        return "--redis-username and --redis-password-file"
    }
}
