/* sha256.h - SHA-256 (FIPS 180-4) of a byte stream, for pinning the init's image. Internal. */
#ifndef A3S_SHA256_H
#define A3S_SHA256_H

#include <stddef.h>
#include <stdint.h>

struct a3s_sha256 {
    uint32_t h[8];
    uint64_t len;        /* bytes hashed so far */
    unsigned char block[64];
    size_t used;         /* bytes waiting in block */
};

void a3s_sha256_init(struct a3s_sha256 *s);
void a3s_sha256_update(struct a3s_sha256 *s, const void *data, size_t n);
/* Writes the digest as 64 lower-case hex digits and a NUL into hex. */
void a3s_sha256_hex(struct a3s_sha256 *s, char hex[65]);

#endif
