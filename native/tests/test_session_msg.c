/* test_session_msg.c - the control-socket messages: encoding, decoding, moving.
 *
 * Decoding is table-driven: each case spells a message as words ("q:N" a
 * u64, "l:N" a u32, "w:N" a u16, "s:TEXT" a length-prefixed string, "x:HEX"
 * raw bytes, "z:N" N zero bytes), with the header's fields given apart so
 * that every one of them can be wrong, and says whether it must decode or
 * which error message it must produce.
 */
#define _GNU_SOURCE
#include "check.h"
#include "../src/session_msg.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define AUTO 0xffffffffu /* the header's total: the real length */

struct buf {
    uint8_t *p;
    size_t len, cap;
};

static void put(struct buf *b, const void *data, size_t n) {
    if (b->len + n > b->cap) {
        b->cap = (b->len + n) * 2 + 64;
        b->p = realloc(b->p, b->cap);
    }
    memcpy(b->p + b->len, data, n);
    b->len += n;
}

static void put_le(struct buf *b, uint64_t v, int bytes) {
    uint8_t t[8];
    for (int i = 0; i < bytes; i++)
        t[i] = (uint8_t)(v >> (8 * i));
    put(b, t, (size_t)bytes);
}

/* Assembles "word word ..." (see the file comment) after a 12-byte header. */
static struct buf assemble(uint32_t magic, uint16_t type, uint16_t version, uint32_t total,
                           const char *words) {
    struct buf b = {0};
    put_le(&b, magic, 4);
    put_le(&b, type, 2);
    put_le(&b, version, 2);
    put_le(&b, 0, 4);
    char *copy = strdup(words), *save = NULL;
    for (char *w = strtok_r(copy, " ", &save); w; w = strtok_r(NULL, " ", &save)) {
        char kind = w[0];
        const char *v = w + 2;
        if (kind == 'q')
            put_le(&b, strtoull(v, NULL, 0), 8);
        else if (kind == 'l')
            put_le(&b, strtoull(v, NULL, 0), 4);
        else if (kind == 'w')
            put_le(&b, strtoull(v, NULL, 0), 2);
        else if (kind == 's') {
            /* "\0" in TEXT stands for a NUL byte, "_" for a space */
            char text[256];
            size_t n = 0;
            for (const char *c = v; *c && n < sizeof text; c++) {
                if (c[0] == '\\' && c[1] == '0') {
                    text[n++] = '\0';
                    c++;
                } else {
                    text[n++] = *c == '_' ? ' ' : *c;
                }
            }
            put_le(&b, n, 4);
            put(&b, text, n);
        } else if (kind == 'x') {
            for (const char *c = v; c[0] && c[1]; c += 2) {
                unsigned byte;
                sscanf(c, "%2x", &byte);
                uint8_t u = (uint8_t)byte;
                put(&b, &u, 1);
            }
        } else if (kind == 'z') {
            for (unsigned long n = strtoul(v, NULL, 0); n; n--)
                put_le(&b, 0, 1);
        }
    }
    free(copy);
    uint32_t t = total == AUTO ? (uint32_t)b.len : total;
    for (int i = 0; i < 4; i++)
        b.p[8 + i] = (uint8_t)(t >> (8 * i));
    return b;
}

#define M A3S_MSG_MAGIC
#define E A3S_MSG_EXEC
#define V A3S_MSG_VERSION
/* a valid exec body: timeout 1500, grace 200, flags 0, two env entries */
#define BODY "q:1500 q:200 l:0 l:2 s:echo_hi s:c7 s:A=1 s:PATH=/bin"

