import CHiredis

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

// The one door to hiredis: contexts, buffers and reply objects are touched
// here and nowhere else.

/// What hiredis said when a connection failed, or its reader met bytes that are not RESP.
package struct HiredisFailure: Error {
    package let reason: String
    /// Retrying will not help (a TLS certificate refused): the connection reports a refusal, not an outage.
    package var refused = false

    package init(reason: String, refused: Bool = false) {
        self.reason = reason
        self.refused = refused
    }
}

/// One non-blocking hiredis context. Not thread-safe: only its connection's
/// I/O thread touches it.
///
/// Commands wait in `output` and are written from there, not from
/// hiredis's output buffer, which hiredis frees whenever it is written out
/// and so grows again from nothing on every turn. With TLS, bytes go through
/// a `TLSSession` instead of hiredis's own reads (hiredis 0.14 has no TLS),
/// and what OpenSSL decrypts is fed to the context's reply reader.
final class HiredisSocket {
    private let context: UnsafeMutablePointer<redisContext>
    /// Makes the context's replies; outlives it (hiredis may hand it a partial reply as it frees the context).
    private let replies = ReplyBuilder()
    private let tls: TLSSession?
    private var output: [UInt8] = []
    /// How much of `output` went out already (dropped once all of it has).
    private var written = 0

    /// Starts a non-blocking connect to `node`; the socket becomes writable
    /// when the connect ends, and `connectError()` then says how.
    init(connectingTo node: RedisNode, tls: RedisTLS? = nil) throws(HiredisFailure) {
        guard let context = redisConnectNonBlock(node.host, Int32(node.port)) else {
            throw HiredisFailure(reason: "out of memory")
        }
        if context.pointee.err != 0 {
            let reason = Self.describe(context)
            redisFree(context)
            throw HiredisFailure(reason: reason)
        }
        context.pointee.reader.pointee.fn = valueReplyFunctions
        context.pointee.reader.pointee.privdata = Unmanaged.passUnretained(replies).toOpaque()
        if let tls {
            do {
                self.tls = try TLSSession(tls, fd: context.pointee.fd, host: node.host)
            } catch {
                redisFree(context)
                throw error
            }
        } else {
            self.tls = nil
        }
        self.context = context
    }

    deinit { redisFree(context) }

    var fd: Int32 { context.pointee.fd }

    /// What to poll for once connected: replies always; the socket's room
    /// when there is output, or when a TLS handshake or write waits for it.
    func pollEvents(hasOutput: Bool) -> Int16 {
        guard let tls else { return Int16(POLLIN) | (hasOutput ? Int16(POLLOUT) : 0) }
        if !tls.established { return tls.wantsWrite ? Int16(POLLOUT) : Int16(POLLIN) }
        return Int16(POLLIN) | (hasOutput || tls.wantsWrite ? Int16(POLLOUT) : 0)
    }

    /// The outcome of the non-blocking connect, read once the socket is writable.
    func connectError() -> HiredisFailure? {
        var error: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        if getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length) != 0 { error = errno }
        return error == 0 ? nil : HiredisFailure(reason: String(cString: strerror(error)))
    }

    /// Copies encoded commands into the output buffer.
    func append(_ bytes: some Collection<UInt8>) {
        output += bytes
    }

    /// Writes what the socket takes now; true when the output buffer is empty.
    func flush() throws(HiredisFailure) -> Bool {
        if let tls, try !tls.handshake() { return false }
        while written < output.count {
            let count = try output.withUnsafeBytes { bytes in
                Result { () throws(HiredisFailure) in try write(UnsafeRawBufferPointer(rebasing: bytes[written...])) }
            }.get()
            if count == 0 {
                // The socket is full: let go of what it took, or a Redis that
                // stays behind would keep every byte sent since the buffer last emptied.
                output.removeSubrange(..<written)
                written = 0
                return false
            }
            written += count
        }
        output.removeAll(keepingCapacity: true)
        written = 0
        return true
    }

    /// Writes what the socket (or the TLS session) takes of `bytes`; 0 when it takes nothing now.
    private func write(_ bytes: UnsafeRawBufferPointer) throws(HiredisFailure) -> Int {
        if let tls { return try tls.write(bytes) }
        while true {
            let count = send(fd, bytes.baseAddress, bytes.count, Int32(MSG_NOSIGNAL))
            if count >= 0 { return count }
            switch errno {
            case EINTR: continue
            case EAGAIN, EWOULDBLOCK: return 0
            default: throw HiredisFailure(reason: String(cString: strerror(errno)))
            }
        }
    }

    /// Reads what the socket has (end of stream is a failure).
    func fill() throws(HiredisFailure) {
        if let tls {
            guard try tls.handshake() else { return }
            let reader = context.pointee.reader!
            try tls.read { bytes in
                redisReaderFeed(reader, bytes.baseAddress?.assumingMemoryBound(to: CChar.self), bytes.count) == REDIS_OK
            }
            return
        }
        if redisBufferRead(context) != REDIS_OK { throw HiredisFailure(reason: Self.describe(context)) }
    }

    /// The next complete reply already read.
    func nextReply() throws(HiredisFailure) -> RESPValue? {
        var reply: UnsafeMutableRawPointer?
        if redisGetReplyFromReader(context, &reply) != REDIS_OK { throw HiredisFailure(reason: Self.describe(context)) }
        return reply == nil ? nil : replies.take()
    }

    private static func describe(_ context: UnsafeMutablePointer<redisContext>) -> String {
        if context.pointee.err == REDIS_ERR_OOM { return arrayTooLarge }
        return withUnsafeBytes(of: context.pointee.errstr) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
    }
}

