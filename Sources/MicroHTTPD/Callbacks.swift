import CMicroHTTPD

// libmicrohttpd's C callbacks for requests (those for connections are in
// ConnectionCallbacks.swift). They live outside `main.swift` and capture
// nothing, so they run on the library's threads without any actor isolation.

/// Answers on the last call for a request, never the first: answering from
/// the headers-only first call makes libmicrohttpd close the connection,
/// losing keep-alive.
let accessHandler: MHD_AccessHandlerCallback = {
    cls, connection, url, method, version, uploadData, uploadDataSize, requestContext in
    guard let cls, let connection, let url, let method, let version, let uploadDataSize, let requestContext else {
        return .NO
    }
    // The server holds the dispatcher until its daemon has stopped, so it is
    // used without a retain and a release on each of a request's calls.
    return Unmanaged<RequestDispatcher>.fromOpaque(cls)._withUnsafeGuaranteedRef { dispatcher in
        handle(connection, url, method, version, uploadData, uploadDataSize, requestContext, dispatcher: dispatcher)
    }
}

private func handle(
    _ connection: OpaquePointer, _ url: UnsafePointer<CChar>, _ method: UnsafePointer<CChar>,
    _ version: UnsafePointer<CChar>, _ uploadData: UnsafePointer<CChar>?, _ uploadDataSize: UnsafeMutablePointer<Int>,
    _ requestContext: UnsafeMutablePointer<UnsafeMutableRawPointer?>, dispatcher: RequestDispatcher
) -> MHD_Result {
    guard let existing = requestContext.pointee else {
        let context = contextForNewRequest(on: connection)
        context.pointee.begin(method: HTTPTokens.method(method), target: url,
                              version: HTTPTokens.version(version))
        collectHeaders(of: connection, into: &context.pointee.headers)
        requestContext.pointee = UnsafeMutableRawPointer(context)
        var declaredLength: Int?
        if let fault = context.pointee.headFault(declaredLength: &declaredLength) {
            // Refused before a byte of the body is read, the responder never
            // asked, and the connection closed after the answer: whatever
            // followed the head is never read as a request. (libmicrohttpd
            // 0.9.75 closes after any answer given this early; its code marks
            // that for change, so the close is asked for here too.)
            context.pointee.isAnswered = true
            guard context.pointee.answering() else { return .NO }
            var refusal = dispatcher.responder.refusal(of: fault)
            return queue(&refusal, on: connection, context: context, dispatcher: dispatcher, closing: true)
        }
        // Read in the head's pass: asking libmicrohttpd walks its fields once more.
        if let declaredLength, declaredLength > dispatcher.maxBodyBytes {
            context.pointee.isBodyTooLarge = true
        }
        // Counted before the stop flag is read (the stop sets the flag before
        // it reads the count): a request either sees the stop or is waited for.
        dispatcher.inFlight.add(1, ordering: .sequentiallyConsistent)
        context.pointee.countsInFlight = true
        if dispatcher.isDraining.load(ordering: .sequentiallyConsistent) {
            // Arrived after the stop began: refuse it whole now (answering this
            // early also closes the connection). Not waited for, or steady
            // traffic would hold the stop up for its whole timeout.
            dispatcher.requestEnded()
            context.pointee.countsInFlight = false
            context.pointee.isAnswered = true
            guard context.pointee.answering() else { return .NO }
            var refusal = dispatcher.responder.refusalWhileStopping()
            return queue(&refusal, on: connection, context: context, dispatcher: dispatcher)
        }
        if context.pointee.isBodyTooLarge, let expect = MHD_lookup_connection_value(connection, .HEADER_KIND, "Expect"),
           String(cString: expect).lowercased() == "100-continue" {
            // The client waits for "100 Continue" before sending the body:
            // refuse now, so it never uploads bytes that would be thrown away.
            // (Answering this early closes the connection, which is right here.)
            context.pointee.isAnswered = true
            return respond(to: connection, context: context, dispatcher: dispatcher)
        }
        return .YES
    }
    let context = existing.assumingMemoryBound(to: RequestContext.self)

    if context.pointee.isAnswered {
        // Answered on the first call (refused early): libmicrohttpd may still
        // hand over the body; drop it, and never run the request.
        uploadDataSize.pointee = 0
        return .YES
    }

    if uploadDataSize.pointee > 0 {
        // Every byte offered must be consumed, or libmicrohttpd fails the request.
        context.pointee.receive(UnsafeRawBufferPointer(start: uploadData, count: uploadDataSize.pointee),
                        limit: dispatcher.maxBodyBytes)
        uploadDataSize.pointee = 0
        return .YES
    }

    if let pending = context.pointee.pending {
        // Resumed: the answer has come.
        return queueWhenAnswered(pending, on: connection, context: context, dispatcher: dispatcher)
    }
    return respond(to: connection, context: context, dispatcher: dispatcher)
}

