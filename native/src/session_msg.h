/* session_msg.h - the messages between the host and a3s-init in server mode (internal).
 *
 * A long-lived sandbox has one control socket: an AF_UNIX SOCK_SEQPACKET
 * socketpair made on the host, one end inherited by a3s-init through
 * bubblewrap. Every message is a 12-byte header and a body, all integers
 * little-endian:
 *
 *   u32 magic "A3SM" (0x4d533341)   u16 type   u16 version (1)   u32 total length
 *
 * where the total length counts the header. A string is a u32 length and
 * that many bytes (no terminator on the wire). Bodies:
 *
 *   EXEC      host -> init, with two fds (SCM_RIGHTS): the command's stdout and stderr,
 *             and with A3S_MSG_EXEC_GRANT a third: the caller's grant socket.
 *             u64 timeout_ms, u64 grace_ms, u32 flags (A3S_MSG_EXEC_*), u32 envc,
 *             string command, string scratch (the leaf name of the command's private
 *             directory under A3S_SCRATCH_PARENT), envc strings "NAME=VALUE"; with
 *             A3S_MSG_EXEC_CWD then a string, the absolute directory it starts in; with
 *             A3S_MSG_EXEC_RULES then, for the exec check, three lists (deny patterns,
 *             ask patterns, approved commands), each a u32 count and that many strings.
 *   CANCEL    host -> init, empty: stop the running command (TERM, KILL after the grace).
 *   SHUTDOWN  host -> init, empty: kill everything and exit.
 *   SIGNAL    host -> init, on an owned program's lifeline pipe (a3s_child_signal; never on
 *             the control socket): u32 signal number (1..A3S_MSG_SIGNAL_MAX). The init
 *             sends it to every process of the program (a stop's first step: a sandbox's
 *             init takes no signal from outside its namespace). Always A3S_MSG_SIGNAL_LEN
 *             bytes, one write (atomic on a pipe); anything else read there, end of file
 *             included, makes the init kill everything and exit.
 *   READY     init -> host, empty: set up and waiting for commands.
 *   GRANT     init -> the caller's grant socket (not the control socket), with one fd:
 *             u16 port. The proxy's socket, bound, for the caller to listen on (a3s.h,
 *             "Network grants"); the caller answers with the one byte 'L'.
 *   DONE      init -> host: i32 exit_code, u32 flags (A3S_DONE_*), i32 pid (in the sandbox),
 *             string message (why the command could not start; with A3S_DONE_EXEC_STOPPED
 *             the exec check's record "deny|ask TAB PATTERN TAB COMMAND"; empty otherwise).
 *
 * A message longer than A3S_MSG_CHUNK travels as several packets; the
 * first holds the header and any fds, the receiver reads packets until the
 * total length has arrived. Decoding checks every length against the bytes
 * that arrived and refuses what execve could not take (NUL bytes, an
 * environment entry without '='): the init is small and must not trust a
 * malformed buffer even from its own host.
 */
#ifndef A3S_SESSION_MSG_H
#define A3S_SESSION_MSG_H

#include "internal.h"

#include <stddef.h>
#include <stdint.h>

#define A3S_MSG_MAGIC 0x4d533341u /* "A3SM" read as little-endian bytes */
#define A3S_MSG_VERSION 1u
#define A3S_MSG_HEADER 12u
#define A3S_MSG_CHUNK 32768u          /* bytes per packet */
#define A3S_MSG_MAX (8u << 20)        /* a whole message: command + environment */
#define A3S_MSG_MAX_ENV 8192u         /* environment entries per command */
#define A3S_MSG_SCRATCH_MAX 64u       /* bytes of a scratch leaf name */
#define A3S_MSG_TEXT_MAX 512u         /* bytes of a DONE message kept */
#define A3S_SCRATCH_PARENT "/run/a3s/scratch"

