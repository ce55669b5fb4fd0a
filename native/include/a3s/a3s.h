/*
 * a3s.h - the stable C ABI of the codeward security kernel.
 *
 * This is the only public header. Everything the Python extension, the Node
 * addon and the Go package use is declared here; everything else in
 * native/src is private and built with -fvisibility=hidden.
 *
 * Conventions (see docs/architecture.md):
 *  - Functions return int: 0 (A3S_OK) on success, a negative A3S_E_* code on
 *    failure. Match functions return 1 (match) or 0 (no match).
 *  - Every fallible function takes an optional caller-allocated a3s_error
 *    (may be NULL) that receives the code, errno, a detail integer and a
 *    bounded message. There is no thread-local error state.
 *  - Inputs are borrowed (pointer, length) pairs; an embedded NUL is an
 *    ordinary byte, never a terminator.
 *  - Outputs are opaque handles released with their _free function
 *    (NULL is accepted and ignored).
 *  - Option and view structs start with struct_size so they can grow; a
 *    caller sets struct_size = sizeof(the struct it was compiled with).
 *    Every zero value is the safe default.
 *  - A handle may be used from several threads at once for reading
 *    (matching, checking); building (add) must not race with anything.
 */
#ifndef A3S_A3S_H
#define A3S_A3S_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32)
#  if defined(A3S_BUILDING)
#    define A3S_API __declspec(dllexport)
#  else
#    define A3S_API
#  endif
#elif defined(__GNUC__) || defined(__clang__)
#  define A3S_API __attribute__((visibility("default")))
#else
#  define A3S_API
#endif

/* ------------------------------------------------------------------------ */
/* Versions and features                                                     */
/* ------------------------------------------------------------------------ */

/* Bumped only on an incompatible change of this header. */
#define A3S_ABI_VERSION 1u

typedef struct a3s_error a3s_error;

typedef struct a3s_version_info {
    uint32_t major;
    uint32_t minor;
    uint32_t patch;
    uint32_t abi;       /* == A3S_ABI_VERSION of the built library */
    const char *string; /* "major.minor.patch", static storage */
} a3s_version_info;

/* The library's version; static storage, never NULL. */
A3S_API const a3s_version_info *a3s_version(void);

/* The ABI version of the running library (A3S_ABI_VERSION it was built with).
 * A binding compares it to the A3S_ABI_VERSION it was compiled against. */
A3S_API uint32_t a3s_abi_version(void);

/* Feature bits in a3s_features_info.flags. */
#define A3S_FEATURE_USER_NAMESPACES (1ull << 0) /* an unprivileged user namespace can be created */
#define A3S_FEATURE_PID_NAMESPACES (1ull << 1)  /* a pid namespace can be created inside one */
#define A3S_FEATURE_SECCOMP_FILTER (1ull << 2)  /* seccomp mode 2 (filter) is available */
#define A3S_FEATURE_LANDLOCK (1ull << 3)        /* landlock_abi > 0 */
#define A3S_FEATURE_PIDFD (1ull << 4)           /* pidfd_open works */
#define A3S_FEATURE_CGROUP_KILL (1ull << 5)     /* cgroup v2 with cgroup.kill */
/* seccomp user notification with SECCOMP_ADDFD_FLAG_SEND (Linux 5.14) on x86_64
 * or aarch64: a missing protected name is kept missing inside the sandbox by
 * emulating the calls that make names (docs/security.md); without it, a
 * read-only placeholder is made in the workspace for the sandbox's life */
#define A3S_FEATURE_NAMES_EMULATED (1ull << 6)

typedef struct a3s_features_info {
    size_t struct_size;   /* in: sizeof(a3s_features_info) */
    uint64_t flags;       /* out: A3S_FEATURE_* bits */
    int32_t landlock_abi; /* out: the kernel's Landlock ABI version, 0 if none */
    int32_t reserved;
} a3s_features_info;

/* What the running kernel offers. The probe runs once per process and is
 * cached (the only global state in the library); it forks a short-lived
 * child to test namespaces, so call it once at start-up, not per command.
 * Returns A3S_E_INVALID if out is NULL or out->struct_size is too small. */
A3S_API int a3s_features(a3s_features_info *out, a3s_error *err);

/* ------------------------------------------------------------------------ */
/* Errors                                                                    */
/* ------------------------------------------------------------------------ */

#define A3S_OK 0
#define A3S_E_INVALID (-1)     /* an argument is invalid (NULL, bad size, bad value) */
#define A3S_E_NOMEM (-2)       /* allocation failed */
#define A3S_E_SYNTAX (-3)      /* a rule or pattern is malformed; message says how */
#define A3S_E_TOO_LARGE (-4)   /* an input exceeds a documented limit */
#define A3S_E_BUFFER (-5)      /* an output buffer is too small; detail = size needed */
#define A3S_E_RANGE (-6)       /* an index is out of range */
#define A3S_E_UNSUPPORTED (-7) /* not available on this platform or kernel */
#define A3S_E_SYSTEM (-8)      /* a system call failed; sys_errno says which error */
#define A3S_E_REFUSED (-9)     /* the sandbox refused to run: the message says what it found */

#define A3S_ERROR_MESSAGE_MAX 256

struct a3s_error {
    int32_t code;      /* A3S_OK or A3S_E_* */
    int32_t sys_errno; /* errno of the failing system call, 0 if none */
    int64_t detail;    /* code-specific: byte offset, size needed, index ... */
    char message[A3S_ERROR_MESSAGE_MAX]; /* NUL-terminated, truncated to fit */
};

/* The stable identifier of a status code ("ok", "invalid", "syntax", ...),
 * the same string every binding and test vector uses. Static storage;
 * "unknown" for a code this library does not define. */
A3S_API const char *a3s_status_name(int code);

/* ------------------------------------------------------------------------ */
/* Glob patterns                                                             */
/* ------------------------------------------------------------------------ */
/*
 * Pattern language (docs/policy.md is the reference):
 *   "*"        exactly this pattern: matches anything, including "".
 *   P ":*"     a pattern ending in ":*" is a plain prefix test on P (no
 *              wildcards are interpreted inside P).
 *   *          any run of bytes except '/'.
 *   ** (or more stars)  any run of bytes including '/'.
 *   ** then /  (written together) empty, or any run of bytes ending in '/'.
 *   \*         a literal '*'. Any other byte, '\' included, is literal.
 * Matching is of the whole subject, case-sensitive, and runs in
 * O(len(pattern) * len(subject) / 64) time with no recursion; literal
 * prefilters (prefix, suffix, required bytes and runs) turn most
 * non-matches away first, and a per-call lazy DFA makes long subjects
 * cost about one table lookup per byte.
 */

/* Flags for a3s_glob_compile. */
#define A3S_GLOB_TOOL_NAME (1ull << 0) /* tool-name globs: ASCII case-insensitive, '*' crosses '/' */

#define A3S_GLOB_MAX_PATTERN 4096 /* bytes: far above any real rule, and it bounds the worst case */

typedef struct a3s_glob a3s_glob;

/* Compiles pattern[0..len). Unknown flag bits are rejected. */
A3S_API int a3s_glob_compile(const char *pattern, size_t len, uint64_t flags, a3s_glob **out,
                             a3s_error *err);

/* 1 if the whole subject matches, 0 if not. glob must be non-NULL. */
A3S_API int a3s_glob_match(const a3s_glob *glob, const char *subject, size_t len);

A3S_API void a3s_glob_free(a3s_glob *glob);

/* ------------------------------------------------------------------------ */
/* Rule sets                                                                 */
/* ------------------------------------------------------------------------ */
/*
 * A rule is "Tool(pattern)" or a bare "Tool" (any arguments). The tool part
 * is everything before the first '('; the pattern is everything up to the
 * final ')'. Tool names compare ASCII-case-insensitively and may be globs;
 * "mcp__server" also covers "mcp__server__<tool>". Rules naming grep, glob
 * or bm25 are rewritten to that mode of search. A rule set answers, for one
 * (tool, argument string), the first deny, else allow, else ask match.
 */

#define A3S_LIST_NONE 0
#define A3S_LIST_DENY 1
#define A3S_LIST_ALLOW 2
#define A3S_LIST_ASK 3

/* Flags in a3s_rule_view.flags. */
#define A3S_RULE_ANY_ARGS (1ull << 0)   /* bare tool or pattern exactly "*" */
#define A3S_RULE_TOOL_GLOB (1ull << 1)  /* the tool part contains '*' */
#define A3S_RULE_MCP_SERVER (1ull << 2) /* "mcp__server": covers the server's tools */
#define A3S_RULE_REWRITTEN (1ull << 3)  /* grep/glob/bm25 rewritten to search */
#define A3S_RULE_PREFIX (1ull << 4)     /* pattern ends in ":*" */

#define A3S_RULE_MAX_LENGTH 4096 /* bytes */

typedef struct a3s_ruleset a3s_ruleset;

