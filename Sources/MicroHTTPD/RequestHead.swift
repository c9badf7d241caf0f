/// Why the server refuses a request from its head alone, before reading a
/// byte of its body (RFC 9112 §3.2, §5.1, §6.1, §6.3).
///
/// For most of these the body's length can be read more than one way, and
/// libmicrohttpd picks one leniently (the first `Content-Length`, a field
/// named `Content-Length ` ignored): a proxy in front that reads it the
/// other way would see the body where this server sees the next request,
/// and the body would run as a request nobody meant (request smuggling).
/// The server answers each with `Connection: close`, so nothing sent after
/// the head is ever read as a request.
public enum RequestHeadFault: Sendable, Equatable, CaseIterable {
    /// More than one `Content-Length` field.
    case severalContentLengths
    /// `Transfer-Encoding` and `Content-Length` together.
    case transferEncodingWithContentLength
    /// `Transfer-Encoding` in HTTP/1.0, which does not know it.
    case transferEncodingInHTTP10
    /// A field name that is not a token, e.g. `Content-Length ` (a space
    /// before the colon): some read it as `Content-Length`, libmicrohttpd as another field.
    case fieldNameNotAToken
    /// `chunked` is not the final transfer coding, or comes more than once:
    /// where the body ends cannot be known.
    case unframedTransferCoding
    /// A transfer coding other than a lone `chunked`, which is all the server decodes.
    case unsupportedTransferCoding
    /// An HTTP/1.1 request without `Host`.
    case missingHost
    /// More than one `Host` field: which one names the target is anybody's guess.
    case severalHosts
    /// A `Content-Length` or `Transfer-Encoding` line continued on the next
    /// line by leading whitespace (obs-fold). A proxy may join the lines
    /// (`0 74`, `074`) or take one; libmicrohttpd 0.9.75 appends the
    /// continuation to the field's *name* (`Content-Length74: 0`) and then
    /// frames as if there were no such field. What the server sees is a
    /// token name that starts with one of those two names.
    case foldedFramingField
    /// CR or LF inside a field value. libmicrohttpd ends lines at CRLF or LF
    /// only, so `X: a<CR>Content-Length: 74` is one field to it, while
    /// whoever ends lines at a bare CR reads a second `Content-Length`.
    /// A NUL cannot be seen: libmicrohttpd hands values over as C strings,
    /// so the rest of a line after a NUL never reaches the server.
    case lineBreakInFieldValue
    /// A `Content-Length` that is not one decimal number. libmicrohttpd
    /// 0.9.75 answers those itself before the server sees them; refused here
    /// too, so the framing rule does not rest on the library alone.
    case malformedContentLength

    /// 501 for a coding the server does not decode (RFC 9112 §6.1), else 400.
    public var status: Int {
        self == .unsupportedTransferCoding ? 501 : 400
    }

    /// What was wrong, for the client.
    public var explanation: String {
        switch self {
        case .severalContentLengths:
            "The request has more than one Content-Length field (RFC 9112 §6.3)."
        case .transferEncodingWithContentLength:
            "The request has both Transfer-Encoding and Content-Length (RFC 9112 §6.1)."
        case .transferEncodingInHTTP10:
            "HTTP/1.0 requests cannot use Transfer-Encoding (RFC 9112 §6.1)."
        case .fieldNameNotAToken:
            "A header field name has whitespace or a character a token cannot have, e.g. a space before the colon (RFC 9112 §5.1)."
        case .unframedTransferCoding:
            "chunked must be the final transfer coding, and only once (RFC 9112 §6.3)."
        case .unsupportedTransferCoding:
            "The only transfer coding accepted is chunked alone (RFC 9112 §6.1)."
        case .missingHost:
            "HTTP/1.1 requests must carry a Host header (RFC 9112 §3.2)."
        case .severalHosts:
            "The request has more than one Host field (RFC 9112 §3.2)."
        case .foldedFramingField:
            "A Content-Length or Transfer-Encoding field is continued on a line that starts with whitespace (obs-fold), or a field name begins with one of those names (RFC 9112 §5.2)."
        case .lineBreakInFieldValue:
            "A header field value contains a CR or LF, e.g. a bare CR where a line should end (RFC 9112 §2.2, RFC 9110 §5.5)."
        case .malformedContentLength:
            "Content-Length must be one decimal number (RFC 9112 §6.2)."
        }
    }
}