extension RESPValue {
    /// Parses RESP2 bytes with hiredis's reader: every complete reply, in
    /// order, or nil when the bytes are not RESP. For tests and fuzzing of the
    /// conversion, without a socket.
    public static func parse(_ bytes: [UInt8]) -> [RESPValue]? {
        let reader = RESPReader()
        guard reader.feed(bytes[...]) else { return nil }
        var values: [RESPValue] = []
        do {
            while let value = try reader.next() { values.append(value) }
        } catch {
            return nil
        }
        return values
    }
}

/// hiredis's reply reader without a socket, for the wire tests and the
/// fuzz targets: a connection's context holds the same reader (made by
/// `redisReaderCreate`), `fill()` feeds it what the socket gave, and
/// `nextReply()` takes replies out as `next()` does, so bytes cut anywhere
/// by the network can be replayed here piece by piece.
package final class RESPReader {
    private let reader: UnsafeMutablePointer<redisReader>
    private let replies = ReplyBuilder()

    package init() {
        guard let reader = redisReaderCreateWithFunctions(valueReplyFunctions) else { fatalError("hiredis: out of memory") }
        reader.pointee.privdata = Unmanaged.passUnretained(replies).toOpaque()
        self.reader = reader
    }

    deinit { redisReaderFree(reader) }

    /// Appends bytes as they came; false once the reader has refused the stream.
    package func feed(_ bytes: ArraySlice<UInt8>) -> Bool {
        bytes.withUnsafeBufferPointer { buffer in
            buffer.withMemoryRebound(to: CChar.self) { redisReaderFeed(reader, $0.baseAddress, $0.count) }
        } == REDIS_OK
    }

    /// The next complete reply, nil until more bytes come; throws for bytes that are not RESP.
    package func next() throws(HiredisFailure) -> RESPValue? {
        var reply: UnsafeMutableRawPointer?
        guard redisReaderGetReply(reader, &reply) == REDIS_OK else {
            if reader.pointee.err == REDIS_ERR_OOM { throw HiredisFailure(reason: arrayTooLarge) }
            throw HiredisFailure(reason: withUnsafeBytes(of: reader.pointee.errstr) {
                String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self)
            })
        }
        return reply == nil ? nil : replies.take()
    }
}

/// The most elements a reply array may announce. hiredis allocates an
/// array's element table as soon as it reads the header, for whatever
/// length it claims: `*2147483647` from a broken or hostile server would
/// take 16 GiB before a single element came. No reply of the commands
/// this client sends comes near this (`CLUSTER SLOTS` has one entry per
/// slot range, at most 16,384).
let maxReplyArrayElements: Int32 = 1 << 20

/// What a reader says when it refused such an array (hiredis reports it as out of memory).
private let arrayTooLarge = "a reply announced an array of more than \(maxReplyArrayElements) elements (or memory ran out)"

