import MicroHTTPD

/// The WebSocket channel in `/metrics`: sockets open, messages each way,
/// and how sockets ended, by close code (1006: the client left without one).
struct WebSocketMetrics: MetricsFamilies {
    let counts: WebSocketCounts

    func render() -> String {
        var text = MetricsText()
        text.family("topchrome_websocket_open", .gauge, help: "WebSockets open now.")
        text.sample("topchrome_websocket_open", counts.openNow)
        text.family("topchrome_websocket_messages_received_total", .counter, help: "Messages received from WebSocket clients.")
        text.sample("topchrome_websocket_messages_received_total", counts.received)
        text.family("topchrome_websocket_messages_sent_total", .counter, help: "Messages sent to WebSocket clients.")
        text.sample("topchrome_websocket_messages_sent_total", counts.sent)
        text.family("topchrome_websocket_closes_total", .counter, help: "WebSockets closed, by close code.")
        for (code, count) in counts.closesByCode {
            text.sample("topchrome_websocket_closes_total", ["code": String(code)], count)
        }
        return text.text
    }
}
