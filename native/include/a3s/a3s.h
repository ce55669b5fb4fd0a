/*
 * a3s.h - the stable C ABI of the a3s-code security kernel.
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
 * O(len(pattern) * len(subject) / 64) time with no recursion.
 */

/* Flags for a3s_glob_compile. */
#define A3S_GLOB_TOOL_NAME (1ull << 0) /* tool-name globs: ASCII case-insensitive, '*' crosses '/' */

#define A3S_GLOB_MAX_PATTERN 65536 /* bytes */

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

#define A3S_RULE_MAX_LENGTH 65536 /* bytes */

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
 * `out` (list = A3S_LIST_NONE when nothing matched). */
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

#ifdef __cplusplus
}
#endif

#endif /* A3S_A3S_H */
