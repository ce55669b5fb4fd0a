/* test_sha256.c - the digest against FIPS 180-4's examples, and the CPU's SHA extensions
 * (where this machine has them) against the plain compression function. */
#include "../src/sha256.h"
#include "check.h"

#include <stdlib.h>

static void hex_of(const void *data, size_t len, bool plain, size_t piece, char hex[65]) {
    struct a3s_sha256 s;
    a3s_sha256_init(&s);
    s.plain = plain;
    const unsigned char *p = data;
    for (size_t at = 0; at < len;) { /* in pieces, to cross block boundaries every way */
        size_t n = piece && piece < len - at ? piece : len - at;
        a3s_sha256_update(&s, p + at, n);
        at += n;
    }
    a3s_sha256_hex(&s, hex);
}

static void known(const char *msg, size_t len, const char *want) {
    char hex[65];
    for (int plain = 0; plain < 2; plain++) {
        hex_of(msg, len, plain, 0, hex);
        CHECK(!strcmp(hex, want), "%s (plain %d): %s", want, plain, hex);
        hex_of(msg, len, plain, 7, hex);
        CHECK(!strcmp(hex, want), "%s (plain %d, 7-byte pieces): %s", want, plain, hex);
    }
}

int main(void) {
    known("", 0, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    known("abc", 3, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    const char *two = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    known(two, strlen(two), "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    size_t million = 1000000;
    char *a = malloc(million);
    CHECK(a != NULL, "malloc");
    if (a) {
        memset(a, 'a', million);
        known(a, million, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
        free(a);
    }
    /* every length around the block and padding boundaries, and a megabyte of bytes
     * that are not all alike, in whole and in uneven pieces: both ways agree */
    size_t big = 1u << 20;
    unsigned char *buf = malloc(big);
    CHECK(buf != NULL, "malloc");
    if (!buf)
        return check_report("test_sha256");
    unsigned x = 12345;
    for (size_t i = 0; i < big; i++) {
        x = x * 1103515245u + 12345u;
        buf[i] = (unsigned char)(x >> 16);
    }
    char fast[65], plain[65];
    int differ = 0;
    for (size_t len = 0; len <= 300; len++) {
        hex_of(buf, len, false, 0, fast);
        hex_of(buf, len, true, 0, plain);
        differ += strcmp(fast, plain) != 0;
    }
    CHECK(differ == 0, "%d lengths up to 300 bytes differ", differ);
    static const size_t pieces[] = {0, 1, 63, 64, 65, 4096, 65536, 100000};
    for (size_t i = 0; i < sizeof pieces / sizeof pieces[0]; i++) {
        hex_of(buf, big - 3, false, pieces[i], fast);
        hex_of(buf, big - 3, true, 0, plain);
        CHECK(!strcmp(fast, plain), "1 MiB in %zu-byte pieces: %s, plain %s", pieces[i], fast,
              plain);
    }
    free(buf);
    return check_report("test_sha256");
}
