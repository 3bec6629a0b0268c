/* Whole small files (JSON configs, tokenizer files) read into memory. */
#include "io/read_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/status.h"

/* Reads a whole regular file of at most `cap` bytes, NUL-terminated. */
ember_status io_read_text_file(const char *path, size_t cap, char **out, size_t *out_len)
{
    struct stat sb;
    char *text;
    size_t size, got = 0;
    int fd;

    *out = NULL;
    *out_len = 0;
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return ember_fail(EMBER_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    if (fstat(fd, &sb) != 0) {
        int e = errno;
        close(fd);
        return ember_fail(EMBER_ERR_IO, "%s: cannot stat: %s", path, strerror(e));
    }
    if (!S_ISREG(sb.st_mode)) {
        close(fd);
        return ember_fail(EMBER_ERR_IO, "%s: not a regular file", path);
    }
    if (sb.st_size < 0 || (uint64_t)sb.st_size > cap) {
        close(fd);
        return ember_fail(EMBER_ERR_FORMAT, "%s: file is %lld bytes, over the %zu-byte limit",
                          path, (long long)sb.st_size, cap);
    }
    size = (size_t)sb.st_size;
    text = malloc(size + 1);
    if (!text) {
        close(fd);
        return ember_fail(EMBER_ERR_NO_MEMORY, "%s: out of memory (%zu bytes)", path, size);
    }
    while (got < size) {
        ssize_t r = read(fd, text + got, size - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            int e = errno;
            free(text);
            close(fd);
            return ember_fail(EMBER_ERR_IO, "%s: read failed: %s", path, strerror(e));
        }
        if (r == 0)
            break; /* file shrank under us: keep what we got */
        got += (size_t)r;
    }
    close(fd);
    text[got] = '\0';
    *out = text;
    *out_len = got;
    return EMBER_OK;
}