private func respond(
    to connection: OpaquePointer, context: UnsafeMutablePointer<RequestContext>, dispatcher: RequestDispatcher
) -> MHD_Result {
    guard context.pointee.answering() else { return .NO }
    var request = context.pointee.lendRequest()
    request.client = dispatcher.client(of: context.pointee.client, forwardedFor: request.headers)
    let response = dispatcher.responder.respond(to: request, reusing: &context.pointee.responseBuffers)
    context.pointee.takeBack(&request)
    // Consumed, so the answer's buffers have one owner and `keep` empties
    // them in place rather than copying them.
    switch consume response {
    case var .complete(complete):
        context.pointee.endpoint = complete.endpoint
        let result = queue(&complete, on: connection, context: context, dispatcher: dispatcher)
        // libmicrohttpd has copied the fields; the body is held until the request completes.
        context.pointee.responseBuffers.keep(headers: &complete.headers, limit: RequestContext.keptCapacity)
        return result
    case let .stream(stream):
        context.pointee.endpoint = stream.endpoint
        return queue(stream, on: connection, context: context, dispatcher: dispatcher)
    case let .later(pending, endpoint):
        context.pointee.endpoint = endpoint
        context.pointee.pending = pending
        dispatcher.suspensions.add(pending)
        return queueWhenAnswered(pending, on: connection, context: context, dispatcher: dispatcher)
    case let .upgrade(upgrade):
        context.pointee.endpoint = upgrade.endpoint
        return queue(upgrade, on: connection, context: context, dispatcher: dispatcher)
    }
}

private func queue(
    _ response: UpgradeResponse, on connection: OpaquePointer, context: UnsafeMutablePointer<RequestContext>,
    dispatcher: RequestDispatcher
) -> MHD_Result {
    guard let created = MHD_create_response_for_upgrade(upgradeConnection, nil) else { return .NO }
    defer { MHD_destroy_response(created) }
    context.pointee.upgraded = response.upgraded
    return queue(created, status: 101, headers: response.headers, bodyBytes: 0, isStream: true,
                 on: connection, context: context, dispatcher: dispatcher, closing: false)
}

/// Queues the pending answer if it has come; otherwise the connection
/// sleeps, holding no thread, until `complete` resumes it.
private func queueWhenAnswered(
    _ pending: PendingResponse, on connection: OpaquePointer, context: UnsafeMutablePointer<RequestContext>,
    dispatcher: RequestDispatcher
) -> MHD_Result {
    guard let answer = pending.answerOrSuspend(connection) else { return .YES }
    dispatcher.suspensions.remove(pending)
    context.pointee.pending = nil
    // An answer found later may know more (e.g. the id of a session it created).
    if let endpoint = answer.endpoint { context.pointee.endpoint = endpoint }
    if pending.clientHasLeft {
        // Nobody to answer: the connection ends without a byte, as nginx
        // ends a request whose client closed (its 499, in the log only). A
        // client that only half-closed reads the end, not a made-up status.
        record(status: PendingResponse.clientLeftStatus, bodyBytes: 0, isStream: false,
               identity: context.pointee.currentIdentity(), context: context, dispatcher: dispatcher)
        return .NO
    }
    return queue(answer, on: connection, context: context, dispatcher: dispatcher)
}

