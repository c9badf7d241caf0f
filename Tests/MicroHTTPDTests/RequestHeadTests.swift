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
        func path(_ target: String) -> String { target.withCString { HTTPTokens.path($0) } }
        #expect(path("/v1/sessions") == "/v1/sessions")
        #expect(path("http://127.0.0.1:8080/healthz") == "/healthz")
        #expect(path("HTTPS://example.com/v1/sessions/ab") == "/v1/sessions/ab")
        #expect(path("http://example.com") == "/")
        #expect(path("*") == "*")
        #expect(path("example.com:443") == "example.com:443", "authority-form is not a path and goes unrouted")
        #expect(path("ftp://example.com/healthz") == "ftp://example.com/healthz")
    }
}
