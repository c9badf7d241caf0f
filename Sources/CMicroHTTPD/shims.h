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
#include <poll.h>
// For the WebSocket loop, which watches upgraded sockets itself: Swift's
// Glibc module leaves these headers out.
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
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

/// Where libmicrohttpd's answers of its own (a malformed head: 400, 413,
/// 414, 431) are reported: the library tells of them only in its log.
typedef void (*CMHD_error_answer_callback)(void *cls, unsigned int status);

struct CMHD_error_answers {
    CMHD_error_answer_callback callback;
    void *cls;
};

/// libmicrohttpd's log callback takes a `va_list`, which Swift cannot read.
/// Of all its lines only the one it writes as it answers an error itself is
/// wanted; its first argument is the status. (Its wording has changed across
/// releases after the status, never before it.)
static void
CMHD_log_error_answers(void *cls, const char *format, va_list arguments)
{
    static const char prefix[] = "Error processing request (HTTP response code is %u";
    if (cls == NULL || format == NULL || strncmp(format, prefix, sizeof prefix - 1) != 0) {
        return;
    }
    const struct CMHD_error_answers *answers = (const struct CMHD_error_answers *) cls;
    answers->callback(answers->cls, va_arg(arguments, unsigned int));
}

/// `MHD_OPTION_URI_LOG_CALLBACK`'s function: called once per request as
/// soon as its request line is read, before the headers. Returns NULL, so
/// the access handler's first call still finds no request context.
typedef void *(*CMHD_request_line_callback)(void *cls, const char *uri, struct MHD_Connection *connection);

/// `MHD_start_daemon` is variadic. The callbacks are passed typed here (not
/// bit-cast through an option array); plain numeric options come in
/// `options`, terminated by `MHD_OPTION_END`. `admit` is the accept policy,
/// asked with the peer's address before a connection is set up.
static inline struct MHD_Daemon *
CMHD_start_daemon(unsigned int flags,
                  MHD_AcceptPolicyCallback admit, void *admit_cls,
                  MHD_AccessHandlerCallback handler, void *handler_cls,
                  MHD_RequestCompletedCallback completed, void *completed_cls,
                  MHD_NotifyConnectionCallback connection_notified, void *connection_notified_cls,
                  CMHD_request_line_callback request_line, void *request_line_cls,
                  const struct CMHD_error_answers *error_answers,
                  struct MHD_OptionItem *options)
{
    return MHD_start_daemon(flags | MHD_USE_ERROR_LOG, 0, admit, admit_cls, handler, handler_cls,
                            MHD_OPTION_NOTIFY_COMPLETED, completed, completed_cls,
                            MHD_OPTION_NOTIFY_CONNECTION, connection_notified, connection_notified_cls,
                            MHD_OPTION_UNESCAPE_CALLBACK, CMHD_keep_escapes, NULL,
                            MHD_OPTION_URI_LOG_CALLBACK, request_line, request_line_cls,
                            MHD_OPTION_EXTERNAL_LOGGER, CMHD_log_error_answers, (void *) error_answers,
                            MHD_OPTION_ARRAY, options,
                            MHD_OPTION_END);
}

/// `MHD_get_connection_info` is variadic: the connection's socket, for the
/// checks libmicrohttpd does not make (a head's deadline, a suspended
/// client that left).
static inline int
CMHD_connection_descriptor(struct MHD_Connection *connection)
{
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD);
    return info == NULL ? -1 : info->connect_fd;
}

/// Bytes the kernel has received on a TCP socket (`tcpi_bytes_received`,
/// Linux 4.1), including those libmicrohttpd has already read: whether a
/// request has begun is told by this number moving. glibc's `tcp_info`
/// stops before the field, so its offset in the kernel's struct is used;
/// 0 where the kernel is older (the struct returned is shorter).
static inline uint64_t
CMHD_bytes_received(int descriptor)
{
    unsigned char info[256];
    socklen_t length = sizeof info;
    memset(info, 0, sizeof info);
    if (getsockopt(descriptor, IPPROTO_TCP, TCP_INFO, info, &length) != 0) {
        return 0;
    }
    const size_t offset = 128;  /* after tcpi_bytes_acked in <linux/tcp.h> */
    if (length < offset + sizeof(uint64_t)) {
        return 0;
    }
    uint64_t received;
    memcpy(&received, info + offset, sizeof received);
    return received;
}

/// Whether the peer has closed its side (or the socket failed), without
/// reading: libmicrohttpd does not watch a suspended connection's socket.
/// (`POLLRDHUP` is Linux's 0x2000, named by <poll.h> only under _GNU_SOURCE.)
static inline int
CMHD_peer_has_left(int descriptor)
{
    const short POLLRDHUP = 0x2000;
    struct pollfd entry = { descriptor, POLLRDHUP, 0 };
    if (poll(&entry, 1, 0) != 1) {
        return 0;
    }
    return (entry.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) != 0;
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

/// Closes an upgraded connection's socket: `MHD_upgrade_action` is
/// C-variadic, and closing takes no further argument.
static enum MHD_Result
CMHD_upgrade_close(struct MHD_UpgradeResponseHandle *handle)
{
    return MHD_upgrade_action(handle, MHD_UPGRADE_ACTION_CLOSE);
}

#endif
