/* test_relay.c - a3s_relay: both directions, half-closes, backpressure, resets, cancel,
 * what it refuses; and the SHA-256 of the policy digest against FIPS 180-4's examples.
 *
 * Each relay runs in a thread between two socket pairs: the test holds the
 * outer ends (the "client" and the "server") and the relay the inner ones,
 * as the mediator does with a command's connection and the origin's.
 */
#define _GNU_SOURCE
#include "check.h"
#include "../src/sha256.h"

#include "a3s/a3s.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

struct relay_run {
    int a, b, cancel;
    uint32_t pipe_bytes;
    int rc;
    a3s_relay_stats st;
    a3s_error err;
    pthread_t thread;
};

static void *relay_thread(void *arg) {
    struct relay_run *r = arg;
    a3s_relay_options o = {.struct_size = sizeof o, .pipe_bytes = r->pipe_bytes};
    if (r->cancel >= 0) {
        o.flags = A3S_RELAY_CANCEL_FD;
        o.cancel_fd = r->cancel;
    }
    r->st.struct_size = sizeof r->st;
    r->rc = a3s_relay(r->a, r->b, &o, &r->st, &r->err);
    return NULL;
}

/* A connected pair of TCP sockets on loopback (the mediator's case). */
static void tcp_pair(int out[2]) {
    int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in at = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof at;
    if (l < 0 || bind(l, (struct sockaddr *)&at, sizeof at) < 0 || listen(l, 1) < 0 ||
        getsockname(l, (struct sockaddr *)&at, &len) < 0) {
        perror("tcp_pair");
        exit(2);
    }
    out[0] = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (connect(out[0], (struct sockaddr *)&at, sizeof at) < 0 || (out[1] = accept(l, NULL, NULL)) < 0) {
        perror("tcp_pair");
        exit(2);
    }
    close(l);
}

/* client <-> relay(a, b) <-> server; kind: 't' TCP, 'u' AF_UNIX stream. */
static void start(struct relay_run *r, int kind, int *client, int *server, int cancel,
                  uint32_t pipe_bytes) {
    int p1[2], p2[2];
    if (kind == 't') {
        tcp_pair(p1);
        tcp_pair(p2);
    } else {
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, p1) < 0 ||
            socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, p2) < 0) {
            perror("socketpair");
            exit(2);
        }
    }
    memset(r, 0, sizeof *r);
    *client = p1[0];
    r->a = p1[1];
    r->b = p2[0];
    *server = p2[1];
    r->cancel = cancel;
    r->pipe_bytes = pipe_bytes;
    pthread_create(&r->thread, NULL, relay_thread, r);
}

static void finish_run(struct relay_run *r) {
    pthread_join(r->thread, NULL);
    close(r->a);
    close(r->b);
}

static bool write_all(int fd, const char *p, size_t n) {
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w <= 0)
            return false;
        p += w;
        n -= (size_t)w;
    }
    return true;
}

