/* strvec.h - a growable array of owned, NUL-terminated strings (argv, envp). */
#ifndef A3S_STRVEC_H
#define A3S_STRVEC_H

#include "internal.h"

struct a3s_strvec {
    char **items; /* always NULL-terminated once non-empty */
    size_t len, cap;
    bool failed; /* an allocation failed; every later push is a no-op */
};

/* Appends a copy of s[0..n). On allocation failure sets failed. */
void a3s_strvec_push_n(struct a3s_strvec *v, const char *s, size_t n);
void a3s_strvec_push(struct a3s_strvec *v, const char *s);
/* Appends the concatenation of a and b. */
void a3s_strvec_push2(struct a3s_strvec *v, const char *a, const char *b);
void a3s_strvec_free(struct a3s_strvec *v);

#endif
