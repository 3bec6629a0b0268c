/* Large, long-lived buffers (converted weights, KV caches) that are streamed
 * from DRAM every token: aligned to 2 MiB and marked for transparent huge
 * pages. With 4 KiB pages the hardware prefetchers stop at every page
 * boundary and every 4 KiB costs a TLB walk; this machine's kernel (like most
 * distributions') only gives huge pages to memory that asks for them. */
#ifndef EMBER_BASE_LARGE_ALLOC_H
#define EMBER_BASE_LARGE_ALLOC_H

#include <stddef.h>

/* NULL on failure. Free with free(). Small sizes fall back to malloc. */
void *ember_large_alloc(size_t bytes);

#endif
