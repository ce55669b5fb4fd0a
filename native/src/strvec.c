/* strvec.c - see strvec.h. */
#include "strvec.h"

#include <stdlib.h>
#include <string.h>

static bool grow(struct a3s_strvec *v) {
    if (v->failed)
        return false;
    if (v->len + 1 < v->cap)
        return true;
    size_t cap = v->cap ? 2 * v->cap : 16;
    char **items = realloc(v->items, cap * sizeof *items);
    if (!items) {
        v->failed = true;
        return false;
    }
    v->items = items;
    v->cap = cap;
    return true;
}

void a3s_strvec_push_n(struct a3s_strvec *v, const char *s, size_t n) {
    if (!grow(v))
        return;
    char *copy = malloc(n + 1);
    if (!copy) {
        v->failed = true;
        return;
    }
    memcpy(copy, s, n);
    copy[n] = '\0';
    v->items[v->len++] = copy;
    v->items[v->len] = NULL;
}

void a3s_strvec_push(struct a3s_strvec *v, const char *s) { a3s_strvec_push_n(v, s, strlen(s)); }

void a3s_strvec_push2(struct a3s_strvec *v, const char *a, const char *b) {
    size_t na = strlen(a), nb = strlen(b);
    if (!grow(v))
        return;
    char *copy = malloc(na + nb + 1);
    if (!copy) {
        v->failed = true;
        return;
    }
    memcpy(copy, a, na);
    memcpy(copy + na, b, nb + 1);
    v->items[v->len++] = copy;
    v->items[v->len] = NULL;
}

void a3s_strvec_free(struct a3s_strvec *v) {
    for (size_t i = 0; i < v->len; i++)
        free(v->items[i]);
    free(v->items);
    *v = (struct a3s_strvec){0};
}
