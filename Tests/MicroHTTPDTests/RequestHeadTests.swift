import Testing
@testable import MicroHTTPD

@Suite struct RequestHeadTests {
    private func fault(_ fields: [(String, String)], _ version: String = "HTTP/1.1") -> RequestHeadFault? {
        HTTPHeaders(fields).headFault(version: version)
    }

    @Test func ordinaryRequestsPass() {
        #expect(fault([("Host", "x")]) == nil)
        #expect(fault([("host", "x"), ("Content-Type", "application/json"), ("content-length", "12")]) == nil)
        #expect(fault([("Host", "x"), ("Transfer-Encoding", "chunked")]) == nil)
        #expect(fault([("Host", "x"), ("transfer-encoding", "Chunked")]) == nil, "codings are case-insensitive")
        #expect(fault([("X-Odd_But.Token!#$%&'*+^`|~09", "v")], "HTTP/1.0") == nil, "every tchar is allowed")
        #expect(fault([], "HTTP/1.0") == nil, "HTTP/1.0 needs no Host")
    }

    @Test func bodiesThatCouldBeFramedTwoWaysAreRefused() {
        #expect(fault([("Host", "x"), ("Content-Length", "0"), ("Content-Length", "74")]) == .severalContentLengths)
        #expect(fault([("Host", "x"), ("Content-Length", "5"), ("content-length", "5")]) == .severalContentLengths,
                "even equal values: one field or none")
        #expect(fault([("Host", "x"), ("Content-Length", "5"), ("Transfer-Encoding", "chunked")])
                == .transferEncodingWithContentLength)
        #expect(fault([("Transfer-Encoding", "chunked"), ("Host", "x"), ("Content-Length", "5")])
                == .transferEncodingWithContentLength)
        #expect(fault([("Transfer-Encoding", "chunked")], "HTTP/1.0") == .transferEncodingInHTTP10)
    }

    @Test func fieldNamesMustBeTokens() {
        for name in ["Content-Length ", "Content-Length\t", " Content-Length", "Content@Length", "Na(me", "N\u{E9}", ""] {
            #expect(fault([("Host", "x"), (name, "74")]) == .fieldNameNotAToken, "\(name.debugDescription)")
        }
    }

    /// libmicrohttpd 0.9.75 appends a continuation line (obs-fold) to the
    /// previous field's name: `Content-Length: 0` then ` 74` reaches the
    /// server as `Content-Length74: 0`, and it frames as if there were no
    /// `Content-Length` at all.
    @Test func aFoldedFramingFieldIsRefused() {
        let host = ("Host", "x")
        #expect(fault([host, ("Content-Length74", "0")]) == .foldedFramingField)
        #expect(fault([host, ("Content-Length0", "12")]) == .foldedFramingField)
        #expect(fault([host, ("content-lengthX", "1")]) == .foldedFramingField)
        #expect(fault([host, ("Transfer-Encodingchunked", "gzip")]) == .foldedFramingField)
        #expect(fault([host, ("TRANSFER-ENCODING-x", "chunked")]) == .foldedFramingField)
        #expect(fault([host, ("Content-Length74 ", "0")]) == .fieldNameNotAToken)
        #expect(fault([host, ("Transfer-Encoding, gzip", "chunked")]) == .fieldNameNotAToken, "a continuation that is no token")
        #expect(fault([host, ("Content-Type", "application/json"), ("Content-Lengt", "1"), ("Transfer-Encodin", "1")]) == nil,
                "shorter names are other fields")
    }

    @Test func aValueWithCROrLFIsRefused() {
        let host = ("Host", "x")
        #expect(fault([host, ("X", "a\rContent-Length: 74"), ("Content-Length", "0")]) == .lineBreakInFieldValue)
        #expect(fault([host, ("X", "a\nContent-Length: 74")]) == .lineBreakInFieldValue)
        #expect(fault([host, ("Content-Length", "0\r")]) == .malformedContentLength, "digits only: no line break either")
        #expect(fault([("Host", "x\r")]) == .lineBreakInFieldValue)
        #expect(fault([host, ("Transfer-Encoding", "gzip\r, chunked")]) == .lineBreakInFieldValue)
        #expect(fault([host, ("X", "tab\there, and \u{7F} or \u{E9} are not line breaks")]) == nil)
        for count in 1...19 {
            for position in 0..<count {
                for breakByte: UInt8 in [13, 10] {
                    var value = [UInt8](repeating: UInt8(ascii: "v"), count: count)
                    value[position] = breakByte
                    #expect(fault([host, ("X", String(decoding: value, as: UTF8.self))]) == .lineBreakInFieldValue,
                            "at \(position) of \(count)")
                }
            }
        }
    }

    /// A NUL ends a value, as it does for libmicrohttpd, which hands values
    /// over as C strings: what follows it on the line is never seen.
    @Test func aNULEndsAValue() {
        let headers = HTTPHeaders([("Host", "x"), ("X", "a\u{0}\rContent-Length: 74")])
        #expect(headers["X"] == "a")
        #expect(headers.headFault(version: "HTTP/1.1") == nil)
    }

    @Test func contentLengthIsOneDecimalNumber() {
        let host = ("Host", "x")
        for value in ["0", "74", " 12 ", "\t5", "007"] {
            #expect(fault([host, ("Content-Length", value)]) == nil, "\(value.debugDescription)")
        }
        for value in ["0 74", "", " ", "-1", "+5", "5, 5", "0x10", "1e3", "12a"] {
            #expect(fault([host, ("Content-Length", value)]) == .malformedContentLength, "\(value.debugDescription)")
        }
    }

    @Test func onlyALoneChunkedCodingIsDecoded() {
        let host = ("Host", "x")
        #expect(fault([host, ("Transfer-Encoding", "gzip")]) == .unframedTransferCoding, "the final coding is not chunked")
        #expect(fault([host, ("Transfer-Encoding", "chunked, gzip")]) == .unframedTransferCoding)
        #expect(fault([host, ("Transfer-Encoding", "chunked, chunked")]) == .unframedTransferCoding, "chunked twice")
        #expect(fault([host, ("Transfer-Encoding", "chunked"), ("Transfer-Encoding", "chunked")]) == .unframedTransferCoding)
        #expect(fault([host, ("Transfer-Encoding", "")]) == .unframedTransferCoding)
        #expect(fault([host, ("Transfer-Encoding", "gzip, chunked")]) == .unsupportedTransferCoding)
        #expect(fault([host, ("Transfer-Encoding", "gzip"), ("Transfer-Encoding", "chunked")]) == .unsupportedTransferCoding)
        #expect(fault([host, ("Transfer-Encoding", ", chunked")]) == .unsupportedTransferCoding,
                "a list libmicrohttpd would not read as chunked")
        #expect(fault([host, ("Transfer-Encoding", "chunked"), ("Transfer-Encoding", "")]) == .unsupportedTransferCoding)
        #expect(RequestHeadFault.unsupportedTransferCoding.status == 501 && RequestHeadFault.unframedTransferCoding.status == 400)
    }

    @Test func hostMustBeThereOnceInHTTP11AndNeverTwice() {
        #expect(fault([("Accept", "*/*")]) == .missingHost)
        #expect(fault([("Host", "x"), ("host", "y")]) == .severalHosts)
        #expect(fault([("Host", "x"), ("Host", "x")], "HTTP/1.0") == .severalHosts)
    }

    @Test func everyFaultIsExplainedWithItsRFCSection() {
        for fault in RequestHeadFault.allCases {
            #expect(fault.explanation.contains("RFC 9112 §"), "\(fault)")
            #expect([400, 501].contains(fault.status))
        }
    }

    @Test func absoluteFormTargetsAreRoutedByTheirPath() {
        func path(_ target: String) -> String {
            var bytes = Array("/the/last/request's/path".utf8)  // a reused buffer: emptied first
            target.withCString { HTTPTokens.path($0, into: &bytes) }
            return String(decoding: bytes, as: UTF8.self)
        }
        #expect(path("/v1/sessions") == "/v1/sessions")
        #expect(path("http://127.0.0.1:8080/healthz") == "/healthz")
        #expect(path("HTTPS://example.com/v1/sessions/ab") == "/v1/sessions/ab")
        #expect(path("http://example.com") == "/")
        #expect(path("*") == "*")
        #expect(path("example.com:443") == "example.com:443", "authority-form is not a path and goes unrouted")
        #expect(path("ftp://example.com/healthz") == "ftp://example.com/healthz")
    }
}