static const struct exec_case {
    const char *name;
    uint32_t magic;
    uint16_t type, version;
    uint32_t total;
    const char *words;
    const char *error; /* NULL: must decode */
} EXEC_CASES[] = {
    {"valid", M, E, V, AUTO, BODY, NULL},
    {"no environment", M, E, V, AUTO, "q:0 q:0 l:0 l:0 s:true s:c1", NULL},
    {"empty command", M, E, V, AUTO, "q:1 q:1 l:0 l:0 s: s:c1", NULL},
    {"value with '=' and spaces", M, E, V, AUTO, "q:1 q:1 l:0 l:1 s:x s:c1 s:K=a=b_c", NULL},
    {"empty value", M, E, V, AUTO, "q:1 q:1 l:0 l:1 s:x s:c1 s:K=", NULL},
    {"bad magic", 0x4d533342u, E, V, AUTO, BODY, "bad message magic"},
    {"bad version", M, E, 2, AUTO, BODY, "unknown message version 2"},
    {"total below the header", M, E, V, 11, BODY, "bad message length"},
    {"total above the limit", M, E, V, A3S_MSG_MAX + 1, BODY, "bad message length"},
    {"total says more than arrived", M, E, V, 4096, BODY, "bytes arrived"},
    {"not an exec", M, A3S_MSG_DONE, V, AUTO, BODY, "not an exec message"},
    {"header only", M, E, V, AUTO, "", "truncated"},
    {"fixed part cut short", M, E, V, AUTO, "q:1 q:1 l:0", "truncated"},
    {"command length past the end", M, E, V, AUTO, "q:1 q:1 l:0 l:0 l:1000 x:6563686f",
     "truncated"},
    {"command length 2^32-1", M, E, V, AUTO, "q:1 q:1 l:0 l:0 l:0xffffffff", "truncated"},
    {"no scratch", M, E, V, AUTO, "q:1 q:1 l:0 l:0 s:true", "truncated"},
    {"NUL in the command", M, E, V, AUTO, "q:1 q:1 l:0 l:0 s:ec\\0ho s:c1", "NUL"},
    {"a network grant", M, E, V, AUTO, "q:1 q:1 l:1 l:0 s:x s:c1", NULL},
    {"unknown flags", M, E, V, AUTO, "q:1 q:1 l:16 l:0 s:x s:c1", "unknown exec flags"},
    {"a working directory", M, E, V, AUTO, "q:1 q:1 l:2 l:0 s:x s:c1 s:/w", NULL},
    {"the cwd flag without its string", M, E, V, AUTO, "q:1 q:1 l:2 l:0 s:x s:c1", "working"},
    {"a relative working directory", M, E, V, AUTO, "q:1 q:1 l:2 l:0 s:x s:c1 s:w", "working"},
    {"an empty working directory", M, E, V, AUTO, "q:1 q:1 l:2 l:0 s:x s:c1 s:", "working"},
    {"exec rules", M, E, V, AUTO, "q:1 q:1 l:4 l:0 s:x s:c1 l:1 s:git l:0 l:0", NULL},
    {"exec rules missing", M, E, V, AUTO, "q:1 q:1 l:4 l:0 s:x s:c1", "malformed exec rules"},
    {"too many exec rules", M, E, V, AUTO, "q:1 q:1 l:4 l:0 s:x s:c1 l:5000 l:0 l:0",
     "malformed exec rules"},
    {"a grant and unknown flags", M, E, V, AUTO, "q:1 q:1 l:0x80000001 l:0 s:x s:c1",
     "unknown exec flags"},
    {"too many env entries", M, E, V, AUTO, "q:1 q:1 l:0 l:9000 s:x s:c1", "too many"},
    {"fewer env entries than counted", M, E, V, AUTO, "q:1 q:1 l:0 l:3 s:x s:c1 s:A=1 s:B=2",
     "truncated"},
    {"env entry without '='", M, E, V, AUTO, "q:1 q:1 l:0 l:1 s:x s:c1 s:NOVALUE",
     "not NAME=VALUE"},
    {"env entry with an empty name", M, E, V, AUTO, "q:1 q:1 l:0 l:1 s:x s:c1 s:=v",
     "not NAME=VALUE"},
    {"NUL in an env entry", M, E, V, AUTO, "q:1 q:1 l:0 l:1 s:x s:c1 s:A=\\0b",
     "not NAME=VALUE"},
    {"empty scratch name", M, E, V, AUTO, "q:1 q:1 l:0 l:0 s:x s:", "bad scratch name"},
    {"scratch name with a slash", M, E, V, AUTO, "q:1 q:1 l:0 l:0 s:x s:../etc",
     "bad scratch name"},
    {"scratch name with a dot", M, E, V, AUTO, "q:1 q:1 l:0 l:0 s:x s:.", "bad scratch name"},
    {"scratch name too long", M, E, V, AUTO,
     "q:1 q:1 l:0 l:0 s:x s:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
     "bad scratch name"},
    {"stray bytes after the message", M, E, V, AUTO, BODY " z:3", "stray bytes"},
};

