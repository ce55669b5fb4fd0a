/* sha256.c - SHA-256 as FIPS 180-4 specifies it (section 6.2), written for the policy digest.
 *
 * Every handle hashes the whole a3s-init (about 1 MB) when it is made, which the plain
 * compression function takes 10-15 ms for: most of a `codeward exec`'s own cost beyond
 * the sandbox. Where the CPU has the SHA extensions (x86-64), whole blocks go through
 * them instead (about ten times faster); the digest is the same either way
 * (native/tests/test_sha256.c compares the two). */
#include "sha256.h"

#include <string.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define A3S_SHA_NI 1
#include <cpuid.h>
#include <immintrin.h>
#endif

static const uint32_t K[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4,
    0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe,
    0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f,
    0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7,
    0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc,
    0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
    0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116,
    0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
    0xc67178f2,
};

static uint32_t rotr(uint32_t x, unsigned n) { return (x >> n) | (x << (32 - n)); }

static void compress(uint32_t h[8], const uint8_t block[64]) {
    uint32_t w[64];
    for (int t = 0; t < 16; t++)
        w[t] = (uint32_t)block[4 * t] << 24 | (uint32_t)block[4 * t + 1] << 16 |
               (uint32_t)block[4 * t + 2] << 8 | (uint32_t)block[4 * t + 3];
    for (int t = 16; t < 64; t++) {
        uint32_t s0 = rotr(w[t - 15], 7) ^ rotr(w[t - 15], 18) ^ (w[t - 15] >> 3);
        uint32_t s1 = rotr(w[t - 2], 17) ^ rotr(w[t - 2], 19) ^ (w[t - 2] >> 10);
        w[t] = w[t - 16] + s0 + w[t - 7] + s1;
    }
    uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], k = h[7];
    for (int t = 0; t < 64; t++) {
        uint32_t t1 = k + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) + K[t] +
                      w[t];
        uint32_t t2 = (rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
        k = g;
        g = f;
        f = e;
        e = d + t1;
        d = c;
        c = b;
        b = a;
        a = t1 + t2;
    }
    h[0] += a;
    h[1] += b;
    h[2] += c;
    h[3] += d;
    h[4] += e;
    h[5] += f;
    h[6] += g;
    h[7] += k;
}

#ifdef A3S_SHA_NI
/* Whether this CPU has the SHA extensions and the SSSE3/SSE4.1 shuffles they need
 * (asked each time: CPUID costs less than one block, and no state is kept). */
static bool have_sha_ni(void) {
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & bit_SSSE3) || !(c & bit_SSE4_1))
        return false;
    if (__get_cpuid_max(0, NULL) < 7)
        return false;
    __cpuid_count(7, 0, a, b, c, d);
    return (b & (1u << 29)) != 0; /* CPUID.(EAX=7,ECX=0):EBX.SHA */
}

/* Four rounds: msg holds W[t..t+3], k the matching constants. */
#define A3S_SHA_ROUNDS4(state0, state1, msg, k)                                                \
    do {                                                                                       \
        __m128i wk = _mm_add_epi32((msg), _mm_loadu_si128((const __m128i *)(k)));              \
        (state1) = _mm_sha256rnds2_epu32((state1), (state0), wk);                              \
        (state0) = _mm_sha256rnds2_epu32((state0), (state1), _mm_shuffle_epi32(wk, 0x0E));     \
    } while (0)