extension HTTPHeaders {
    /// The reason to refuse a request with these header fields, if any.
    ///
    /// One pass over the fields, comparing only names of the right length
    /// and first letter (with the spelling clients send, which compares
    /// fastest); a name found to be `Host`, `Content-Length` or
    /// `Transfer-Encoding` is a token, so only the others are checked byte
    /// by byte (and, when longer than 14 bytes, for a framing name at
    /// their start). Each value but `Content-Length`'s (digits only) is
    /// scanned once for CR and LF; `Transfer-Encoding` values are read
    /// further only when present.
    public func headFault(version: String) -> RequestHeadFault? {
        var given = GivenIdentity(), declaredLength: Int?
        return headFault(version: version, noting: &given, declaredLength: &declaredLength)
    }

    /// ``headFault(version:)``, reading on the way what the server needs
    /// of the head besides (the pass looks at every name anyway): the
    /// request's own ids, and the first `Content-Length` as a number (see
    /// ``HTTPTokens/leadingDecimal(_:)``), nil without one.
    func headFault(version: String, noting given: inout GivenIdentity,
                   declaredLength: inout Int?) -> RequestHeadFault? {
        var contentLengths = 0, transferEncodings = 0, hosts = 0, lengthIsDecimal = true
        var fieldFault: RequestHeadFault?
        forEachField { name, value in
            switch (name.count, name.first.map { $0 | 0x20 }) {
            case (4, UInt8(ascii: "h")) where name.caseInsensitiveEquals(Self.bytes("host")):
                hosts += 1
            case (14, UInt8(ascii: "c")) where name.caseInsensitiveEquals(Self.bytes("Content-Length")):
                if contentLengths == 0 { declaredLength = HTTPTokens.leadingDecimal(value) }
                contentLengths += 1
                // Digits and white space only: no CR or LF to look for.
                lengthIsDecimal = lengthIsDecimal && Self.isDecimal(value)
                return true
            case (17, UInt8(ascii: "t")) where name.caseInsensitiveEquals(Self.bytes("Transfer-Encoding")):
                transferEncodings += 1
            case (11, UInt8(ascii: "t")), (12, UInt8(ascii: "x")):
                // `traceparent`, `X-Request-Id`, or another name, which is checked as any other.
                given.read(name: name, value: value)
                fallthrough
            default:
                guard Self.isToken(name) else {
                    fieldFault = .fieldNameNotAToken
                    return false
                }
                if name.count > 14, Self.extendsFramingName(name) {
                    fieldFault = .foldedFramingField
                    return false
                }
            }
            if Self.containsLineBreak(value) {
                fieldFault = .lineBreakInFieldValue
                return false
            }
            return true
        }
        if let fieldFault {
            // The pass stopped at the fault; the ids after it still name the refusal.
            forEachField { name, value in
                given.read(name: name, value: value)
                return true
            }
            return fieldFault
        }
        if contentLengths > 1 { return .severalContentLengths }
        if !lengthIsDecimal { return .malformedContentLength }
        if hosts > 1 { return .severalHosts }
        if hosts == 0, version == "HTTP/1.1" { return .missingHost }
        guard transferEncodings > 0 else { return nil }
        if contentLengths > 0 { return .transferEncodingWithContentLength }
        if version == "HTTP/1.0" { return .transferEncodingInHTTP10 }
        return transferCodingFault(fields: transferEncodings)
    }