static void test_decode_table(void) {
    for (size_t i = 0; i < sizeof EXEC_CASES / sizeof *EXEC_CASES; i++) {
        const struct exec_case *c = &EXEC_CASES[i];
        struct buf b = assemble(c->magic, c->type, c->version, c->total, c->words);
        struct a3s_msg_exec m;
        a3s_error err = {0};
        int rc = a3s_msg_decode_exec(b.p, b.len, &m, &err);
        if (!c->error) {
            CHECK(rc == A3S_OK, "%s: %s", c->name, err.message);
        } else {
            CHECK(rc == A3S_E_INVALID, "%s: rc %d", c->name, rc);
            CHECK(strstr(err.message, c->error) != NULL, "%s: message '%s' lacks '%s'", c->name,
                  err.message, c->error);
            CHECK(m.block == NULL && m.env == NULL, "%s: a failed decode kept memory", c->name);
        }
        a3s_msg_exec_free(&m);
        /* every prefix of a valid message is refused, never read past */
        if (!c->error) {
            for (size_t n = 0; n < b.len; n++) {
                uint8_t *copy = malloc(n ? n : 1);
                memcpy(copy, b.p, n);
                rc = a3s_msg_decode_exec(copy, n, &m, NULL);
                CHECK(rc == A3S_E_INVALID, "%s: a %zu-byte prefix decoded", c->name, n);
                a3s_msg_exec_free(&m);
                free(copy);
            }
        }
        free(b.p);
    }
}

static void test_decode_fields(void) {
    struct buf b = assemble(M, E, V, AUTO, BODY);
    struct a3s_msg_exec m;
    CHECK(a3s_msg_decode_exec(b.p, b.len, &m, NULL) == A3S_OK, "decode");
    CHECK(m.timeout_ms == 1500 && m.grace_ms == 200 && m.flags == 0, "fixed fields");
    CHECK(!strcmp(m.command, "echo hi") && m.command_len == 7, "command '%s'", m.command);
    CHECK(!strcmp(m.scratch, "c7"), "scratch '%s'", m.scratch);
    CHECK(m.envc == 2 && !strcmp(m.env[0], "A=1") && !strcmp(m.env[1], "PATH=/bin") &&
              m.env[2] == NULL,
          "env");
    a3s_msg_exec_free(&m);
    free(b.p);
    /* the flags word an encoder sets after encoding is the one decoded */
    const char *env[] = {"A=1"};
    uint8_t *enc = NULL;
    size_t len = 0;
    CHECK(a3s_msg_encode_exec(1, 2, "true", 4, "c1", env, 1, &enc, &len, NULL) == A3S_OK,
          "encode");
    a3s_msg_exec_set_flags(enc, A3S_MSG_EXEC_GRANT);
    CHECK(a3s_msg_decode_exec(enc, len, &m, NULL) == A3S_OK && m.flags == A3S_MSG_EXEC_GRANT,
          "grant flag round trip");
    CHECK(m.cwd == NULL, "no working directory unless one was appended");
    a3s_msg_exec_free(&m);
    /* a working directory appended after the flags keeps them, and travels after the env */
    CHECK(a3s_msg_exec_append_cwd(&enc, &len, "/work/sub dir", NULL) == A3S_OK, "append cwd");
    CHECK(a3s_msg_decode_exec(enc, len, &m, NULL) == A3S_OK &&
              m.flags == (A3S_MSG_EXEC_GRANT | A3S_MSG_EXEC_CWD) && m.cwd &&
              strcmp(m.cwd, "/work/sub dir") == 0 && m.envc == 1 && strcmp(m.env[0], "A=1") == 0,
          "cwd round trip");
    a3s_msg_exec_free(&m);
    /* every truncation of it is refused */
    for (size_t cut = len - 14; cut < len; cut++) {
        uint8_t *copy = malloc(len);
        memcpy(copy, enc, len);
        copy[8] = (uint8_t)cut; /* the header's length, little-endian, as the bytes that came */
        copy[9] = (uint8_t)(cut >> 8);
        copy[10] = copy[11] = 0;
        CHECK(a3s_msg_decode_exec(copy, cut, &m, NULL) != A3S_OK, "truncated cwd %zu", cut);
        free(copy);
    }
    CHECK(a3s_msg_exec_append_cwd(&enc, &len, "relative", NULL) == A3S_E_INVALID,
          "a relative cwd is refused");
    /* the stdin flag joins the others, and the flags word reads back */
    a3s_msg_exec_set_flags(enc, a3s_msg_exec_flags(enc) | A3S_MSG_EXEC_STDIN);
    CHECK(a3s_msg_exec_flags(enc) == (A3S_MSG_EXEC_GRANT | A3S_MSG_EXEC_CWD | A3S_MSG_EXEC_STDIN),
          "flags word");
    CHECK(a3s_msg_decode_exec(enc, len, &m, NULL) == A3S_OK && m.flags & A3S_MSG_EXEC_STDIN &&
              m.cwd && strcmp(m.cwd, "/work/sub dir") == 0,
          "stdin flag round trip");
    a3s_msg_exec_free(&m);
    a3s_msg_exec_set_flags(enc, a3s_msg_exec_flags(enc) | (1u << 4));
    CHECK(a3s_msg_decode_exec(enc, len, &m, NULL) == A3S_E_INVALID, "an unknown flag is refused");
    free(enc);
}

