/* ruleset.c - parse "Tool(pattern)" rules and answer deny/allow/ask in one call.
 *
 * Rules with a literal tool name are grouped by that name in a small hash
 * table, so a check only looks at the rules that can apply to its tool plus
 * the few rules whose tool part is a glob or an MCP server name.
 */
#include "bash_split.h"
#include "internal.h"

#include <stdlib.h>
#include <string.h>

#define NLISTS 3 /* deny, allow, ask */

struct rule;
static bool covers_tool(const struct rule *r, const char *tool, size_t tl);

struct rule {
    int32_t list;
    uint32_t id;
    uint64_t flags;
    char *tool; /* canonical: lower-case, rewritten */
    size_t tool_len;
    char *pattern; /* canonical; "*" for any arguments */
    size_t pattern_len;
    a3s_glob *tool_glob; /* A3S_RULE_TOOL_GLOB only */
    a3s_glob *arg_glob;  /* NULL for A3S_RULE_ANY_ARGS */
    int first_byte;      /* every matching subject starts with it; -1: any */
    /* up to 8 literal bytes every matching subject starts with (pre_len of them), as
     * loaded from memory into a word, and the mask of those bytes: a check compares
     * them to the subject's first 8 bytes before it calls the matcher */
    uint64_t pre_bits, pre_mask;
    size_t pre_len;
    /* likewise up to 8 literal bytes every matching subject ends with, placed at the
     * end of the word as the subject's last 8 bytes are */
    uint64_t suf_bits, suf_mask;
    size_t suf_len;
};

#define CHAIN_ANY 256 /* the chain of the rules whose subjects may start with any byte */

struct index_list {
    size_t *items;
    int16_t *first; /* the rule's first_byte, beside its index */
    size_t *next;   /* 1 + the next position with the same first_byte (0: none) */
    size_t *chains; /* [0..256]: 1 + the first position per first byte (CHAIN_ANY: -1), 0 if none;
                     * [257..513]: 1 + the last. A check walks its subject's byte and CHAIN_ANY. */
    size_t len, cap;
};

/* The rules of one literal tool name (or of the generic group), per list. `all` is what a
 * check of the tool walks: its own rules merged (in rule order) with the generic rules
 * whose tool part covers it, so a check never matches the generic rules' tool parts. */
struct group {
    char *tool;
    size_t tool_len;
    struct index_list lists[NLISTS];
    struct index_list all[NLISTS];
};

struct a3s_ruleset {
    struct rule *rules;
    size_t len, cap;
    struct group *groups; /* literal tool names */
    size_t ngroups, groups_cap;
    size_t *table; /* open addressing: group index + 1, 0 = empty */
    size_t table_cap;
    struct group generic; /* tool globs and MCP server rules */
    int32_t default_list; /* a3s_ruleset_set_default; A3S_LIST_NONE: not set */
    bool bash_patterned;  /* a deny or ask rule with a pattern covers bash */
    size_t bash_group;    /* index + 1 of the group of "bash" (0: none): checked per spelling */
};

static struct group *lookup_group(const a3s_ruleset *rs, const char *tool, size_t n);

static void free_group(struct group *g);

static uint64_t hash_name(const char *s, size_t n) {
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= 1099511628211ull;
    }
    return h;
}

/* Room for one more index, so that the pushes of one rule cannot fail halfway. */
static int reserve_index(struct index_list *l) {
    if (l->len < l->cap)
        return A3S_OK;
    size_t cap = l->cap ? 2 * l->cap : 4;
    size_t *items = realloc(l->items, cap * sizeof *items);
    if (!items)
        return A3S_E_NOMEM;
    l->items = items;
    int16_t *first = realloc(l->first, cap * sizeof *first);
    if (!first)
        return A3S_E_NOMEM;
    l->first = first;
    size_t *next = realloc(l->next, cap * sizeof *next);
    if (!next)
        return A3S_E_NOMEM;
    l->next = next;
    if (!l->chains && !(l->chains = calloc(2 * (CHAIN_ANY + 1), sizeof *l->chains)))
        return A3S_E_NOMEM;
    l->cap = cap;
    return A3S_OK;
}

static void push_reserved(struct index_list *l, size_t v, int first_byte) {
    size_t key = first_byte < 0 ? CHAIN_ANY : (size_t)first_byte;
    size_t *last = &l->chains[CHAIN_ANY + 1 + key];
    l->items[l->len] = v;
    l->first[l->len] = (int16_t)first_byte;
    l->next[l->len] = 0;
    if (*last)
        l->next[*last - 1] = l->len + 1;
    else
        l->chains[key] = l->len + 1;
    *last = l->len + 1;
    l->len++;
}

static void free_index(struct index_list *l) {
    free(l->items);
    free(l->first);
    free(l->next);
    free(l->chains);
}

static struct group *find_group(const a3s_ruleset *rs, const char *tool, size_t n) {
    if (n == 4 && memcmp(tool, "bash", 4) == 0)
        return rs->bash_group ? &rs->groups[rs->bash_group - 1] : NULL;
    return lookup_group(rs, tool, n);
}

static struct group *lookup_group(const a3s_ruleset *rs, const char *tool, size_t n) {
    if (!rs->table_cap)
        return NULL;
    size_t mask = rs->table_cap - 1;
    for (size_t slot = hash_name(tool, n) & mask;; slot = (slot + 1) & mask) {
        size_t v = rs->table[slot];
        if (!v)
            return NULL;
        struct group *g = &rs->groups[v - 1];
        if (g->tool_len == n && memcmp(g->tool, tool, n) == 0)
            return g;
    }
}

