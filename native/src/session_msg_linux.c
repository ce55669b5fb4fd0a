/* session_msg_linux.c - encoding, decoding and moving the control-socket messages.
 *
 * Shared by the library (the host side) and a3s-init (server mode); the
 * format is described in session_msg.h. Decoding is written against
 * hostile input: every length is checked against what is left before it
 * is used, and nothing is read past the buffer.
 */
#define _GNU_SOURCE
#include "session_msg.h"

#if defined(__linux__)

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* ---- little-endian integers --------------------------------------------- */

static void put16(uint8_t *p, uint16_t v) {
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}

static void put32(uint8_t *p, uint32_t v) {
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static void put64(uint8_t *p, uint64_t v) {
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static uint16_t get16(const uint8_t *p) { return (uint16_t)(p[0] | (p[1] << 8)); }

static uint32_t get32(const uint8_t *p) {
    uint32_t v = 0;
    for (int i = 3; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

static uint64_t get64(const uint8_t *p) {
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

static void put_header(uint8_t *p, uint16_t type, uint32_t total) {
    put32(p, A3S_MSG_MAGIC);
    put16(p + 4, type);
    put16(p + 6, A3S_MSG_VERSION);
    put32(p + 8, total);
}

int a3s_msg_header(const uint8_t *buf, size_t len, uint16_t *type, uint32_t *total,
                   a3s_error *err) {
    if (len < A3S_MSG_HEADER)
        return a3s_fail(err, A3S_E_INVALID, 0, (int64_t)len, "message shorter than its header");
    if (get32(buf) != A3S_MSG_MAGIC)
        return a3s_fail(err, A3S_E_INVALID, 0, 0, "bad message magic");
    if (get16(buf + 6) != A3S_MSG_VERSION)
        return a3s_fail(err, A3S_E_INVALID, 0, get16(buf + 6), "unknown message version %u",
                        (unsigned)get16(buf + 6));
    uint32_t t = get32(buf + 8);
    if (t < A3S_MSG_HEADER || t > A3S_MSG_MAX)
        return a3s_fail(err, A3S_E_INVALID, 0, t, "bad message length %u", (unsigned)t);
    *type = get16(buf + 4);
    *total = t;
    return A3S_OK;
}

/* ---- EXEC ---------------------------------------------------------------- */

static bool scratch_name_ok(const char *s, size_t n) {
    if (n == 0 || n > A3S_MSG_SCRATCH_MAX)
        return false;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '-' || c == '_'))
            return false;
    }
    return true;
}

static bool env_entry_ok(const char *s, size_t n) {
    const char *eq = memchr(s, '=', n);
    return eq && eq != s && !memchr(s, '\0', n);
}

int a3s_msg_encode_exec(uint64_t timeout_ms, uint64_t grace_ms, const char *command,
                        size_t command_len, const char *scratch, const char *const *env,
                        size_t envc, uint8_t **out, size_t *len, a3s_error *err) {
    *out = NULL;
    *len = 0;
    if ((!command && command_len) || !scratch || (!env && envc))
        return a3s_fail(err, A3S_E_INVALID, 0, 0, "encode exec: NULL argument");
    if (memchr(command ? command : "", '\0', command_len))
        return a3s_fail(err, A3S_E_INVALID, 0, 0, "the command contains a NUL byte");
    size_t slen = strlen(scratch);
    if (!scratch_name_ok(scratch, slen))
        return a3s_fail(err, A3S_E_INVALID, 0, 0, "bad scratch name");
    if (envc > A3S_MSG_MAX_ENV)
        return a3s_fail(err, A3S_E_TOO_LARGE, 0, (int64_t)envc, "too many environment entries");
    uint64_t total = A3S_MSG_HEADER + 24 + 4 + (uint64_t)command_len + 4 + slen;
    for (size_t i = 0; i < envc; i++) {
        size_t n = env[i] ? strlen(env[i]) : 0;
        if (!env[i] || !env_entry_ok(env[i], n))
            return a3s_fail(err, A3S_E_INVALID, 0, (int64_t)i,
                            "environment entry %zu is not NAME=VALUE", i);
        total += 4 + (uint64_t)n;
    }
    if (total > A3S_MSG_MAX || command_len > UINT32_MAX)
        return a3s_fail(err, A3S_E_TOO_LARGE, 0, (int64_t)total,
                        "the command and its environment take %llu bytes; the limit is %u",
                        (unsigned long long)total, A3S_MSG_MAX);
    uint8_t *b = malloc((size_t)total);
    if (!b)
        return a3s_fail(err, A3S_E_NOMEM, 0, 0, "out of memory encoding a command");
    put_header(b, A3S_MSG_EXEC, (uint32_t)total);
    uint8_t *p = b + A3S_MSG_HEADER;
    put64(p, timeout_ms);
    put64(p + 8, grace_ms);
    put32(p + 16, 0);
    put32(p + 20, (uint32_t)envc);
    p += 24;
    put32(p, (uint32_t)command_len);
    if (command_len)
        memcpy(p + 4, command, command_len);
    p += 4 + command_len;
    put32(p, (uint32_t)slen);
    memcpy(p + 4, scratch, slen);
    p += 4 + slen;
    for (size_t i = 0; i < envc; i++) {
        size_t n = strlen(env[i]);
        put32(p, (uint32_t)n);
        memcpy(p + 4, env[i], n);
        p += 4 + n;
    }
    *out = b;
    *len = (size_t)total;
    return A3S_OK;
}

void a3s_msg_exec_set_flags(uint8_t *buf, uint32_t flags) {
    put32(buf + A3S_MSG_HEADER + 16, flags);
}

uint32_t a3s_msg_exec_flags(const uint8_t *buf) { return get32(buf + A3S_MSG_HEADER + 16); }

int a3s_msg_exec_append_cwd(uint8_t **buf, size_t *len, const char *cwd, a3s_error *err) {
    size_t n = cwd ? strlen(cwd) : 0;
    if (!cwd || cwd[0] != '/' || n > PATH_MAX)
        return a3s_fail(err, A3S_E_INVALID, 0, 0, "the working directory must be absolute");
    if (*len + 4 + n > A3S_MSG_MAX)
        return a3s_fail(err, A3S_E_TOO_LARGE, 0, 0, "the command and its directory are too large");
    uint8_t *b = realloc(*buf, *len + 4 + n);
    if (!b)
        return a3s_fail(err, A3S_E_NOMEM, 0, 0, "out of memory encoding a command");
    put32(b + *len, (uint32_t)n);
    memcpy(b + *len + 4, cwd, n);
    *buf = b;
    *len += 4 + n;
    put_header(b, A3S_MSG_EXEC, (uint32_t)*len);
    a3s_msg_exec_set_flags(b, get32(b + A3S_MSG_HEADER + 16) | A3S_MSG_EXEC_CWD);
    return A3S_OK;
}

int a3s_msg_exec_add_rules(uint8_t **buf, size_t *len, const char *const *const lists[3],
                           const size_t counts[3], a3s_error *err) {
    uint64_t more = 0;
    for (int l = 0; l < 3; l++) {
        if (counts[l] > A3S_MSG_EXEC_MAX_RULES)
            return a3s_fail(err, A3S_E_TOO_LARGE, 0, (int64_t)counts[l],
                            "too many exec check entries (%zu; the limit is %u)", counts[l],
                            A3S_MSG_EXEC_MAX_RULES);
        more += 4;
        for (size_t i = 0; i < counts[l]; i++)
            more += 4 + (uint64_t)strlen(lists[l][i]);
    }
    if (*len + more > A3S_MSG_MAX)
        return a3s_fail(err, A3S_E_TOO_LARGE, 0, (int64_t)(*len + more),
                        "the command, its environment and its exec rules take %llu bytes; the "
                        "limit is %u",
                        (unsigned long long)(*len + more), A3S_MSG_MAX);
    uint8_t *b = realloc(*buf, *len + (size_t)more);
    if (!b)
        return a3s_fail(err, A3S_E_NOMEM, 0, 0, "out of memory encoding a command");
    uint8_t *p = b + *len;
    for (int l = 0; l < 3; l++) {
        put32(p, (uint32_t)counts[l]);
        p += 4;
        for (size_t i = 0; i < counts[l]; i++) {
            size_t n = strlen(lists[l][i]);
            put32(p, (uint32_t)n);
            memcpy(p + 4, lists[l][i], n);
            p += 4 + n;
        }
    }
    *len += (size_t)more;
    *buf = b;
    put_header(b, A3S_MSG_EXEC, (uint32_t)*len);
    put32(b + A3S_MSG_HEADER + 16, get32(b + A3S_MSG_HEADER + 16) | A3S_MSG_EXEC_RULES);
    return A3S_OK;
}

/* A cursor over the body: each read checks what is left. */
struct reader {
    const uint8_t *p;
    size_t left;
};

static bool take(struct reader *r, size_t n, const uint8_t **at) {
    if (n > r->left)
        return false;
    *at = r->p;
    r->p += n;
    r->left -= n;
    return true;
}

static bool take_string(struct reader *r, const uint8_t **s, size_t *n) {
    const uint8_t *lp;
    if (!take(r, 4, &lp))
        return false;
    *n = get32(lp);
    return take(r, *n, s);
}

/* Reads the three lists of A3S_MSG_EXEC_RULES into out->rules (strings in
 * out->rules_block, each list's pointers allocated on their own). */
static bool take_rules(struct reader *r, struct a3s_msg_exec *out) {
    size_t cap = 2 * r->left + 16; /* each string: at most its bytes and a NUL */
    char *w = malloc(cap);
    if (!w)
        return false;
    out->rules_block = w;
    for (int l = 0; l < 3; l++) {
        const uint8_t *cp;
        if (!take(r, 4, &cp))
            return false;
        uint32_t count = get32(cp);
        if (count > A3S_MSG_EXEC_MAX_RULES || (size_t)count * 4 > r->left)
            return false;
        char **v = calloc((size_t)count + 1, sizeof *v);
        if (!v)
            return false;
        out->rules[l] = v;
        for (uint32_t i = 0; i < count; i++) {
            const uint8_t *sp;
            size_t n;
            if (!take_string(r, &sp, &n) || memchr(sp, '\0', n))
                return false;
            memcpy(w, sp, n);
            w[n] = '\0';
            v[i] = w;
            w += n + 1;
        }
        out->nrules[l] = count;
    }
    return true;
}

void a3s_msg_exec_free(struct a3s_msg_exec *m) {
    if (!m)
        return;
    free(m->block);
    free(m->rules_block);
    for (int l = 0; l < 3; l++)
        free(m->rules[l]);
    memset(m, 0, sizeof *m);
}

int a3s_msg_decode_exec(const uint8_t *buf, size_t len, struct a3s_msg_exec *out, a3s_error *err) {
    memset(out, 0, sizeof *out);
    uint16_t type = 0;
    uint32_t total = 0;
    int rc = a3s_msg_header(buf, len, &type, &total, err);
    if (rc)
        return rc;
    if (type != A3S_MSG_EXEC)
        return a3s_fail(err, A3S_E_INVALID, 0, type, "not an exec message (type %u)",
                        (unsigned)type);
    if (total != len)
        return a3s_fail(err, A3S_E_INVALID, 0, (int64_t)len,
                        "exec message length %u but %zu bytes arrived", (unsigned)total, len);
    struct reader r = {buf + A3S_MSG_HEADER, len - A3S_MSG_HEADER};
    const uint8_t *fixed, *cmd, *scr;
    size_t cmd_len, scr_len;
    if (!take(&r, 24, &fixed) || !take_string(&r, &cmd, &cmd_len) ||
        !take_string(&r, &scr, &scr_len))
        return a3s_fail(err, A3S_E_INVALID, 0, 0, "exec message truncated");
    uint64_t envc = get32(fixed + 20);
    uint32_t flags = get32(fixed + 16);
    if (flags & ~(uint32_t)(A3S_MSG_EXEC_GRANT | A3S_MSG_EXEC_CWD | A3S_MSG_EXEC_RULES |
                            A3S_MSG_EXEC_STDIN))
        return a3s_fail(err, A3S_E_INVALID, 0, flags, "unknown exec flags 0x%x", (unsigned)flags);
    if (envc > A3S_MSG_MAX_ENV)
        return a3s_fail(err, A3S_E_INVALID, 0, (int64_t)envc, "too many environment entries");
    if (memchr(cmd, '\0', cmd_len))
        return a3s_fail(err, A3S_E_INVALID, 0, 0, "the command contains a NUL byte");
    if (!scratch_name_ok((const char *)scr, scr_len))
        return a3s_fail(err, A3S_E_INVALID, 0, 0, "bad scratch name");
    /* one block: the pointer array, then every string with its NUL; the
     * strings take at most len bytes plus one NUL each */
    size_t ptrs = ((size_t)envc + 1) * sizeof(char *);
    size_t cap = ptrs + len + (size_t)envc + 3;
    char *block = malloc(cap);
    if (!block)
        return a3s_fail(err, A3S_E_NOMEM, 0, 0, "out of memory decoding a command");
    char **env = (char **)(void *)block;
    char *w = block + ptrs;
    out->block = block;
    out->timeout_ms = get64(fixed);
    out->grace_ms = get64(fixed + 8);
    out->flags = flags;
    out->command = w;
    out->command_len = cmd_len;
    if (cmd_len)
        memcpy(w, cmd, cmd_len);
    w[cmd_len] = '\0';
    w += cmd_len + 1;
    out->scratch = w;
    memcpy(w, scr, scr_len);
    w[scr_len] = '\0';
    w += scr_len + 1;
    for (size_t i = 0; i < envc; i++) {
        const uint8_t *s;
        size_t n;
        if (!take_string(&r, &s, &n)) {
            a3s_msg_exec_free(out);
            return a3s_fail(err, A3S_E_INVALID, 0, (int64_t)i, "exec message truncated");
        }
        if (!env_entry_ok((const char *)s, n)) {
            a3s_msg_exec_free(out);
            return a3s_fail(err, A3S_E_INVALID, 0, (int64_t)i,
                            "environment entry %zu is not NAME=VALUE", i);
        }
        env[i] = w;
        memcpy(w, s, n);
        w[n] = '\0';
        w += n + 1;
    }
    env[envc] = NULL;
    out->env = env;
    out->envc = (size_t)envc;
    if (flags & A3S_MSG_EXEC_CWD) {
        const uint8_t *s;
        size_t n;
        if (!take_string(&r, &s, &n) || n == 0 || s[0] != '/' || n > PATH_MAX ||
            memchr(s, '\0', n)) {
            a3s_msg_exec_free(out);
            return a3s_fail(err, A3S_E_INVALID, 0, 0, "bad working directory in an exec message");
        }
        out->cwd = w;
        memcpy(w, s, n);
        w[n] = '\0';
        w += n + 1;
    }
    if ((flags & A3S_MSG_EXEC_RULES) && !take_rules(&r, out)) {
        a3s_msg_exec_free(out);
        return a3s_fail(err, A3S_E_INVALID, 0, 0, "malformed exec rules in the exec message");
    }
    if (r.left != 0) {
        a3s_msg_exec_free(out);
        return a3s_fail(err, A3S_E_INVALID, 0, (int64_t)r.left,
                        "%zu stray bytes after the exec message", r.left);
    }
    return A3S_OK;
}

/* ---- the small messages -------------------------------------------------- */

size_t a3s_msg_encode_empty(uint16_t type, uint8_t buf[A3S_MSG_HEADER]) {
    put_header(buf, type, A3S_MSG_HEADER);
    return A3S_MSG_HEADER;
}

size_t a3s_msg_encode_signal(int sig, uint8_t buf[A3S_MSG_SIGNAL_LEN]) {
    if (sig < 1 || sig > A3S_MSG_SIGNAL_MAX)
        return 0;
    put_header(buf, A3S_MSG_SIGNAL, A3S_MSG_SIGNAL_LEN);
    put32(buf + A3S_MSG_HEADER, (uint32_t)sig);
    return A3S_MSG_SIGNAL_LEN;
}

int a3s_msg_decode_signal(const uint8_t *buf, size_t len) {
    uint16_t type = 0;
    uint32_t total = 0;
    if (len != A3S_MSG_SIGNAL_LEN || a3s_msg_header(buf, len, &type, &total, NULL) != A3S_OK ||
        type != A3S_MSG_SIGNAL || total != len)
        return 0;
    uint32_t sig = get32(buf + A3S_MSG_HEADER);
    return sig >= 1 && sig <= A3S_MSG_SIGNAL_MAX ? (int)sig : 0;
}

size_t a3s_msg_encode_done(const struct a3s_msg_done *d, uint8_t *buf, size_t cap) {
    size_t n = strnlen(d->message, sizeof d->message);
    size_t total = A3S_MSG_HEADER + 16 + n;
    if (cap < total)
        return 0;
    put_header(buf, A3S_MSG_DONE, (uint32_t)total);
    put32(buf + 12, (uint32_t)d->exit_code);
    put32(buf + 16, d->flags);
    put32(buf + 20, (uint32_t)d->pid);
    put32(buf + 24, (uint32_t)n);
    memcpy(buf + 28, d->message, n);
    return total;
}

int a3s_msg_decode_done(const uint8_t *buf, size_t len, struct a3s_msg_done *out, a3s_error *err) {
    memset(out, 0, sizeof *out);
    uint16_t type = 0;
    uint32_t total = 0;
    int rc = a3s_msg_header(buf, len, &type, &total, err);
    if (rc)
        return rc;
    if (type != A3S_MSG_DONE || total != len)
        return a3s_fail(err, A3S_E_INVALID, 0, type, "not a whole done message");
    struct reader r = {buf + A3S_MSG_HEADER, len - A3S_MSG_HEADER};
    const uint8_t *fixed, *msg;
    size_t n;
    if (!take(&r, 12, &fixed) || !take_string(&r, &msg, &n) || r.left != 0)
        return a3s_fail(err, A3S_E_INVALID, 0, 0, "malformed done message");
    uint32_t known = A3S_DONE_TIMED_OUT | A3S_DONE_CANCELLED | A3S_DONE_SETUP_FAILED |
                     A3S_DONE_CLOSING | A3S_DONE_STALE | A3S_DONE_OOM_KILLED |
                     A3S_DONE_LINKED | A3S_DONE_EXEC_STOPPED | A3S_DONE_SURVIVED;
    out->exit_code = (int32_t)get32(fixed);
    out->flags = get32(fixed + 4);
    out->pid = (int32_t)get32(fixed + 8);
    if (out->flags & ~known)
        return a3s_fail(err, A3S_E_INVALID, 0, out->flags, "unknown done flags");
    if (out->exit_code < 0 || out->exit_code > 255)
        return a3s_fail(err, A3S_E_INVALID, 0, out->exit_code, "exit code out of range");
    if (n >= sizeof out->message)
        n = sizeof out->message - 1;
    memcpy(out->message, msg, n);
    out->message[n] = '\0';
    /* a NUL inside would cut it short: keep what precedes it */
    return A3S_OK;
}

/* ---- moving messages ------------------------------------------------------ */

static int wait_for(int fd, short events, int timeout_ms) {
    struct pollfd p = {.fd = fd, .events = events};
    for (;;) {
        int rc = poll(&p, 1, timeout_ms);
        if (rc < 0 && errno == EINTR)
            continue;
        if (rc < 0)
            return -errno;
        if (rc == 0)
            return -ETIMEDOUT;
        if (p.revents & POLLNVAL)
            return -EBADF;
        return 0;
    }
}

int a3s_msg_send(int fd, const uint8_t *buf, size_t len, const int *fds, size_t nfds,
                 int timeout_ms) {
    if (nfds > 8)
        return -EINVAL;
    size_t off = 0;
    bool first = true;
    while (off < len || first) {
        size_t n = len - off < A3S_MSG_CHUNK ? len - off : A3S_MSG_CHUNK;
        struct iovec iov = {.iov_base = (void *)(buf + off), .iov_len = n};
        union {
            struct cmsghdr h;
            char space[CMSG_SPACE(8 * sizeof(int))];
        } c;
        struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1};
        if (first && nfds) {
            memset(&c, 0, sizeof c);
            m.msg_control = c.space;
            m.msg_controllen = CMSG_SPACE(nfds * sizeof(int));
            struct cmsghdr *h = CMSG_FIRSTHDR(&m);
            h->cmsg_level = SOL_SOCKET;
            h->cmsg_type = SCM_RIGHTS;
            h->cmsg_len = CMSG_LEN(nfds * sizeof(int));
            memcpy(CMSG_DATA(h), fds, nfds * sizeof(int));
        }
        ssize_t sent = sendmsg(fd, &m, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (sent < 0 && errno == EINTR)
            continue;
        if (sent < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            int rc = wait_for(fd, POLLOUT, timeout_ms);
            if (rc < 0)
                return rc;
            continue;
        }
        if (sent < 0)
            return -errno;
        if ((size_t)sent != n)
            return -EPROTO; /* a seqpacket send is all or nothing */
        off += n;
        first = false;
    }
    return 0;
}

static void close_fds(int *fds, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (fds[i] >= 0)
            close(fds[i]);
}

/* One packet into buf[cap]; fds (if any) appended to fds[*nfds]. Returns
 * the byte count, 0 at end of stream, or -errno; any fd past maxfds and
 * any truncation make it -EPROTO (with those fds closed). */
static ssize_t recv_packet(int fd, uint8_t *buf, size_t cap, int *fds, size_t maxfds,
                           size_t *nfds, int timeout_ms) {
    int rc = wait_for(fd, POLLIN, timeout_ms);
    if (rc < 0)
        return rc;
    union {
        struct cmsghdr h;
        char space[CMSG_SPACE(16 * sizeof(int))];
    } c;
    struct iovec iov = {.iov_base = buf, .iov_len = cap};
    struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = c.space,
                       .msg_controllen = sizeof c.space};
    ssize_t n;
    do
        n = recvmsg(fd, &m, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
    while (n < 0 && errno == EINTR);
    if (n < 0)
        return errno == EAGAIN ? -EPROTO : -errno;
    bool bad = (m.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) != 0;
    for (struct cmsghdr *h = CMSG_FIRSTHDR(&m); h; h = CMSG_NXTHDR(&m, h)) {
        if (h->cmsg_level != SOL_SOCKET || h->cmsg_type != SCM_RIGHTS)
            continue;
        size_t k = (h->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        int *got = (int *)(void *)CMSG_DATA(h);
        for (size_t i = 0; i < k; i++) {
            int one;
            memcpy(&one, got + i, sizeof one);
            if (*nfds < maxfds)
                fds[(*nfds)++] = one;
            else {
                close(one);
                bad = true;
            }
        }
    }
    return bad ? -EPROTO : n;
}

int a3s_msg_recv(int fd, uint8_t **out, size_t *len, int *fds, size_t maxfds, size_t *nfds,
                 int timeout_ms) {
    *out = NULL;
    *len = 0;
    *nfds = 0;
    uint8_t *first = malloc(A3S_MSG_CHUNK);
    if (!first)
        return -ENOMEM;
    ssize_t n = recv_packet(fd, first, A3S_MSG_CHUNK, fds, maxfds, nfds, timeout_ms);
    if (n <= 0) {
        free(first);
        close_fds(fds, *nfds);
        *nfds = 0;
        return n == 0 ? 1 : (int)n;
    }
    uint16_t type = 0;
    uint32_t total = 0;
    if (a3s_msg_header(first, (size_t)n, &type, &total, NULL) != A3S_OK ||
        (size_t)n > total) {
        free(first);
        close_fds(fds, *nfds);
        *nfds = 0;
        return -EPROTO;
    }
    uint8_t *buf = first;
    if (total > (size_t)n) {
        buf = realloc(first, total);
        if (!buf) {
            free(first);
            close_fds(fds, *nfds);
            *nfds = 0;
            return -ENOMEM;
        }
    }
    size_t have = (size_t)n;
    while (have < total) {
        size_t none = 0;
        int stray[16];
        ssize_t k = recv_packet(fd, buf + have, total - have, stray, 0, &none, timeout_ms);
        if (k <= 0) {
            free(buf);
            close_fds(fds, *nfds);
            *nfds = 0;
            return k == 0 ? -EPROTO : (int)k;
        }
        have += (size_t)k;
    }
    *out = buf;
    *len = total;
    return 0;
}

#else
typedef int a3s_session_msg_unused; /* ISO C forbids an empty unit */
#endif
