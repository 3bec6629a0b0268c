/* A fast 64-bit checksum for detecting damaged files (a torn write, a
 * flipped bit, a truncated copy): not a defence against someone forging a
 * file. It runs at memory speed so that checking a file of hundreds of
 * megabytes costs little next to reading it.
 *
 * Incremental: feeding the bytes in any pieces gives the same value as
 * feeding them at once. */
#ifndef EMBER_BASE_CHECKSUM_H
#define EMBER_BASE_CHECKSUM_H

#include <stddef.h>
#include <stdint.h>

typedef struct cksum64 {
    uint64_t lane[4];
    uint64_t total;      /* bytes fed */
    unsigned char tail[32];
    size_t n_tail;       /* bytes waiting in tail (< 32) */
} cksum64;

void cksum64_init(cksum64 *c);
void cksum64_feed(cksum64 *c, const void *data, size_t n);
uint64_t cksum64_final(const cksum64 *c);

/* The checksum of n bytes at once. */
uint64_t cksum64_of(const void *data, size_t n);

#endif
