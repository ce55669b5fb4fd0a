/* policy_other.c - the sandbox policy on every platform but Linux: there is no native sandbox
 * to describe (sandbox_other.c), so a3s_sandbox_policy fails and the accessors give NULL. */
#include "internal.h"
#include "platform.h"

#if !defined(__linux__)
A3S_API int a3s_sandbox_policy(a3s_sandbox *sb, a3s_policy **out, a3s_error *err) {
    (void)sb;
    if (out)
        *out = NULL;
    return a3s_fail(err, A3S_E_UNSUPPORTED, 0, 0,
                    "a3s_sandbox_policy: the native sandbox is not supported on "
                    A3S_PLATFORM_NAME);
}

A3S_API const char *a3s_policy_text(const a3s_policy *p, size_t *len) {
    (void)p;
    if (len)
        *len = 0;
    return NULL;
}

A3S_API const char *a3s_policy_digest(const a3s_policy *p) {
    (void)p;
    return NULL;
}

A3S_API void a3s_policy_free(a3s_policy *p) { (void)p; }
#else
typedef int a3s_policy_other_unused; /* ISO C forbids an empty unit */
#endif
