// Debian's hiredis 0.14, seen from Swift.
//
// Swift does not import C-variadic functions (`redisCommand`,
// `redisAppendCommand`); the module uses the non-variadic forms instead, so
// no shim is needed so far. A shim added here wraps exactly one call that
// Swift cannot make, with a comment saying why.
#ifndef CHIREDIS_SHIMS_H
#define CHIREDIS_SHIMS_H

#include <hiredis/hiredis.h>

#endif
