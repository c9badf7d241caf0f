// Thin C layer over Debian's libmicrohttpd for Swift.
//
// Swift does not import C-variadic functions, and libmicrohttpd configures
// daemons and answers queries through them. Each shim below is a fixed-arity
// wrapper around exactly one such call, or says why Swift cannot make the
// call itself; nothing else belongs here.
//
// GnuTLS's headers come in for the certificate callback: libmicrohttpd hands
// TLS handshakes to GnuTLS, which asks that callback for the server's
// certificate, so a reload can change it on a running daemon.
#ifndef CMICROHTTPD_SHIMS_H
#define CMICROHTTPD_SHIMS_H

#include <stdint.h>
#include <string.h>
#include <sys/types.h>
#include <sys/socket.h>
#include <microhttpd.h>
#include <gnutls/gnutls.h>
#include <gnutls/abstract.h>

/// Leaves request paths exactly as sent. Decoding them would let `%2F`
/// pose as a separator and `%00` cut a path short once it is a C string.
static size_t
CMHD_keep_escapes(void *cls, struct MHD_Connection *connection, char *text)
{
    (void) cls;
    (void) connection;
    return strlen(text);
}

/// `MHD_start_daemon` is variadic. The callbacks are passed typed here (not
/// bit-cast through an option array); plain numeric options come in
/// `options`, terminated by `MHD_OPTION_END`.
static inline struct MHD_Daemon *
CMHD_start_daemon(unsigned int flags,
                  MHD_AccessHandlerCallback handler, void *handler_cls,
                  MHD_RequestCompletedCallback completed, void *completed_cls,
                  MHD_NotifyConnectionCallback connection_notified, void *connection_notified_cls,
                  struct MHD_OptionItem *options)
{
    return MHD_start_daemon(flags, 0, NULL, NULL, handler, handler_cls,
                            MHD_OPTION_NOTIFY_COMPLETED, completed, completed_cls,
                            MHD_OPTION_NOTIFY_CONNECTION, connection_notified, connection_notified_cls,
                            MHD_OPTION_UNESCAPE_CALLBACK, CMHD_keep_escapes, NULL,
                            MHD_OPTION_ARRAY, options,
                            MHD_OPTION_END);
}

/// `MHD_get_connection_info` is variadic: the context set for the
/// connection when it was accepted (`MHD_CONNECTION_NOTIFY_STARTED`).
static inline void *
CMHD_socket_context(struct MHD_Connection *connection)
{
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(connection, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return info == NULL ? NULL : info->socket_context;
}

/// `MHD_get_connection_info` is variadic: the client's socket address, for
/// the access log (read once per connection).
static inline const struct sockaddr *
CMHD_client_address(struct MHD_Connection *connection)
{
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    return info == NULL ? NULL : info->client_addr;
}

/// `MHD_set_response_options` is variadic: one set of flags, nothing else.
static inline enum MHD_Result
CMHD_set_response_flags(struct MHD_Response *response, enum MHD_ResponseFlags flags)
{
    return MHD_set_response_options(response, flags, MHD_RO_END);
}

/// `MHD_OPTION_HTTPS_CERT_CALLBACK` takes GnuTLS's certificate callback in
/// the option item's data pointer; Swift cannot turn a C function pointer
/// into a data pointer without a bit cast, so the item is made here, typed.
static inline struct MHD_OptionItem
CMHD_certificate_callback_option(gnutls_certificate_retrieve_function2 *callback)
{
    struct MHD_OptionItem item = { MHD_OPTION_HTTPS_CERT_CALLBACK, 0, (void *) callback };
    return item;
}

#endif
