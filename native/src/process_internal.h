/* process_internal.h - output capture and results the sandbox layer builds or amends
 * (internal). */
#ifndef A3S_PROCESS_INTERNAL_H
#define A3S_PROCESS_INTERNAL_H

#include "internal.h"

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define A3S_CAPTURE_CHUNK 65536 /* bytes a3s_capture_read reads at once */

/* One output stream being drained: the first max/2 bytes are kept (head),
 * then a ring of the last max - max/2 (tail); every byte is counted. */
struct a3s_capture {
    int fd; /* read end (non-blocking); -1 once at EOF or abandoned */
    size_t head_cap, tail_cap;
    char *head;
    size_t head_len, head_alloc;
    char *tail; /* ring of tail_cap bytes; grown lazily until it first wraps */
    size_t tail_start, tail_len, tail_alloc;
    uint64_t total;
    bool oom; /* storing stopped; reading and counting go on */
    a3s_output_fn sink; /* NULL, or given every chunk read (a3s_exec_options.on_output) */
    void *sink_ctx;
    int stream; /* 1 stdout, 2 stderr: what sink is told */
};

/* Where a run's output goes as it is read, besides its capture. */
struct a3s_output_sink {
    a3s_output_fn fn; /* NULL: nowhere */
    void *ctx;
};

/* Bytes for a command's standard input (a3s_exec_options.stdin_data); data NULL: /dev/null. */
struct a3s_stdin_bytes {
    const void *data;
    size_t len;
};

/* Feeds a command's standard input from a3s_stdin_bytes through a pipe
 * while the caller's poll loop drains the output: never blocks. */
struct a3s_stdin_feed {
    int fd; /* the non-blocking write end; -1 once everything is written or the reader left */
    const unsigned char *next;
    size_t left;
};

/* Makes the pipe: *child_end is the read end for the command (close-on-exec,
 * above stdio; the caller closes its copy once the command has it), f holds the
 * write end. With in NULL or in->data NULL, f->fd and *child_end are -1 and
 * nothing is fed. 0, or -1 with errno. */
int a3s_stdin_feed_open(struct a3s_stdin_feed *f, const struct a3s_stdin_bytes *in,
                        int *child_end);
/* Writes what the pipe takes now; closes the write end once all is written,
 * or when the command closed its end (EPIPE, without a SIGPIPE). */
void a3s_stdin_feed_write(struct a3s_stdin_feed *f);
/* write() that turns a reader's absence into EPIPE without a SIGPIPE for the
 * process (a host may not ignore it); retries EINTR. */
ssize_t a3s_write_no_sigpipe(int fd, const void *data, size_t n);
/* Stops feeding (the command ended): closes the write end if still open. */
void a3s_stdin_feed_close(struct a3s_stdin_feed *f);

/* Makes c pass every chunk it reads to sink (may be NULL) as `stream`. */
void a3s_capture_sink(struct a3s_capture *c, const struct a3s_output_sink *sink, int stream);

/* Takes ownership of fd; max_output_bytes 0 means the default. */
void a3s_capture_init(struct a3s_capture *c, int fd, uint64_t max_output_bytes);
/* Reads what is available once into buf (A3S_CAPTURE_CHUNK bytes of
 * scratch); closes the fd at end of file or on a hard error. */
void a3s_capture_read(struct a3s_capture *c, char *buf);
/* Closes the fd (if still open) and frees the buffers. */
void a3s_capture_release(struct a3s_capture *c);

/* A result from two drained captures (their buffers move into it; release
 * the captures afterwards as usual): head [marker] tail per stream, the
 * truncation flags added to `flags`, setup_error copied (may be NULL).
 * NULL if memory ran out (also when a capture ran out of it). */
a3s_process_result *a3s_process_result_captured(struct a3s_capture *out, struct a3s_capture *err,
                                                int32_t exit_code, int32_t term_signal,
                                                uint64_t flags, uint64_t duration_us, int32_t pid,
                                                const char *setup_error);

/* A result for a run that never started: empty output, the given exit code
 * and flags, and setup_error (copied; may be NULL). NULL if out of memory. */
a3s_process_result *a3s_process_result_synthetic(int32_t exit_code, uint64_t flags,
                                                 const char *setup_error);

/* The status pipe of a3s-init (the child's grandchild under bubblewrap),
 * read while the run is supervised: the init says there when it is done
 * ("D<exit status>.", after "S" when a process it could not reap is left),
 * and the kernel holds back its exit, and so bubblewrap's, until that
 * process is gone. Once it has said both, the run ends there: bubblewrap is
 * killed and reaped, and the output read so far is the run's. */
struct a3s_status_watch {
    int fd;       /* the read end, non-blocking; -1: no watch */
    char *buf;    /* what the init said so far, NUL-terminated */
    size_t cap;   /* of buf, with the NUL */
    size_t len;
    bool released; /* the run ended at "S" ... "D<code>.", not at bubblewrap's exit */
};

/* Appends what fd holds now to w->buf; false at end of file or an error. */
bool a3s_status_watch_read(struct a3s_status_watch *w);