    /// libmicrohttpd decodes a body as chunked only when the first
    /// `Transfer-Encoding` is exactly `chunked`; anything else it would
    /// read to the end of the connection, answering nothing.
    private func transferCodingFault(fields: Int) -> RequestHeadFault? {
        var codings: [Substring] = []
        forEachValue(of: "Transfer-Encoding") { value in
            for coding in String(decoding: value, as: UTF8.self).lowercased().split(separator: ",") {
                let trimmed = coding.drop(while: { $0 == " " || $0 == "\t" })
                if let last = trimmed.lastIndex(where: { $0 != " " && $0 != "\t" }) {
                    codings.append(trimmed[...last])
                }
            }
            return true
        }
        guard codings.last == "chunked", !codings.dropLast().contains("chunked") else { return .unframedTransferCoding }
        guard fields == 1, codings.count == 1, first("Transfer-Encoding", caseInsensitivelyIs: "chunked") else {
            return .unsupportedTransferCoding
        }
        return nil
    }

    /// Whether the first field `name` is `value`, ignoring ASCII case.
    private func first(_ name: String, caseInsensitivelyIs value: StaticString) -> Bool {
        var matches = false
        forEachValue(of: name) { actual in
            matches = actual.caseInsensitiveEquals(Self.bytes(value))
            return false
        }
        return matches
    }

    @inline(__always)
    private static func bytes(_ text: StaticString) -> UnsafeBufferPointer<UInt8> {
        UnsafeBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount)
    }

    /// A longer name that starts with `Content-Length` or `Transfer-Encoding`:
    /// what libmicrohttpd 0.9.75 makes of such a field continued on the next line.
    private static func extendsFramingName(_ name: UnsafeBufferPointer<UInt8>) -> Bool {
        func startsWith(_ prefix: UnsafeBufferPointer<UInt8>) -> Bool {
            name.count > prefix.count && UnsafeBufferPointer(rebasing: name.prefix(prefix.count)).caseInsensitiveEquals(prefix)
        }
        return startsWith(bytes("Content-Length")) || startsWith(bytes("Transfer-Encoding"))
    }

    /// Whether a value holds CR or LF: never part of a field value (RFC 9110 §5.5).
    /// Every request pays for this over all its values, so it reads eight
    /// bytes at a time and looks at single bytes only where one is below 14
    /// (CR, LF, or a tab).
    private static func containsLineBreak(_ value: UnsafeBufferPointer<UInt8>) -> Bool {
        guard let base = value.baseAddress else { return false }
        let count = value.count
        guard count >= 8 else {
            for byte in value where byte == 13 || byte == 10 {
                return true
            }
            return false
        }
        let raw = UnsafeRawPointer(base)
        @inline(__always) func lowBytes(at offset: Int) -> UInt64 {
            let word = raw.loadUnaligned(fromByteOffset: offset, as: UInt64.self)
            return (word &- 0x0E0E_0E0E_0E0E_0E0E) & ~word & 0x8080_8080_8080_8080
        }
        var anyLow: UInt64 = 0, offset = 0
        while offset < count - 8 {
            anyLow |= lowBytes(at: offset)
            offset += 8
        }
        // The last eight bytes, overlapping the word before when the count is not a multiple of 8.
        anyLow |= lowBytes(at: count - 8)
        guard anyLow != 0 else { return false }
        for byte in value where byte == 13 || byte == 10 {
            return true
        }
        return false
    }

    /// 1*DIGIT, with optional whitespace around it (RFC 9112 §6.2).
    private static func isDecimal(_ value: UnsafeBufferPointer<UInt8>) -> Bool {
        var digits = 0, trailingSpace = false
        for byte in value {
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9") where !trailingSpace:
                digits += 1
            case UInt8(ascii: " "), UInt8(ascii: "\t"):
                trailingSpace = digits > 0
            default:
                return false
            }
        }
        return digits > 0
    }

    /// A token (RFC 9110 §5.6.2): one or more of letters, digits and
    /// ``!#$%&'*+-.^_`|~``. The two masks hold a bit for each such byte
    /// below 64 and from 64 to 127.
    static func isToken(_ name: UnsafeBufferPointer<UInt8>) -> Bool {
        guard !name.isEmpty else { return false }
        let below64: UInt64 = 0x03FF_6CFA_0000_0000, from64: UInt64 = 0x57FF_FFFF_C7FF_FFFE
        for byte in name {
            guard byte < 128, (byte < 64 ? below64 : from64) &>> byte & 1 != 0 else { return false }
        }
        return true
    }
}