/* ---- encoding ------------------------------------------------------------------ */

static void test_encode_round_trip(void) {
    /* a command longer than one packet, and many variables */
    size_t n = 3 * A3S_MSG_CHUNK + 17;
    char *cmd = malloc(n + 1);
    for (size_t i = 0; i < n; i++)
        cmd[i] = (char)('a' + i % 26);
    cmd[n] = '\0';
    char *env[300];
    for (int i = 0; i < 300; i++) {
        env[i] = malloc(32);
        snprintf(env[i], 32, "V%d=%d", i, i * 7);
    }
    uint8_t *msg;
    size_t len;
    a3s_error err;
    CHECK(a3s_msg_encode_exec(5, 6, cmd, n, "c123", (const char *const *)env, 300, &msg, &len,
                              &err) == A3S_OK,
          "encode: %s", err.message);
    struct a3s_msg_exec m;
    CHECK(a3s_msg_decode_exec(msg, len, &m, &err) == A3S_OK, "decode: %s", err.message);
    CHECK(m.timeout_ms == 5 && m.grace_ms == 6 && m.command_len == n &&
              !memcmp(m.command, cmd, n) && !strcmp(m.scratch, "c123") && m.envc == 300,
          "round trip");
    for (int i = 0; i < 300; i++)
        CHECK(!strcmp(m.env[i], env[i]), "env[%d]", i);
    a3s_msg_exec_free(&m);
    free(msg);
    for (int i = 0; i < 300; i++)
        free(env[i]);
    free(cmd);
}