static int rehash(a3s_ruleset *rs, size_t cap) {
    size_t *table = calloc(cap, sizeof *table);
    if (!table)
        return A3S_E_NOMEM;
    for (size_t i = 0; i < rs->ngroups; i++) {
        size_t slot = hash_name(rs->groups[i].tool, rs->groups[i].tool_len) & (cap - 1);
        while (table[slot])
            slot = (slot + 1) & (cap - 1);
        table[slot] = i + 1;
    }
    free(rs->table);
    rs->table = table;
    rs->table_cap = cap;
    return A3S_OK;
}

static struct group *get_or_add_group(a3s_ruleset *rs, const char *tool, size_t n) {
    struct group *g = lookup_group(rs, tool, n);
    if (g)
        return g;
    if (rs->ngroups == rs->groups_cap) {
        size_t cap = rs->groups_cap ? 2 * rs->groups_cap : 8;
        struct group *groups = realloc(rs->groups, cap * sizeof *groups);
        if (!groups)
            return NULL;
        rs->groups = groups;
        rs->groups_cap = cap;
    }
    g = &rs->groups[rs->ngroups];
    memset(g, 0, sizeof *g);
    g->tool = malloc(n ? n : 1);
    if (!g->tool)
        return NULL;
    memcpy(g->tool, tool, n);
    g->tool_len = n;
    for (int l = 0; l < NLISTS; l++) { /* the generic rules already added that cover it */
        const struct index_list *gen = &rs->generic.lists[l];
        for (size_t i = 0; i < gen->len; i++) {
            if (!covers_tool(&rs->rules[gen->items[i]], tool, n))
                continue;
            if (reserve_index(&g->all[l]) != A3S_OK) {
                free_group(g);
                return NULL;
            }
            push_reserved(&g->all[l], gen->items[i], gen->first[i]);
        }
    }
    rs->ngroups++;
    if (2 * rs->ngroups > rs->table_cap) {
        if (rehash(rs, rs->table_cap ? 2 * rs->table_cap : 16) != A3S_OK) {
            rs->ngroups--;
            free_group(g);
            return NULL;
        }
    } else {
        size_t slot = hash_name(tool, n) & (rs->table_cap - 1);
        while (rs->table[slot])
            slot = (slot + 1) & (rs->table_cap - 1);
        rs->table[slot] = rs->ngroups;
    }
    if (n == 4 && memcmp(tool, "bash", 4) == 0)
        rs->bash_group = rs->ngroups;
    return g;
}

static void free_rule(struct rule *r) {
    free(r->tool);
    free(r->pattern);
    a3s_glob_free(r->tool_glob);
    a3s_glob_free(r->arg_glob);
}

static void free_group(struct group *g) {
    free(g->tool);
    for (int l = 0; l < NLISTS; l++) {
        free_index(&g->lists[l]);
        free_index(&g->all[l]);
    }
}

A3S_API void a3s_ruleset_free(a3s_ruleset *rs) {
    if (!rs)
        return;
    for (size_t i = 0; i < rs->len; i++)
        free_rule(&rs->rules[i]);
    for (size_t i = 0; i < rs->ngroups; i++)
        free_group(&rs->groups[i]);
    free_group(&rs->generic);
    free(rs->rules);
    free(rs->groups);
    free(rs->table);
    free(rs);
}

A3S_API int a3s_ruleset_new(a3s_ruleset **out, a3s_error *err) {
    if (!out)
        return a3s_fail(err, A3S_E_INVALID, 0, 0, "a3s_ruleset_new: NULL argument");
    *out = calloc(1, sizeof **out);
    if (!*out)
        return a3s_fail(err, A3S_E_NOMEM, 0, 0, "out of memory creating a rule set");
    return a3s_ok(err);
}

A3S_API size_t a3s_ruleset_count(const a3s_ruleset *rs) { return rs ? rs->len : 0; }

/* ---- parsing ----------------------------------------------------------- */

static char *concat(const char *a, size_t an, const char *b, size_t bn) {
    char *d = malloc(an + bn + 1);
    if (!d)
        return NULL;
    memcpy(d, a, an);
    memcpy(d + an, b, bn);
    d[an + bn] = '\0';
    return d;
}

/* Checks the rule's syntax and splits it. On success the tool and pattern
 * point into rule; the pattern is NULL for a bare tool name. */
static int split_rule(const char *rule, size_t len, const char **tool, size_t *tool_len,
                      const char **pat, size_t *pat_len, a3s_error *err) {
    if (len == 0)
        return a3s_fail(err, A3S_E_SYNTAX, 0, 0, "empty rule");
    const char *open = memchr(rule, '(', len);
    size_t tl = open ? (size_t)(open - rule) : len;
    *tool = rule;
    *tool_len = tl;
    *pat = NULL;
    *pat_len = 0;
    if (tl == 0)
        return a3s_fail(err, A3S_E_SYNTAX, 0, 0, "empty tool name before '('");
    for (size_t i = 0; i < tl; i++) {
        unsigned char c = (unsigned char)rule[i];
        if (c >= 0x80)
            return a3s_fail(err, A3S_E_SYNTAX, 0, (int64_t)i,
                            "non-ASCII byte in the tool name at offset %zu", i);
        if (c == ' ' || c == '\t') {
            if (open && i + 1 == tl)
                return a3s_fail(err, A3S_E_SYNTAX, 0, (int64_t)i,
                                "space before '(': write Tool(pattern) with no space");
            return a3s_fail(err, A3S_E_SYNTAX, 0, (int64_t)i,
                            "whitespace in the tool name at offset %zu", i);
        }
        if (c < 0x20 || c == 0x7f)
            return a3s_fail(err, A3S_E_SYNTAX, 0, (int64_t)i,
                            "control character in the tool name at offset %zu", i);
        if (c == ')')
            return a3s_fail(err, A3S_E_SYNTAX, 0, (int64_t)i,
                            "')' without a matching '(' at offset %zu", i);
    }
    if (!open)
        return A3S_OK;
    const char *close = NULL;
    for (const char *p = rule + len; p > open + 1;) {
        --p;
        if (*p == ')') {
            close = p;
            break;
        }
    }
    if (!close)
        return a3s_fail(err, A3S_E_SYNTAX, 0, (int64_t)len,
                        "missing ')': the pattern opened at offset %zu is never closed", tl);
    if (close != rule + len - 1)
        return a3s_fail(err, A3S_E_SYNTAX, 0, (int64_t)(close - rule + 1),
                        "text after the closing ')' at offset %zu", (size_t)(close - rule + 1));
    *pat = open + 1;
    *pat_len = (size_t)(close - open - 1);
    if (*pat_len == 0)
        return a3s_fail(err, A3S_E_SYNTAX, 0, (int64_t)tl + 1,
                        "empty pattern '()': write the bare tool name or Tool(*) for any "
                        "arguments");
    return A3S_OK;
}