typedef struct a3s_rule_view {
    size_t struct_size;  /* in: sizeof(a3s_rule_view) */
    int32_t list;        /* A3S_LIST_DENY, _ALLOW or _ASK */
    uint32_t id;         /* the caller's id given to a3s_ruleset_add */
    uint64_t flags;      /* A3S_RULE_* */
    const char *tool;    /* canonical tool part: lower-case, rewritten */
    size_t tool_len;
    const char *pattern; /* canonical argument pattern ("*" for any arguments) */
    size_t pattern_len;
} a3s_rule_view;

typedef struct a3s_match {
    size_t struct_size; /* in: sizeof(a3s_match) */
    int32_t list;       /* A3S_LIST_NONE, or the list that decided */
    uint32_t id;        /* id of the first matching rule of that list */
    size_t index;       /* its index in the rule set */
} a3s_match;

A3S_API int a3s_ruleset_new(a3s_ruleset **out, a3s_error *err);

/* Parses and compiles one rule and appends it to `list`. On a malformed rule
 * returns A3S_E_SYNTAX with a message naming the problem and detail = the
 * byte offset where it was found; the rule set is unchanged. */
A3S_API int a3s_ruleset_add(a3s_ruleset *rs, int list, const char *rule, size_t len, uint32_t id,
                            a3s_error *err);

/* Number of rules added. */
A3S_API size_t a3s_ruleset_count(const a3s_ruleset *rs);

/* Reads rule `index` (0-based, in the order added). The view borrows memory
 * owned by the rule set. A3S_E_RANGE if index >= count. */
A3S_API int a3s_ruleset_rule(const a3s_ruleset *rs, size_t index, a3s_rule_view *out,
                             a3s_error *err);

/* The hot path: evaluates deny, then allow, then ask for one call and fills
 * `out` (list = A3S_LIST_NONE when nothing matched). The tool "bash" is
 * decided per simple command (below). Errors: A3S_E_INVALID (NULL rs or out,
 * a small struct_size, NULL strings with a length), A3S_E_NOMEM. */
A3S_API int a3s_ruleset_check(const a3s_ruleset *rs, const char *tool, size_t tool_len,
                              const char *subject, size_t subject_len, a3s_match *out,
                              a3s_error *err);

/* Every matching rule: writes up to `cap` rule indices (ascending) to
 * `indices` and the total number of matches to *count. A3S_E_BUFFER (with
 * detail = the count) when cap is too small; indices may be NULL if cap 0. */
A3S_API int a3s_ruleset_matches(const a3s_ruleset *rs, const char *tool, size_t tool_len,
                                const char *subject, size_t subject_len, size_t *indices,
                                size_t cap, size_t *count, a3s_error *err);

A3S_API void a3s_ruleset_free(a3s_ruleset *rs);

/* ---- bash: one decision per simple command ----------------------------------
 *
 * For the tool "bash", a3s_ruleset_check and a3s_ruleset_matches read the
 * argument string as a bash command line and decide it per simple command:
 * the line is split into every simple command it runs (after ; && || | &
 * and newlines, inside ( ) { } if/for/while/case, $( ), ` `, <( ), here-
 * documents, `bash -c CODE`, `eval`, `echo CODE | sh`, find -exec), and each
 * is matched in every spelling that runs the same program: as written, with
 * leading assignments, env and its options, command, builtin, exec, nice,
 * nohup, timeout, time, sudo, xargs, `uv run` and the other wrappers listed
 * in docs/policy.md removed, git's global options (-c x=y, -C dir,
 * --git-dir ...) removed, variables the line assigns expanded (one spelling
 * per value), and arguments that are only unknown expansions left out. Deny and ask rules also match the
 * spellings with quotes and backslashes removed and the program's bare,
 * lower-case name (`\git`, `"git"`, `/usr/bin/GIT`). A command's decision is
 * the strictest over its spellings (each decided deny, then allow, then ask,
 * then the default); the line's is the strictest over its commands (deny,
 * then ask, then allow), a deny or ask rule matching the whole line still
 * applies, and a line with no command is decided as a plain string. So an
 * allow rule covers a line only if it allows every spelling of every
 * command. A command whose program (or the code a shell reads) is not shown
 * by the line (`$CMD push`, `curl ... | sh`) is at least ask when any deny
 * or ask rule with a pattern covers bash; a line that cannot be read to its
 * end (an unterminated quote, nesting past 24 levels, more than 1024
 * commands) is at least ask. docs/policy.md, "How a bash command is
 * decided", is the reference. a3s_ruleset_check's out->list is
 * A3S_LIST_NONE when the default decided the line; when a floor decided it
 * (ask), out->index is SIZE_MAX and out->id 0.
 */

/* The decision the caller applies when no rule matches (A3S_LIST_DENY,
 * _ALLOW or _ASK; A3S_LIST_NONE: unset). A bash line mixes commands decided
 * by rules and by the default, so the rule set needs it to decide the line:
 * without it, a bash line is decided as if the default were ask, which can be
 * laxer than a deny default. Errors: A3S_E_INVALID (NULL rs, unknown list). */
A3S_API int a3s_ruleset_set_default(a3s_ruleset *rs, int list, a3s_error *err);

typedef struct a3s_bash_verdict a3s_bash_verdict;

/* Flags of a3s_bash_verdict_flags. */
#define A3S_BASH_INCOMPLETE (1ull << 0) /* the line could not be read to its end */
#define A3S_BASH_EXPLICIT (1ull << 1)   /* every command was allowed by an allow rule */

/* Why a command (or the line) got its decision: a3s_bash_command.why. */
#define A3S_BASH_WHY_RULE 0       /* a rule matched (rule = its index) */
#define A3S_BASH_WHY_DEFAULT 1    /* no rule matched: the default */
#define A3S_BASH_WHY_DYNAMIC 2    /* the program is not shown by the line: at least ask */
#define A3S_BASH_WHY_INCOMPLETE 3 /* the line could not be read to its end: at least ask */

typedef struct a3s_bash_command {
    size_t struct_size;   /* in: sizeof(a3s_bash_command) */
    int32_t list;         /* A3S_LIST_DENY, _ALLOW or _ASK (the default applied) */
    int32_t why;          /* A3S_BASH_WHY_* */
    size_t rule;          /* the deciding rule's index, or SIZE_MAX */
    const char *text;     /* the command as written (words joined by one space) */
    size_t text_len;
    const char *spelling; /* the spelling the deciding rule matched (else text) */
    size_t spelling_len;
} a3s_bash_command;

/* Decides the bash line `line` as a3s_ruleset_check does, and keeps how:
 * each simple command's decision, the rules every spelling matched. Free
 * *out with a3s_bash_verdict_free. Errors: A3S_E_INVALID (NULL rs or out,
 * NULL line with len > 0), A3S_E_NOMEM. */
A3S_API int a3s_ruleset_check_bash(const a3s_ruleset *rs, const char *line, size_t len,
                                   a3s_bash_verdict **out, a3s_error *err);

/* The line's decision: A3S_LIST_DENY, _ALLOW or _ASK (the default applied;
 * A3S_LIST_NONE for a NULL verdict). */
A3S_API int a3s_bash_verdict_list(const a3s_bash_verdict *v);

/* A3S_BASH_* flags (0 for NULL). */
A3S_API uint64_t a3s_bash_verdict_flags(const a3s_bash_verdict *v);

/* The number of simple commands (0 for NULL). */
A3S_API size_t a3s_bash_verdict_count(const a3s_bash_verdict *v);

/* Reads command `index` (in the order found). Its strings are borrowed from
 * the verdict. Errors: A3S_E_INVALID (NULL v or out, struct_size too
 * small), A3S_E_RANGE (index >= count; detail = count). */
A3S_API int a3s_bash_verdict_command(const a3s_bash_verdict *v, size_t index,
                                     a3s_bash_command *out, a3s_error *err);

/* Every rule that matched the line, a spelling, or (for deny and ask rules)
 * an alias: writes up to `cap` rule indices (ascending) and the total to
 * *count. Errors: A3S_E_INVALID (NULL v or count, NULL indices with cap > 0),
 * A3S_E_BUFFER (cap too small; detail = the count). */
A3S_API int a3s_bash_verdict_matched(const a3s_bash_verdict *v, size_t *indices, size_t cap,
                                     size_t *count, a3s_error *err);

A3S_API void a3s_bash_verdict_free(a3s_bash_verdict *v);

/* ------------------------------------------------------------------------ */
/* Paths                                                                     */
/* ------------------------------------------------------------------------ */

/* The lexical form of a file path in argument strings: '\' becomes '/',
 * then the path is normalized like POSIX normpath: doubled slashes and "."
 * segments are removed, ".." removes the previous segment (a leading ".." of
 * a relative path is kept, "/.." is "/"), a trailing slash is dropped, and a
 * relative path that collapses to nothing is ".". Two differences: "" stays
 * "" (a missing field) and a leading "//" becomes "/". No file system access.
 * Writes at most `cap` bytes (the result is never longer than the input)
 * and the length to *out_len. A3S_E_BUFFER (detail = size needed) if cap
 * is too small. */