let requestCompleted: MHD_RequestCompletedCallback = { cls, _, requestContext, _ in
    guard let cls, let requestContext, let existing = requestContext.pointee else { return }
    let context = existing.assumingMemoryBound(to: RequestContext.self)
    requestContext.pointee = nil
    context.pointee.connection?._withUnsafeGuaranteedRef { $0.requestCompleted() }
    if context.pointee.countsInFlight {
        Unmanaged<RequestDispatcher>.fromOpaque(cls)._withUnsafeGuaranteedRef { $0.requestEnded() }
    }
    if context.pointee.isForOneRequest || context.pointee.isOrphaned {
        context.free()
    } else {
        context.pointee.reset()
    }
}

/// The connection's own context, or one for this request alone if the
/// connection's is missing or still in use.
private func contextForNewRequest(on connection: OpaquePointer) -> UnsafeMutablePointer<RequestContext> {
    if let shared = CMHD_socket_context(connection) {
        let context = shared.assumingMemoryBound(to: RequestContext.self)
        if !context.pointee.isInUse { return context }
    }
    let context = UnsafeMutablePointer<RequestContext>.makeContext()
    context.pointee.isForOneRequest = true
    context.pointee.client = clientAddress(of: connection)
    return context
}

/// The peer's address as text, read once per connection.
func clientAddress(of connection: OpaquePointer) -> String? {
    CMHD_client_address(connection).flatMap(ClientAddress.init).map(\.text)
}

private let collectHeader: MHD_KeyValueIteratorN = { cls, _, key, keySize, value, valueSize in
    guard let cls, let key else { return .YES }
    // CChar and UInt8 memory may be read as each other.
    let name = UnsafeRawPointer(key).assumingMemoryBound(to: UInt8.self)
    let text = value.map { UnsafeRawPointer($0).assumingMemoryBound(to: UInt8.self) }
    cls.assumingMemoryBound(to: HTTPHeaders.self).pointee.add(
        name: UnsafeBufferPointer(start: name, count: keySize),
        value: UnsafeBufferPointer(start: text, count: text == nil ? 0 : valueSize))
    return .YES
}

private func collectHeaders(of connection: OpaquePointer, into headers: inout HTTPHeaders) {
    if headers.byteCapacity < 256 { headers.reserveCapacity(256) }  // a usual request's fields fit
    withUnsafeMutablePointer(to: &headers) { pointer in
        _ = MHD_get_connection_values_n(connection, .HEADER_KIND, collectHeader, pointer)
    }
}

/// `closing`: the connection ends after this response.
private func queue(
    _ response: DecidedResponse, on connection: OpaquePointer, context: UnsafeMutablePointer<RequestContext>,
    dispatcher: RequestDispatcher, closing: Bool = false
) -> MHD_Result {
    switch response {
    case var .complete(response):
        queue(&response, on: connection, context: context, dispatcher: dispatcher, closing: closing)
    case let .stream(response):
        queue(response, on: connection, context: context, dispatcher: dispatcher)
    case let .upgrade(response):
        queue(response, on: connection, context: context, dispatcher: dispatcher)
    }
}

/// The body is lent, not copied: taken from `response` into the context,
/// which holds it until the request completes.
private func queue(
    _ response: inout CompleteResponse, on connection: OpaquePointer, context: UnsafeMutablePointer<RequestContext>,
    dispatcher: RequestDispatcher, closing: Bool = false
) -> MHD_Result {
    let bodyBytes = sentBodyBytes(of: response, method: context.pointee.method)
    let created = if let held = context.pointee.holdWhileSent(&response.body) {
        MHD_create_response_from_buffer(held.count, UnsafeMutableRawPointer(mutating: held.baseAddress), .RESPMEM_PERSISTENT)
    } else {
        response.body.withUnsafeBytes {
            MHD_create_response_from_buffer($0.count, UnsafeMutableRawPointer(mutating: $0.baseAddress), .RESPMEM_MUST_COPY)
        }
    }
    guard let created else { return .NO }
    defer { MHD_destroy_response(created) }
    return queue(created, status: response.status, headers: response.headers, bodyBytes: bodyBytes, isStream: false,
                 on: connection, context: context, dispatcher: dispatcher, closing: closing)
}

