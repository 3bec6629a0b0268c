/* Atomic small-file writes (temporary file + fsync + rename) and mkdir -p. */
#include "io/write_file.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/status.h"

ember_status io_atomic_begin(io_atomic_file *f, const char *path)
{
    memset(f, 0, sizeof *f);
    f->fd = -1;
    if (!path || !path[0]) return f->st = ember_fail(EMBER_ERR_INVALID_ARG, "write: empty path");
    f->path = path;
    size_t plen = strlen(path);
    if (!(f->tmp = malloc(plen + 8))) return f->st = ember_fail(EMBER_ERR_NO_MEMORY, "%s: out of memory", path);
    /* A unique name beside the target: two processes writing the same file
     * each rename a whole file of their own, the last one wins. */
    memcpy(f->tmp, path, plen);
    memcpy(f->tmp + plen, ".XXXXXX", 8);
    if ((f->fd = mkstemp(f->tmp)) < 0) {
        f->st = ember_fail(EMBER_ERR_IO, "%s: cannot create a temporary file beside it: %s", path,
                           strerror(errno));
        free(f->tmp);
        f->tmp = NULL;
    }
    return f->st;
}

ember_status io_atomic_write(io_atomic_file *f, const void *data, size_t len)
{
    const char *p = data;
    for (size_t done = 0; !f->st && done < len;) {
        ssize_t w = write(f->fd, p + done, len - done);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) f->st = ember_fail(EMBER_ERR_IO, "%s: write failed: %s", f->tmp, strerror(errno));
        else done += (size_t)w;
    }
    return f->st;
}

void io_atomic_abort(io_atomic_file *f)
{
    if (f->fd >= 0) close(f->fd);
    if (f->tmp) unlink(f->tmp);
    free(f->tmp);
    f->tmp = NULL;
    f->fd = -1;
}

ember_status io_atomic_commit(io_atomic_file *f)
{
    ember_status st = f->st;
    if (!f->tmp) return st ? st : ember_fail(EMBER_ERR_INVALID_ARG, "write: no file begun");
    /* mkstemp makes the file 0600; a cache or a report is for everyone to read */
    if (!st && fchmod(f->fd, 0644) != 0)
        st = ember_fail(EMBER_ERR_IO, "%s: chmod failed: %s", f->tmp, strerror(errno));
    if (!st && fsync(f->fd) != 0) st = ember_fail(EMBER_ERR_IO, "%s: fsync failed: %s", f->tmp, strerror(errno));
    if (close(f->fd) != 0 && !st) st = ember_fail(EMBER_ERR_IO, "%s: close failed: %s", f->tmp, strerror(errno));
    f->fd = -1;
    if (!st && rename(f->tmp, f->path) != 0)
        st = ember_fail(EMBER_ERR_IO, "%s: cannot rename %s to it: %s", f->path, f->tmp, strerror(errno));
    if (st) unlink(f->tmp);
    free(f->tmp);
    f->tmp = NULL;
    return f->st = st;
}

ember_status io_write_file_atomic(const char *path, const void *data, size_t len)
{
    io_atomic_file f;
    if (io_atomic_begin(&f, path)) return f.st;
    io_atomic_write(&f, data, len);
    return io_atomic_commit(&f);
}

ember_status io_make_dirs(const char *path)
{
    if (!path || !path[0]) return ember_fail(EMBER_ERR_INVALID_ARG, "mkdir: empty path");
    size_t len = strlen(path);
    char *buf = malloc(len + 1);
    if (!buf) return ember_fail(EMBER_ERR_NO_MEMORY, "%s: out of memory", path);
    memcpy(buf, path, len + 1);
    ember_status st = EMBER_OK;
    /* each prefix ending before a '/', then the whole path */
    for (size_t i = 1; !st && i <= len; i++) {
        if (i < len && buf[i] != '/') continue;
        char saved = buf[i];
        buf[i] = '\0';
        struct stat sb;
        if (mkdir(buf, 0755) != 0 && errno != EEXIST)
            st = ember_fail(EMBER_ERR_IO, "%s: cannot create directory: %s", buf, strerror(errno));
        else if (stat(buf, &sb) != 0 || !S_ISDIR(sb.st_mode))
            st = ember_fail(EMBER_ERR_IO, "%s: exists and is not a directory", buf);
        buf[i] = saved;
    }
    free(buf);
    return st;
}