A3S_API int a3s_path_normalize(const char *path, size_t len, char *out, size_t cap,
                               size_t *out_len, a3s_error *err);

/* ------------------------------------------------------------------------ */
/* Processes                                                                 */
/* ------------------------------------------------------------------------ */
/*
 * A generic runner: starts one program, captures its output with a bounded
 * head + tail per stream, enforces a timeout or cancellation on its whole
 * process group, and reaps it. Linux only; elsewhere a3s_process_run returns
 * A3S_E_UNSUPPORTED.
 *
 * How it runs (Linux):
 *  - Everything the child needs (argv/envp arrays, pipes, /dev/null) is
 *    prepared before fork(). fork() is used rather than vfork/clone because
 *    it is sanitizer-friendly and the child shares nothing with the caller;
 *    all signals are blocked in the calling thread around fork (thread-local,
 *    restored at once) so no caller handler runs in the child. Between fork
 *    and execve the child only makes async-signal-safe calls: sigaction (or
 *    rt_sigaction for the libc-reserved signals) to SIG_DFL, setsid, dup2,
 *    close_range or open/getdents64 + fcntl(F_SETFD), chdir, sigprocmask
 *    (empty mask), execve, and write + _exit to report a failure.
 *  - The child gets stdin = /dev/null, stdout and stderr = two pipes, its own
 *    session and process group (pgid = pid), default signal dispositions, an
 *    empty signal mask, and exactly the fds 0, 1, 2 and keep_fds: every other
 *    fd >= 3 is marked close-on-exec (close_range(CLOSE_RANGE_CLOEXEC), else
 *    each fd listed in /proc/self/fd, else every fd below RLIMIT_NOFILE, at
 *    most 2^20).
 *  - A failure in the child before execve (chdir, execve, ...) travels back
 *    through a close-on-exec pipe and makes a3s_process_run return
 *    A3S_E_SYSTEM with sys_errno set and a message naming the step and the
 *    program, e.g. "execve /nope: No such file or directory"; it is never
 *    turned into an exit status.
 *  - The calling thread blocks until the run is over. It drains both pipes
 *    with poll() and waits with a pidfd, or, where pidfd_open is missing or
 *    A3S_PROCESS_PORTABLE is set, by polling waitid(P_PID, pid, WNOHANG |
 *    WNOWAIT) every 10 ms. It never waits for any other pid, installs no SIGCHLD
 *    handler and never becomes a subreaper.
 *  - On timeout or cancellation the process group gets SIGTERM (and SIGCONT,
 *    so stopped members see it), then SIGKILL after kill_grace_ms. When the
 *    child has exited (however), whatever is left in its process group is
 *    SIGKILLed before the child is reaped (so the pgid cannot have been
 *    reused). Output is then read for at most A3S_PROCESS_DRAIN_MS more:
 *    a process that left the group (setsid, setpgid) and keeps a pipe open
 *    does not hang the caller, but it is not killed either; killing those is
 *    the job of the sandbox around the program (a pid namespace whose init
 *    is the child).
 *
 * Requirements on the host process: SIGCHLD must not be ignored and must not
 * have SA_NOCLDWAIT (A3S_E_UNSUPPORTED otherwise: exit statuses would be
 * lost), and nothing in the host may reap children it did not start
 * (waitpid(-1)); if the child is reaped behind the runner's back the run
 * fails with A3S_E_SYSTEM (sys_errno ECHILD). Several threads may run
 * processes at once; the runner has no global state.
 */

/* Flags for a3s_process_options.flags. */
/* cancel_fd is valid: when it becomes readable, stop the process like a timeout. */
#define A3S_PROCESS_CANCEL_FD (1ull << 0)
/* Use neither pidfd_open nor close_range, only their fallbacks (polled
 * waitid, /proc/self/fd): for the tests, and for kernels or seccomp profiles
 * where those calls misbehave. */
#define A3S_PROCESS_PORTABLE (1ull << 1)

#define A3S_PROCESS_DEFAULT_GRACE_MS 2000u     /* kill_grace_ms 0 means this */
#define A3S_PROCESS_DEFAULT_MAX_OUTPUT 102400u /* max_output_bytes 0 means this */
#define A3S_PROCESS_DRAIN_MS 200u /* how long output is still read once the child is reaped */

typedef struct a3s_process_options {
    size_t struct_size;      /* sizeof(a3s_process_options) */
    uint64_t flags;          /* A3S_PROCESS_*; unknown bits are rejected */
    const char *path;        /* absolute program path passed to execve (no PATH search) */
    const char *const *argv; /* NUL-terminated strings, argc entries (no trailing NULL needed) */
    size_t argc;             /* >= 1; argv[0] is the program's name for itself */
    const char *const *envp; /* "K=V" strings, envc entries: the child's whole environment */
    size_t envc;             /* 0: an empty environment (envp may then be NULL) */
    const char *cwd;         /* NULL: inherit */
    uint64_t timeout_ms;     /* 0: no timeout; counted from the fork */
    uint64_t kill_grace_ms;  /* between SIGTERM and SIGKILL; 0: 2000 */
    uint64_t max_output_bytes; /* per stream, head+tail kept; 0: 102400 */
    const int *keep_fds;     /* fds the child inherits at the same numbers (everything else >= 3 is
                                closed); each must be open and >= 3; close-on-exec is cleared in
                                the child only */
    size_t keep_fd_count;
    int cancel_fd; /* see A3S_PROCESS_CANCEL_FD: any poll event on it (readable, hang-up, error,
                      closed) cancels; the runner never reads it, so one fd can cancel many runs */
} a3s_process_options;

typedef struct a3s_process_result a3s_process_result;

/* Flags in a3s_process_result_view.flags. */
#define A3S_RESULT_TIMED_OUT (1ull << 0)        /* timeout_ms elapsed; the group was stopped */
#define A3S_RESULT_STDOUT_TRUNCATED (1ull << 1) /* stdout_total > max_output_bytes */
#define A3S_RESULT_STDERR_TRUNCATED (1ull << 2) /* stderr_total > max_output_bytes */
#define A3S_RESULT_CANCELLED (1ull << 3)        /* cancel_fd fired first; the group was stopped */

typedef struct a3s_process_result_view {
    size_t struct_size;      /* in: sizeof(a3s_process_result_view) */
    int32_t exit_code;       /* exit status; 128+N if killed by signal N; 124 on timeout/cancel */
    int32_t term_signal;     /* the signal that ended it, 0 if it exited (also on timeout) */
    uint64_t flags;          /* A3S_RESULT_* */
    const char *stdout_data; /* head, marker, tail (see a3s_process_run); never NULL, */
    size_t stdout_len;       /* NUL-terminated (not counted); may hold NULs: use the length */
    const char *stderr_data;
    size_t stderr_len;
    uint64_t stdout_total;   /* bytes the process wrote to each stream */
    uint64_t stderr_total;
    uint64_t duration_us;    /* from fork to reap (a3s_sandbox_exec: from the call, the
                                sandbox's preparation included) */
    int32_t pid;             /* the child's pid (already reaped); 0 if none was started; in a
                                long-lived sandbox, the command's pid inside the sandbox */
    const char *setup_error; /* NULL, or why a layer above (the sandbox) could not start the
                                program (with A3S_RESULT_SETUP_FAILED) */
    /* appended later: not filled for a shorter struct_size (a3s_process_result_get) */
    const char *neutralized; /* NULL, or what the sandbox found hostile in the workspace and
                                did not follow or mount for this run, one line each (a
                                credential name linked to the workspace itself, a .git
                                pointer leading outside it ...); see docs/security.md */
    /* appended later still: the exec check (a3s_exec_options.exec_deny; docs/policy.md) */
    int32_t exec_stop_list;        /* A3S_LIST_NONE, or A3S_LIST_DENY / A3S_LIST_ASK: a program
                                      of the command was stopped at its exec by such a rule
                                      (the first one, with A3S_RESULT_EXEC_STOPPED) */
    const char *exec_stop_rule;    /* NULL, or that rule, as "bash(PATTERN)" */
    const char *exec_stop_command; /* NULL, or the program as it would have run, words joined by
                                      one space, git's helpers read as git ("git push origin") */
} a3s_process_result_view;