private func queue(
    _ response: StreamingResponse, on connection: OpaquePointer, context: UnsafeMutablePointer<RequestContext>,
    dispatcher: RequestDispatcher
) -> MHD_Result {
    response.stream.attach(to: connection, registry: dispatcher.suspensions)
    // Size unknown: sent chunked. The stream is released when libmicrohttpd frees the response.
    guard let created = MHD_create_response_from_callback(UInt64.max, 4096, readStream,
                                                          Unmanaged.passRetained(response.stream).toOpaque(),
                                                          releaseStream) else { return .NO }
    defer { MHD_destroy_response(created) }
    if context.pointee.method == "HEAD" {
        // A stream's length is open, and HEAD sends no body: framed as
        // HTTP/1.0 (end by close), since libmicrohttpd 0.9.75 sends a
        // chunked body's last chunk even for HEAD.
        _ = CMHD_set_response_flags(created, .RF_HTTP_1_0_COMPATIBLE_STRICT)
    }
    // A stream's length is open when the exchange is recorded.
    return queue(created, status: response.status, headers: response.headers, bodyBytes: 0, isStream: true,
                 on: connection, context: context, dispatcher: dispatcher, closing: false)
}

/// Adds the fields, queues the answer `created` holds and records the exchange.
private func queue(
    _ created: OpaquePointer, status: Int, headers: HTTPHeaders, bodyBytes: Int, isStream: Bool,
    on connection: OpaquePointer, context: UnsafeMutablePointer<RequestContext>,
    dispatcher: RequestDispatcher, closing: Bool
) -> MHD_Result {
    headers.forEachCString { name, value in
        _ = MHD_add_response_header(created, name, value)
    }
    // A client's X-Request-Id comes back on every answer to it, refusals
    // and problems too. A made id is in the log only: a field costs
    // libmicrohttpd three allocations per answer, more than the whole
    // increase the hot path may take; a client that wants to quote an id sends one.
    let identity = context.pointee.currentIdentity()
    if let given = identity.givenRequestID {
        given.withCString { _ = MHD_add_response_header(created, "X-Request-Id", $0) }
    }
    if closing || dispatcher.isDraining.load(ordering: .relaxed) {
        _ = MHD_add_response_header(created, "Connection", "close")
    }
    let result = MHD_queue_response(connection, UInt32(status), created)
    record(status: status, bodyBytes: bodyBytes, isStream: isStream, identity: identity, context: context,
           dispatcher: dispatcher)
    return result
}

/// Tells the observer (the access log, the metrics) of the exchange.
@inline(__always)
private func record(
    status: Int, bodyBytes: Int, isStream: Bool, identity: RequestIdentity,
    context: UnsafeMutablePointer<RequestContext>, dispatcher: RequestDispatcher
) {
    dispatcher.observer?.completed(HTTPExchange(
        method: context.pointee.method, pathBytes: context.pointee.path,
        client: dispatcher.client(of: context.pointee.client, forwardedFor: context.pointee.headers),
        endpoint: context.pointee.endpoint,
        status: status, bodyBytes: bodyBytes,
        duration: context.pointee.startedAt.elapsed, isStream: isStream, identity: identity))
}

/// What goes out as body: libmicrohttpd leaves the body out of a HEAD
/// answer and a 304 (their `Content-Length` still states it).
private func sentBodyBytes(of response: CompleteResponse, method: String) -> Int {
    // The length first: "GET" against "HEAD" by `==` alone is a call into the runtime.
    if response.status == 304 || method.utf8.count == 4 && method == "HEAD" { return 0 }
    return response.body.count
}

private let readStream: MHD_ContentReaderCallback = { cls, _, buffer, max in
    guard let cls, let buffer else { return -2 }  // MHD_CONTENT_READER_END_WITH_ERROR
    let stream = Unmanaged<ResponseStream>.fromOpaque(cls).takeUnretainedValue()
    return stream.read(into: UnsafeMutableRawBufferPointer(start: buffer, count: max))
}

private let releaseStream: MHD_ContentReaderFreeCallback = { cls in
    guard let cls else { return }
    Unmanaged<ResponseStream>.fromOpaque(cls).takeRetainedValue().closed()
}
