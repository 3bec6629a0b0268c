/* Reading a whole small file (a JSON config, a tokenizer file). */
#ifndef EMBER_IO_READ_FILE_H
#define EMBER_IO_READ_FILE_H

#include <stddef.h>

#include "ember.h"

/* Reads a whole regular file of at most `cap` bytes into a malloc'd,
 * NUL-terminated buffer (*out, *out_len bytes before the NUL). Errors name
 * the path: EMBER_ERR_IO if it cannot be opened or read, EMBER_ERR_FORMAT
 * if it is larger than cap. */
ember_status io_read_text_file(const char *path, size_t cap, char **out, size_t *out_len);

#endif