/* Runs opts->path with the options above and waits for it to end. On
 * success *out is a result to release with a3s_process_result_free, whatever
 * the program's exit status. Per stream, at most max_output_bytes are kept:
 * all of the output if it fits, else the first max/2 bytes, the marker
 * "\n[... a3s: N bytes omitted ...]\n" and the last max - max/2 bytes
 * (binary safe; reading never stops early, so the child never blocks on a
 * full pipe, and memory stays bounded whatever the volume).
 * Errors (*out is then NULL, and no process is left running or unreaped
 * except one that left the group, as above):
 *   A3S_E_INVALID  NULL opts/out, struct_size too small, unknown flag, path
 *                  NULL or relative, argv NULL or argc 0, a NULL string,
 *                  envp NULL with envc > 0, a keep fd < 3 or not open, an
 *                  invalid cancel_fd with A3S_PROCESS_CANCEL_FD,
 *                  max_output_bytes > SIZE_MAX / 4.
 *   A3S_E_SYSTEM   pipe/fork/poll/wait failed, or the child failed before
 *                  execve (message names the step, sys_errno the errno).
 *   A3S_E_NOMEM    memory for the arguments or the output ran out (the
 *                  child still runs to its end, drained, and is reaped).
 *   A3S_E_UNSUPPORTED  not Linux, or SIGCHLD is ignored in this process. */
A3S_API int a3s_process_run(const a3s_process_options *opts, a3s_process_result **out,
                            a3s_error *err);

/* Fills *out with a view of r; the pointers borrow memory owned by r.
 * out->struct_size may also be that of the older, shorter view (from the
 * start of the struct to neutralized, exclusive): its fields are filled,
 * nothing past it is written. A3S_E_INVALID if r or out is NULL or
 * out->struct_size is neither that nor at least sizeof(a3s_process_result_view). */
A3S_API int a3s_process_result_get(const a3s_process_result *r, a3s_process_result_view *out,
                                   a3s_error *err);

A3S_API void a3s_process_result_free(a3s_process_result *r);


/* ------------------------------------------------------------------------ */
/* Owned processes                                                           */
/* ------------------------------------------------------------------------ */
/*
 * A long-lived program the caller talks to over pipes (an MCP server, a
 * language server), owned whole: whatever it starts, including a daemon that
 * calls setsid, ends when the caller stops it, frees it, or dies. Linux only;
 * elsewhere every function returns A3S_E_UNSUPPORTED.
 *
 * How it runs (Linux):
 *  - Owned (the default): the caller's direct child is bubblewrap
 *    (bwrap_path), started like a process of a3s_process_run (everything
 *    prepared before fork, only async-signal-safe calls until execve, a
 *    session and process group of its own, no fd but its stdio and the three
 *    below, default signals), with a pidfd on it. It makes a user and a pid
 *    namespace and runs a3s-init in host mode as PID 1 of that pid namespace,
 *    with the host's file system (every mount, devices included) and network
 *    but a /proc of its own, and no capabilities. The init starts the program
 *    in a session of its own with the three pipes as its stdin, stdout and
 *    stderr. Nothing of the program can leave the namespace, signal the init
 *    (the kernel drops SIGKILL to a pid namespace's init from inside it) or
 *    see any process outside it: /proc/<pid>/environ and the memory of the
 *    caller and its ancestors are out of reach (the init checks that no proc
 *    file system but its own is reachable, and bubblewrap covers any other
 *    proc mount of the host with an empty tmpfs). When the init exits, the
 *    kernel kills every process left in the namespace. The user namespace
 *    maps only the caller's uid and gid: files of other users show as
 *    "nobody" and, with no capability, a root caller's program cannot
 *    override their permissions, load modules, mount on the host or bind a
 *    port below 1024; setuid programs do not raise privileges.
 *  - Owned by a cgroup (A3S_CHILD_CGROUP in the status), where the above
 *    cannot be had (no bwrap_path, no user and pid namespaces, or a
 *    bubblewrap that cannot make them and ends before the init starts) but
 *    this caller may make a cgroup of its own (cgroup v2 with cgroup.kill,
 *    or a cgroup v1 freezer hierarchy): the direct child is a3s-init in
 *    warden mode, outside the cgroup; its child joins the cgroup and runs
 *    the init in host mode, so everything the program starts is in it. The
 *    warden empties the cgroup when the init ends (killing the init ends
 *    the program) or the caller dies; a3s_child_wait and a3s_child_stop
 *    empty it too once the warden is reaped. The program shares the
 *    caller's pid namespace: it sees the caller's processes and can read
 *    their environment and memory where its uid allows. It runs under a
 *    guard seccomp filter that refuses signalling, tracing or limiting the
 *    warden and the init (and kill(-1)), so it cannot end them; a root
 *    program can still leave the cgroup (docs/mcp.md says what remains).
 *  - Unowned (A3S_CHILD_ALLOW_UNOWNED, where neither can be had): the direct child is
 *    a3s-init in host mode, a child subreaper (every descendant that loses
 *    its parent is reparented to it), which a program of the caller's uid
 *    can kill to escape, and which does not keep it from the caller's /proc.
 *    Without the flag such a spawn is refused (A3S_E_UNSUPPORTED, detail
 *    A3S_CHILD_UNOWNABLE).
 *    The caller itself never becomes a subreaper, installs no SIGCHLD
 *    handler and waits for no pid but its direct child's.
 *  - The init watches a lifeline pipe whose write end only the caller holds,
 *    and a pidfd of the caller: when the caller dies (even by SIGKILL), or a
 *    copy of it forked without exec outlives it, every process of the
 *    program is killed. The caller also writes its signal requests there
 *    (a3s_child_signal, a3s_child_stop): in a sandbox the init, PID 1 of
 *    the namespace, takes no signal from outside it.
 *  - When the program exits, the init kills and reaps whatever is left and
 *    exits with the program's status, so the program's stdout reaches end of
 *    file only once nothing of it can write there any more.
 *  - The environment is the allowlisted, non-secret part of the host's
 *    (PATH, LANG, toolchain roots ..., see docs/security.md), its HOME, and
 *    the entries of `env` as given: they are the host's configuration of
 *    this program and are passed unchecked.
 *
 * The same kind of handle comes from a3s_sandbox_spawn for a program inside
 * a sandbox of its own; a3s_child_wait, _stop, _info and _free work alike.
 * A handle may be waited on, stopped and inspected from several threads at
 * once; a3s_child_free must not race with anything. A process forked from
 * the caller cannot stop the child (A3S_E_INVALID): it is not its parent.
 */

typedef struct a3s_child a3s_child;

#define A3S_CHILD_DEFAULT_GRACE_MS 2000u /* kill_grace_ms 0 means this */

/* Flags in a3s_child_options.flags (a3s_child_spawn; a3s_sandbox_spawn takes none). */
#define A3S_CHILD_ALLOW_UNOWNED (1ull << 0) /* where the program cannot be owned (no pid
                                               namespace and no cgroup of its own), run it
                                               under the subreaper init, which it can escape,
                                               instead of refusing */
/* a3s_error.detail of the A3S_E_UNSUPPORTED a3s_child_spawn returns when the
 * program cannot be owned and A3S_CHILD_ALLOW_UNOWNED is not set. */
#define A3S_CHILD_UNOWNABLE 1

typedef struct a3s_child_options {
    size_t struct_size;       /* sizeof(a3s_child_options) */
    uint64_t flags;           /* A3S_CHILD_*; a3s_sandbox_spawn: must be 0 */
    const char *path;         /* absolute program path (no PATH search); also its argv[0] */
    const char *const *args;  /* the arguments after argv[0]: nargs NUL-terminated strings */
    size_t nargs;
    const char *const *env;   /* "K=V" entries added as given (they win over host values) */
    size_t envc;
    const char *const *host_env; /* "K=V" entries the allowlist filters; NULL: this process's
                                    environ. Unused by a3s_sandbox_spawn (the handle's) */
    size_t host_envc;
    const char *cwd;          /* absolute directory to start in; NULL: inherit (in a sandbox:
                                 the workspace) */
    const char *init_path;    /* absolute path of a3s-init; unused by a3s_sandbox_spawn */
    uint64_t kill_grace_ms;   /* a3s_child_stop: between SIGTERM and SIGKILL; 0: 2000 */
    /* appended later: a caller built before it passes the shorter struct (NULL) */
    const char *init_sha256;  /* the SHA-256 of init_path's a3s-init as 64 hex digits; NULL:
                                 unchecked. Unused by a3s_sandbox_spawn (the handle's) */
    /* appended later: a caller built before it passes the shorter struct (NULL) */
    const char *bwrap_path;   /* absolute path of bubblewrap, which puts the program in a pid
                                 namespace of its own; NULL: it cannot be owned (see
                                 A3S_CHILD_ALLOW_UNOWNED). Unused by a3s_sandbox_spawn */
} a3s_child_options;

/* The caller's ends of the program's standard streams: owned by the caller
 * from the moment a spawn returns A3S_OK (close them when done), blocking,
 * close-on-exec, all >= 3. */
typedef struct a3s_child_stdio {
    size_t struct_size; /* in: sizeof(a3s_child_stdio) */
    int32_t stdin_fd;   /* write end of the program's stdin */
    int32_t stdout_fd;  /* read end of its stdout */
    int32_t stderr_fd;  /* read end of its stderr */
    int32_t reserved;
} a3s_child_stdio;

