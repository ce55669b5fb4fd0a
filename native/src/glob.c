/* glob.c - compile a policy glob once, match many subjects in linear time.
 *
 * A pattern is compiled to a token list (literal byte, '*', '**', and for
 * '**' + '/' an entry token that may skip ahead plus a loop token that leaves
 * only on '/'), and matched by simulating its NFA with one bit per token (a bit-parallel
 * Shift-And variant). Patterns that are a literal, a literal prefix or "*"
 * skip the simulation entirely; the literal prefix and suffix of any other
 * pattern are compared first so that most non-matches cost one memcmp.
 */
#define _GNU_SOURCE /* memmem */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

enum glob_kind {
    GLOB_ANY,    /* matches everything */
    GLOB_EXACT,  /* a literal */
    GLOB_PREFIX, /* a literal prefix */
    GLOB_NFA,    /* the general case */
};

enum token_kind {
    TOK_LIT,      /* one byte */
    TOK_STAR,     /* any run without '/' */
    TOK_GLOBSTAR, /* any run */
    TOK_GS_ENTRY, /* '**' + '/': may skip itself and the loop below */
    TOK_GS_LOOP,  /* after TOK_GS_ENTRY: any run, then '/' to leave */
};

#define STACK_WORDS 16 /* patterns up to ~1000 tokens match without allocation */

struct a3s_glob {
    enum glob_kind kind;
    bool fold_case;
    /* GLOB_EXACT / GLOB_PREFIX: the literal; GLOB_NFA: the literal prefix */
    unsigned char *literal;
    size_t literal_len;
    /* GLOB_NFA */
    unsigned char *suffix; /* literal bytes after the last wildcard */
    size_t suffix_len;
    size_t min_len; /* number of literal tokens: no match is shorter */
    size_t ntok;
    size_t nwords;
    uint16_t byte_class[256]; /* byte -> row of class_masks (row 0: no literal) */
    size_t nclasses;
    uint64_t *class_masks;   /* [nclasses][nwords] tokens that are this literal */
    uint64_t *star_any;      /* tokens looping on every byte */
    uint64_t *star_noslash;  /* tokens looping on bytes other than '/' */
    uint64_t *gslash;        /* tokens advancing on '/' */
    uint64_t *eps;           /* tokens with an epsilon edge to the next token */
    uint64_t *eps2;          /* tokens with an epsilon edge two tokens ahead */
    /* prefilters: a literal run every match contains, and a trailing '**' */
    unsigned char *needle;
    size_t needle_len;
    size_t needle_anchor; /* the needle's rarest byte: the one a search looks for */
    unsigned char required[8]; /* distinct literal bytes every match contains */
    size_t nrequired;
    bool tail_any; /* the last token is '**': once its state is live, the rest matches */
    /* GLOB_NFA whose wildcards are all '*' or all '**' (no '**' + '/'): matched by
     * literal runs, leftmost first, in linear time (see runs_match) */
    enum { RUNS_NONE, RUNS_STAR, RUNS_GLOBSTAR } runs;
    unsigned char *tok_kinds, *tok_bytes; /* [ntok] */
};

/* How common a byte is in command lines and paths (1: rare ... 5: most common), so
 * that the prefilters test the rarest bytes first. */