/* compress() over `blocks` consecutive blocks, with the SHA extensions. */
__attribute__((target("sha,sse4.1,ssse3"))) static void compress_ni(uint32_t h[8],
                                                                     const uint8_t *data,
                                                                     size_t blocks) {
    const __m128i swap = _mm_set_epi64x(0x0c0d0e0f08090a0bULL, 0x0405060700010203ULL);
    /* the instructions keep the state as ABEF and CDGH */
    __m128i tmp = _mm_shuffle_epi32(_mm_loadu_si128((const __m128i *)&h[0]), 0xB1); /* CDAB */
    __m128i state1 = _mm_shuffle_epi32(_mm_loadu_si128((const __m128i *)&h[4]), 0x1B); /* EFGH */
    __m128i state0 = _mm_alignr_epi8(tmp, state1, 8);    /* ABEF */
    state1 = _mm_blend_epi16(state1, tmp, 0xF0);         /* CDGH */
    for (; blocks > 0; blocks--, data += 64) {
        __m128i abef = state0, cdgh = state1;
        __m128i m0 = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(data + 0)), swap);
        __m128i m1 = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(data + 16)), swap);
        __m128i m2 = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(data + 32)), swap);
        __m128i m3 = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(data + 48)), swap);
        A3S_SHA_ROUNDS4(state0, state1, m0, &K[0]);
        A3S_SHA_ROUNDS4(state0, state1, m1, &K[4]);
        A3S_SHA_ROUNDS4(state0, state1, m2, &K[8]);
        A3S_SHA_ROUNDS4(state0, state1, m3, &K[12]);
        for (int t = 16; t < 64; t += 4) {
            /* W[t..t+3] from W[t-16..t-1] (m0..m3): sigma0, W[t-7..t-4], sigma1 */
            __m128i w = _mm_sha256msg1_epu32(m0, m1);
            w = _mm_add_epi32(w, _mm_alignr_epi8(m3, m2, 4));
            w = _mm_sha256msg2_epu32(w, m3);
            m0 = m1;
            m1 = m2;
            m2 = m3;
            m3 = w;
            A3S_SHA_ROUNDS4(state0, state1, w, &K[t]);
        }
        state0 = _mm_add_epi32(state0, abef);
        state1 = _mm_add_epi32(state1, cdgh);
    }
    tmp = _mm_shuffle_epi32(state0, 0x1B);        /* FEBA */
    state1 = _mm_shuffle_epi32(state1, 0xB1);     /* DCHG */
    state0 = _mm_blend_epi16(tmp, state1, 0xF0);  /* DCBA */
    state1 = _mm_alignr_epi8(state1, tmp, 8);     /* HGFE */
    _mm_storeu_si128((__m128i *)&h[0], state0);
    _mm_storeu_si128((__m128i *)&h[4], state1);
}
#endif

/* compress() over `blocks` consecutive blocks of data. */
static void compress_blocks(uint32_t h[8], const uint8_t *data, size_t blocks, bool plain) {
#ifdef A3S_SHA_NI
    if (!plain && have_sha_ni()) {
        compress_ni(h, data, blocks);
        return;
    }
#else
    (void)plain;
#endif
    for (; blocks > 0; blocks--, data += 64)
        compress(h, data);
}

void a3s_sha256_init(struct a3s_sha256 *s) {
    static const uint32_t H0[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                   0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
    memcpy(s->h, H0, sizeof H0);
    s->length = 0;
    s->used = 0;
    s->plain = false;
}

void a3s_sha256_update(struct a3s_sha256 *s, const void *data, size_t len) {
    const uint8_t *p = data;
    s->length += len;
    while (len > 0) {
        if (s->used == 0 && len >= 64) { /* whole blocks straight from the input */
            size_t blocks = len / 64;
            compress_blocks(s->h, p, blocks, s->plain);
            p += blocks * 64;
            len -= blocks * 64;
            continue;
        }
        size_t n = 64 - s->used < len ? 64 - s->used : len;
        memcpy(s->block + s->used, p, n);
        s->used += n;
        p += n;
        len -= n;
        if (s->used == 64) {
            compress_blocks(s->h, s->block, 1, s->plain);
            s->used = 0;
        }
    }
}

void a3s_sha256_final(struct a3s_sha256 *s, uint8_t out[32]) {
    uint64_t bits = s->length * 8;
    uint8_t pad = 0x80;
    a3s_sha256_update(s, &pad, 1);
    pad = 0;
    while (s->used != 56)
        a3s_sha256_update(s, &pad, 1);
    uint8_t len_be[8];
    for (int i = 0; i < 8; i++)
        len_be[i] = (uint8_t)(bits >> (56 - 8 * i));
    a3s_sha256_update(s, len_be, 8);
    for (int i = 0; i < 8; i++) {
        out[4 * i] = (uint8_t)(s->h[i] >> 24);
        out[4 * i + 1] = (uint8_t)(s->h[i] >> 16);
        out[4 * i + 2] = (uint8_t)(s->h[i] >> 8);
        out[4 * i + 3] = (uint8_t)s->h[i];
    }
}

void a3s_sha256_hex(struct a3s_sha256 *s, char hex[65]) {
    static const char digits[] = "0123456789abcdef";
    uint8_t digest[32];
    a3s_sha256_final(s, digest);
    for (int i = 0; i < 32; i++) {
        hex[2 * i] = digits[digest[i] >> 4];
        hex[2 * i + 1] = digits[digest[i] & 15];
    }
    hex[64] = '\0';
}

void a3s_sha256_text(const void *data, size_t len, char out[A3S_SHA256_TEXT_SIZE]) {
    struct a3s_sha256 s;
    a3s_sha256_init(&s);
    a3s_sha256_update(&s, data, len);
    memcpy(out, "sha256:", 7);
    a3s_sha256_hex(&s, out + 7);
}