/* Flags in a3s_child_status.flags. */
#define A3S_CHILD_EXITED (1ull << 0)  /* it has ended and was reaped: exit_code is final */
#define A3S_CHILD_KILLED (1ull << 1)  /* a3s_child_stop had to SIGKILL the supervisor itself */
#define A3S_CHILD_SANDBOXED (1ull << 2) /* it runs in a sandbox (a3s_sandbox_spawn) */
#define A3S_CHILD_PID_NAMESPACE (1ull << 3) /* it runs in a pid namespace of its own (owned,
                                               or sandboxed); without it, under the subreaper */
#define A3S_CHILD_CGROUP (1ull << 4) /* it runs in a cgroup of its own, owned where no pid
                                        namespace could be made (see a3s_child_spawn) */

typedef struct a3s_child_status {
    size_t struct_size; /* in: sizeof(a3s_child_status) */
    uint64_t flags;     /* out: A3S_CHILD_* */
    int32_t exit_code;  /* out: the program's exit status, 128+N if signal N ended it; -1 while
                           it runs */
    int32_t pid;        /* out: the caller's direct child (a3s-init, or bubblewrap) */
    int32_t pidfd;      /* out: a pidfd on it, owned by the handle; -1 without pidfd_open */
    int32_t reserved;
} a3s_child_status;

/* Starts opts->path under a3s-init and returns once the program runs (the
 * init has exec'd it), with *out a handle to release with a3s_child_free
 * and *stdio the caller's ends of its pipes. The init's bytes are copied
 * into a sealed memory file first (checked against init_sha256 when it is
 * given) and that copy is what runs (execveat), so a file changed while it
 * is read or exec'd cannot run in its place. opts->struct_size may be that
 * of the struct before init_sha256 (offsetof(a3s_child_options,
 * init_sha256)): no digest is checked then.
 * Errors (*out is NULL, nothing is left running, no fd is left open):
 *   A3S_E_INVALID  NULL opts/out/stdio, a struct_size too small, unknown
 *                  flags, path, init_path or cwd not absolute, args NULL
 *                  with nargs > 0, a NULL string, a malformed env entry,
 *                  an init_sha256 that is not 64 hex digits.
 *   A3S_E_REFUSED  the init's bytes do not have init_sha256 (the message
 *                  names the file and says it changed since the package
 *                  was built).
 *   A3S_E_UNSUPPORTED  init_path is not a regular file of at most 64 MiB,
 *                  or cannot be opened or read.
 *   A3S_E_SYSTEM   pipe/fork failed, a3s-init could not be executed, or it
 *                  could not start the program (message names the step and
 *                  the program, e.g. "execve /nope: No such file or
 *                  directory"; sys_errno the errno).
 *   A3S_E_NOMEM    out of memory.
 *   A3S_E_UNSUPPORTED  not Linux, or SIGCHLD is ignored in this process;
 *                  detail A3S_CHILD_UNOWNABLE: the program cannot be owned
 *                  here (no bwrap_path, no user and pid namespaces, or
 *                  bubblewrap ended before the init started: it could not
 *                  make them; and no cgroup of its own can be made) and
 *                  A3S_CHILD_ALLOW_UNOWNED is not set (the
 *                  message says why; with the flag the program is started
 *                  under the subreaper instead).
 *   A3S_E_SYSTEM   also: the init found a proc file system other than its
 *                  own reachable. */
A3S_API int a3s_child_spawn(const a3s_child_options *opts, a3s_child **out,
                            a3s_child_stdio *stdio, a3s_error *err);

/* Waits up to timeout_ms (0: only looks) for the program to end and reaps
 * the caller's child once it has. A3S_OK either way: out->flags has
 * A3S_CHILD_EXITED once it ended. A3S_E_INVALID for NULL arguments, a small
 * struct_size, or a caller that is not the process that spawned it;
 * A3S_E_SYSTEM if waiting failed (ECHILD: something else reaped it). */
A3S_API int a3s_child_wait(a3s_child *c, uint64_t timeout_ms, a3s_child_status *out,
                           a3s_error *err);

/* Stops the program and everything it started, and reaps: SIGTERM to every
 * process it owns (its supervisor, the init, is asked over the lifeline to
 * send it, as a3s_child_signal does, so it reaches a program in a sandbox
 * too), SIGKILL to all of them after kill_grace_ms (sooner if they end
 * sooner: the status is then the program's own, e.g. 0 from a TERM handler
 * that exits 0), and, should the supervisor itself not be gone 2 s later,
 * SIGKILL to it. A request that cannot be delivered (the init is gone or
 * not reading) only skips the TERM: the kills still come within that bound.
 * Returns once the caller's child is reaped, with the final status in *out
 * (may be NULL); a program that already ended is only reaped. Idempotent.
 * Errors as a3s_child_wait. */
A3S_API int a3s_child_stop(a3s_child *c, a3s_child_status *out, a3s_error *err);

/* a3s_child_stop with sig as the first step in place of SIGTERM (SIGINT for
 * a program that exits on it; SIGKILL: everything is killed at once, no
 * grace). A3S_E_INVALID also for sig outside 1..64. */
A3S_API int a3s_child_stop_with(a3s_child *c, int sig, a3s_child_status *out, a3s_error *err);

/* Sends signal sig (1..64) to every process of the program without stopping
 * it: the init is asked over the lifeline, which only the spawning process
 * writes, and signals what it owns (in a pid namespace of its own: every
 * process of the namespace; under the subreaper: the program's process group
 * and the descendants reparented to it), never anything else. Returns once
 * the request is written, not once it is delivered; A3S_OK also when the
 * program has ended or is being stopped (nothing to signal). Errors:
 *   A3S_E_INVALID  NULL c, sig outside 1..64, a caller that is not the
 *                  process that spawned it.
 *   A3S_E_SYSTEM   the request could not be written (the init has not read
 *                  the ones before: sys_errno EAGAIN). */
A3S_API int a3s_child_signal(a3s_child *c, int sig, a3s_error *err);

/* The handle's state without waiting (as a3s_child_wait with timeout 0, but
 * it never reaps and works in any process). A3S_E_INVALID for NULL
 * arguments or a small struct_size. */
A3S_API int a3s_child_info(const a3s_child *c, a3s_child_status *out, a3s_error *err);

/* Stops the program if it still runs (a3s_child_stop) and frees the
 * handle. In a process forked from the spawning one it only frees: the
 * program is not its to stop. NULL is ignored. */
A3S_API void a3s_child_free(a3s_child *c);

/* ------------------------------------------------------------------------ */
/* Sandbox                                                                   */
/* ------------------------------------------------------------------------ */
/*
 * The native Linux boundary: bubblewrap with a3s-init as PID 1 applying
 * Landlock and seccomp to each command (docs/security.md). A sandbox handle
 * is bound to one workspace and keeps a cache of the workspace's credential
 * files between runs; it may be used from several threads.
 *
 * Two ways to run a command, with the same boundary and the same results:
 *  - one-shot (the default): one bubblewrap per command;
 *  - long-lived (A3S_SANDBOX_REUSE): the handle keeps one sandbox whose
 *    init runs each command as a fresh child (a new session, a private
 *    scratch directory, Landlock and seccomp) and, when it ends, kills every
 *    process of the sandbox and puts /tmp, /var/tmp, /run, /dev and the
 *    masked homes back as they were (metadata included; only tmpfs trees of
 *    its own, never the workspace), so commands share nothing but the
 *    workspace. Before each command the host checks that everything the
 *    sandbox was built over is still there (the workspace, every protected
 *    name and placeholder, every masked file, the set of credential files,
 *    no new hard link under a protected directory);
 *    after any host-side change it builds a new sandbox. The placeholders of
 *    missing protected names live as long as the sandbox (journaled as for
 *    one-shot runs). It runs one command at a time: a call that finds it
 *    busy runs one-shot instead of waiting. The sandbox is not a child of
 *    the calling process (a detached bubblewrap, which exits once the init
 *    is up, leaving the init alone, followed through a pidfd; kernels
 *    without pidfd_open run everything one-shot) and dies with it:
 *    its init watches a lifeline pipe and a pidfd of the caller. If it does
 *    not come up (bubblewrap or the init fails), the command runs one-shot,
 *    and after three failed starts in a row the handle stays one-shot (a
 *    start that hangs past the command's time is a 125 instead).
 *    a3s_sandbox_stop and a3s_sandbox_free end it and remove its
 *    placeholders. A child forked from the caller never uses or stops it.
 */

typedef struct a3s_sandbox a3s_sandbox;

/* Flag in the flags a3s_protected_name returns: the name is a directory's. */
#define A3S_PROTECTED_DIR (1ull << 0)

