/* Errors as values: every internal failure sets a per-thread message and
 * returns an ember_status. The message is what ember_last_error() returns. */
#ifndef EMBER_BASE_STATUS_H
#define EMBER_BASE_STATUS_H

#include "ember.h"

#if defined(__GNUC__)
#define EMBER_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define EMBER_PRINTF(a, b)
#endif

/* Records a formatted message for this thread and returns `status`. */
ember_status ember_fail(ember_status status, const char *fmt, ...) EMBER_PRINTF(2, 3);

/* Prefixes the current message with "prefix: " (to add the file or tensor a
 * lower layer did not know about). Returns `status`. */
ember_status ember_fail_prefix(ember_status status, const char *fmt, ...) EMBER_PRINTF(2, 3);

void ember_clear_error(void);

#endif