enum a3s_msg_type {
    A3S_MSG_EXEC = 1,
    A3S_MSG_CANCEL = 2,
    A3S_MSG_SHUTDOWN = 3,
    A3S_MSG_SIGNAL = 4,
    A3S_MSG_READY = 16,
    A3S_MSG_DONE = 17,
    A3S_MSG_GRANT = 18,
};

/* Flags of an EXEC message. */
#define A3S_MSG_EXEC_GRANT (1u << 0) /* a network grant: the third fd is the grant socket */
/* one more string after the environment: the absolute directory the command starts in */
#define A3S_MSG_EXEC_CWD (1u << 1)
#define A3S_MSG_EXEC_RULES (1u << 2) /* the exec check's lists follow the environment */
#define A3S_MSG_EXEC_MAX_RULES 4096u /* entries per list */
/* one more fd after the others: the read end of the command's standard input
 * (without it, the command reads /dev/null) */
#define A3S_MSG_EXEC_STDIN (1u << 3)

/* Flags of a DONE message. */
#define A3S_DONE_TIMED_OUT (1u << 0)    /* the timeout fired; the tree was stopped */
#define A3S_DONE_CANCELLED (1u << 1)    /* a CANCEL arrived first; the tree was stopped */
#define A3S_DONE_SETUP_FAILED (1u << 2) /* the command never ran; message says why */
#define A3S_DONE_CLOSING (1u << 3)      /* the init ends after this: the next command needs a
                                           new sandbox (it could not clean up) */
#define A3S_DONE_STALE (1u << 4)        /* not run: a mount of the sandbox is gone (the host
                                           replaced its mount point); run it in a new one */
#define A3S_DONE_OOM_KILLED (1u << 5)   /* the init's memory watchdog killed the command: the
                                           sandbox used more than its memory bound */
#define A3S_DONE_LINKED (1u << 6)       /* the command called link() or linkat() (or they
                                           cannot be watched): see A3S_RESULT_HARD_LINKED */
#define A3S_DONE_EXEC_STOPPED (1u << 7) /* the exec check stopped a program; message holds
                                           its record (see DONE) */
#define A3S_DONE_SURVIVED (1u << 8)     /* a process of the command was still there after
                                           SIGKILL and the reap time (uninterruptible sleep):
                                           see A3S_RESULT_OUTLIVED; CLOSING is set too */

/* A decoded EXEC. Every pointer is into one allocation owned by the
 * struct (release with a3s_msg_exec_free); strings are NUL-terminated. */
struct a3s_msg_exec {
    uint64_t timeout_ms;
    uint64_t grace_ms;
    uint32_t flags;
    char *command;
    size_t command_len;
    char *scratch;
    char **env; /* envc entries and a NULL */
    size_t envc;
    char *cwd; /* A3S_MSG_EXEC_CWD: where the command starts; NULL: the init's own */
    void *block;
    /* A3S_MSG_EXEC_RULES: deny patterns, ask patterns, approved commands (into rules_block) */
    char **rules[3];
    size_t nrules[3];
    void *rules_block;
};

struct a3s_msg_done {
    int32_t exit_code;
    uint32_t flags;
    int32_t pid;
    char message[A3S_MSG_TEXT_MAX]; /* NUL-terminated, truncated to fit */
};

/* Reads a header: A3S_OK with *type and *total, or A3S_E_INVALID (bad
 * magic or version, a total shorter than the header or above A3S_MSG_MAX).
 * Needs len >= A3S_MSG_HEADER. */
int a3s_msg_header(const uint8_t *buf, size_t len, uint16_t *type, uint32_t *total,
                   a3s_error *err);

/* Encodes an EXEC into a new buffer (*out, *len; free() it). command and
 * env entries are (pointer, NUL-terminated) here; A3S_E_INVALID for a NUL
 * in the command, an entry without '=', a scratch name that is not
 * [A-Za-z0-9_-]{1,64}, more than A3S_MSG_MAX_ENV entries; A3S_E_TOO_LARGE
 * above A3S_MSG_MAX. */