/* The index-th protected name: a top-level workspace name the sandbox keeps
 * read-only (an exact spelling such as ".git" or ".bashrc"; docs/security.md),
 * in *name (static storage), with A3S_PROTECTED_DIR in *flags for a
 * directory name. Every binding reads the list from here, so no layer keeps
 * a copy. A3S_E_RANGE past the last name (detail = how many there are);
 * A3S_E_INVALID for a NULL name or flags. */
A3S_API int a3s_protected_name(size_t index, const char **name, uint64_t *flags, a3s_error *err);

/* Flags for a3s_sandbox_config.flags. */
/* No boundary: run bash on the host under a3s-init in host mode (a child
 * subreaper that still takes every descendant down). Only for hosts that
 * opted in because an outer container or VM is their boundary. */
#define A3S_SANDBOX_PROCESS_HOST (1ull << 0)
/* Skip the Landlock layer (tests of the other layers; never a default). */
#define A3S_SANDBOX_NO_LANDLOCK (1ull << 1)
/* Keep one long-lived sandbox per handle (see above). Ignored with
 * PROCESS_HOST. */
#define A3S_SANDBOX_REUSE (1ull << 2)
/* Bind the workspace read-only (protected names then need no placeholder:
 * nothing can be created there). For handles that spawn servers. */
#define A3S_SANDBOX_WORKSPACE_READONLY (1ull << 3)
/* Keep the host's network namespace: the sandbox may connect out over
 * TCP/UDP (the seccomp filter still refuses listening and other socket
 * families). Only when the host granted a program the network. */
#define A3S_SANDBOX_SHARE_NET (1ull << 4)
/* The init is compiled into the calling program itself (the Go package
 * does this: native/init/embed.c) instead of being a3s-init on disk:
 * init_path is unused, and the core runs this process's own executable as
 * the init, which takes over in a constructor, before main, when it is
 * started as A3S_INIT_PATH. The handle holds an O_PATH descriptor of the
 * executable from a3s_sandbox_new on: bubblewrap binds it with
 * --ro-bind-fd (which checks that the mount is that very file) and the
 * process host runs /proc/self/exe, so nothing but the running image is
 * ever run as the init. A sandbox that would start after the executable
 * was deleted or replaced on disk is refused instead (exit 125, a
 * setup_error that says to restart the program); the process host and a
 * long-lived sandbox already running are unaffected. */
#define A3S_SANDBOX_SELF_INIT (1ull << 5)

/* Where the init runs from inside a sandbox, and the argv[0] it is given
 * everywhere when it is embedded (A3S_SANDBOX_SELF_INIT): the name the
 * embedded init's constructor answers to. */
#define A3S_INIT_PATH "/run/a3s/init"

typedef struct a3s_sandbox_config {
    size_t struct_size;          /* sizeof(a3s_sandbox_config) */
    uint64_t flags;              /* A3S_SANDBOX_* */
    const char *workspace;       /* absolute path of an existing directory, not a symlink */
    const char *bwrap_path;      /* absolute path of bubblewrap; unused with PROCESS_HOST */
    const char *init_path;       /* absolute path of the a3s-init executable; unused with
                                    SELF_INIT */
    const char *scratch_parent;  /* where private run directories go; NULL: $TMPDIR or /tmp */
    const char *const *host_env; /* "K=V" entries to filter; NULL: this process's environ */
    size_t host_envc;
    const char *state_dir;       /* placeholder journals (see docs/security.md); NULL:
                                    $XDG_STATE_HOME/codeward, ~/.local/state/codeward, or
                                    scratch_parent */
    /* Resource bounds (docs/security.md, "Resource bounds"); 0 is the default,
     * A3S_NO_LIMIT leaves the resource unbounded. A caller compiled before these
     * fields existed (a smaller struct_size) gets the defaults. */
    uint64_t memory_max_bytes;     /* the whole sandbox: a memory cgroup's memory.max where
                                      the caller may create one, else the init's watchdog over
                                      its processes' memory and its tmpfs; 0: half the
                                      machine's memory */
    uint64_t max_processes;        /* processes and threads: pids.max where a cgroup can be
                                      made, and RLIMIT_NPROC in the sandbox's user namespace
                                      (which the kernel does not apply to root); 0: 4096 */
    uint64_t tmpfs_max_bytes;      /* each tmpfs the sandbox writes to (/tmp, /var/tmp, /run
                                      with the scratch directories, /dev/shm, the masked
                                      homes); 0: an eighth of the machine's memory */
    uint64_t inotify_watch_budget; /* inotify watches of the credential scan, beyond which it
                                      checks directories by their metadata; 0: a quarter of
                                      fs.inotify.max_user_watches */
    uint64_t idle_stop_ms;         /* A3S_SANDBOX_REUSE: a long-lived sandbox that ran no
                                      command for this long is stopped (its processes,
                                      placeholders, descriptors and watches released); the
                                      next command starts a new one; 0: 300000 (5 minutes),
                                      A3S_NO_LIMIT: never */
    const char *init_sha256;       /* the SHA-256 of the a3s-init that init_path names, as 64
                                      hex digits (the caller that built the init knows it);
                                      NULL: unchecked, and an init inside the workspace is
                                      refused. Unused with SELF_INIT. See a3s_sandbox_new. */
    /* The caller's own code (docs/security.md, "The host's own code"): directories (or
     * files) the calling program loads code from, such as an interpreter's module path
     * and prefix or a package's directory. Each one inside the workspace (not the
     * workspace itself) is bound read-only in the sandbox, like a protected name, and so
     * counted in the policy digest; others are ignored. The core adds the directory of
     * this program's executable and of the library it is loaded from by itself. NULL:
     * those two alone. A caller compiled before these fields existed gets that too. */
    const char *const *host_code;
    size_t host_code_count;
} a3s_sandbox_config;

/* A bound of a3s_sandbox_config that is not wanted. */
#define A3S_NO_LIMIT UINT64_MAX

/* Receives a command's output as it is read (a3s_exec_options.on_output):
 * stream is 1 for stdout, 2 for stderr; data (len > 0 bytes) is valid only
 * during the call. It is called on the thread that runs a3s_sandbox_exec,
 * in order within each stream, with every byte the command writes (also
 * past max_output_bytes; the result still keeps only a head and a tail),
 * before a3s_sandbox_exec returns. It must not block for long (the command
 * waits on a full pipe meanwhile, and its timeout runs on) and must not call
 * into the same handle. In a one-shot sandbox a failure to start may write
 * a line of bubblewrap's or the init's to stream 2 as well. */
typedef void (*a3s_output_fn)(void *ctx, int stream, const char *data, size_t len);

/* Flags for a3s_exec_options.flags. */
#define A3S_EXEC_CANCEL_FD (1ull << 0) /* cancel_fd is valid (see a3s_process_options) */
/* grant_fd is valid: this one command may reach the network through the
 * caller's mediator (see "Network grants" below); needs policy_digest. */
#define A3S_EXEC_NETWORK_GRANT (1ull << 1)

typedef struct a3s_exec_options {
    size_t struct_size;        /* sizeof(a3s_exec_options) */
    uint64_t flags;            /* A3S_EXEC_* */
    const char *command;       /* run as bash -c COMMAND; must not contain NUL */
    size_t command_len;
    const char *const *env;    /* per-call "K=V" variables, validated (no injection, no secrets) */
    size_t envc;
    uint64_t timeout_ms;       /* 0: 120000 */
    uint64_t kill_grace_ms;    /* SIGTERM to SIGKILL on timeout or cancel; 0: 500 */
    uint64_t max_output_bytes; /* per stream; 0: 102400 */
    int cancel_fd;
    /* A caller compiled before the fields below existed (a smaller
     * struct_size, down to offsetof(grant_fd)) gets them as zero/NULL. */
    int grant_fd;              /* with A3S_EXEC_NETWORK_GRANT: the caller's end of an AF_UNIX
                                  SOCK_SEQPACKET socket (see "Network grants") */
    const char *policy_digest; /* NULL, or "sha256:<64 hex>" (a3s_policy_digest): the command runs
                                  only if the sandbox it would run in has this policy; otherwise
                                  exit 125 with A3S_RESULT_POLICY_CHANGED and nothing runs */
    /* appended later: a caller built before passes the shorter struct (NULL) */
    a3s_output_fn on_output;   /* NULL, or called with each piece of output as it arrives */
    void *on_output_ctx;       /* passed to on_output as it is */
    const char *cwd;           /* NULL: the workspace; else the directory the command starts in,
                                  absolute or relative to the workspace (which has the same path
                                  inside the sandbox); one that does not exist there (or is not
                                  a directory) is a setup failure: exit 125, setup_error
                                  "chdir DIR: ..." and nothing runs. The sandbox, not this
                                  path, is the boundary: the command may cd anywhere it sees */
    /* The exec check (docs/policy.md, "The exec check"). A caller compiled before these
     * fields existed gets none: no check, and nothing traced. With at least one deny or ask
     * pattern, every program the command runs (after bash -c COMMAND itself) is checked at
     * its exec, with the argv it really runs, before its first instruction: one that a deny
     * pattern matches, or an ask pattern unless it is one of exec_approved, is killed, the
     * result says so (A3S_RESULT_EXEC_STOPPED, exec_stop_*) and the exit status is 126.
     * Patterns are those of the policy's bash rules (the text inside bash(...); "*": any
     * command), at most A3S_RULE_MAX_LENGTH bytes each; a malformed one is A3S_E_SYNTAX. */
    const char *const *exec_deny;     /* exec_deny_count patterns of bash deny rules */
    size_t exec_deny_count;
    const char *const *exec_ask;      /* exec_ask_count patterns of bash ask rules */
    size_t exec_ask_count;
    const char *const *exec_approved; /* the simple commands (words joined by one space) the
                                         human approved for this call: an ask rule lets them */
    size_t exec_approved_count;
    /* appended later: a caller built before passes the shorter struct (none) */
    const void *stdin_data;    /* NULL: the command's standard input is /dev/null (as before);
                                  else its stdin_len bytes are what it reads on standard input,
                                  then end of file. They are written through a pipe while its
                                  output is drained, never blocking it; a command that exits or
                                  closes its standard input before reading them all just does
                                  not get the rest (no error), and the writing ends with the
                                  command (its timeout, a cancel). The bytes are read while
                                  a3s_sandbox_exec runs and not kept */
    size_t stdin_len;
} a3s_exec_options;