static bool is_search_mode(const char *t, size_t n) {
    return (n == 4 && (!memcmp(t, "grep", 4) || !memcmp(t, "glob", 4) || !memcmp(t, "bm25", 4)));
}

static bool is_mcp_server(const char *t, size_t n) {
    if (n <= 5 || memcmp(t, "mcp__", 5) != 0)
        return false;
    for (size_t i = 5; i + 1 < n; i++)
        if (t[i] == '_' && t[i + 1] == '_')
            return false;
    return true;
}

/* Builds the canonical rule (lower-cased tool, search rewrite, flags). */
static int canonicalize(struct rule *r, const char *tool, size_t tl, const char *pat,
                        size_t pl) {
    r->tool = malloc(tl + 1);
    if (!r->tool)
        return A3S_E_NOMEM;
    for (size_t i = 0; i < tl; i++)
        r->tool[i] = (char)a3s_lower((unsigned char)tool[i]);
    r->tool[tl] = '\0';
    r->tool_len = tl;
    bool any = !pat || (pl == 1 && pat[0] == '*');

    if (is_search_mode(r->tool, tl)) {
        char mode[5];
        memcpy(mode, r->tool, 4);
        mode[4] = ' ';
        r->pattern = any ? concat(mode, 5, "**", 2) : concat(mode, 5, pat, pl);
        char *search = concat("search", 6, "", 0);
        if (!search || !r->pattern) {
            free(search);
            return A3S_E_NOMEM;
        }
        free(r->tool);
        r->tool = search;
        r->tool_len = 6;
        r->pattern_len = 5 + (any ? 2 : pl);
        r->flags |= A3S_RULE_REWRITTEN;
        any = false;
    } else {
        r->pattern = any ? concat("*", 1, "", 0) : concat(pat, pl, "", 0);
        if (!r->pattern)
            return A3S_E_NOMEM;
        r->pattern_len = any ? 1 : pl;
    }
    if (any)
        r->flags |= A3S_RULE_ANY_ARGS;
    else if (r->pattern_len >= 2 && r->pattern[r->pattern_len - 2] == ':' &&
             r->pattern[r->pattern_len - 1] == '*')
        r->flags |= A3S_RULE_PREFIX;
    if (memchr(r->tool, '*', r->tool_len))
        r->flags |= A3S_RULE_TOOL_GLOB;
    else if (is_mcp_server(r->tool, r->tool_len))
        r->flags |= A3S_RULE_MCP_SERVER;
    return A3S_OK;
}

A3S_API int a3s_ruleset_add(a3s_ruleset *rs, int list, const char *rule, size_t len, uint32_t id,
                            a3s_error *err) {
    if (!rs || (!rule && len))
        return a3s_fail(err, A3S_E_INVALID, 0, 0, "a3s_ruleset_add: NULL argument");
    if (list < A3S_LIST_DENY || list > A3S_LIST_ASK)
        return a3s_fail(err, A3S_E_INVALID, 0, list, "a3s_ruleset_add: unknown list %d", list);
    if (len > A3S_RULE_MAX_LENGTH)
        return a3s_fail(err, A3S_E_TOO_LARGE, 0, (int64_t)len,
                        "rule of %zu bytes exceeds the limit of %d", len, A3S_RULE_MAX_LENGTH);
    const char *tool = NULL, *pat = NULL;
    size_t tl = 0, pl = 0;
    int rc = split_rule(rule ? rule : "", len, &tool, &tl, &pat, &pl, err);
    if (rc)
        return rc;

    struct rule r = {.list = list, .id = id};
    if (canonicalize(&r, tool, tl, pat, pl) != A3S_OK)
        goto nomem;
    if (r.flags & A3S_RULE_TOOL_GLOB) {
        rc = a3s_glob_compile_internal(r.tool, r.tool_len, A3S_GLOB_TOOL_NAME, &r.tool_glob, err);
        if (rc) {
            free_rule(&r);
            return rc;
        }
    }
    r.first_byte = -1;
    if (!(r.flags & A3S_RULE_ANY_ARGS)) {
        rc = a3s_glob_compile_internal(r.pattern, r.pattern_len, 0, &r.arg_glob, err);
        if (rc) {
            free_rule(&r);
            return rc;
        }
        const unsigned char *pre, *suf;
        size_t n = a3s_glob_prefix(r.arg_glob, &pre), m = a3s_glob_suffix(r.arg_glob, &suf);
        r.first_byte = n ? pre[0] : -1;
        r.pre_len = n < 8 ? n : 8;
        r.suf_len = m < 8 ? m : 8;
        unsigned char ones[8] = {0}, bytes[8] = {0};
        memset(ones, 0xff, r.pre_len);
        memcpy(&r.pre_bits, pre, r.pre_len);
        memcpy(&r.pre_mask, ones, sizeof ones);
        memset(ones, 0, sizeof ones);
        memset(ones + 8 - r.suf_len, 0xff, r.suf_len);
        memcpy(bytes + 8 - r.suf_len, suf + m - r.suf_len, r.suf_len);
        memcpy(&r.suf_bits, bytes, sizeof bytes);
        memcpy(&r.suf_mask, ones, sizeof ones);
    }
    if (rs->len == rs->cap) {
        size_t cap = rs->cap ? 2 * rs->cap : 16;
        struct rule *rules = realloc(rs->rules, cap * sizeof *rules);
        if (!rules)
            goto nomem;
        rs->rules = rules;
        rs->cap = cap;
    }
    bool generic = r.flags & (A3S_RULE_TOOL_GLOB | A3S_RULE_MCP_SERVER);
    struct group *g = generic ? &rs->generic : get_or_add_group(rs, r.tool, r.tool_len);
    if (!g || reserve_index(&g->lists[list - 1]) != A3S_OK)
        goto nomem;
    /* Every list the rule joins has room before any of them changes. */
    for (size_t i = 0; generic && i < rs->ngroups; i++)
        if (covers_tool(&r, rs->groups[i].tool, rs->groups[i].tool_len) &&
            reserve_index(&rs->groups[i].all[list - 1]) != A3S_OK)
            goto nomem;
    if (!generic && reserve_index(&g->all[list - 1]) != A3S_OK)
        goto nomem;
    push_reserved(&g->lists[list - 1], rs->len, r.first_byte);
    for (size_t i = 0; generic && i < rs->ngroups; i++)
        if (covers_tool(&r, rs->groups[i].tool, rs->groups[i].tool_len))
            push_reserved(&rs->groups[i].all[list - 1], rs->len, r.first_byte);
    if (!generic)
        push_reserved(&g->all[list - 1], rs->len, r.first_byte);
    rs->rules[rs->len++] = r;
    if (list != A3S_LIST_ALLOW && !(r.flags & A3S_RULE_ANY_ARGS) && covers_tool(&r, "bash", 4))
        rs->bash_patterned = true;
    return a3s_ok(err);
nomem:
    free_rule(&r);
    return a3s_fail(err, A3S_E_NOMEM, 0, 0, "out of memory adding a rule");
}