/// Builds each reply as a `RESPValue` while hiredis's reader parses it, in
/// place of hiredis's own reply objects: a reply is then made once, not
/// built as a tree of C objects, copied into Swift and freed. The reader
/// calls the functions below for every value in order, depth first, each
/// array before its elements; arrays being filled wait on a stack.
///
/// Only its reader's thread touches it, value after value: its state needs
/// none of Swift's run-time checks for overlapping access, which cost as
/// much as the rest of adding a value.
final class ReplyBuilder {
    /// Arrays being filled, innermost last, with the count each announced.
    @exclusivity(unchecked) private var open: [(elements: [RESPValue], count: Int)] = []
    @exclusivity(unchecked) private var finished: RESPValue?

    /// The reply the reader just completed.
    func take() -> RESPValue? {
        defer { finished = nil }
        return finished
    }

    func openArray(count: Int) {
        guard count > 0 else { return add(.array([])) }
        var elements: [RESPValue] = []
        elements.reserveCapacity(count)
        open.append((elements, count))
    }

    /// A complete value: an element of the innermost open array (which it
    /// may complete in turn), or a whole reply.
    func add(_ value: RESPValue) {
        var value = value
        while !open.isEmpty {
            let innermost = open.count - 1
            open[innermost].elements.append(value)
            guard open[innermost].elements.count == open[innermost].count else { return }
            value = .array(open.removeLast().elements)
        }
        finished = value
    }

    /// A bulk string's bytes. Those of one byte (a flag, a report's letter)
    /// and the word `done` come from arrays made once: a reply of the
    /// function library carries four of them, and an array made for each
    /// cost as much again as the rest of reading them.
    static func bulk(_ bytes: UnsafeRawBufferPointer) -> [UInt8] {
        if bytes.count == 1 { return oneByte[Int(bytes[0])] }
        if bytes.count == 4, bytes.elementsEqual(done) { return done }
        return Array(bytes)
    }

    private static let oneByte = (0...255).map { [UInt8($0)] }
    private static let done = Array("done".utf8)

    /// The reader gave up on a reply (bytes that are not RESP), or was freed in the middle of one.
    func discard() {
        open.removeAll()
        finished = nil
    }
}

/// The builder the reader of `task` was given.
private func builder(of task: UnsafePointer<redisReadTask>?) -> ReplyBuilder {
    Unmanaged<ReplyBuilder>.fromOpaque(task!.pointee.privdata!).takeUnretainedValue()
}

/// What the functions return for a value made: the reader only needs it
/// not to be null (null means out of memory), and hands it back to
/// `freeObject` alone.
private func made(_ task: UnsafePointer<redisReadTask>?) -> UnsafeMutableRawPointer? {
    task!.pointee.privdata
}

/// The reply functions of every reader here, making `RESPValue`s through
/// the reader's `ReplyBuilder` (its `privdata`). An array longer than
/// `maxReplyArrayElements` is refused: the reader then fails, and its
/// connection is dropped and made again. Never freed: readers point to it.
nonisolated(unsafe) private let valueReplyFunctions: UnsafeMutablePointer<redisReplyObjectFunctions> = {
    var functions = redisReplyObjectFunctions()
    functions.createString = { task, text, length in
        let bytes = UnsafeRawBufferPointer(start: text, count: length)
        switch task!.pointee.type {
        case REDIS_REPLY_STATUS: builder(of: task).add(.simple(String(decoding: bytes, as: UTF8.self)))
        case REDIS_REPLY_ERROR: builder(of: task).add(.error(String(decoding: bytes, as: UTF8.self)))
        default: builder(of: task).add(.bulk(ReplyBuilder.bulk(bytes)))
        }
        return made(task)
    }
    functions.createArray = { task, elements in
        guard elements <= maxReplyArrayElements else { return nil }
        builder(of: task).openArray(count: Int(elements))
        return made(task)
    }
    functions.createInteger = { task, value in
        builder(of: task).add(.integer(Int64(value)))
        return made(task)
    }
    functions.createNil = { task in
        builder(of: task).add(.null)
        return made(task)
    }
    functions.freeObject = { object in
        guard let object else { return }
        Unmanaged<ReplyBuilder>.fromOpaque(object).takeUnretainedValue().discard()
    }
    let table = UnsafeMutablePointer<redisReplyObjectFunctions>.allocate(capacity: 1)
    table.initialize(to: functions)
    return table
}()
