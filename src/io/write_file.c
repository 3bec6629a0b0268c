/* Atomic small-file writes (temporary file + fsync + rename) and mkdir -p. */
#include "io/write_file.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/status.h"

ember_status io_write_file_atomic(const char *path, const void *data, size_t len)
{
    if (!path || !path[0]) return ember_fail(EMBER_ERR_INVALID_ARG, "write: empty path");
    size_t plen = strlen(path);
    char *tmp = malloc(plen + 8);
    if (!tmp) return ember_fail(EMBER_ERR_NO_MEMORY, "%s: out of memory", path);
    /* A unique name beside the target: two processes writing the same file
     * each rename a whole file of their own, the last one wins. */
    memcpy(tmp, path, plen);
    memcpy(tmp + plen, ".XXXXXX", 8);
    int fd = mkstemp(tmp);
    if (fd < 0) {
        ember_status st = ember_fail(EMBER_ERR_IO, "%s: cannot create a temporary file beside it: %s",
                                     path, strerror(errno));
        free(tmp);
        return st;
    }
    ember_status st = EMBER_OK;
    const char *p = data;
    size_t done = 0;
    while (!st && done < len) {
        ssize_t w = write(fd, p + done, len - done);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) st = ember_fail(EMBER_ERR_IO, "%s: write failed: %s", tmp, strerror(errno));
        else done += (size_t)w;
    }
    /* mkstemp makes the file 0600; a cache or a report is for everyone to read */
    if (!st && fchmod(fd, 0644) != 0)
        st = ember_fail(EMBER_ERR_IO, "%s: chmod failed: %s", tmp, strerror(errno));
    if (!st && fsync(fd) != 0) st = ember_fail(EMBER_ERR_IO, "%s: fsync failed: %s", tmp, strerror(errno));
    if (close(fd) != 0 && !st) st = ember_fail(EMBER_ERR_IO, "%s: close failed: %s", tmp, strerror(errno));
    if (!st && rename(tmp, path) != 0)
        st = ember_fail(EMBER_ERR_IO, "%s: cannot rename %s to it: %s", path, tmp, strerror(errno));
    if (st) unlink(tmp);
    free(tmp);
    return st;
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