static void test_encode_refusals(void) {
    static const struct {
        const char *name, *command, *scratch, *env;
        int code;
        const char *error;
    } cases[] = {
        {"NUL in the command", "a\0b", "c1", NULL, A3S_E_INVALID, "NUL"},
        {"empty scratch", "x", "", NULL, A3S_E_INVALID, "scratch"},
        {"slash in scratch", "x", "a/b", NULL, A3S_E_INVALID, "scratch"},
        {"env without '='", "x", "c1", "FOO", A3S_E_INVALID, "NAME=VALUE"},
        {"env with an empty name", "x", "c1", "=x", A3S_E_INVALID, "NAME=VALUE"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        const char *env[1] = {cases[i].env};
        uint8_t *msg = (uint8_t *)"sentinel";
        size_t len = 99;
        a3s_error err = {0};
        size_t clen = !strcmp(cases[i].name, "NUL in the command") ? 3 : strlen(cases[i].command);
        int rc = a3s_msg_encode_exec(1, 1, cases[i].command, clen, cases[i].scratch, env,
                                     cases[i].env ? 1 : 0, &msg, &len, &err);
        CHECK(rc == cases[i].code, "%s: rc %d", cases[i].name, rc);
        CHECK(strstr(err.message, cases[i].error), "%s: '%s'", cases[i].name, err.message);
        CHECK(msg == NULL && len == 0, "%s: output left set", cases[i].name);
    }
    /* too large */
    size_t n = A3S_MSG_MAX;
    char *big = malloc(n);
    memset(big, 'x', n);
    uint8_t *msg;
    size_t len;
    a3s_error err = {0};
    CHECK(a3s_msg_encode_exec(1, 1, big, n, "c1", NULL, 0, &msg, &len, &err) == A3S_E_TOO_LARGE,
          "an 8 MiB command: %s", err.message);
    free(big);
}

static void test_done(void) {
    struct a3s_msg_done d = {.exit_code = 137, .flags = A3S_DONE_TIMED_OUT, .pid = 42};
    snprintf(d.message, sizeof d.message, "a message");
    uint8_t buf[A3S_MSG_HEADER + 16 + A3S_MSG_TEXT_MAX];
    size_t n = a3s_msg_encode_done(&d, buf, sizeof buf);
    CHECK(n == A3S_MSG_HEADER + 16 + 9, "length %zu", n);
    CHECK(a3s_msg_encode_done(&d, buf, n - 1) == 0, "a small buffer is refused");
    struct a3s_msg_done got;
    CHECK(a3s_msg_decode_done(buf, n, &got, NULL) == A3S_OK, "decode");
    CHECK(got.exit_code == 137 && got.flags == A3S_DONE_TIMED_OUT && got.pid == 42 &&
              !strcmp(got.message, "a message"),
          "fields");
    static const struct {
        const char *name, *words;
        const char *error;
    } bad[] = {
        {"unknown flags", "l:0 l:512 l:1 s:", "unknown done flags"},
        {"exit code 256", "l:256 l:0 l:1 s:", "out of range"},
        {"negative exit code", "l:0xffffffff l:0 l:1 s:", "out of range"},
        {"cut short", "l:0 l:0", "malformed"},
        {"message past the end", "l:0 l:0 l:1 l:50 x:41", "malformed"},
        {"stray bytes", "l:0 l:0 l:1 s:x z:1", "malformed"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        struct buf b = assemble(M, A3S_MSG_DONE, V, AUTO, bad[i].words);
        a3s_error err = {0};
        CHECK(a3s_msg_decode_done(b.p, b.len, &got, &err) == A3S_E_INVALID, "%s", bad[i].name);
        CHECK(strstr(err.message, bad[i].error), "%s: '%s'", bad[i].name, err.message);
        free(b.p);
    }
    /* a message longer than the buffer is cut, not overflowed */
    char longmsg[2000];
    memset(longmsg, 'm', sizeof longmsg - 1);
    longmsg[sizeof longmsg - 1] = '\0';
    char words[2100];
    snprintf(words, sizeof words, "l:1 l:0 l:1 s:%.250s", longmsg);
    struct buf b = assemble(M, A3S_MSG_DONE, V, AUTO, words);
    CHECK(a3s_msg_decode_done(b.p, b.len, &got, NULL) == A3S_OK && strlen(got.message) == 250,
          "a 250-byte message");
    free(b.p);
    uint8_t e[A3S_MSG_HEADER];
    CHECK(a3s_msg_encode_empty(A3S_MSG_CANCEL, e) == A3S_MSG_HEADER, "empty");
    uint16_t type;
    uint32_t total;
    CHECK(a3s_msg_header(e, sizeof e, &type, &total, NULL) == A3S_OK && type == A3S_MSG_CANCEL &&
              total == A3S_MSG_HEADER,
          "empty header");
}

/* SIGNAL (an owned program's lifeline): one fixed size, a signal in 1..64; the init
 * takes anything else for the caller's end. */
static void test_signal(void) {
    uint8_t buf[A3S_MSG_SIGNAL_LEN];
    CHECK(a3s_msg_encode_signal(SIGTERM, buf) == A3S_MSG_SIGNAL_LEN, "encode TERM");
    CHECK(a3s_msg_decode_signal(buf, sizeof buf) == SIGTERM, "TERM round trip");
    CHECK(a3s_msg_decode_signal(buf, sizeof buf - 1) == 0, "cut short");
    CHECK(a3s_msg_encode_signal(A3S_MSG_SIGNAL_MAX, buf) && a3s_msg_decode_signal(buf, 16) == 64,
          "64 round trip");
    CHECK(a3s_msg_encode_signal(0, buf) == 0 && a3s_msg_encode_signal(65, buf) == 0 &&
              a3s_msg_encode_signal(-9, buf) == 0,
          "encode refuses what is no signal");
    static const struct {
        const char *name;
        uint32_t magic;
        uint16_t type, version;
        uint32_t total;
        const char *words;
    } bad[] = {
        {"signal 0", M, A3S_MSG_SIGNAL, V, AUTO, "l:0"},
        {"signal 65", M, A3S_MSG_SIGNAL, V, AUTO, "l:65"},
        {"signal -1", M, A3S_MSG_SIGNAL, V, AUTO, "l:0xffffffff"},
        {"a cancel", M, A3S_MSG_CANCEL, V, AUTO, "l:15"},
        {"bad magic", 0x12345678u, A3S_MSG_SIGNAL, V, AUTO, "l:15"},
        {"bad version", M, A3S_MSG_SIGNAL, 2, AUTO, "l:15"},
        {"total says more", M, A3S_MSG_SIGNAL, V, 20, "l:15"},
        {"stray bytes", M, A3S_MSG_SIGNAL, V, AUTO, "l:15 z:1"},
        {"no body", M, A3S_MSG_SIGNAL, V, AUTO, ""},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        struct buf b = assemble(bad[i].magic, bad[i].type, bad[i].version, bad[i].total,
                                bad[i].words);
        CHECK(a3s_msg_decode_signal(b.p, b.len) == 0, "%s is no request", bad[i].name);
        free(b.p);
    }
    struct buf good = assemble(M, A3S_MSG_SIGNAL, V, AUTO, "l:10");
    CHECK(a3s_msg_decode_signal(good.p, good.len) == 10, "assembled USR1");
    free(good.p);
}

/* ---- moving messages over a socketpair ---------------------------------------------- */

static bool same_file(int a, int b) {
    struct stat sa, sb;
    return fstat(a, &sa) == 0 && fstat(b, &sb) == 0 && sa.st_ino == sb.st_ino &&
           sa.st_dev == sb.st_dev;
}

static int open_fds(void) {
    int n = 0;
    for (int fd = 0; fd < 1024; fd++)
        n += fcntl(fd, F_GETFD) >= 0;
    return n;
}

static void test_transport(void) {
    int sp[2];
    CHECK(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) == 0, "socketpair");
    int before = open_fds();
    /* a message of several packets, with two fds on the first */
    size_t n = 5 * A3S_MSG_CHUNK + 3;
    char *cmd = malloc(n);
    memset(cmd, 'c', n);
    uint8_t *msg;
    size_t len;
    CHECK(a3s_msg_encode_exec(1, 2, cmd, n, "c1", NULL, 0, &msg, &len, NULL) == A3S_OK, "enc");
    int p[2];
    CHECK(pipe(p) == 0, "pipe");
    /* the receiver reads while the sender still sends: the socket holds less */
    pid_t child = fork();
    if (child == 0) {
        _exit(a3s_msg_send(sp[0], msg, len, p, 2, 5000) == 0 ? 0 : 1);
    }
    uint8_t *got;
    size_t glen, nfds;
    int fds[4];
    int rc = a3s_msg_recv(sp[1], &got, &glen, fds, 4, &nfds, 5000);
    CHECK(rc == 0 && glen == len && !memcmp(got, msg, len), "recv rc %d len %zu", rc, glen);
    CHECK(nfds == 2 && same_file(fds[0], p[0]) && same_file(fds[1], p[1]), "the fds");
    for (size_t i = 0; i < nfds; i++) {
        CHECK(fcntl(fds[i], F_GETFD) & FD_CLOEXEC, "received fds are close-on-exec");
        close(fds[i]);
    }
    int st;
    waitpid(child, &st, 0);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "sender");
    free(got);
    free(msg);
    free(cmd);
    close(p[0]);
    close(p[1]);

    /* more fds than wanted: refused, none left open */
    uint8_t e[A3S_MSG_HEADER];
    a3s_msg_encode_empty(A3S_MSG_CANCEL, e);
    int three[3];
    for (int i = 0; i < 3; i++)
        three[i] = open("/dev/null", O_RDONLY | O_CLOEXEC);
    CHECK(a3s_msg_send(sp[0], e, sizeof e, three, 3, 1000) == 0, "send 3 fds");
    for (int i = 0; i < 3; i++)
        close(three[i]);
    rc = a3s_msg_recv(sp[1], &got, &glen, fds, 2, &nfds, 1000);
    CHECK(rc == -EPROTO && nfds == 0 && got == NULL, "too many fds: rc %d", rc);

    /* a continuation packet carrying fds: refused */
    struct buf b = assemble(M, A3S_MSG_EXEC, V, A3S_MSG_HEADER + 4, "");
    CHECK(send(sp[0], b.p, b.len, 0) == (ssize_t)b.len, "first packet");
    CHECK(a3s_msg_send(sp[0], (const uint8_t *)"abcd", 4, three, 0, 1000) == 0, "plain rest");
    rc = a3s_msg_recv(sp[1], &got, &glen, fds, 2, &nfds, 1000);
    CHECK(rc == 0 && glen == A3S_MSG_HEADER + 4, "two packets make one message (rc %d)", rc);
    free(got);
    int one = open("/dev/null", O_RDONLY | O_CLOEXEC);
    CHECK(send(sp[0], b.p, b.len, 0) == (ssize_t)b.len, "first packet");
    CHECK(a3s_msg_send(sp[0], (const uint8_t *)"abcd", 4, &one, 1, 1000) == 0, "rest with fd");
    close(one);
    rc = a3s_msg_recv(sp[1], &got, &glen, fds, 2, &nfds, 1000);
    CHECK(rc == -EPROTO && nfds == 0, "fds on a continuation: rc %d", rc);
    free(b.p);

    /* a packet bigger than a chunk is truncated: refused */
    size_t big = A3S_MSG_CHUNK + 100;
    b = assemble(M, A3S_MSG_EXEC, V, (uint32_t)big, "");
    b.p = realloc(b.p, big);
    memset(b.p + A3S_MSG_HEADER, 0, big - A3S_MSG_HEADER);
    CHECK(send(sp[0], b.p, big, 0) == (ssize_t)big, "oversized packet");
    rc = a3s_msg_recv(sp[1], &got, &glen, fds, 2, &nfds, 1000);
    CHECK(rc == -EPROTO, "oversized packet: rc %d", rc);
    free(b.p);

    /* garbage: refused */
    CHECK(send(sp[0], "hello world, no header", 22, 0) == 22, "garbage");
    rc = a3s_msg_recv(sp[1], &got, &glen, fds, 2, &nfds, 1000);
    CHECK(rc == -EPROTO, "garbage: rc %d", rc);

    /* nothing to read: a timeout */
    rc = a3s_msg_recv(sp[1], &got, &glen, fds, 2, &nfds, 20);
    CHECK(rc == -ETIMEDOUT, "timeout: rc %d", rc);

    /* the peer goes in the middle of a message: refused; then the end of the stream */
    b = assemble(M, A3S_MSG_EXEC, V, 1000, "");
    CHECK(send(sp[0], b.p, b.len, 0) == (ssize_t)b.len, "first of many");
    free(b.p);
    close(sp[0]);
    rc = a3s_msg_recv(sp[1], &got, &glen, fds, 2, &nfds, 1000);
    CHECK(rc == -EPROTO, "cut message: rc %d", rc);
    rc = a3s_msg_recv(sp[1], &got, &glen, fds, 2, &nfds, 1000);
    CHECK(rc == 1, "end of stream: rc %d", rc);
    CHECK(a3s_msg_send(sp[1], e, sizeof e, NULL, 0, 100) == -EPIPE, "send to a closed peer");
    CHECK(open_fds() == before - 1, "fds leaked: %d before, %d after", before, open_fds());
    close(sp[1]);
}