A3S_API int a3s_ruleset_rule(const a3s_ruleset *rs, size_t index, a3s_rule_view *out,
                             a3s_error *err) {
    if (!rs || !out || out->struct_size < sizeof(a3s_rule_view))
        return a3s_fail(err, A3S_E_INVALID, 0, 0, "a3s_ruleset_rule: NULL argument or small view");
    if (index >= rs->len)
        return a3s_fail(err, A3S_E_RANGE, 0, (int64_t)index,
                        "rule index %zu is out of range (%zu rules)", index, rs->len);
    const struct rule *r = &rs->rules[index];
    out->list = r->list;
    out->id = r->id;
    out->flags = r->flags;
    out->tool = r->tool;
    out->tool_len = r->tool_len;
    out->pattern = r->pattern;
    out->pattern_len = r->pattern_len;
    return a3s_ok(err);
}

/* ---- matching ---------------------------------------------------------- */

/* Whether the rule's tool part names `tool` (already lower-case). */
static bool covers_tool(const struct rule *r, const char *tool, size_t tl) {
    if (r->flags & A3S_RULE_TOOL_GLOB)
        return a3s_glob_match(r->tool_glob, tool, tl) == 1;
    if (r->flags & A3S_RULE_MCP_SERVER) {
        bool same = tl == r->tool_len && memcmp(tool, r->tool, tl) == 0;
        bool child = tl >= r->tool_len + 2 && memcmp(tool, r->tool, r->tool_len) == 0 &&
                     tool[r->tool_len] == '_' && tool[r->tool_len + 1] == '_';
        return same || child;
    }
    return tl == r->tool_len && memcmp(tool, r->tool, tl) == 0;
}

/* 1 match, 0 no match, negative error. `tool` is already lower-case; NULL: the
 * rule is known to cover it (a rule of the tool's own group). */
static int rule_matches(const struct rule *r, const char *tool, size_t tl, const char *subject,
                        size_t sl) {
    if (r->first_byte >= 0 && (sl == 0 || (unsigned char)subject[0] != r->first_byte))
        return 0;
    if (tool && !covers_tool(r, tool, tl))
        return 0;
    if (r->flags & A3S_RULE_ANY_ARGS)
        return 1;
    return a3s_glob_match(r->arg_glob, subject, sl);
}

/* First match (lowest rule index) of one list within one group, or SIZE_MAX.
 * `tool` NULL: the group is the tool's own, whose rules all cover it. */
static int first_in(const a3s_ruleset *rs, const struct index_list *l, const char *tool,
                    size_t tl, const char *subject, size_t sl, size_t *found) {
    /* The rules that may match, in rule order: the merge of two chains, the subject's
     * first byte's and the any-byte one (an empty subject has only the latter). */
    size_t a = sl && l->len ? l->chains[(unsigned char)subject[0]] : 0;
    size_t b = l->len ? l->chains[CHAIN_ANY] : 0;
    uint64_t head = 0, tail = 0; /* the subject's first and last 8 bytes (fewer: zeros) */
    if (sl >= 8) {
        memcpy(&head, subject, 8);
        memcpy(&tail, subject + sl - 8, 8);
    } else {
        unsigned char last[8] = {0};
        memcpy(&head, subject, sl);
        memcpy(last + 8 - sl, subject, sl);
        memcpy(&tail, last, sizeof last);
    }
    while (a || b) {
        size_t i;
        if (a && (!b || a < b)) {
            i = a - 1;
            a = l->next[i];
        } else {
            i = b - 1;
            b = l->next[i];
        }
        const struct rule *r = &rs->rules[l->items[i]];
        if ((r->pre_len | r->suf_len) &&
            (sl < r->pre_len || (head & r->pre_mask) != r->pre_bits || sl < r->suf_len ||
             (tail & r->suf_mask) != r->suf_bits))
            continue;
        /* rule_matches, its first-byte test done by the filter above */
        if (tool && !covers_tool(r, tool, tl))
            continue;
        int m = r->flags & A3S_RULE_ANY_ARGS ? 1 : a3s_glob_match(r->arg_glob, subject, sl);
        if (m < 0)
            return m;
        if (m) {
            *found = l->items[i];
            return A3S_OK;
        }
    }
    *found = SIZE_MAX;
    return A3S_OK;
}