/* Flag in a3s_process_result_view.flags: the sandbox refused to run or
 * failed to start; exit_code is 125 and setup_error says why. */
#define A3S_RESULT_SETUP_FAILED (1ull << 4)
/* Flag in a3s_process_result_view.flags: the sandbox reached memory_max_bytes
 * while the command ran and a process of it was killed for that (by the
 * kernel's OOM killer in the sandbox's memory cgroup, or by the init's
 * watchdog, which kills the whole command); exit_code is then usually 137. */
#define A3S_RESULT_OOM_KILLED (1ull << 5)
/* Flag in a3s_process_result_view.flags: the sandboxed command called
 * link() or linkat() (every call is watched and let through; on a kernel
 * where they cannot be watched, every command has this flag). A hard link,
 * even one removed again before the command ended, can change a file
 * through a name in another directory, which no directory watch reports:
 * a caller tracking the workspace's changes by directory events must read
 * the whole tree again after such a command. */
#define A3S_RESULT_HARD_LINKED (1ull << 6)
/* Flag in a3s_process_result_view.flags: the exec named a policy_digest and
 * the sandbox's policy has another one now (it changed since the caller
 * read it); exit_code is 125, setup_error says so, and nothing ran. */
#define A3S_RESULT_POLICY_CHANGED (1ull << 7)
/* Flag in a3s_process_result_view.flags: the exec check stopped a program of
 * the command (exec_stop_* say which and by which rule); exit_code is 126. */
#define A3S_RESULT_EXEC_STOPPED (1ull << 8)
/* Flag in a3s_process_result_view.flags: something of the command may have
 * run after this result: a process of it was still there after SIGKILL and
 * a short reap time (held in uninterruptible sleep: a hung device or network
 * file system, a frozen cgroup), or the sandbox itself had to be killed by
 * force (then A3S_RESULT_HARD_LINKED is set too: what the init knew is lost).
 * The result is not held back for it: it returns within timeout_ms +
 * kill_grace_ms + 0.25 s (long-lived and one-shot alike); the process dies as it wakes (its SIGKILL is
 * pending), but an operation it was in may still complete. A caller tracking
 * the workspace must treat it as changed and read the whole tree again. */
#define A3S_RESULT_OUTLIVED (1ull << 9)

/* Checks the configuration and binds a handle to the workspace. Nothing is
 * probed or run here: see a3s_sandbox_probe. The init (init_path) is read
 * here, once: its bytes are copied into a sealed memory file (O_NOFOLLOW,
 * a regular file of at most 64 MiB), checked against init_sha256 when it
 * is given, and every later start of the handle runs that copy (bubblewrap
 * binds it with --ro-bind-data, the process host execs it with execveat):
 * whatever later happens to the file on disk, the handle runs the init it
 * was given. cfg->struct_size may be the
 * size of an older, shorter a3s_sandbox_config (from the start of the
 * struct to memory_max_bytes, exclusive): the later fields then take their
 * defaults. Errors:
 *   A3S_E_INVALID      NULL cfg or out, a struct_size shorter than that, a
 *                      larger struct with a non-zero byte this library does
 *                      not know, an unknown flag, a relative path, a
 *                      workspace that is missing or not a directory, a
 *                      bound below the least a sandbox runs with
 *                      (memory_max_bytes 16 MiB, max_processes 8,
 *                      tmpfs_max_bytes 1 MiB), no usable state directory,
 *                      an init_sha256 that is not 64 hex digits;
 *   A3S_E_REFUSED      the workspace is a symlink, or is or holds /, /proc,
 *                      /dev, /sys or /run; the a3s-init's bytes do not
 *                      have init_sha256 (the message names the file and
 *                      says it was changed since the package was built);
 *                      no init_sha256 is given and init_path lies inside
 *                      the workspace (a command could replace it);
 *   A3S_E_UNSUPPORTED  a3s-init or bubblewrap is not executable, no bash
 *                      in /bin or /usr/bin, SELF_INIT in a library built
 *                      without the embedded init or whose executable
 *                      cannot be opened, an a3s-init that is not a
 *                      regular file of at most 64 MiB or cannot be read;
 *   A3S_E_SYSTEM       the memory file for the init's copy could not be
 *                      made or sealed;
 *   A3S_E_NOMEM        memory ran out. */
A3S_API int a3s_sandbox_new(const a3s_sandbox_config *cfg, a3s_sandbox **out, a3s_error *err);

/* Runs one command. Returns A3S_OK with a result whenever the command's
 * fate is known, including a refusal or a setup failure (exit 125,
 * A3S_RESULT_SETUP_FAILED, setup_error set) and a timeout (exit 124).
 * Errors are for bad arguments (A3S_E_INVALID: e.g. a per-call variable
 * such as LD_PRELOAD) and for failures of the caller's own process. */
A3S_API int a3s_sandbox_exec(a3s_sandbox *sb, const a3s_exec_options *opts,
                             a3s_process_result **out, a3s_error *err);

/* Runs a self-test through the real boundary (no capabilities, NoNewPrivs,
 * seccomp filter mode, no write outside the workspace, no AF_UNIX socket,
 * no listen, no network, no host PIDs) within timeout_ms (0: 10000), the
 * way the handle runs commands: for A3S_SANDBOX_REUSE in its long-lived
 * sandbox (which it leaves running), or one-shot if that does not come up;
 * else one-shot. A3S_OK if every check passed, else A3S_E_UNSUPPORTED with
 * the first failure in the message. */
A3S_API int a3s_sandbox_probe(a3s_sandbox *sb, uint64_t timeout_ms, a3s_error *err);

/* Starts a long-lived program (an MCP server) in a sandbox of its own over
 * the handle's workspace, with the same boundary as a one-shot command
 * (never in the long-lived sandbox), and returns once it runs, as
 * a3s_child_spawn does: the caller's direct child is bubblewrap, the init
 * inside is PID 1 of the sandbox's pid namespace, applies Landlock and
 * seccomp to the program, watches the lifeline and the caller's pidfd,
 * and takes the whole namespace down when the program ends or is stopped.
 * The environment is built as for a command (allowlist, scratch HOME and
 * TMPDIR) plus opts->env as given; opts->host_env and opts->init_path are
 * unused (the handle's are). The plan is a command's (protected names, a
 * worktree's gitdirs, credential masks, hostile workspace content handled
 * as docs/security.md says; what it neutralized has no result to be listed
 * in). The run's placeholders, lock and run directory
 * live until the handle is stopped or freed, so the sandbox handle must
 * outlive the child handle. The program is stopped as a3s_child_stop says:
 * the init, asked over the lifeline, sends SIGTERM to every process of the
 * sandbox, and every process is killed after kill_grace_ms.
 * Errors (*out is NULL, nothing is left running):
 *   A3S_E_INVALID  NULL arguments, a small struct_size, unknown flags, path
 *                  or cwd not absolute, a NULL string, a malformed env
 *                  entry, a PROCESS_HOST handle (use a3s_child_spawn).
 *   A3S_E_REFUSED  the sandbox refused to start (a symlinked protected
 *                  name, a credential file with a hard link outside the
 *                  workspace ...): the message says what it found.
 *   A3S_E_SYSTEM   bubblewrap or the init failed to start the program (the
 *                  message carries the first line they reported).
 *   A3S_E_NOMEM, A3S_E_UNSUPPORTED as for a3s_child_spawn. */
A3S_API int a3s_sandbox_spawn(a3s_sandbox *sb, const a3s_child_options *opts, a3s_child **out,
                              a3s_child_stdio *stdio, a3s_error *err);

