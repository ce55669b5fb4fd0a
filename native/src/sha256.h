/* sha256.h - SHA-256 (FIPS 180-4) for the sandbox policy digest and the
 * init's pinned image (internal).
 *
 * No assembly and no crypto library to depend on: the plain compression
 * function, or the CPU's SHA extensions where it has them (x86-64). */
#ifndef A3S_SHA256_H
#define A3S_SHA256_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct a3s_sha256 {
    uint32_t h[8];
    uint64_t length; /* bytes hashed so far */
    uint8_t block[64];
    size_t used; /* bytes waiting in block */
    bool plain;  /* never the SHA extensions (set after init, for tests) */
};

void a3s_sha256_init(struct a3s_sha256 *s);
void a3s_sha256_update(struct a3s_sha256 *s, const void *data, size_t len);
void a3s_sha256_final(struct a3s_sha256 *s, uint8_t out[32]);

/* Finishes s and writes its digest as 64 lower-case hex digits and a NUL. */
void a3s_sha256_hex(struct a3s_sha256 *s, char hex[65]);

/* "sha256:" and 64 lower-case hex digits of data[0..len), NUL-terminated. */
#define A3S_SHA256_TEXT_SIZE (7 + 64 + 1)
void a3s_sha256_text(const void *data, size_t len, char out[A3S_SHA256_TEXT_SIZE]);

#endif
