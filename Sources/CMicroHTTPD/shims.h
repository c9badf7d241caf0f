// Thin C layer over Debian's libmicrohttpd for Swift.
//
// Swift does not import C-variadic functions, and libmicrohttpd configures
// daemons and answers queries through them. Each shim below is a fixed-arity
// wrapper around exactly one such call; nothing else belongs here.
#ifndef CMICROHTTPD_SHIMS_H
#define CMICROHTTPD_SHIMS_H

#include <stdint.h>
#include <sys/types.h>
#include <sys/socket.h>
#include <microhttpd.h>

/// `MHD_start_daemon` is variadic. The completion callback is passed typed
/// here (not bit-cast through an option array); plain numeric options come in
/// `options`, terminated by `MHD_OPTION_END`.
static inline struct MHD_Daemon *
CMHD_start_daemon(unsigned int flags,
                  MHD_AccessHandlerCallback handler, void *handler_cls,
                  MHD_RequestCompletedCallback completed, void *completed_cls,
                  struct MHD_OptionItem *options)
{
    return MHD_start_daemon(flags, 0, NULL, NULL, handler, handler_cls,
                            MHD_OPTION_NOTIFY_COMPLETED, completed, completed_cls,
                            MHD_OPTION_ARRAY, options,
                            MHD_OPTION_END);
}

/// `MHD_get_daemon_info` is variadic; graceful stop waits on this count.
static inline unsigned int
CMHD_daemon_current_connections(struct MHD_Daemon *daemon)
{
    const union MHD_DaemonInfo *info =
        MHD_get_daemon_info(daemon, MHD_DAEMON_INFO_CURRENT_CONNECTIONS);
    return info == NULL ? 0 : info->num_connections;
}

#endif
