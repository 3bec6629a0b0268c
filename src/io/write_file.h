/* Writing a small file so that a reader sees the old contents or the new,
 * never half of either: the bytes go to a temporary file beside the target,
 * which is flushed and then renamed over it (rename is atomic within one
 * filesystem). Used for the stats dump, the calibration cache and the
 * latency report, which other processes may read while we write. */
#ifndef EMBER_IO_WRITE_FILE_H
#define EMBER_IO_WRITE_FILE_H

#include <stddef.h>

#include "ember.h"

/* The same for a file written in pieces (a saved session: hundreds of MB
 * straight from the caches, not gathered in memory first): begin creates
 * the temporary file, write appends, commit flushes it and renames it over
 * path. A failed write is remembered: commit then removes the temporary
 * file and returns that error. Every begin is ended by commit or abort. */
typedef struct io_atomic_file {
    const char *path;
    char *tmp;
    int fd;
    ember_status st; /* the first failure */
} io_atomic_file;

ember_status io_atomic_begin(io_atomic_file *f, const char *path);
ember_status io_atomic_write(io_atomic_file *f, const void *data, size_t len);
ember_status io_atomic_commit(io_atomic_file *f);
/* Removes the temporary file (the target is untouched). */
void io_atomic_abort(io_atomic_file *f);

/* Writes len bytes to path atomically (mode 0644). On failure the target
 * is untouched, the temporary file removed, and the error names the path. */
ember_status io_write_file_atomic(const char *path, const void *data, size_t len);

/* Creates the directory and any missing parents (mode 0755), like
 * `mkdir -p`. An existing directory is fine; an existing non-directory is
 * an error naming it. */
ember_status io_make_dirs(const char *path);

#endif