#define TOOL_STACK 256

/* Lower-cases the call's tool name into buf (or a heap copy in *heap). */
static const char *fold_tool(const char *tool, size_t tl, char *buf, char **heap) {
    char *dst = buf;
    *heap = NULL;
    if (tl > TOOL_STACK) {
        dst = *heap = malloc(tl);
        if (!dst)
            return NULL;
    }
    for (size_t i = 0; i < tl; i++)
        dst[i] = (char)a3s_lower((unsigned char)tool[i]);
    return dst;
}

/* The first match of the lists in `skip_allow` ? {deny, ask} : {deny, allow, ask}, in
 * that order, for one (folded tool, subject). */
static int check_lists(const a3s_ruleset *rs, const char *t, size_t tool_len, const char *s,
                       size_t subject_len, bool skip_allow, a3s_match *out) {
    const struct group *g = find_group(rs, t, tool_len);
    out->list = A3S_LIST_NONE;
    out->id = 0;
    out->index = 0;
    int rc = A3S_OK;
    for (int l = 0; l < NLISTS && out->list == A3S_LIST_NONE; l += skip_allow ? 2 : 1) {
        size_t hit = SIZE_MAX;
        if (g)
            rc = first_in(rs, &g->all[l], NULL, tool_len, s, subject_len, &hit);
        else
            rc = first_in(rs, &rs->generic.lists[l], t, tool_len, s, subject_len, &hit);
        if (rc != A3S_OK)
            break;
        if (hit != SIZE_MAX) {
            out->list = l + 1;
            out->id = rs->rules[hit].id;
            out->index = hit;
        }
    }
    if (rc != A3S_OK)
        out->list = A3S_LIST_NONE;
    return rc;
}

/* The first deny, else allow, else ask match for one (folded tool, subject). */
static int check_one(const a3s_ruleset *rs, const char *t, size_t tool_len, const char *s,
                     size_t subject_len, a3s_match *out) {
    return check_lists(rs, t, tool_len, s, subject_len, false, out);
}

/* The first deny, else ask match of a bash spelling (allow rules cannot decide an alias). */
static int check_strict(const a3s_ruleset *rs, const char *s, size_t n, a3s_match *out) {
    return check_lists(rs, "bash", 4, s, n, true, out);
}

static int check_bash(const a3s_ruleset *rs, const char *line, size_t len, a3s_match *out);
static int matches_bash(const a3s_ruleset *rs, const char *line, size_t len, bool *matched);

static bool is_bash(const char *t, size_t tl) { return tl == 4 && memcmp(t, "bash", 4) == 0; }

A3S_API int a3s_ruleset_check(const a3s_ruleset *rs, const char *tool, size_t tool_len,
                              const char *subject, size_t subject_len, a3s_match *out,
                              a3s_error *err) {
    if (!rs || !out || out->struct_size < sizeof(a3s_match) || (!tool && tool_len) ||
        (!subject && subject_len))
        return a3s_fail(err, A3S_E_INVALID, 0, 0, "a3s_ruleset_check: invalid argument");
    char buf[TOOL_STACK], *heap;
    const char *t = fold_tool(tool ? tool : "", tool_len, buf, &heap);
    if (!t)
        return a3s_fail(err, A3S_E_NOMEM, 0, 0, "out of memory checking a call");
    const char *s = subject ? subject : "";
    int rc = is_bash(t, tool_len) ? check_bash(rs, s, subject_len, out)
                                  : check_one(rs, t, tool_len, s, subject_len, out);
    free(heap);
    if (rc != A3S_OK) {
        out->list = A3S_LIST_NONE;
        return a3s_fail(err, rc, 0, 0, "out of memory checking a call");
    }
    return a3s_ok(err);
}

A3S_API int a3s_ruleset_matches(const a3s_ruleset *rs, const char *tool, size_t tool_len,
                                const char *subject, size_t subject_len, size_t *indices,
                                size_t cap, size_t *count, a3s_error *err) {
    if (!rs || !count || (!indices && cap) || (!tool && tool_len) || (!subject && subject_len))
        return a3s_fail(err, A3S_E_INVALID, 0, 0, "a3s_ruleset_matches: invalid argument");
    char buf[TOOL_STACK], *heap;
    const char *t = fold_tool(tool ? tool : "", tool_len, buf, &heap);
    if (!t)
        return a3s_fail(err, A3S_E_NOMEM, 0, 0, "out of memory checking a call");
    const char *s = subject ? subject : "";
    size_t n = 0;
    bool *matched = is_bash(t, tool_len) ? calloc(rs->len ? rs->len : 1, sizeof *matched) : NULL;
    int rc = A3S_OK;
    if (is_bash(t, tool_len))
        rc = matched ? matches_bash(rs, s, subject_len, matched) : A3S_E_NOMEM;
    for (size_t i = 0; i < rs->len && rc == A3S_OK; i++) {
        int m = matched ? matched[i] : rule_matches(&rs->rules[i], t, tool_len, s, subject_len);
        if (m < 0)
            rc = m;
        if (m > 0) {
            if (n < cap)
                indices[n] = i;
            n++;
        }
    }
    free(matched);
    free(heap);
    if (rc != A3S_OK)
        return a3s_fail(err, rc, 0, 0, "out of memory matching a long pattern");
    *count = n;
    if (n > cap)
        return a3s_fail(err, A3S_E_BUFFER, 0, (int64_t)n,
                        "%zu rules match but the buffer holds %zu", n, cap);
    return a3s_ok(err);
}