/* The exec check's lists (A3S_MSG_EXEC_RULES) travel after the environment:
 * they come back as sent, with a grant flag kept, and a list that claims
 * more entries than arrived, or a NUL in one, is refused. */
static void test_exec_rules(void) {
    const char *env[] = {"A=1"};
    const char *deny[] = {"git push**", "rm -rf /"};
    const char *ask[] = {"curl **"};
    const char *const *const lists[3] = {deny, ask, NULL};
    const size_t counts[3] = {2, 1, 0};
    uint8_t *msg = NULL;
    size_t len = 0;
    CHECK(a3s_msg_encode_exec(1, 2, "true", 4, "c1", env, 1, &msg, &len, NULL) == A3S_OK,
          "encode");
    a3s_msg_exec_set_flags(msg, A3S_MSG_EXEC_GRANT);
    CHECK(a3s_msg_exec_add_rules(&msg, &len, lists, counts, NULL) == A3S_OK, "add rules");
    struct a3s_msg_exec m;
    a3s_error err;
    CHECK(a3s_msg_decode_exec(msg, len, &m, &err) == A3S_OK, "decode: %s", err.message);
    CHECK(m.flags == (A3S_MSG_EXEC_GRANT | A3S_MSG_EXEC_RULES), "flags %u", m.flags);
    CHECK(m.nrules[0] == 2 && m.nrules[1] == 1 && m.nrules[2] == 0, "counts");
    CHECK(m.nrules[0] == 2 && !strcmp(m.rules[0][0], "git push**") &&
              !strcmp(m.rules[0][1], "rm -rf /") && m.rules[0][2] == NULL,
          "deny list");
    CHECK(m.nrules[1] == 1 && !strcmp(m.rules[1][0], "curl **"), "ask list");
    CHECK(m.envc == 1 && !strcmp(m.env[0], "A=1"), "environment kept");
    a3s_msg_exec_free(&m);
    /* a count past what arrived */
    uint8_t *bad = malloc(len);
    memcpy(bad, msg, len);
    size_t at = len - 4 - 4 - 7 - 4; /* the ask list's count: l:1 s:"curl **" then l:0 */
    bad[at] = 9;
    CHECK(a3s_msg_decode_exec(bad, len, &m, &err) == A3S_E_INVALID, "a count past the end");
    /* a NUL inside an entry */
    memcpy(bad, msg, len);
    bad[len - 4 - 2] = '\0';
    CHECK(a3s_msg_decode_exec(bad, len, &m, &err) == A3S_E_INVALID, "a NUL in an entry");
    /* the lists cut short */
    memcpy(bad, msg, len);
    uint32_t shorter = (uint32_t)len - 4;
    for (int i = 0; i < 4; i++)
        bad[8 + i] = (uint8_t)(shorter >> (8 * i));
    CHECK(a3s_msg_decode_exec(bad, len - 4, &m, &err) == A3S_E_INVALID, "truncated lists");
    free(bad);
    free(msg);
    /* the DONE flag of a stopped exec is known */
    struct a3s_msg_done d = {.exit_code = 126, .flags = A3S_DONE_EXEC_STOPPED};
    snprintf(d.message, sizeof d.message, "deny\tgit push**\tgit push");
    uint8_t buf[A3S_MSG_HEADER + 16 + A3S_MSG_TEXT_MAX];
    size_t dl = a3s_msg_encode_done(&d, buf, sizeof buf);
    struct a3s_msg_done back;
    CHECK(a3s_msg_decode_done(buf, dl, &back, NULL) == A3S_OK &&
              back.flags == A3S_DONE_EXEC_STOPPED && !strcmp(back.message, d.message),
          "done with a stopped exec");
}

int main(void) {
    test_exec_rules();
    test_decode_table();
    test_decode_fields();
    test_encode_round_trip();
    test_encode_refusals();
    test_done();
    test_signal();
    test_transport();
    return check_report("test_session_msg");
}