/* The canonical workspace path the handle is bound to (owned by sb). */
A3S_API const char *a3s_sandbox_workspace(const a3s_sandbox *sb);

/* Stops the handle's long-lived sandbox, if one runs: a command running in
 * it is cancelled first (its exec returns with A3S_RESULT_CANCELLED), then
 * every process of the sandbox is killed, its placeholders are removed
 * (unless another run over the workspace still relies on them) and its
 * run directory goes. The handle also lets go of the credential scan's
 * inotify watches and its idle-stop thread. The handle stays usable: the
 * next exec sets those up again and starts a new sandbox (a3s_sandbox_free
 * releases the rest: the init's copy and a wake-up pipe). A3S_OK also when
 * nothing ran; A3S_E_INVALID for a NULL handle. */
A3S_API int a3s_sandbox_stop(a3s_sandbox *sb, a3s_error *err);

/* Flags in a3s_sandbox_info.flags. */
#define A3S_SANDBOX_INFO_RUNNING (1ull << 0) /* a long-lived sandbox is up */
#define A3S_SANDBOX_INFO_MEMORY_CGROUP (1ull << 1) /* it runs in a memory cgroup of its own */
#define A3S_SANDBOX_INFO_PIDS_CGROUP (1ull << 2)   /* it runs in a pids cgroup of its own */

typedef struct a3s_sandbox_info {
    size_t struct_size; /* in: sizeof(a3s_sandbox_info) */
    uint64_t flags;     /* out: A3S_SANDBOX_INFO_* */
    uint64_t starts;    /* out: long-lived sandboxes this handle has started */
    int32_t pid;        /* out: host pid of the running sandbox's init (its PID 1), 0 if none */
    int32_t reserved;
} a3s_sandbox_info;

/* The state of the handle's long-lived sandbox (for diagnostics and tests;
 * it may change as soon as this returns when other threads use the handle).
 * A3S_E_INVALID if sb or out is NULL or out->struct_size is too small. */
A3S_API int a3s_sandbox_info_get(const a3s_sandbox *sb, a3s_sandbox_info *out, a3s_error *err);

/* Stops the long-lived sandbox (as a3s_sandbox_stop) and frees the handle.
 * No other call on sb may be running or follow. */
A3S_API void a3s_sandbox_free(a3s_sandbox *sb);

/* ------------------------------------------------------------------------ */
/* Sandbox policy                                                            */
/* ------------------------------------------------------------------------ */
/*
 * The effective policy of a sandbox handle as one canonical text, and its
 * digest: what a human approves a network grant against. The text is made
 * from the plan the core would run a command with right now (the
 * bubblewrap mounts and namespaces, the init's Landlock and writable
 * paths, the seccomp filter's digest, the resource bounds, the Landlock ABI
 * of the running kernel, the library version), one "key value" line each,
 * sorted, so it does not depend on the order in which anything was found
 * and changes with any content. Per-run details (run directories, fds,
 * timeouts, the command) and the choice between one-shot and long-lived
 * runs are left out: both run a command under the same policy.
 * docs/security.md shows a text and explains each line.
 */

typedef struct a3s_policy a3s_policy;

#define A3S_POLICY_DIGEST_SIZE 72 /* "sha256:" + 64 hex digits + NUL */

/* Plans a run over the handle's workspace as a command would be planned,
 * without creating anything (no placeholder, run directory, journal or
 * lock), and describes it. Errors (*out is NULL):
 *   A3S_E_INVALID  NULL sb or out;
 *   A3S_E_REFUSED  a command would be refused right now (a symlinked
 *                  protected name, a credential file with hard links ...):
 *                  the message says what was found;
 *   A3S_E_SYSTEM   the workspace cannot be read;
 *   A3S_E_NOMEM    memory ran out. */
A3S_API int a3s_sandbox_policy(a3s_sandbox *sb, a3s_policy **out, a3s_error *err);

/* The canonical text (NUL-terminated; *len, if non-NULL, gets its length)
 * and its digest "sha256:<64 lower-case hex>" (A3S_POLICY_DIGEST_SIZE
 * bytes with the NUL). Both owned by p. */
A3S_API const char *a3s_policy_text(const a3s_policy *p, size_t *len);
A3S_API const char *a3s_policy_digest(const a3s_policy *p);

A3S_API void a3s_policy_free(a3s_policy *p);

/* ------------------------------------------------------------------------ */
/* Network grants                                                            */
/* ------------------------------------------------------------------------ */
/*
 * A sandbox has no network: its network namespace holds only a loopback
 * device. An exec with A3S_EXEC_NETWORK_GRANT lets that one command reach
 * the network through a mediator the caller runs, and nothing else:
 *
 *  - Before the command starts, the init (never the command) makes a TCP
 *    socket in the sandbox bound to 127.0.0.1:A3S_GRANT_PROXY_PORT and
 *    sends it on grant_fd: one message of A3S_GRANT_MESSAGE_SIZE bytes
 *    ("A3SM", u16 type 18, u16 version 1, u32 length 14, u16 port, all
 *    little-endian) carrying the socket as SCM_RIGHTS. The caller listens
 *    on it and answers with the one byte 'L' on grant_fd; the command
 *    starts only then (within 10 s, or exit 125). A caller that closes
 *    grant_fd instead refuses the grant (exit 125).
 *  - The command gets HTTP_PROXY, HTTPS_PROXY (http://127.0.0.1:PORT) and
 *    ALL_PROXY (socks5h://127.0.0.1:PORT), in both cases, and NO_PROXY and
 *    no_proxy empty; Landlock (ABI 4 and later) lets it connect to that
 *    port only, and to nothing else; it still cannot listen or bind.
 *  - The caller accepts the command's connections on the socket and
 *    decides each one (the Python package's mediator speaks HTTP CONNECT,
 *    absolute-form HTTP and SOCKS5, and relays with a3s_relay).
 *  - When the command ends (every process of it is gone), the init shuts
 *    the socket down: it stops listening whatever the caller does, so
 *    nothing after the command, in the same sandbox or not, reaches it.
 *    The caller closes its copy when the exec returns.
 * grant_fd is used only during the exec and not closed by it. A grant
 * needs policy_digest (A3S_E_INVALID without it) and a sandbox: a
 * PROCESS_HOST or SHARE_NET handle refuses it with A3S_E_INVALID.
 */

#define A3S_GRANT_PROXY_PORT 3128
#define A3S_GRANT_MESSAGE_SIZE 14

/* ------------------------------------------------------------------------ */
/* Relay                                                                     */
/* ------------------------------------------------------------------------ */
/*
 * Moves bytes both ways between two connected stream sockets (TCP or
 * AF_UNIX stream) until both directions have ended, with splice(2) through
 * a bounded pipe per direction (no user-space copy). A direction reads only
 * while its pipe
 * has room, so a slow receiver holds the sender back and memory stays
 * bounded. End of file on one side is passed on as shutdown(SHUT_WR) once
 * its bytes are delivered; an error on either side, or the cancel fd, ends
 * both directions and shuts both sockets down. Linux only (elsewhere
 * A3S_E_UNSUPPORTED). The fds are set non-blocking and are not closed.
 */

#define A3S_RELAY_CANCEL_FD (1ull << 0) /* cancel_fd is valid: any poll event on it ends the relay */

typedef struct a3s_relay_options {
    size_t struct_size;  /* sizeof(a3s_relay_options) */
    uint64_t flags;      /* A3S_RELAY_* */
    int cancel_fd;
    uint32_t pipe_bytes; /* per direction; 0: 1 MiB (the kernel may give less: fs.pipe-max-size) */
} a3s_relay_options;

/* Flags in a3s_relay_stats.flags. */
#define A3S_RELAY_RESET (1ull << 0)     /* a side failed (reset, closed early): both were shut */
#define A3S_RELAY_CANCELLED (1ull << 1) /* cancel_fd fired first */

typedef struct a3s_relay_stats {
    size_t struct_size; /* in: sizeof(a3s_relay_stats) */
    uint64_t a_to_b;    /* out: bytes delivered from a to b */
    uint64_t b_to_a;
    uint64_t flags;     /* out: A3S_RELAY_RESET, A3S_RELAY_CANCELLED; 0 after a clean end */
} a3s_relay_stats;

/* Relays between a and b (see above) and returns when it is over; A3S_OK
 * however the connections ended (stats says how; opts and out may be NULL).
 * Errors: A3S_E_INVALID (a negative or equal fd, an fd that is not a
 * stream socket, a small struct_size, an unknown flag, a closed
 * cancel_fd), A3S_E_SYSTEM (a pipe or poll failed),
 * A3S_E_UNSUPPORTED (not Linux). */
A3S_API int a3s_relay(int a, int b, const a3s_relay_options *opts, a3s_relay_stats *out,
                      a3s_error *err);

#ifdef __cplusplus
}
#endif

#endif /* A3S_A3S_H */