/* ---- bash: decided per simple command (bash_split.c) ------------------------- */

A3S_API int a3s_ruleset_set_default(a3s_ruleset *rs, int list, a3s_error *err) {
    if (!rs || list < A3S_LIST_NONE || list > A3S_LIST_ASK)
        return a3s_fail(err, A3S_E_INVALID, 0, list, "a3s_ruleset_set_default: invalid argument");
    rs->default_list = list;
    return a3s_ok(err);
}

static int strictness(int list) {
    return list == A3S_LIST_DENY ? 0 : list == A3S_LIST_ASK ? 1 : 2;
}

struct bash_cmd_verdict {
    int32_t list, why;
    size_t rule;
    a3s_str text, spelling;
};

struct a3s_bash_verdict {
    int32_t list, why;
    size_t rule;
    uint64_t flags;
    struct bash_cmd_verdict *cmds;
    size_t ncmds;
    bool *matched; /* per rule */
    size_t nrules;
    a3s_bash_split *split;
};

/* The list of one spelling, and every rule it matches when `matched` is set;
 * `strict`: only deny and ask rules can decide it (an alias). */
static int bash_one(const a3s_ruleset *rs, a3s_str s, a3s_match *m, bool *matched, bool strict) {
    int rc = strict ? check_strict(rs, s.p, s.n, m) : check_one(rs, "bash", 4, s.p, s.n, m);
    for (size_t i = 0; matched && rc == A3S_OK && i < rs->len; i++) {
        int hit = rule_matches(&rs->rules[i], "bash", 4, s.p, s.n);
        if (hit < 0)
            rc = hit;
        else if (hit)
            matched[i] = true;
    }
    return rc;
}

/* Whether a deny or ask rule for bash could match some text that starts
 * with s[0..n): the text after it is not shown by the line (`git $x`,
 * `gi? push`). 1 yes, 0 no, negative: no memory. */
static int viable_strict(const a3s_ruleset *rs, const char *s, size_t n) {
    const struct group *g = find_group(rs, "bash", 4);
    for (int l = 0; l < NLISTS; l += 2) { /* deny, ask */
        const struct index_list *lists[2] = {g ? &g->lists[l] : NULL, &rs->generic.lists[l]};
        for (int q = 0; q < 2; q++) {
            for (size_t i = 0; lists[q] && i < lists[q]->len; i++) {
                const struct rule *r = &rs->rules[lists[q]->items[i]];
                if (q == 1 && !covers_tool(r, "bash", 4))
                    continue;
                int v = (r->flags & A3S_RULE_ANY_ARGS) ? 1 : a3s_glob_viable(r->arg_glob, s, n);
                if (v != 0)
                    return v;
            }
        }
    }
    return 0;
}

/* How a command the line does not show is decided: at least ask when a deny
 * or ask rule covers bash; allowed when an allow rule takes any bash
 * command; else the default. */
static int unknown_command(const a3s_ruleset *rs, int dflt) {
    const struct group *g = find_group(rs, "bash", 4);
    bool allow_any = false;
    for (int l = 0; l < NLISTS; l++) {
        const struct index_list *lists[2] = {g ? &g->lists[l] : NULL, &rs->generic.lists[l]};
        for (int q = 0; q < 2; q++) {
            for (size_t i = 0; lists[q] && i < lists[q]->len; i++) {
                const struct rule *r = &rs->rules[lists[q]->items[i]];
                if (q == 1 && !covers_tool(r, "bash", 4))
                    continue;
                if (l + 1 != A3S_LIST_ALLOW)
                    return A3S_LIST_ASK;
                allow_any = allow_any || (r->flags & A3S_RULE_ANY_ARGS) ||
                            (r->pattern_len == 2 && memcmp(r->pattern, "**", 2) == 0);
            }
        }
    }
    return allow_any ? A3S_LIST_ALLOW : dflt == A3S_LIST_DENY ? A3S_LIST_DENY : dflt;
}

