import CMicroHTTPD

// libmicrohttpd's C callbacks about connections rather than their requests:
// admission, their contexts' lives, the deadline's start, the library's own
// answers, and TLS's certificate. Like the request callbacks, they capture
// nothing, so they run on the library's threads without actor isolation.

/// Gives each connection the context its requests reuse, and frees it with
/// the connection, unless a request still uses it (then that request's
/// completion frees it, whichever of the two libmicrohttpd reports first).
let connectionNotified: MHD_NotifyConnectionCallback = { cls, connection, socketContext, code in
    guard let socketContext else { return }
    switch code {
    case .CONNECTION_NOTIFY_STARTED:
        let context = UnsafeMutablePointer<RequestContext>.makeContext()
        context.pointee.client = connection.flatMap(clientAddress(of:))
        if let cls, let connection {
            Unmanaged<RequestDispatcher>.fromOpaque(cls)._withUnsafeGuaranteedRef { dispatcher in
                // Before the TLS handshake, which looks the certificate up here.
                context.pointee.tlsIdentities = dispatcher.tlsIdentities.map(Unmanaged.passUnretained)
                context.pointee.connection = Unmanaged.passRetained(
                    dispatcher.connections.opened(connection, isEncrypted: dispatcher.tlsIdentities != nil))
            }
        }
        socketContext.pointee = UnsafeMutableRawPointer(context)
    case .CONNECTION_NOTIFY_CLOSED:
        guard let existing = socketContext.pointee else { return }
        socketContext.pointee = nil
        let context = existing.assumingMemoryBound(to: RequestContext.self)
        if let cls, let member = context.pointee.connection {
            Unmanaged<RequestDispatcher>.fromOpaque(cls)._withUnsafeGuaranteedRef {
                $0.connections.closed(member.takeUnretainedValue())
            }
        }
        if context.pointee.isInUse {
            context.pointee.isOrphaned = true
        } else {
            context.free()
        }
    default:
        break
    }
}

/// A request's line has come: its deadline runs from now at the latest,
/// even if the sweep has not seen its first bytes arrive.
let requestLineArrived: CMHD_request_line_callback = { _, _, connection in
    guard let connection, let shared = CMHD_socket_context(connection) else { return nil }
    _ = shared.assumingMemoryBound(to: RequestContext.self).pointee.headArrived()
    return nil
}

/// The accept policy (``OpenConnections/admit(_:)``): a connection refused
/// here is closed by libmicrohttpd before anything is set up for it.
let admitConnection: MHD_AcceptPolicyCallback = { cls, address, _ in
    guard let cls else { return .YES }
    return Unmanaged<RequestDispatcher>.fromOpaque(cls)._withUnsafeGuaranteedRef {
        $0.connections.admit(address) ? .YES : .NO
    }
}

/// libmicrohttpd answered a malformed request itself (its log is the only
/// place it says so; see `CMHD_log_error_answers`).
let libraryAnswered: CMHD_error_answer_callback = { cls, status in
    guard let cls else { return }
    Unmanaged<RequestDispatcher>.fromOpaque(cls)._withUnsafeGuaranteedRef {
        $0.connections.counts.count(ConnectionRefusal(libraryAnswer: status))
    }
}

/// GnuTLS asks for the server's certificate at each handshake (libmicrohttpd
/// passes this on as `MHD_OPTION_HTTPS_CERT_CALLBACK`): the identity current
/// when the handshake begins, so a reload changes it for new connections
/// while open ones keep theirs. libmicrohttpd makes the connection the TLS
/// session's pointer, and the connection's context names the server's
/// identities. They outlive every handshake (see ``TLSIdentities``), so the
/// pointers handed over stay valid; GnuTLS frees none of them.
///
/// A function rather than a closure like the others: GnuTLS declares the
/// callback's function type, not a pointer to it, which Swift imports as a
/// plain Swift function type that a closure constant cannot be converted from.
func certificateForHandshake(
    _ session: gnutls_session_t?, _ acceptedAuthorities: UnsafePointer<gnutls_datum_t>?, _ authorityCount: Int32,
    _ keyAlgorithms: UnsafePointer<gnutls_pk_algorithm_t>?, _ keyAlgorithmCount: Int32,
    _ chain: UnsafeMutablePointer<UnsafeMutablePointer<gnutls_pcert_st>?>?, _ chainLength: UnsafeMutablePointer<UInt32>?,
    _ key: UnsafeMutablePointer<gnutls_privkey_t?>?
) -> Int32 {
    guard let session, let chain, let chainLength, let key,
          let connection = gnutls_session_get_ptr(session),
          let shared = CMHD_socket_context(OpaquePointer(connection)),
          let identities = shared.assumingMemoryBound(to: RequestContext.self).pointee.tlsIdentities,
          let identity = identities._withUnsafeGuaranteedRef({ $0.current })
    else { return -1 }  // no certificate: the handshake fails, the server goes on
    chain.pointee = identity.chain
    chainLength.pointee = identity.chainLength
    key.pointee = identity.key
    return 0
}