static int commonness(unsigned char c) {
    if (c == '/' || c == ' ' || c == '-' || c == '.')
        return 5;
    if (c >= 'a' && c <= 'z')
        return strchr("etaoinsrlcd", c) ? 4 : 3;
    if ((c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z') || c == '_')
        return 2;
    return 1;
}

/* The first occurrence of needle[0..k) (k >= 1) in hay[0..n), or NULL, by a
 * memchr of its byte at `anchor` and a memcmp at each place found. */
static const unsigned char *walk_find(const unsigned char *hay, size_t n,
                                      const unsigned char *needle, size_t k, size_t anchor) {
    if (n < k)
        return NULL;
    const unsigned char *p = hay + anchor, *last = hay + (n - k) + anchor;
    while ((p = memchr(p, needle[anchor], (size_t)(last - p) + 1)) != NULL) {
        if (memcmp(p - anchor, needle, k) == 0)
            return p - anchor;
        if (p++ == last)
            break;
    }
    return NULL;
}

/* The first occurrence of needle[0..k) in hay[0..n), or NULL: memmem for long
 * text where the C library has it (linear time), the memchr walk elsewhere. */
static const unsigned char *find_bytes(const unsigned char *hay, size_t n,
                                       const unsigned char *needle, size_t k, size_t anchor) {
    if (k == 0)
        return hay;
    if (k == 1)
        return memchr(hay, needle[0], n);
#if defined(__GLIBC__) || defined(__APPLE__) || defined(__FreeBSD__) || defined(__OpenBSD__) || \
    defined(__NetBSD__) || defined(__linux__)
    if (n >= 256)
        return memmem(hay, n, needle, k);
#endif
    return walk_find(hay, n, needle, k, anchor);
}

static bool bit_test(const uint64_t *v, size_t i) { return (v[i / 64] >> (i % 64)) & 1u; }
static void bit_set(uint64_t *v, size_t i) { v[i / 64] |= (uint64_t)1 << (i % 64); }

/* Adds the targets of the forward epsilon edges (one and two tokens ahead)
 * until nothing changes: one fused pass over the words per round, and the
 * tokenizer keeps epsilon chains at most two long, so it ends after two
 * rounds and a check. */
static void closure(const a3s_glob *g, uint64_t *set) {
    const size_t nw = g->nwords;
    for (bool grew = true; grew;) {
        grew = false;
        uint64_t c1 = 0, c2 = 0;
        for (size_t w = 0; w < nw; w++) {
            uint64_t e1 = set[w] & g->eps[w], e2 = set[w] & g->eps2[w];
            uint64_t add = ((e1 << 1) | c1 | (e2 << 2) | c2) & ~set[w];
            c1 = e1 >> 63;
            c2 = e2 >> 62;
            if (add) {
                set[w] |= add;
                grew = true;
            }
        }
    }
}

static void glob_destroy(a3s_glob *g) {
    if (!g)
        return;
    free(g->literal);
    free(g->suffix);
    free(g->class_masks);
    free(g->star_any);
    free(g->star_noslash);
    free(g->gslash);
    free(g->eps);
    free(g->eps2);
    free(g->needle);
    free(g->tok_kinds);
    free(g->tok_bytes);
    free(g);
}

A3S_API void a3s_glob_free(a3s_glob *glob) { glob_destroy(glob); }

size_t a3s_glob_prefix(const a3s_glob *g, const unsigned char **prefix) {
    *prefix = g->literal;
    return g->kind == GLOB_ANY || g->fold_case ? 0 : g->literal_len;
}

size_t a3s_glob_suffix(const a3s_glob *g, const unsigned char **suffix) {
    *suffix = g->kind == GLOB_NFA ? g->suffix : g->literal;
    if (g->fold_case || g->kind == GLOB_ANY || g->kind == GLOB_PREFIX)
        return 0;
    return g->kind == GLOB_NFA ? g->suffix_len : g->literal_len;
}

static unsigned char *dup_bytes(const unsigned char *p, size_t n, bool fold) {
    unsigned char *d = malloc(n ? n : 1);
    if (!d)
        return NULL;
    for (size_t i = 0; i < n; i++)
        d[i] = fold ? a3s_lower(p[i]) : p[i];
    return d;
}

/* Tokenizes pattern into kinds[] / bytes[] (both sized len), returns count. */
static size_t tokenize(const unsigned char *p, size_t len, bool tool_name, unsigned char *kinds,
                       unsigned char *bytes) {
    size_t n = 0;
    for (size_t i = 0; i < len;) {
        if (p[i] == '\\' && i + 1 < len && p[i + 1] == '*') {
            kinds[n] = TOK_LIT;
            bytes[n++] = '*';
            i += 2;
        } else if (p[i] == '*') {
            size_t run = 0;
            while (i < len && p[i] == '*') {
                run++;
                i++;
            }
            if (tool_name || run == 1) {
                kinds[n++] = tool_name ? TOK_GLOBSTAR : TOK_STAR;
            } else if (i < len && p[i] == '/') {
                i++; /* the '/' belongs to the loop token */
                /* '**' + '/' twice in a row means the same as once: keep one, so long
                 * chains cannot make the epsilon closure quadratic */
                if (n >= 2 && kinds[n - 2] == TOK_GS_ENTRY && kinds[n - 1] == TOK_GS_LOOP)
                    continue;
                kinds[n++] = TOK_GS_ENTRY;
                kinds[n++] = TOK_GS_LOOP;
            } else {
                kinds[n++] = TOK_GLOBSTAR;
            }
        } else {
            kinds[n] = TOK_LIT;
            bytes[n++] = tool_name ? a3s_lower(p[i]) : p[i];
            i++;
        }
    }
    return n;
}

static int build_nfa(a3s_glob *g, const unsigned char *kinds, const unsigned char *bytes,
                     size_t ntok, a3s_error *err) {
    g->ntok = ntok;
    g->nwords = (ntok + 1 + 63) / 64;
    size_t nw = g->nwords;

    /* One mask row per distinct literal byte (case-folded for tool names). */
    size_t nclasses = 1;
    memset(g->byte_class, 0, sizeof g->byte_class);
    for (size_t i = 0; i < ntok; i++) {
        if (kinds[i] != TOK_LIT || g->byte_class[bytes[i]])
            continue;
        g->byte_class[bytes[i]] = (uint16_t)nclasses;
        if (g->fold_case && bytes[i] >= 'a' && bytes[i] <= 'z')
            g->byte_class[bytes[i] - ('a' - 'A')] = (uint16_t)nclasses;
        nclasses++;
    }
    g->nclasses = nclasses;
    g->class_masks = calloc(nclasses * nw, sizeof(uint64_t));
    g->star_any = calloc(nw, sizeof(uint64_t));
    g->star_noslash = calloc(nw, sizeof(uint64_t));
    g->gslash = calloc(nw, sizeof(uint64_t));
    g->eps = calloc(nw, sizeof(uint64_t));
    g->eps2 = calloc(nw, sizeof(uint64_t));
    if (!g->class_masks || !g->star_any || !g->star_noslash || !g->gslash || !g->eps || !g->eps2)
        return a3s_fail(err, A3S_E_NOMEM, 0, 0, "out of memory compiling a glob");

    size_t first_wild = ntok, last_wild = 0;
    for (size_t i = 0; i < ntok; i++) {
        switch (kinds[i]) {
        case TOK_LIT:
            bit_set(g->class_masks + (size_t)g->byte_class[bytes[i]] * nw, i);
            g->min_len++;
            continue;
        case TOK_STAR:
            bit_set(g->star_noslash, i);
            bit_set(g->eps, i);
            break;
        case TOK_GLOBSTAR:
            bit_set(g->star_any, i);
            bit_set(g->eps, i);
            break;
        case TOK_GS_ENTRY:
            bit_set(g->eps, i);
            bit_set(g->eps2, i);
            break;
        case TOK_GS_LOOP:
            bit_set(g->star_any, i);
            bit_set(g->gslash, i);
            break;
        }
        if (first_wild == ntok)
            first_wild = i;
        last_wild = i;
    }
    /* the longest literal run between two wildcards must occur in every match
     * (a single byte is worth a memchr: it rejects *a*a*...*b over a run of a) */
    size_t best = 0, best_at = 0;
    for (size_t i = first_wild; i < last_wild;) {
        size_t j = i;
        while (j < last_wild && kinds[j] == TOK_LIT)
            j++;
        if (j - i > best) {
            best = j - i;
            best_at = i;
        }
        i = j + 1;
    }
    if (best >= 1 && !g->fold_case) {
        g->needle = dup_bytes(bytes + best_at, best, false);
        g->needle_len = g->needle ? best : 0;
        for (size_t i = 1; i < g->needle_len; i++)
            if (commonness(g->needle[i]) < commonness(g->needle[g->needle_anchor]))
                g->needle_anchor = i;
    }
    /* each distinct literal byte must occur too: one memchr each, which turns
     * away *a*a*...*b over a long run of a before any state is simulated;
     * the rarest (at most 8) first, as they most often turn a subject away */
    if (!g->fold_case) {
        bool seen[256] = {false};
        const size_t cap = sizeof g->required;
        for (size_t i = first_wild; i <= last_wild; i++) {
            if (kinds[i] != TOK_LIT || seen[bytes[i]])
                continue;
            seen[bytes[i]] = true;
            size_t at = g->nrequired;
            if (at < cap)
                g->nrequired++;
            else if (commonness(g->required[--at]) <= commonness(bytes[i]))
                continue; /* full, and no rarer than the most common kept */
            for (; at && commonness(g->required[at - 1]) > commonness(bytes[i]); at--)
                g->required[at] = g->required[at - 1];
            g->required[at] = bytes[i];
        }
    }
    g->tail_any = kinds[ntok - 1] == TOK_GLOBSTAR;
    bool star = false, globstar = false, other = false;
    for (size_t i = 0; i < ntok; i++) {
        star |= kinds[i] == TOK_STAR;
        globstar |= kinds[i] == TOK_GLOBSTAR;
        other |= kinds[i] == TOK_GS_ENTRY || kinds[i] == TOK_GS_LOOP;
    }
    if (!g->fold_case && !other && star != globstar) {
        g->tok_kinds = dup_bytes(kinds, ntok, false);
        g->tok_bytes = dup_bytes(bytes, ntok, false);
        if (!g->tok_kinds || !g->tok_bytes)
            return a3s_fail(err, A3S_E_NOMEM, 0, 0, "out of memory compiling a glob");
        g->runs = star ? RUNS_STAR : RUNS_GLOBSTAR;
    }
    g->literal = dup_bytes(bytes, first_wild, false);
    g->literal_len = first_wild;
    g->suffix_len = ntok - last_wild - 1;
    g->suffix = dup_bytes(bytes + last_wild + 1, g->suffix_len, false);
    if (!g->literal || !g->suffix)
        return a3s_fail(err, A3S_E_NOMEM, 0, 0, "out of memory compiling a glob");
    return A3S_OK;
}

int a3s_glob_compile_internal(const char *pattern, size_t len, uint64_t flags, a3s_glob **out,
                              a3s_error *err) {
    const unsigned char *p = (const unsigned char *)pattern;
    bool tool_name = (flags & A3S_GLOB_TOOL_NAME) != 0;
    a3s_glob *g = calloc(1, sizeof *g);
    if (!g)
        return a3s_fail(err, A3S_E_NOMEM, 0, 0, "out of memory compiling a glob");
    g->fold_case = tool_name;

    if (len == 1 && p[0] == '*') {
        g->kind = GLOB_ANY;
        *out = g;
        return a3s_ok(err);
    }
    if (!tool_name && len >= 2 && p[len - 2] == ':' && p[len - 1] == '*') {
        g->kind = GLOB_PREFIX;
        g->literal_len = len - 2;
        g->literal = dup_bytes(p, len - 2, false);
        if (!g->literal) {
            glob_destroy(g);
            return a3s_fail(err, A3S_E_NOMEM, 0, 0, "out of memory compiling a glob");
        }
        *out = g;
        return a3s_ok(err);
    }

    unsigned char *kinds = malloc(len ? len : 1), *bytes = malloc(len ? len : 1);
    if (!kinds || !bytes) {
        free(kinds);
        free(bytes);
        glob_destroy(g);
        return a3s_fail(err, A3S_E_NOMEM, 0, 0, "out of memory compiling a glob");
    }
    size_t ntok = tokenize(p, len, tool_name, kinds, bytes);
    size_t nlit = 0;
    while (nlit < ntok && kinds[nlit] == TOK_LIT)
        nlit++;

    int rc = A3S_OK;
    if (nlit == ntok) {
        g->kind = GLOB_EXACT;
    } else if (nlit + 1 == ntok && kinds[nlit] == TOK_GLOBSTAR) {
        g->kind = GLOB_PREFIX;
    } else {
        g->kind = GLOB_NFA;
        rc = build_nfa(g, kinds, bytes, ntok, err);
    }
    if (rc == A3S_OK && g->kind != GLOB_NFA) {
        g->literal_len = nlit;
        g->literal = dup_bytes(bytes, nlit, false);
        if (!g->literal)
            rc = a3s_fail(err, A3S_E_NOMEM, 0, 0, "out of memory compiling a glob");
    }
    free(kinds);
    free(bytes);
    if (rc != A3S_OK) {
        glob_destroy(g);
        return rc;
    }
    *out = g;
    return a3s_ok(err);
}

A3S_API int a3s_glob_compile(const char *pattern, size_t len, uint64_t flags, a3s_glob **out,
                             a3s_error *err) {
    if (!out || (!pattern && len))
        return a3s_fail(err, A3S_E_INVALID, 0, 0, "a3s_glob_compile: NULL argument");
    *out = NULL;
    if (flags & ~(uint64_t)A3S_GLOB_TOOL_NAME)
        return a3s_fail(err, A3S_E_INVALID, 0, (int64_t)flags,
                        "a3s_glob_compile: unknown flag bits 0x%llx",
                        (unsigned long long)(flags & ~(uint64_t)A3S_GLOB_TOOL_NAME));
    if (len > A3S_GLOB_MAX_PATTERN)
        return a3s_fail(err, A3S_E_TOO_LARGE, 0, (int64_t)len,
                        "glob pattern of %zu bytes exceeds the limit of %d", len,
                        A3S_GLOB_MAX_PATTERN);
    return a3s_glob_compile_internal(pattern ? pattern : "", len, flags, out, err);
}

static bool bytes_equal(const unsigned char *a, const unsigned char *b, size_t n, bool fold) {
    if (!fold) /* the last byte first: most literals that differ differ there, without a call */
        return n == 0 || (a[n - 1] == b[n - 1] && memcmp(a, b, n) == 0);
    for (size_t i = 0; i < n; i++)
        if (a3s_lower(a[i]) != b[i])
            return false;
    return true;
}

/* run_words (below) for a pattern of at most 63 tokens: the state set is one
 * register. */
static int run_word(const a3s_glob *g, const unsigned char *s, size_t n, bool *accepting) {
    const uint64_t eps = g->eps[0], eps2 = g->eps2[0], any = g->star_any[0];
    const uint64_t noslash = any | g->star_noslash[0], gslash = g->gslash[0];
    const uint64_t epsilon = eps | eps2;
    const uint64_t tail = g->tail_any ? (uint64_t)1 << (g->ntok - 1) : 0;
    uint64_t cur = (uint64_t)1 << g->literal_len;
    for (uint64_t y; cur & epsilon; cur = y)
        if ((y = cur | ((cur & eps) << 1) | ((cur & eps2) << 2)) == cur)
            break;
    for (size_t i = g->literal_len; i < n; i++) {
        if (cur & tail) {
            *accepting = false;
            return 1;
        }
        unsigned char c = s[i];
        uint64_t next = (cur & g->class_masks[g->byte_class[c]]) << 1;
        next |= c == '/' ? ((cur & gslash) << 1) | (cur & any) : cur & noslash;
        for (uint64_t y; next & epsilon; next = y)
            if ((y = next | ((next & eps) << 1) | ((next & eps2) << 2)) == next)
                break;
        if (!next) {
            *accepting = false;
            return 0;
        }
        cur = next;
    }
    *accepting = (cur >> g->ntok) & 1;
    return 2;
}

/* One step of the multi-word NFA: next = the states after reading c from
 * cur, closed under epsilon edges. Returns whether any state is live. */
static bool step_words(const a3s_glob *g, const uint64_t *cur, unsigned char c, uint64_t *next) {
    const size_t nw = g->nwords;
    const uint64_t *lit = g->class_masks + (size_t)g->byte_class[c] * nw;
    uint64_t carry = 0, carry_gs = 0, live = 0;
    /* one fused pass: literal advances, star loops, and '**'+'/' exits */
    for (size_t w = 0; w < nw; w++) {
        uint64_t adv = cur[w] & lit[w];
        uint64_t x = (adv << 1) | carry;
        carry = adv >> 63;
        if (c == '/') {
            uint64_t gs = cur[w] & g->gslash[w];
            x |= (gs << 1) | carry_gs | (cur[w] & g->star_any[w]);
            carry_gs = gs >> 63;
        } else {
            x |= cur[w] & (g->star_any[w] | g->star_noslash[w]);
        }
        next[w] = x;
        live |= x;
    }
    if (live)
        closure(g, next);
    return live != 0;
}

/* ---- lazy DFA ---------------------------------------------------------------
 * Wide patterns against long subjects: the NFA costs O(words) per byte, and
 * the sets it visits repeat (a run of the same byte saturates them). Each
 * distinct set becomes a DFA state the first time it is reached, with its
 * transitions filled in on use; a byte then costs one table lookup. The
 * cache is per call (a compiled glob stays read-only, so threads may share
 * it), bounded, and flushed when full, which keeps the NFA's linear bound. */

#define DFA_MAX_BYTES (2u << 20)
#define DFA_MIN_SUBJECT 256 /* shorter subjects are not worth the set-up */

struct dfa {
    size_t nw, ncls, n, cap, tcap;
    uint16_t cls[256];
    uint64_t *sets;  /* [cap][nw] */
    int32_t *trans;  /* [cap][ncls], -1: not computed */
    int32_t *table;  /* open addressing over state ids, -1: empty */
};

static uint64_t hash_set(const uint64_t *v, size_t nw) {
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < nw; i++)
        h = (h ^ v[i]) * 1099511628211ull;
    return h ^ (h >> 29);
}

static void dfa_flush(struct dfa *d) {
    d->n = 0;
    memset(d->table, 0xff, d->tcap * sizeof *d->table);
}

/* The id of set v, adding it if new; -1 when the cache is full. */
static int32_t dfa_state(struct dfa *d, const uint64_t *v) {
    size_t mask = d->tcap - 1;
    for (size_t slot = hash_set(v, d->nw) & mask;; slot = (slot + 1) & mask) {
        int32_t id = d->table[slot];
        if (id < 0) {
            if (d->n == d->cap)
                return -1;
            id = (int32_t)d->n++;
            memcpy(d->sets + (size_t)id * d->nw, v, d->nw * sizeof *v);
            memset(d->trans + (size_t)id * d->ncls, 0xff, d->ncls * sizeof *d->trans);
            d->table[slot] = id;
            return id;
        }
        if (!memcmp(d->sets + (size_t)id * d->nw, v, d->nw * sizeof *v))
            return id;
    }
}

static bool dfa_init(struct dfa *d, const a3s_glob *g, size_t n) {
    memset(d, 0, sizeof *d);
    d->nw = g->nwords;
    d->ncls = g->nclasses + 1; /* + '/' when it is not a literal */
    for (int c = 0; c < 256; c++)
        d->cls[c] = g->byte_class[c];
    if (d->cls['/'] == 0)
        d->cls['/'] = (uint16_t)g->nclasses;
    size_t per_state = d->nw * sizeof(uint64_t) + d->ncls * sizeof(int32_t) + 2 * sizeof(int32_t);
    d->cap = DFA_MAX_BYTES / per_state;
    if (d->cap > n + 2)
        d->cap = n + 2;
    if (d->cap < 4)
        return false;
    for (d->tcap = 16; d->tcap < 2 * d->cap; d->tcap *= 2) {
    }
    d->sets = malloc(d->cap * d->nw * sizeof(uint64_t));
    d->trans = malloc(d->cap * d->ncls * sizeof(int32_t));
    d->table = malloc(d->tcap * sizeof(int32_t));
    if (!d->sets || !d->trans || !d->table) {
        free(d->sets);
        free(d->trans);
        free(d->table);
        return false;
    }
    dfa_flush(d);
    return true;
}

static void dfa_free(struct dfa *d) {
    free(d->sets);
    free(d->trans);
    free(d->table);
}

/* Two state sets of the multi-word NFA side by side (on the stack when they
 * fit), the first holding the start state: the one after the literal prefix.
 * NULL: no memory. Free *heap afterwards. */
static uint64_t *start_sets(const a3s_glob *g, uint64_t *stack, uint64_t **heap) {
    const size_t nw = g->nwords;
    uint64_t *cur = stack;
    *heap = NULL;
    if (nw > STACK_WORDS && !(cur = *heap = malloc(2 * nw * sizeof(uint64_t))))
        return NULL;
    memset(cur, 0, nw * sizeof(uint64_t));
    bit_set(cur, g->literal_len);
    closure(g, cur);
    return cur;
}

/* Runs the multi-word NFA over s[literal_len..n): 1 when a trailing '**' is
 * reached (any rest matches), 0 when no state is left, 2 when s ends with
 * states live (*accepting: the end state is one); negative: no memory. */
static int run_words(const a3s_glob *g, const unsigned char *s, size_t n, bool *accepting) {
    uint64_t stack[2 * STACK_WORDS], *heap;
    uint64_t *cur = start_sets(g, stack, &heap);
    if (!cur)
        return A3S_E_NOMEM;
    uint64_t *next = cur + g->nwords;
    int result = 2;
    for (size_t i = g->literal_len; i < n; i++) {
        if (g->tail_any && bit_test(cur, g->ntok - 1)) {
            result = 1;
            break;
        }
        if (!step_words(g, cur, s[i], next)) {
            result = 0;
            break;
        }
        uint64_t *swap = cur;
        cur = next;
        next = swap;
    }
    *accepting = result == 2 && bit_test(cur, g->ntok);
    free(heap);
    return result;
}

/* 1 match, 0 none, negative: no memory (the caller then runs the NFA). */
static int dfa_match(const a3s_glob *g, const unsigned char *s, size_t n) {
    struct dfa d;
    if (!dfa_init(&d, g, n))
        return A3S_E_NOMEM;
    const size_t nw = d.nw;
    uint64_t stack[2 * STACK_WORDS], *heap;
    uint64_t *cur = start_sets(g, stack, &heap);
    if (!cur) {
        dfa_free(&d);
        return A3S_E_NOMEM;
    }
    uint64_t *next = cur + nw;
    int32_t state = dfa_state(&d, cur);
    int result = -1;
    for (size_t i = g->literal_len; i < n; i++) {
        const uint64_t *set = d.sets + (size_t)state * nw;
        if (g->tail_any && bit_test(set, g->ntok - 1)) {
            result = 1;
            break;
        }
        size_t k = d.cls[s[i]];
        int32_t to = d.trans[(size_t)state * d.ncls + k];
        if (to < 0) {
            if (!step_words(g, set, s[i], next)) {
                result = 0;
                break;
            }
            to = dfa_state(&d, next);
            if (to < 0) { /* full: start over from this set */
                dfa_flush(&d);
                to = dfa_state(&d, next);
            } else {
                d.trans[(size_t)state * d.ncls + k] = to;
            }
        }
        state = to;
    }
    if (result < 0)
        result = bit_test(d.sets + (size_t)state * nw, g->ntok);
    free(heap);
    dfa_free(&d);
    return result;
}

/* ---- literal runs ------------------------------------------------------------
 * Tokens t0..t1 where every wildcard may take any run of s[0..n): the first and
 * the last literal run must be the ends of s, and each run between takes its
 * leftmost place after the one before. Leftmost is exact: a later place leaves
 * less room to what follows, and the wildcards around a run take anything. */
static bool runs_in(const a3s_glob *g, size_t t0, size_t t1, const unsigned char *s, size_t n) {
    const unsigned char *k = g->tok_kinds, *b = g->tok_bytes;
    size_t a = t0, z = t1;
    while (a < t1 && k[a] == TOK_LIT)
        a++;
    if (a == t1) /* no wildcard */
        return n == t1 - t0 && memcmp(s, b + t0, n) == 0;
    while (k[z - 1] == TOK_LIT)
        z--;
    size_t head = a - t0, tail = t1 - z;
    if (n < head + tail || memcmp(s, b + t0, head) != 0 || memcmp(s + n - tail, b + z, tail) != 0)
        return false;
    size_t i = head, end = n - tail;
    for (size_t t = a + 1; t < z;) { /* a and z - 1 are wildcards */
        size_t u = t;
        while (k[u] == TOK_LIT)
            u++;
        const unsigned char *at = find_bytes(s + i, end - i, b + t, u - t, 0);
        if (!at)
            return false;
        i = (size_t)(at - s) + (u - t);
        t = u + 1;
    }
    return true;
}

/* A pattern of literals and '**' is one run list over the whole subject. One of
 * literals and '*' (which never takes a '/') has as many '/' as each subject it
 * matches, so its pieces between '/' are run lists over the subject's pieces. */
static int runs_match(const a3s_glob *g, const unsigned char *s, size_t n) {
    if (g->runs == RUNS_GLOBSTAR)
        return runs_in(g, 0, g->ntok, s, n);
    size_t t = 0, i = 0;
    for (;;) {
        size_t u = t;
        while (u < g->ntok && !(g->tok_kinds[u] == TOK_LIT && g->tok_bytes[u] == '/'))
            u++;
        const unsigned char *slash = memchr(s + i, '/', n - i);
        size_t e = slash ? (size_t)(slash - s) : n;
        if ((u == g->ntok) != (slash == NULL) || !runs_in(g, t, u, s + i, e - i))
            return 0;
        if (u == g->ntok)
            return 1;
        t = u + 1;
        i = e + 1;
    }
}

static int nfa_match(const a3s_glob *g, const unsigned char *s, size_t n) {
    if (g->runs != RUNS_NONE)
        return runs_match(g, s, n);
    size_t nw = g->nwords;
    bool accepting;
    if (nw == 1) {
        int r = run_word(g, s, n, &accepting);
        return r == 2 ? accepting : r;
    }
    if (n - g->literal_len >= DFA_MIN_SUBJECT) {
        int r = dfa_match(g, s, n);
        if (r >= 0)
            return r;
    }
    int r = run_words(g, s, n, &accepting);
    return r == 2 ? accepting : r;
}

A3S_API int a3s_glob_match(const a3s_glob *g, const char *subject, size_t n) {
    const unsigned char *s = (const unsigned char *)(subject ? subject : "");
    if (!subject)
        n = 0;
    switch (g->kind) {
    case GLOB_ANY: return 1;
    case GLOB_EXACT: return n == g->literal_len && bytes_equal(s, g->literal, n, g->fold_case);
    case GLOB_PREFIX:
        return n >= g->literal_len && bytes_equal(s, g->literal, g->literal_len, g->fold_case);
    case GLOB_NFA: break;
    }
    size_t pre = g->literal_len, suf = g->suffix_len; /* most patterns lack one: no call */
    if (n < g->min_len || (pre && !bytes_equal(s, g->literal, pre, g->fold_case)) ||
        (suf && !bytes_equal(s + n - suf, g->suffix, suf, g->fold_case)))
        return 0;
    const unsigned char *mid = s + g->literal_len;
    size_t mid_len = n - g->literal_len - g->suffix_len;
    for (size_t i = 0; i < g->nrequired; i++)
        if (!memchr(mid, g->required[i], mid_len))
            return 0;
    if (g->needle_len && !find_bytes(mid, mid_len, g->needle, g->needle_len, g->needle_anchor))
        return 0;
    return nfa_match(g, s, n);
}

/* Whether some subject that starts with prefix[0..n) matches: the NFA is
 * still live after reading it (every live state can reach the end, since
 * each token can be passed). The bash reader uses it for a command whose
 * text is unknown from `n` on (`git $x`, `gi? push`). 1 yes, 0 no, negative:
 * no memory. */
int a3s_glob_viable(const a3s_glob *g, const char *prefix, size_t n) {
    const unsigned char *s = (const unsigned char *)(prefix ? prefix : "");
    if (!prefix)
        n = 0;
    size_t lit = n < g->literal_len ? n : g->literal_len;
    switch (g->kind) {
    case GLOB_ANY: return 1;
    case GLOB_EXACT: return n <= g->literal_len && bytes_equal(s, g->literal, n, g->fold_case);
    case GLOB_PREFIX: return bytes_equal(s, g->literal, lit, g->fold_case);
    case GLOB_NFA: break;
    }
    if (!bytes_equal(s, g->literal, lit, g->fold_case))
        return 0;
    if (n <= g->literal_len)
        return 1;
    bool accepting;
    int r = g->nwords == 1 ? run_word(g, s, n, &accepting) : run_words(g, s, n, &accepting);
    return r == 2 ? 1 : r;
}