/* Fills v from the split sp of the line (and, when v->matched is set, the rules matched). */
static int decide_split(const a3s_ruleset *rs, const char *line, size_t len,
                        const a3s_bash_split *sp, struct a3s_bash_verdict *v, bool per_command) {
    int dflt = rs->default_list ? rs->default_list : A3S_LIST_ASK;
    int rc;
    if (per_command && sp->ncmds) {
        v->cmds = calloc(sp->ncmds, sizeof *v->cmds);
        if (!v->cmds)
            return A3S_E_NOMEM;
    }
    a3s_match whole = {.struct_size = sizeof whole};
    if ((rc = bash_one(rs, (a3s_str){line, len}, &whole, v->matched, false)) != A3S_OK)
        return rc;
    bool explicit = sp->ncmds > 0;
    v->list = -1;
    for (size_t c = 0; c < sp->ncmds; c++) {
        const a3s_bash_cmd *cmd = &sp->cmds[c];
        struct bash_cmd_verdict best = {-1, A3S_BASH_WHY_DEFAULT, SIZE_MAX, cmd->shown, cmd->shown};
        for (size_t k = 0; k < cmd->nspellings + cmd->naliases; k++) {
            bool alias = k >= cmd->nspellings;
            a3s_str s = alias ? cmd->aliases[k - cmd->nspellings] : cmd->spellings[k];
            size_t open = alias ? cmd->alias_open[k - cmd->nspellings] : cmd->spelling_open[k];
            a3s_match m = whole;
            bool *marks = alias ? NULL : v->matched;
            bool same_as_line = !alias && s.p == line && s.n == len; /* already checked */
            if (!same_as_line && (rc = bash_one(rs, s, &m, marks, alias)) != A3S_OK)
                return rc;
            bool strict = m.list == A3S_LIST_DENY || m.list == A3S_LIST_ASK;
            if (k == 0 && cmd->folded.p && !strict && m.list != A3S_LIST_ALLOW) {
                a3s_match f = {.struct_size = sizeof f}; /* `git status ` read as `git status` */
                if ((rc = check_one(rs, "bash", 4, cmd->folded.p, cmd->folded.n, &f)) != A3S_OK)
                    return rc;
                if (f.list == A3S_LIST_ALLOW) {
                    m = f;
                    if ((rc = bash_one(rs, cmd->folded, &f, v->matched, false)) != A3S_OK)
                        return rc;
                }
            }
            if (!strict && open != SIZE_MAX) { /* the rest is any text: could a deny or ask rule match? */
                int viable = viable_strict(rs, s.p, open < s.n ? open : s.n);
                if (viable < 0)
                    return viable;
                if (viable) {
                    if (best.list < 0 || strictness(A3S_LIST_ASK) < strictness(best.list))
                        best = (struct bash_cmd_verdict){A3S_LIST_ASK, A3S_BASH_WHY_DYNAMIC, SIZE_MAX,
                                                         cmd->shown, s};
                    continue;
                }
            }
            if (alias && !strict)
                continue;
            if (alias && v->matched && (rc = bash_one(rs, s, &m, v->matched, true)) != A3S_OK)
                return rc;
            int d = m.list ? m.list : dflt;
            if (best.list < 0 || strictness(d) < strictness(best.list))
                best = (struct bash_cmd_verdict){d, m.list ? A3S_BASH_WHY_RULE : A3S_BASH_WHY_DEFAULT,
                                                 m.list ? m.index : SIZE_MAX, cmd->shown, s};
        }
        if (cmd->dynamic && rs->bash_patterned && best.list == A3S_LIST_ALLOW)
            best = (struct bash_cmd_verdict){A3S_LIST_ASK, A3S_BASH_WHY_DYNAMIC, SIZE_MAX,
                                             cmd->shown, cmd->shown};
        explicit = explicit && best.list == A3S_LIST_ALLOW && best.why == A3S_BASH_WHY_RULE;
        bool tie_by_rule = v->list == best.list && v->why == A3S_BASH_WHY_DEFAULT &&
                           best.why == A3S_BASH_WHY_RULE;
        if (v->list < 0 || strictness(best.list) < strictness(v->list) || tie_by_rule) {
            v->list = best.list;
            v->why = best.why;
            v->rule = best.rule;
        }
        if (v->cmds)
            v->cmds[c] = best;
    }
    v->ncmds = v->cmds ? sp->ncmds : 0;
    bool whole_strict = whole.list == A3S_LIST_DENY || whole.list == A3S_LIST_ASK;
    if (v->list < 0 || (whole_strict && strictness(whole.list) < strictness(v->list))) {
        v->list = whole.list ? whole.list : dflt;
        v->why = whole.list ? A3S_BASH_WHY_RULE : A3S_BASH_WHY_DEFAULT;
        v->rule = whole.list ? whole.index : SIZE_MAX;
    }
    if (sp->opaque && v->list == A3S_LIST_ALLOW) { /* code the line does not show */
        int unknown = unknown_command(rs, dflt);
        if (unknown != A3S_LIST_ALLOW) {
            v->list = unknown == A3S_LIST_DENY ? A3S_LIST_DENY : A3S_LIST_ASK;
            v->why = A3S_BASH_WHY_DYNAMIC;
            v->rule = SIZE_MAX;
        }
    }
    if (!sp->complete && strictness(A3S_LIST_ASK) < strictness(v->list)) {
        v->list = A3S_LIST_ASK;
        v->why = A3S_BASH_WHY_INCOMPLETE;
        v->rule = SIZE_MAX;
    }
    v->flags = (sp->complete ? 0 : A3S_BASH_INCOMPLETE) | (explicit ? A3S_BASH_EXPLICIT : 0);
    return A3S_OK;
}

/* Fills v (its split and, when v->matched is set, the rules matched). */
static int decide_bash(const a3s_ruleset *rs, const char *line, size_t len,
                       struct a3s_bash_verdict *v, bool per_command) {
    int rc = a3s_bash_split_line(line, len, &v->split);
    return rc == A3S_OK ? decide_split(rs, line, len, v->split, v, per_command) : rc;
}

#define PLAIN_MAX 32 /* commands of a line read without the splitter */

/* The commands of a line of plain commands (a3s_bash_is_plain) joined by " && ", " || ",
 * " | " or "; " (at least two, at most PLAIN_MAX), into seg; 0 for any other line. Such a
 * line's split is exactly those commands, each spelled as written: a plain command has no
 * expansion, assignment, quote or redirection, and is no wrapper, shell, keyword or builtin
 * that changes how a later command reads (alias, trap, hash, source, declare ...), so no
 * command of the line reads another differently. */
/* Whether a plain command (a3s_bash_is_plain) may hold the byte ch anywhere. */
static bool plain_byte(unsigned char ch) { return ch == ' ' || a3s_bash_plain_bytes[ch]; }

static size_t plain_commands(const char *line, size_t len, a3s_str *seg) {
    size_t n = 0, start = 0;
    for (size_t i = 0; i <= len; i++) {
        size_t end, next;
        if (i == len) {
            end = len;
            next = len;
        } else if (line[i] == ';') {
            if (i + 1 >= len || line[i + 1] != ' ')
                return 0;
            end = i;
            next = i + 2;
        } else if (line[i] == '&' || line[i] == '|') {
            bool twice = i + 1 < len && line[i + 1] == line[i];
            if (line[i] == '&' && !twice)
                return 0;
            size_t w = twice ? 2 : 1;
            if (i == 0 || line[i - 1] != ' ' || i + w >= len || line[i + w] != ' ')
                return 0;
            end = i - 1;
            next = i + w + 1;
        } else if (plain_byte((unsigned char)line[i])) {
            continue;
        } else {
            return 0; /* a byte no plain command has: the line is not one (said early) */
        }
        if (n == PLAIN_MAX || end <= start || !a3s_bash_is_plain(line + start, end - start))
            return 0;
        seg[n++] = (a3s_str){line + start, end - start};
        if (i == len)
            break;
        start = next;
        i = next - 1;
    }
    return n >= 2 ? n : 0;
}