/* a3s_process_run, with the child moving itself into the cgroup(s) of cg
 * (cgroup_linux.h) just before execve; a failure to join is reported like
 * a failed execve (A3S_E_SYSTEM, step "cgroup.procs") and also sets
 * *join_refused (which may be NULL), so the caller can run again without
 * the cgroup. cg may be NULL. */
struct a3s_cgroup;
int a3s_process_run_in_cgroup(const a3s_process_options *opts, const struct a3s_cgroup *cg,
                              const struct a3s_output_sink *sink,
                              const struct a3s_stdin_bytes *in, struct a3s_status_watch *watch,
                              a3s_process_result **out, bool *join_refused, a3s_error *err);

/* a3s_process_run_in_cgroup, running the file exec_fd is open on (a sealed
 * memfd of the init) instead of opts->path, which names it in messages. */
int a3s_process_run_fd_in_cgroup(const a3s_process_options *opts, int exec_fd,
                                 const struct a3s_cgroup *cg, const struct a3s_output_sink *sink,
                                 const struct a3s_stdin_bytes *in,
                                 struct a3s_status_watch *watch, a3s_process_result **out,
                                 bool *join_refused, a3s_error *err);

/* Sets exit_code and term_signal, adds `flags`, and replaces setup_error
 * when it is non-NULL (copied). */
int a3s_process_result_override(a3s_process_result *r, int32_t exit_code, int32_t term_signal,
                                 uint64_t flags, const char *setup_error);

/* Replaces the duration (for the sandbox: from the call, planning included). */
void a3s_process_result_set_duration(a3s_process_result *r, uint64_t duration_us);

/* Replaces the result's list of what the sandbox neutralized (copied; NULL
 * clears it): one line per item, see a3s_process_result_view.neutralized. */
int a3s_process_result_set_neutralized(a3s_process_result *r, const char *text);

/* Records what the exec check stopped (the first): its list, the rule as
 * "bash(PATTERN)" and the command (both copied). */
int a3s_process_result_set_exec_stop(a3s_process_result *r, int32_t list, const char *rule,
                                     const char *command);

/* ---- fork and exec, shared by the runner and owned processes (child_linux.c) ---- */

/* Everything a forked child needs, prepared before fork. Every fd is >= 3. */
struct a3s_exec_plan {
    const char *path; /* absolute; execve, no PATH search */
    char **argv;      /* NULL-terminated */
    char **envp;      /* NULL-terminated: the whole environment */
    const char *cwd;  /* NULL: inherit */
    int in, out, err; /* become the child's 0, 1 and 2 */
    int report_w;     /* a failure before execve is written here as a struct a3s_exec_report */
    const int *keep;  /* fds inherited at the same numbers; every other fd >= 3 is closed */
    size_t nkeep;
    const struct a3s_cgroup *cgroup; /* joined before execve; NULL: none */
    bool by_fd;  /* run the file exec_fd is open on (execveat AT_EMPTY_PATH), not path: a
                    pinned image (init_image.h); path still names it in messages */
    int exec_fd;
    bool try_close_range;
    int brute_limit; /* sweep bound when neither close_range nor /proc works */
};

/* What a child that could not exec writes to report_w before _exit(127). */
struct a3s_exec_report {
    int32_t step; /* which step failed (see a3s_exec_report_fail) */
    int32_t err;  /* its errno */
};

/* Sets try_close_range and brute_limit (portable: no close_range). */
void a3s_exec_plan_limits(struct a3s_exec_plan *p, bool portable);

/* Starts a child that runs fn(arg) sharing the caller's memory (clone with
 * CLONE_VM | CLONE_VFORK, on a stack of its own, every signal blocked): it
 * returns once the child has exec'd or exited. fn must only make
 * async-signal-safe calls, write no memory of the caller's, keep signals
 * blocked until it has reset their dispositions, and end in execve or _exit.
 * Returns the pid, or -1 with errno set. */
pid_t a3s_spawn_shared(int (*fn)(void *), void *arg);

/* In a child between fork and exec (async-signal-safe): closes every fd
 * >= 3 but those in a[0..na) and b[0..nb), with close_range over the gaps
 * (try_close_range), else by /proc/self/fd, else one by one below
 * brute_limit. Closed, not marked close-on-exec: a child of a threaded host
 * that waits before its exec (or never execs) must not hold the pipes of
 * the host's other threads open. Always 0. */
int a3s_close_fds_except(const int *a, size_t na, const int *b, size_t nb, bool try_close_range,
                         int brute_limit);

/* Starts p's child (a3s_spawn_shared); the child makes only
 * async-signal-safe calls: default dispositions, setsid, dup2 of in,
 * out and err, every other fd >= 3 but keep (and what the child itself
 * needs until execve) closed, chdir, an empty
 * signal mask, execve. Returns the pid, or -1 with errno set. */
pid_t a3s_exec_fork(const struct a3s_exec_plan *p);

/* Fills err from a child's failure report ("execve PATH: No such file or
 * directory") and returns A3S_E_SYSTEM. */
int a3s_exec_report_fail(const struct a3s_exec_report *rep, const char *path, const char *cwd,
                         a3s_error *err);

/* Adds flags to a finished run's result (r may be NULL). */
void a3s_process_result_add_flags(a3s_process_result *r, uint64_t flags);

#endif