/* Reads until end of file; the byte count, and whether the bytes follow the pattern. */
static size_t read_all(int fd, bool *pattern_ok) {
    static char buf[1 << 16];
    size_t total = 0;
    *pattern_ok = true;
    for (;;) {
        ssize_t n = read(fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return total;
        for (ssize_t i = 0; i < n; i++)
            if (buf[i] != (char)((total + (size_t)i) % 251))
                *pattern_ok = false;
        total += (size_t)n;
    }
}

struct writer {
    int fd;
    size_t n;
    bool ok;
};

static void *writer_thread(void *arg) {
    struct writer *w = arg;
    char *data = malloc(w->n);
    for (size_t i = 0; i < w->n; i++)
        data[i] = (char)(i % 251);
    w->ok = write_all(w->fd, data, w->n);
    shutdown(w->fd, SHUT_WR);
    free(data);
    return NULL;
}

/* Both directions at once, each ended by its own half-close, over each socket kind. */
static void test_both_ways(int kind, size_t n) {
    struct relay_run r;
    int client, server;
    start(&r, kind, &client, &server, -1, 0);
    struct writer up = {.fd = client, .n = n}, down = {.fd = server, .n = n / 3};
    pthread_t tu, td;
    pthread_create(&tu, NULL, writer_thread, &up);
    pthread_create(&td, NULL, writer_thread, &down);
    bool ok_s, ok_c;
    size_t at_server = read_all(server, &ok_s);
    size_t at_client = read_all(client, &ok_c);
    pthread_join(tu, NULL);
    pthread_join(td, NULL);
    finish_run(&r);
    CHECK(r.rc == A3S_OK, "%c: relay failed: %s", kind, r.err.message);
    CHECK(up.ok && down.ok, "%c: a writer failed", kind);
    CHECK(at_server == n && ok_s, "%c: server got %zu of %zu bytes (pattern %d)", kind,
          at_server, n, ok_s);
    CHECK(at_client == n / 3 && ok_c, "%c: client got %zu of %zu bytes", kind, at_client, n / 3);
    CHECK(r.st.a_to_b == n && r.st.b_to_a == n / 3 && r.st.flags == 0,
          "%c: stats %llu %llu flags %llu", kind, (unsigned long long)r.st.a_to_b,
          (unsigned long long)r.st.b_to_a, (unsigned long long)r.st.flags);
    close(client);
    close(server);
}

/* A request, a half-close, then the answer: the half-close must not end the answer. */
static void test_half_close(void) {
    struct relay_run r;
    int client, server;
    start(&r, 't', &client, &server, -1, 0);
    CHECK(write_all(client, "GET", 3), "write");
    shutdown(client, SHUT_WR);
    char buf[16];
    ssize_t n = read(server, buf, sizeof buf);
    CHECK(n == 3, "server read %zd", n);
    CHECK(read(server, buf, sizeof buf) == 0, "the half-close reached the server");
    CHECK(write_all(server, "200 OK", 6), "the server can still answer");
    close(server);
    n = read(client, buf, sizeof buf);
    CHECK(n == 6 && !memcmp(buf, "200 OK", 6), "client read %zd", n);
    CHECK(read(client, buf, sizeof buf) == 0, "then end of file");
    finish_run(&r);
    CHECK(r.rc == A3S_OK && r.st.flags == 0, "clean end, flags %llu",
          (unsigned long long)r.st.flags);
    close(client);
}

/* A receiver that does not read: the relay holds at most its pipe, and the sender blocks. */
static void test_backpressure(void) {
    struct relay_run r;
    int client, server;
    int cancel[2];
    CHECK(pipe(cancel) == 0, "pipe");
    start(&r, 't', &client, &server, cancel[0], 65536);
    int small = 65536;
    setsockopt(server, SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
    fcntl(client, F_SETFL, O_NONBLOCK);
    static char chunk[65536];
    size_t sent = 0;
    struct timespec pause = {0, 2000000};
    int idle = 0;
    /* write until the whole path is full: nothing accepted for a while */
    while (idle < 100 && sent < (256u << 20)) {
        ssize_t w = write(client, chunk, sizeof chunk);
        if (w > 0) {
            sent += (size_t)w;
            idle = 0;
        } else {
            idle++;
            nanosleep(&pause, NULL);
        }
    }
    /* bounded: the socket buffers on the path plus one pipe, far below what was offered */
    CHECK(sent < (64u << 20), "the sender was never held back: %zu bytes taken", sent);
    CHECK(write(cancel[1], "x", 1) == 1, "cancel");
    finish_run(&r);
    CHECK(r.rc == A3S_OK && (r.st.flags & A3S_RELAY_CANCELLED), "cancelled, flags %llu",
          (unsigned long long)r.st.flags);
    CHECK(r.st.a_to_b < sent, "the relay delivered %llu of %zu", (unsigned long long)r.st.a_to_b,
          sent);
    close(cancel[0]);
    close(cancel[1]);
    close(client);
    close(server);
}

/* A reset on one side ends both: the other peer sees the end, not a hang. */
static void test_reset(void) {
    struct relay_run r;
    int client, server;
    start(&r, 't', &client, &server, -1, 0);
    struct linger lg = {.l_onoff = 1, .l_linger = 0};
    setsockopt(server, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
    CHECK(write_all(client, "x", 1), "write");
    char c;
    CHECK(read(server, &c, 1) == 1, "read");
    close(server); /* with linger 0: a reset */
    struct pollfd p = {.fd = client, .events = POLLIN};
    CHECK(poll(&p, 1, 5000) == 1, "the client saw the end within 5 s");
    finish_run(&r);
    CHECK(r.rc == A3S_OK && (r.st.flags & A3S_RELAY_RESET), "reset flag, flags %llu",
          (unsigned long long)r.st.flags);
    close(client);
}

static void test_invalid(void) {
    a3s_error err;
    CHECK(a3s_relay(-1, 5, NULL, NULL, &err) == A3S_E_INVALID, "negative fd");
    CHECK(a3s_relay(5, 5, NULL, NULL, &err) == A3S_E_INVALID, "same fd");
    a3s_relay_options o = {.struct_size = sizeof o, .flags = 1u << 7};
    CHECK(a3s_relay(3, 4, &o, NULL, &err) == A3S_E_INVALID, "unknown flag");
    o.flags = A3S_RELAY_CANCEL_FD;
    o.cancel_fd = 1000;
    CHECK(a3s_relay(3, 4, &o, NULL, &err) == A3S_E_INVALID, "closed cancel fd");
    a3s_relay_stats st = {.struct_size = 1};
    CHECK(a3s_relay(3, 4, NULL, &st, &err) == A3S_E_INVALID, "small stats");
    /* only stream sockets: a pipe or a seqpacket socket is refused before anything moves */
    int p[2], q[2];
    CHECK(pipe(p) == 0 && socketpair(AF_UNIX, SOCK_SEQPACKET, 0, q) == 0, "fds");
    CHECK(a3s_relay(p[0], p[1], NULL, NULL, &err) == A3S_E_INVALID, "a pipe");
    CHECK(a3s_relay(q[0], q[1], NULL, NULL, &err) == A3S_E_INVALID &&
              strstr(err.message, "stream sockets"),
          "a seqpacket socket: %s", err.message);
    close(p[0]);
    close(p[1]);
    close(q[0]);
    close(q[1]);
}

static void test_sha256(void) {
    static const struct {
        const char *in;
        const char *hex;
    } v[] = {
        {"", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
        {"abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},
        {"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
         "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"},
    };
    for (size_t i = 0; i < sizeof v / sizeof *v; i++) {
        char text[A3S_SHA256_TEXT_SIZE];
        a3s_sha256_text(v[i].in, strlen(v[i].in), text);
        CHECK(!strncmp(text, "sha256:", 7) && !strcmp(text + 7, v[i].hex), "sha256(%s) = %s",
              v[i].in, text);
    }
    /* a million 'a' fed in uneven pieces: the block boundaries must not matter */
    struct a3s_sha256 s;
    a3s_sha256_init(&s);
    char as[997];
    memset(as, 'a', sizeof as);
    size_t left = 1000000;
    while (left) {
        size_t n = left < sizeof as ? left : (left % 7) + 990;
        a3s_sha256_update(&s, as, n);
        left -= n;
    }
    uint8_t out[32];
    a3s_sha256_final(&s, out);
    static const uint8_t want[32] = {0xcd, 0xc7, 0x6e, 0x5c, 0x99, 0x14, 0xfb, 0x92,
                                     0x81, 0xa1, 0xc7, 0xe2, 0x84, 0xd7, 0x3e, 0x67,
                                     0xf1, 0x80, 0x9a, 0x48, 0xa4, 0x97, 0x20, 0x0e,
                                     0x04, 0x6d, 0x39, 0xcc, 0xc7, 0x11, 0x2c, 0xd0};
    CHECK(!memcmp(out, want, 32), "sha256 of a million 'a'");
}

int main(void) {
    test_sha256();
    test_invalid();
    test_both_ways('t', 8u << 20);
    test_both_ways('u', 3u << 20);
    test_half_close();
    test_backpressure();
    test_reset();
    return check_report("relay");
}
