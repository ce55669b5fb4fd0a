/* protected.c - the protected names: one list for the sandbox and every binding.
 *
 * The top-level workspace names that configure the repository or the agent
 * (directories) or would run code for the user or reconfigure a tool
 * (files). The Linux sandbox keeps each exact name read-only (a bind, or a
 * read-only placeholder where it is missing); Python's verification
 * snapshot and guardrails read the same list through a3s_protected_name,
 * so no layer keeps a copy. Compiled on every platform. */
#include "internal.h"

#include <stddef.h>

const char *const a3s_protected_dirs[] = {".git",    ".a3s",    ".agents", ".codex",
                                          ".claude", ".vscode", ".idea"};
const char *const a3s_protected_files[] = {".gitmodules", ".mcp.json",     ".ripgreprc",
                                           ".bashrc",     ".bash_profile", ".zshrc",
                                           ".zprofile",   ".profile"};
const size_t a3s_protected_ndirs = sizeof a3s_protected_dirs / sizeof a3s_protected_dirs[0];
const size_t a3s_protected_nfiles = sizeof a3s_protected_files / sizeof a3s_protected_files[0];

A3S_API int a3s_protected_name(size_t index, const char **name, uint64_t *flags, a3s_error *err) {
    if (!name || !flags)
        return a3s_fail(err, A3S_E_INVALID, 0, 0, "a3s_protected_name: NULL argument");
    if (index < a3s_protected_ndirs) {
        *name = a3s_protected_dirs[index];
        *flags = A3S_PROTECTED_DIR;
        return a3s_ok(err);
    }
    index -= a3s_protected_ndirs;
    if (index < a3s_protected_nfiles) {
        *name = a3s_protected_files[index];
        *flags = 0;
        return a3s_ok(err);
    }
    return a3s_fail(err, A3S_E_RANGE, 0, (int64_t)(a3s_protected_ndirs + a3s_protected_nfiles),
                    "a3s_protected_name: index past the last protected name");
}
