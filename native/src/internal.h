/* internal.h - helpers shared by the native sources; not part of the ABI. */
#ifndef A3S_INTERNAL_H
#define A3S_INTERNAL_H

#include "a3s/a3s.h"

#include <stdbool.h>
#include <stddef.h>

#if defined(__GNUC__) || defined(__clang__)
#  define A3S_PRINTF(fmt, args) __attribute__((format(printf, fmt, args)))
#else
#  define A3S_PRINTF(fmt, args)
#endif

/* Fills *err (if non-NULL) and returns code, so callers can write
 * `return a3s_fail(err, A3S_E_INVALID, 0, 0, "...")`. */
int a3s_fail(a3s_error *err, int code, int sys_errno, int64_t detail, const char *fmt, ...)
    A3S_PRINTF(5, 6);

/* Resets *err (if non-NULL) to A3S_OK and returns A3S_OK. */
int a3s_ok(a3s_error *err);

/* ASCII lower-case of one byte; other bytes unchanged. */
static inline unsigned char a3s_lower(unsigned char c) {
    return (c >= 'A' && c <= 'Z') ? (unsigned char)(c + ('a' - 'A')) : c;
}

/* The protected names (protected.c): directories and files, exact spelling. */
extern const char *const a3s_protected_dirs[];
extern const char *const a3s_protected_files[];
extern const size_t a3s_protected_ndirs, a3s_protected_nfiles;
/* features_linux.c: whether the init can keep missing protected names
 * missing by emulating the calls that make names (A3S_FEATURE_NAMES_EMULATED) */
bool a3s_names_emulation_available(void);

/* Compiles a glob; the ruleset uses it with its own tool-name flag. */
int a3s_glob_compile_internal(const char *pattern, size_t len, uint64_t flags, a3s_glob **out,
                              a3s_error *err);

/* The literal bytes every subject a glob matches starts with: their count, and
 * *prefix set to them (none for a case-folded tool-name glob). The rule set
 * compares the first few before matching. */
size_t a3s_glob_prefix(const a3s_glob *glob, const unsigned char **prefix);

/* Likewise the literal bytes every subject it matches ends with. */
size_t a3s_glob_suffix(const a3s_glob *glob, const unsigned char **suffix);

/* Whether some subject starting with prefix[0..n) matches (glob.c): 1 yes,
 * 0 no, negative: no memory. */
int a3s_glob_viable(const a3s_glob *glob, const char *prefix, size_t n);

#endif