static void verdict_release(struct a3s_bash_verdict *v) {
    a3s_bash_split_free(v->split);
    free(v->cmds);
    free(v->matched);
}

static int check_bash(const a3s_ruleset *rs, const char *line, size_t len, a3s_match *out) {
    if (a3s_bash_is_plain(line, len)) /* one command, one spelling: the line */
        return check_one(rs, "bash", 4, line, len, out);
    struct a3s_bash_verdict v = {0};
    a3s_str seg[PLAIN_MAX];
    size_t open[PLAIN_MAX];
    a3s_bash_cmd cmds[PLAIN_MAX];
    size_t nseg = plain_commands(line, len, seg);
    int rc;
    if (nseg) { /* the split the splitter would make, without it */
        for (size_t k = 0; k < nseg; k++) {
            open[k] = SIZE_MAX;
            cmds[k] = (a3s_bash_cmd){.shown = seg[k], .spellings = &seg[k], .nspellings = 1,
                                     .spelling_open = &open[k]};
        }
        a3s_bash_split sp = {.cmds = cmds, .ncmds = nseg, .complete = true};
        rc = decide_split(rs, line, len, &sp, &v, false);
    } else {
        rc = decide_bash(rs, line, len, &v, false);
    }
    if (rc == A3S_OK) {
        /* A line no rule and no floor decided reads as "no rule matched": the default applies. */
        bool by_default = v.why == A3S_BASH_WHY_DEFAULT;
        out->list = by_default ? A3S_LIST_NONE : v.list;
        out->index = v.rule == SIZE_MAX ? SIZE_MAX : v.rule;
        out->id = v.rule == SIZE_MAX ? 0 : rs->rules[v.rule].id;
    }
    verdict_release(&v);
    return rc;
}

static int matches_bash(const a3s_ruleset *rs, const char *line, size_t len, bool *matched) {
    if (a3s_bash_is_plain(line, len)) {
        a3s_match m = {.struct_size = sizeof m};
        return bash_one(rs, (a3s_str){line, len}, &m, matched, false);
    }
    struct a3s_bash_verdict v = {.matched = matched};
    int rc = decide_bash(rs, line, len, &v, false);
    v.matched = NULL; /* the caller's */
    verdict_release(&v);
    return rc;
}

A3S_API int a3s_ruleset_check_bash(const a3s_ruleset *rs, const char *line, size_t len,
                                   a3s_bash_verdict **out, a3s_error *err) {
    if (!rs || !out || (!line && len))
        return a3s_fail(err, A3S_E_INVALID, 0, 0, "a3s_ruleset_check_bash: invalid argument");
    *out = NULL;
    struct a3s_bash_verdict *v = calloc(1, sizeof *v);
    if (v)
        v->matched = calloc(rs->len ? rs->len : 1, sizeof *v->matched);
    int rc = v && v->matched ? decide_bash(rs, line ? line : "", len, v, true) : A3S_E_NOMEM;
    if (rc != A3S_OK) {
        a3s_bash_verdict_free(v);
        return a3s_fail(err, rc, 0, 0, "out of memory deciding a bash command");
    }
    v->nrules = rs->len;
    *out = v;
    return a3s_ok(err);
}

A3S_API int a3s_bash_verdict_list(const a3s_bash_verdict *v) {
    return v ? v->list : A3S_LIST_NONE;
}

A3S_API uint64_t a3s_bash_verdict_flags(const a3s_bash_verdict *v) { return v ? v->flags : 0; }

A3S_API size_t a3s_bash_verdict_count(const a3s_bash_verdict *v) { return v ? v->ncmds : 0; }

A3S_API int a3s_bash_verdict_command(const a3s_bash_verdict *v, size_t index,
                                     a3s_bash_command *out, a3s_error *err) {
    if (!v || !out || out->struct_size < sizeof *out)
        return a3s_fail(err, A3S_E_INVALID, 0, 0, "a3s_bash_verdict_command: invalid argument");
    if (index >= v->ncmds)
        return a3s_fail(err, A3S_E_RANGE, 0, (int64_t)v->ncmds, "command %zu of %zu", index,
                        v->ncmds);
    const struct bash_cmd_verdict *c = &v->cmds[index];
    out->list = c->list;
    out->why = c->why;
    out->rule = c->rule;
    out->text = c->text.p;
    out->text_len = c->text.n;
    out->spelling = c->spelling.p;
    out->spelling_len = c->spelling.n;
    return a3s_ok(err);
}

A3S_API int a3s_bash_verdict_matched(const a3s_bash_verdict *v, size_t *indices, size_t cap,
                                     size_t *count, a3s_error *err) {
    if (!v || !count || (!indices && cap))
        return a3s_fail(err, A3S_E_INVALID, 0, 0, "a3s_bash_verdict_matched: invalid argument");
    size_t n = 0;
    for (size_t i = 0; i < v->nrules; i++) {
        if (!v->matched[i])
            continue;
        if (n < cap)
            indices[n] = i;
        n++;
    }
    *count = n;
    if (n > cap)
        return a3s_fail(err, A3S_E_BUFFER, 0, (int64_t)n,
                        "%zu rules match but the buffer holds %zu", n, cap);
    return a3s_ok(err);
}

A3S_API void a3s_bash_verdict_free(a3s_bash_verdict *v) {
    if (!v)
        return;
    verdict_release(v);
    free(v);
}