int a3s_msg_encode_exec(uint64_t timeout_ms, uint64_t grace_ms, const char *command,
                        size_t command_len, const char *scratch, const char *const *env,
                        size_t envc, uint8_t **out, size_t *len, a3s_error *err);

/* Sets the flags word of an encoded EXEC (A3S_MSG_EXEC_*). */
void a3s_msg_exec_set_flags(uint8_t *buf, uint32_t flags);
/* The flags word of an encoded EXEC. */
uint32_t a3s_msg_exec_flags(const uint8_t *buf);
/* Appends cwd (absolute, NUL-free, at most PATH_MAX bytes) to an encoded EXEC in *buf
 * (reallocated; *len grows) and sets A3S_MSG_EXEC_CWD, keeping the other flags. */
int a3s_msg_exec_append_cwd(uint8_t **buf, size_t *len, const char *cwd, a3s_error *err);

/* Appends the exec check's lists (a3s_exec_options.exec_deny, exec_ask,
 * exec_approved) to an encoded EXEC (reallocating *buf) and sets
 * A3S_MSG_EXEC_RULES; call it last. A3S_E_TOO_LARGE, A3S_E_NOMEM. */
int a3s_msg_exec_add_rules(uint8_t **buf, size_t *len, const char *const *const lists[3],
                           const size_t counts[3], a3s_error *err);

/* Decodes a whole EXEC message (header included). */
int a3s_msg_decode_exec(const uint8_t *buf, size_t len, struct a3s_msg_exec *out, a3s_error *err);
void a3s_msg_exec_free(struct a3s_msg_exec *m);

/* A message with an empty body (CANCEL, SHUTDOWN, READY) into buf[12]. */
size_t a3s_msg_encode_empty(uint16_t type, uint8_t buf[A3S_MSG_HEADER]);

/* Encodes a DONE into buf (cap >= A3S_MSG_HEADER + 16 + A3S_MSG_TEXT_MAX);
 * returns its length, 0 if cap is too small. */
size_t a3s_msg_encode_done(const struct a3s_msg_done *d, uint8_t *buf, size_t cap);
int a3s_msg_decode_done(const uint8_t *buf, size_t len, struct a3s_msg_done *out, a3s_error *err);

#define A3S_MSG_SIGNAL_LEN (A3S_MSG_HEADER + 4u)
#define A3S_MSG_SIGNAL_MAX 64 /* SIGRTMAX on Linux */

/* A SIGNAL into buf; 0 for a signal outside 1..A3S_MSG_SIGNAL_MAX. */
size_t a3s_msg_encode_signal(int sig, uint8_t buf[A3S_MSG_SIGNAL_LEN]);
/* The signal of a whole SIGNAL message, or 0 if buf is anything else. */
int a3s_msg_decode_signal(const uint8_t *buf, size_t len);

/* Sends one message (split into packets), with `nfds` fds on the first
 * packet; waits at most timeout_ms (< 0: forever) for room in the socket.
 * Never raises SIGPIPE. 0, or -errno (-EPIPE: the peer is gone). */
int a3s_msg_send(int fd, const uint8_t *buf, size_t len, const int *fds, size_t nfds,
                 int timeout_ms);

/* Receives one message into a new buffer (*out, *len; free() it) and up
 * to maxfds fds (close-on-exec) into fds[], their number in *nfds; fds
 * beyond maxfds are closed and make it fail. Waits at most timeout_ms
 * (< 0: forever) for each packet. 0, 1 at end of stream (the peer closed
 * before a message began), or -errno (-EPROTO for a malformed or
 * truncated message; no fd is left open then). */
int a3s_msg_recv(int fd, uint8_t **out, size_t *len, int *fds, size_t maxfds, size_t *nfds,
                 int timeout_ms);

#endif
