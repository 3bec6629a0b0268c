#include "base/status.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* Per-thread so that two threads loading two models never see each other's
 * messages; this is the only thread-level state in the library. */
static _Thread_local char last_error[1024];

const char *ember_status_name(ember_status status)
{
    switch (status) {
    case EMBER_OK: return "ok";
    case EMBER_ERR_INVALID_ARG: return "invalid argument";
    case EMBER_ERR_IO: return "i/o error";
    case EMBER_ERR_FORMAT: return "format error";
    case EMBER_ERR_UNSUPPORTED: return "unsupported";
    case EMBER_ERR_NO_MEMORY: return "out of memory";
    case EMBER_ERR_CONTEXT_FULL: return "context full";
    case EMBER_ERR_CANCELLED: return "cancelled";
    }
    return "unknown status";
}

const char *ember_last_error(void) { return last_error; }

void ember_clear_error(void) { last_error[0] = '\0'; }

ember_status ember_fail(ember_status status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error, sizeof last_error, fmt, ap);
    va_end(ap);
    return status;
}

ember_status ember_fail_prefix(ember_status status, const char *fmt, ...)
{
    char prefix[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof prefix, fmt, ap);
    va_end(ap);
    /* Shift the old message right (truncating its tail) and put the prefix
     * plus ": " in front. */
    size_t plen = strlen(prefix), cap = sizeof last_error;
    size_t olen = strlen(last_error);
    if (plen + 2 >= cap) plen = cap - 3;
    if (olen > cap - 1 - plen - 2) olen = cap - 1 - plen - 2;
    memmove(last_error + plen + 2, last_error, olen);
    last_error[plen + 2 + olen] = '\0';
    memcpy(last_error, prefix, plen);
    last_error[plen] = ':';
    last_error[plen + 1] = ' ';
    return status;
}
