#include "base/large_alloc.h"

#include <stdlib.h>
#include <sys/mman.h>

#define HUGE_PAGE ((size_t)2 << 20)

void *ember_large_alloc(size_t bytes)
{
    if (bytes < HUGE_PAGE) return malloc(bytes ? bytes : 1);
    void *p = NULL;
    size_t rounded = (bytes + HUGE_PAGE - 1) / HUGE_PAGE * HUGE_PAGE;
    if (posix_memalign(&p, HUGE_PAGE, rounded)) return NULL;
#ifdef MADV_HUGEPAGE
    (void)madvise(p, rounded, MADV_HUGEPAGE); /* advice only: fine if refused */
#endif
    return p;
}
