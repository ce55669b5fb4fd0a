/* bash_split.c - the simple commands of a bash line, with their spellings.
 *
 * A rule such as bash(git push**) is written against one program and its
 * arguments, but a line can run that program in many spellings: after other
 * commands (`cd . && git push`), behind assignments and wrappers (`FOO=1 env
 * -i command git push`), escaped or quoted (`\git push`), with git's global
 * options (`git -c x=y push`), in a substitution, or as code handed to a
 * shell (`bash -c 'git push'`, `echo git push | sh`, `eval ...`). This file
 * reads the line the way bash would tokenize it and gives every simple
 * command it finds:
 *
 *  - spellings: the command as written, and as it reads with each thing that
 *    does not change the program removed (assignments, wrappers and their
 *    options, git's global options), and with variables the line itself
 *    assigns expanded. A deny or ask rule that matches any applies; an allow
 *    rule covers the command only if it matches all of them.
 *  - aliases: forms only deny and ask rules see: quotes and backslashes
 *    removed, and the program's name without its directory, lower-case.
 *  - dynamic: the program (or the code a shell runs) comes from a value the
 *    line does not show (`$CMD push`, `curl ... | sh`).
 *
 * Nothing here recurses: code found inside the line (substitutions, `sh -c`
 * arguments, here-documents fed to a shell) is queued as a further source
 * with its depth, and every bound (depth, sources, commands, bytes, the
 * quote stack) ends the walk with the split marked incomplete, which the
 * rule set decides as at least ask. docs/policy.md, "How a bash command is
 * decided", is the prose reference.
 */
#include "bash_split.h"

#include "internal.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DEPTH A3S_BASH_MAX_DEPTH /* code inside code inside ... */
#define MAX_SOURCES 256  /* pieces of code read per line */
#define MAX_CMDS 1024    /* simple commands per line */
#define MAX_STACK 256    /* quotes and parentheses open while finding a substitution's end */
#define MAX_STAGES 16    /* wrappers followed per command */
#define MAX_HEREDOCS 64  /* here-documents pending on one line of code */
#define MAX_VARS 256     /* assignments remembered per line */
#define MAX_FORMS 64     /* spellings + aliases per command */
#define MAX_VALUES 8     /* values of one variable followed (x=a; x=b, for x in a b) */
#define ARENA_SLACK (1u << 20)
#define VEC_SLAB 16384 /* stack bytes lent to a line's vectors */
#define BUF_SLAB 1024  /* and to each of its two string buffers */

/* ---- memory ------------------------------------------------------------ */

struct chunk {
    struct chunk *next;
    size_t used, cap;
    _Alignas(16) char data[];
};

struct arena {
    struct chunk *head;
    struct chunk *own; /* allocated with the arena (freed with it), or NULL */
    size_t total, cap;
    bool over, nomem;
};

static void *arena_alloc(struct arena *a, size_t n) {
    n = (n + 15) & ~(size_t)15;
    if (n > a->cap - a->total) {
        a->over = true;
        return NULL;
    }
    struct chunk *c = a->head;
    if (!c || c->cap - c->used < n) {
        size_t cap = n > 16384 ? n : 16384;
        c = malloc(sizeof *c + cap);
        if (!c) {
            a->nomem = true;
            return NULL;
        }
        c->next = a->head;
        c->used = 0;
        c->cap = cap;
        a->head = c;
    }
    void *p = c->data + c->used;
    c->used += n;
    a->total += n;
    return p;
}

/* Counts n bytes against a's bound as arena_alloc would, without taking them (a
 * string already held): the bound trips at the same byte either way. */
static bool arena_charge(struct arena *a, size_t n) {
    n = (n + 15) & ~(size_t)15;
    if (n > a->cap - a->total) {
        a->over = true;
        return false;
    }
    a->total += n;
    return true;
}

/* Frees the chunks a took (not the arena: it lives in its split's block). */
static void arena_release(struct arena *a) {
    for (struct chunk *c = a->head, *next; c; c = next) {
        next = c->next;
        if (c != a->own)
            free(c);
    }
}

static a3s_str arena_str(struct arena *a, const char *p, size_t n) {
    char *d = arena_alloc(a, n + 1);
    if (!d)
        return (a3s_str){NULL, 0};
    if (n)
        memcpy(d, p, n);
    d[n] = '\0';
    return (a3s_str){d, n};
}

/* A growable vector of fixed-size items (malloc'd; freed with the walk). Its first
 * items may be lent by the caller's stack (vec_lend): no allocation for a short line. */
struct vec {
    void *items;
    size_t len, cap, size;
    bool lent; /* items is not the heap's: copied out on growth, never freed */
};

/* Lends v the next `want` items' room of the slab [*at, end), if it has them. */
static void vec_lend(struct vec *v, unsigned char **at, const unsigned char *end, size_t want) {
    size_t bytes = (want * v->size + 15) & ~(size_t)15;
    if ((size_t)(end - *at) < bytes)
        return;
    v->items = *at;
    v->cap = want;
    v->lent = true;
    *at += bytes;
}

static void vec_release(struct vec *v) {
    if (!v->lent)
        free(v->items);
}

static inline void *vec_push(struct vec *v, bool *nomem) {
    if (v->len == v->cap) {
        size_t cap = v->cap ? 2 * v->cap : 16;
        void *p = v->lent ? malloc(cap * v->size) : realloc(v->items, cap * v->size);
        if (!p) {
            *nomem = true;
            return NULL;
        }
        if (v->lent)
            memcpy(p, v->items, v->len * v->size);
        v->lent = false;
        v->items = p;
        v->cap = cap;
    }
    void *item = (char *)v->items + v->len * v->size;
    memset(item, 0, v->size);
    v->len++;
    return item;
}

#define VEC_AT(v, type, i) (((type *)(v).items)[i])

/* A string being built (malloc'd, reused). */
struct buf {
    char *p;
    size_t n, cap;
    bool nomem;
    bool lent; /* p is the caller's stack: copied out on growth, never freed */
};

/* Room for n more bytes in b; false (and b->nomem) when there is none. */
static bool buf_grow(struct buf *b, size_t n) {
    if (b->nomem)
        return false;
    size_t cap = b->cap ? b->cap : 256;
    while (cap - b->n < n)
        cap *= 2;
    char *p = b->lent ? malloc(cap) : realloc(b->p, cap);
    if (!p) {
        b->nomem = true;
        return false;
    }
    if (b->lent && b->n)
        memcpy(p, b->p, b->n);
    b->lent = false;
    b->p = p;
    b->cap = cap;
    return true;
}

/* Inline: most adds fit, and the reader adds a few bytes at a time. */
static inline void buf_add(struct buf *b, const char *s, size_t n) {
    if (b->nomem || n == 0 || (n > b->cap - b->n && !buf_grow(b, n)))
        return;
    memcpy(b->p + b->n, s, n);
    b->n += n;
}

static inline void buf_ch(struct buf *b, char c) {
    if (b->nomem || (b->n == b->cap && !buf_grow(b, 1)))
        return;
    b->p[b->n++] = c;
}

/* ---- what the lexer produces ---------------------------------------------- */

/* P_DYN: an expansion whose value the line never shows ($1, ${x:-y}, <(...)),
 * which may be no word at all; P_GLOB: text the line does not show that is
 * never nothing: an unquoted pattern (`*`, `?`, `[...]`, which stays as
 * written when no file matches) or an arithmetic expansion `$((...))`. */
enum part_kind { P_LIT, P_VAR, P_SUB, P_DYN, P_GLOB };

struct part {
    int kind;
    a3s_str text; /* P_LIT: the bytes; P_VAR: the name; P_SUB: the output when known */
    a3s_str src;  /* as written */
    a3s_str dflt; /* P_DYN ${x:-word}, ${x=word}...: word, when it is plain text */
    bool known;   /* P_SUB: text is the substitution's output */
    bool quoted;  /* inside double quotes: its value is not split or globbed */
};

struct word {
    a3s_str src;
    size_t part0, nparts;
    size_t sub0, sub1; /* the sources its substitutions queued */
    bool plain; /* no quote, backslash or expansion: src is the value */
};

enum { T_WORD, T_OP, T_REDIR, T_ARITH }; /* T_ARITH: a whole `(( ... ))` */
enum { OP_NL, OP_SEMI, OP_AMP, OP_AND, OP_OR, OP_PIPE, OP_LPAREN, OP_RPAREN, OP_DSEMI };
enum { R_OTHER, R_IN, R_HEREDOC, R_HERESTRING };

struct token {
    int type, op, rkind;
    size_t word;   /* T_WORD: the word; T_REDIR: the target word (SIZE_MAX: none) */
    a3s_str src;   /* T_REDIR: the operator with its fd */
    a3s_str body;  /* R_HEREDOC: the document */
    bool quoted;   /* R_HEREDOC: the delimiter was quoted (no expansion) */
};

struct source {
    a3s_str code;
    int depth;
    size_t parent; /* SIZE_MAX for the line itself */
    int via;       /* A3S_VIA_*: what runs it */
    a3s_str via_name;
    size_t t0, t1; /* its tokens */
};

struct rcmd {
    size_t source;
    size_t w0, nw; /* into ctx.cmdwords */
    size_t r0, nr; /* into ctx.cmdredirs */
    size_t pipe_prev; /* the command whose output this one reads, or SIZE_MAX */
    bool whole;
    bool piped;       /* its stdin is a pipe (pipe_prev may be unknown: `(a) | b`) */
    size_t upstream;  /* the last command before the pipe, or SIZE_MAX */
    size_t st0, nst;  /* into ctx.stages: the word of each program it runs */
    bool dynamic;
};

/* A program a command runs: its word, and the directory a wrapper there runs
 * the next one in (env -C DIR), or {NULL}. */
struct stage {
    size_t word;
    a3s_str dir;
};

/* Redirections of a command without words (`> /dev/sda`): no program runs,
 * but the file is opened; kept for the guardrail. */
struct bare {
    size_t source, r0, nr; /* into ctx.cmdredirs */
};

struct var {
    a3s_str name, value;
    bool known;
    size_t source;
};

struct ctx {
    const char *line;
    size_t len;
    struct arena *mem;
    struct vec sources, words, parts, tokens, rcmds, cmdwords, cmdredirs, vars, out;
    struct buf lit, tmp;
    bool incomplete, nomem, unreliable_env;
    bool opaque;    /* the line may run code it does not show (a sourced file, a trap, an alias) */
    bool in_dquote; /* the lexer is inside double quotes */
    struct vec arith; /* names read in an arithmetic context (a3s_str + source) */
    size_t open;      /* render: where the first text the line does not show starts */
    bool split_word;  /* word_text: an unquoted value held a blank (bash splits it) */
    size_t values; /* the most values a variable rendered so far had */
    size_t pushed_by_top; /* sources queued while reading the line itself */
    bool guard;    /* a3s_bash_read_line: keep the structure for the guardrail */
    bool bounded;  /* a bound ended the reading (not a malformed line) */
    struct vec stages, bares;
};

static bool failed(struct ctx *c) {
    return c->nomem || c->mem->nomem || c->lit.nomem || c->tmp.nomem;
}

/* ---- character classes --------------------------------------------------- */

static bool is_blank(char ch) { return ch == ' ' || ch == '\t'; }

static bool is_meta(char ch) {
    return ch == ' ' || ch == '\t' || ch == '\n' || ch == ';' || ch == '&' || ch == '|' ||
           ch == '<' || ch == '>' || ch == '(' || ch == ')';
}

static bool is_name_start(char ch) {
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || ch == '_';
}

static bool is_name_char(char ch) { return is_name_start(ch) || (ch >= '0' && ch <= '9'); }

/* s is the NUL-terminated lit: compared byte by byte, so that most calls end at the first. */
static inline bool eq(a3s_str s, const char *lit) {
    if (!s.p)
        return false;
    for (size_t k = 0; k < s.n; k++)
        if (lit[k] == '\0' || lit[k] != s.p[k])
            return false;
    return lit[s.n] == '\0';
}

static inline bool eq_n(a3s_str s, const char *lit, size_t n) {
    return s.p && s.n == n && memcmp(s.p, lit, n) == 0;
}

/* s is the string literal lit (only a literal compiles: "" lit): its length is known. */
#define EQ(s, lit) eq_n((s), "" lit, sizeof(lit) - 1)

/* Whether p[0..n) equals lit[0..n) ignoring ASCII case. */
static bool prefix_fold_eq(const char *p, const char *lit, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (a3s_lower((unsigned char)p[i]) != (unsigned char)lit[i])
            return false;
    return true;
}

static bool has(const char *p, size_t n, const char *needle) {
    size_t k = strlen(needle);
    for (size_t i = 0; i + k <= n; i++)
        if (memcmp(p + i, needle, k) == 0)
            return true;
    return false;
}

/* ---- sources -------------------------------------------------------------- */

static void push_code(struct ctx *c, size_t from, const char *code, size_t n, int via,
                      a3s_str name) {
    const struct source *parent = &VEC_AT(c->sources, struct source, from);
    int depth = parent->depth + 1;
    if (depth > MAX_DEPTH || c->sources.len >= MAX_SOURCES) {
        c->incomplete = c->bounded = true;
        return;
    }
    a3s_str copy = arena_str(c->mem, code, n);
    if (!copy.p) {
        c->incomplete = true;
        return;
    }
    struct source *s = vec_push(&c->sources, &c->nomem);
    if (!s)
        return;
    s->code = copy;
    s->depth = depth;
    s->parent = from;
    s->via = via;
    s->via_name = name;
    if (from == 0)
        c->pushed_by_top++;
}

/* A substitution's code, queued as a source. */
static void push_source(struct ctx *c, size_t from, const char *code, size_t n) {
    push_code(c, from, code, n, A3S_VIA_SUB, (a3s_str){NULL, 0});
}

/* ---- finding where nested code ends ----------------------------------------- */

/* The index of the byte that closes what `open` ('(' or '{') started just
 * before code[j], or len (the split is then incomplete). Quotes, nested
 * substitutions and comments are followed with an explicit stack. */
static size_t find_close(struct ctx *c, const char *code, size_t j, size_t len, char open) {
    char st[MAX_STACK];
    size_t top = 0;
    st[top++] = open;
    bool word_start = true;
    while (j < len) {
        char ch = code[j], in = st[top - 1];
        char next = j + 1 < len ? code[j + 1] : '\0';
        bool was_start = word_start;
        word_start = false;
        if (ch == '\\') {
            j += 2;
            continue;
        }
        if (in == '`') {
            if (ch == '`')
                top--;
            j++;
            continue;
        }
        if (in != '"' && ch == '\'') {
            const char *q = memchr(code + j + 1, '\'', len - j - 1);
            if (!q)
                break;
            j = (size_t)(q - code) + 1;
            continue;
        }
        if (top == MAX_STACK) {
            c->bounded = true;
            break;
        }
        if (ch == '"') {
            if (in == '"')
                top--;
            else
                st[top++] = '"';
        } else if (ch == '`') {
            st[top++] = '`';
        } else if (ch == '$' && (next == '(' || next == '{')) {
            st[top++] = next;
            j++;
        } else if (in == '"') {
            /* literal inside double quotes */
        } else if (ch == '(' && in == '(') {
            st[top++] = '(';
        } else if ((ch == ')' && in == '(') || (ch == '}' && in == '{')) {
            if (--top == 0)
                return j;
        } else if (ch == '#' && was_start && in == '(') {
            const char *nl = memchr(code + j, '\n', len - j);
            j = nl ? (size_t)(nl - code) : len;
            continue;
        }
        word_start = is_meta(ch);
        j++;
    }
    c->incomplete = true;
    return len;
}

/* ---- the lexer -------------------------------------------------------------- */

static void flush_lit(struct ctx *c, struct word *w, size_t lit_start, size_t i, const char *code) {
    if (c->lit.n == 0)
        return;
    struct part *p = vec_push(&c->parts, &c->nomem);
    if (!p)
        return;
    p->kind = P_LIT;
    p->text = arena_str(c->mem, c->lit.p, c->lit.n);
    p->src = (a3s_str){code + lit_start, i - lit_start};
    w->nparts++;
    c->lit.n = 0;
}

static void add_part(struct ctx *c, struct word *w, int kind, a3s_str text, a3s_str src) {
    struct part *p = vec_push(&c->parts, &c->nomem);
    if (!p)
        return;
    p->kind = kind;
    p->text = text;
    p->src = src;
    p->quoted = c->in_dquote;
    w->nparts++;
}

struct arith_name {
    a3s_str name;
    size_t source;
};

/* Records the names an arithmetic expression reads: bash evaluates a
 * variable's value there as an expression in turn, and a subscript in it
 * (`a[$(cmd)]`) runs its substitution. Checked once every assignment of the
 * line is known (check_arith). */
static void note_arith(struct ctx *c, size_t si, const char *p, size_t n) {
    for (size_t i = 0; i < n;) {
        if (!is_name_start(p[i]) || (i > 0 && (is_name_char(p[i - 1]) || p[i - 1] == '#'))) {
            i++;
            continue;
        }
        size_t k = i;
        while (k < n && is_name_char(p[k]))
            k++;
        struct arith_name *a = vec_push(&c->arith, &c->nomem);
        if (a)
            *a = (struct arith_name){{p + i, k - i}, si};
        i = k;
    }
}

/* What a substitution prints when the line shows it: `echo word...` (its
 * words) and `which name`, `command -v name`, `type -P name` (the name). */
static a3s_str known_output(struct ctx *c, const char *code, size_t n) {
    size_t start[8], end[8], k = 0;
    for (size_t i = 0; i < n;) {
        while (i < n && is_blank(code[i]))
            i++;
        if (i == n)
            break;
        if (k == 8)
            return (a3s_str){NULL, 0};
        start[k] = i;
        while (i < n && !is_blank(code[i])) {
            char ch = code[i];
            if (!is_name_char(ch) && ch != '.' && ch != '/' && ch != '-' && ch != '+' && ch != ':')
                return (a3s_str){NULL, 0};
            i++;
        }
        end[k++] = i;
    }
    if (k < 2)
        return (a3s_str){NULL, 0};
    a3s_str first = {code + start[0], end[0] - start[0]};
    a3s_str second = {code + start[1], end[1] - start[1]};
    size_t from = SIZE_MAX;
    if (EQ(first, "echo"))
        from = 1;
    else if (k == 2 && EQ(first, "which"))
        from = 1;
    else if (k == 3 && (EQ(first, "command") && EQ(second, "-v")))
        from = 2;
    else if (k == 3 && (EQ(first, "type") && EQ(second, "-P")))
        from = 2;
    if (from == SIZE_MAX)
        return (a3s_str){NULL, 0};
    return arena_str(c->mem, code + start[from], end[k - 1] - start[from]);
}

static void utf8(struct ctx *c, uint32_t v) {
    if (v < 0x80) {
        buf_ch(&c->lit, (char)v);
    } else if (v < 0x800) {
        buf_ch(&c->lit, (char)(0xc0 | (v >> 6)));
        buf_ch(&c->lit, (char)(0x80 | (v & 0x3f)));
    } else if (v < 0x10000) {
        buf_ch(&c->lit, (char)(0xe0 | (v >> 12)));
        buf_ch(&c->lit, (char)(0x80 | ((v >> 6) & 0x3f)));
        buf_ch(&c->lit, (char)(0x80 | (v & 0x3f)));
    } else {
        buf_ch(&c->lit, (char)(0xf0 | ((v >> 18) & 0x07)));
        buf_ch(&c->lit, (char)(0x80 | ((v >> 12) & 0x3f)));
        buf_ch(&c->lit, (char)(0x80 | ((v >> 6) & 0x3f)));
        buf_ch(&c->lit, (char)(0x80 | (v & 0x3f)));
    }
}

/* Appends the bytes of p[0..n) to ctx.lit with bash's backslash escapes
 * decoded (as $'...', echo -e and printf do). */
static void decode(struct ctx *c, const char *p, size_t n) {
    for (size_t i = 0; i < n;) {
        char ch = p[i++];
        if (ch != '\\' || i == n) {
            buf_ch(&c->lit, ch);
            continue;
        }
        char e = p[i++];
        const char *from = "abefnrtv", *to = "\a\b\x1b\f\n\r\t\v";
        const char *at = strchr(from, e);
        if (e && at) {
            buf_ch(&c->lit, to[at - from]);
        } else if (e == 'u' || e == 'U') { /* a code point, written as UTF-8 */
            uint32_t v = 0;
            int d = 0, max = e == 'u' ? 4 : 8;
            for (; d < max && i < n; d++, i++) {
                char h = p[i];
                int x = (h >= '0' && h <= '9')   ? h - '0'
                        : (h >= 'a' && h <= 'f') ? h - 'a' + 10
                        : (h >= 'A' && h <= 'F') ? h - 'A' + 10
                                                 : -1;
                if (x < 0)
                    break;
                v = v * 16 + (uint32_t)x;
            }
            if (d == 0) {
                buf_ch(&c->lit, '\\');
                buf_ch(&c->lit, e);
            } else {
                utf8(c, v);
            }
        } else if (e == 'c' && i < n) { /* \cX: a control character */
            buf_ch(&c->lit, (char)(p[i++] & 0x1f));
        } else if (e == 'x' || (e >= '0' && e <= '7')) {
            int base = e == 'x' ? 16 : 8, max = e == 'x' ? 2 : 3, v = e == 'x' ? 0 : e - '0';
            for (int d = e == 'x' ? 0 : 1; d < max && i < n; d++) {
                char h = p[i];
                int x = (h >= '0' && h <= '9')                      ? h - '0'
                        : (base == 16 && h >= 'a' && h <= 'f') ? h - 'a' + 10
                        : (base == 16 && h >= 'A' && h <= 'F') ? h - 'A' + 10
                                                               : -1;
                if (x < 0 || x >= base)
                    break;
                v = v * base + x;
                i++;
            }
            buf_ch(&c->lit, (char)v);
        } else {
            buf_ch(&c->lit, e);
        }
    }
}

/* $'...' at code[i] (the quote): decoded into ctx.lit; returns the index after it. */
static size_t ansi_c(struct ctx *c, const char *code, size_t i, size_t len) {
    size_t j = i + 1;
    while (j < len && code[j] != '\'')
        j += code[j] == '\\' ? 2 : 1;
    if (j >= len) {
        c->incomplete = true;
        j = len;
    }
    decode(c, code + i + 1, j - i - 1);
    return j < len ? j + 1 : len;
}

/* The substitutions inside a ${...} body (`${x:-$(cmd)}`), queued as
 * sources: a flat scan (no recursion), single quotes skipped. */
static void param_subs(struct ctx *c, size_t si, const char *in, size_t n) {
    for (size_t j = 0; j < n && !failed(c);) {
        if (in[j] == '\\') {
            j += 2;
        } else if (in[j] == '\'') {
            const char *q = memchr(in + j + 1, '\'', n - j - 1);
            j = q ? (size_t)(q - in) + 1 : n;
        } else if (in[j] == '$' && j + 1 < n && in[j + 1] == '(' && !(j + 2 < n && in[j + 2] == '(')) {
            size_t end = find_close(c, in, j + 2, n, '(');
            push_source(c, si, in + j + 2, end - j - 2);
            j = end + 1;
        } else if (in[j] == '`') {
            const char *q = memchr(in + j + 1, '`', n - j - 1);
            size_t end = q ? (size_t)(q - in) : n;
            push_source(c, si, in + j + 1, end - j - 1);
            j = end + 1;
        } else {
            j++;
        }
    }
}

/* A `$...` expansion at code[i]; returns the index after it. */
static size_t dollar(struct ctx *c, size_t si, struct word *w, const char *code, size_t i,
                     size_t len, size_t *lit_start) {
    char next = i + 1 < len ? code[i + 1] : '\0';
    size_t start = i;
    if (next == '(' && i + 2 < len && code[i + 2] == '(') {
        /* $(( arithmetic )): a substitution inside is more than we follow */
        size_t end = find_close(c, code, i + 2, len, '(');
        if (has(code + i + 3, end - i - 3, "$(") || memchr(code + i, '`', end - i))
            c->incomplete = true;
        note_arith(c, si, code + i + 3, end > i + 3 ? end - i - 3 : 0);
        i = end < len ? end + 1 : len;
        flush_lit(c, w, *lit_start, start, code);
        add_part(c, w, P_GLOB, (a3s_str){0}, (a3s_str){code + start, i - start});
    } else if (next == '(') {
        size_t end = find_close(c, code, i + 2, len, '(');
        push_source(c, si, code + i + 2, end - i - 2);
        flush_lit(c, w, *lit_start, start, code);
        a3s_str out = known_output(c, code + i + 2, end - i - 2);
        i = end < len ? end + 1 : len;
        add_part(c, w, P_SUB, out, (a3s_str){code + start, i - start});
        if (out.p)
            VEC_AT(c->parts, struct part, c->parts.len - 1).known = true;
    } else if (next == '{') {
        size_t end = find_close(c, code, i + 2, len, '{');
        const char *in = code + i + 2;
        size_t n = end - i - 2, k = 0;
        while (k < n && is_name_char(in[k]))
            k++;
        flush_lit(c, w, *lit_start, start, code);
        i = end < len ? end + 1 : len;
        a3s_str src = {code + start, i - start};
        if (k == n && k > 0 && is_name_start(in[0])) {
            add_part(c, w, P_VAR, (a3s_str){in, k}, src);
        } else if (n == 1 && strchr("0123456789@*", in[0])) { /* ${1}, ${@} */
            add_part(c, w, P_VAR, (a3s_str){in, 1}, src);
        } else {
            if (has(in, n, "$(") || memchr(in, '`', n)) {
                c->incomplete = true; /* ${x:-$(cmd)}: the substitutions run */
                param_subs(c, si, in, n);
            }
            /* ${x@P} expands a prompt (its substitutions run); ${!x} reads the
             * variable x names, which may be `a[$(cmd)]` */
            bool keys = n > 1 && (in[n - 1] == '@' || in[n - 1] == '*' ||
                                  (n > 3 && in[n - 1] == ']' && (in[n - 2] == '@' || in[n - 2] == '*')));
            if (has(in, n, "@P") || (n > 1 && in[0] == '!' && !keys))
                c->opaque = true;
            if (k < n && (in[k] == '[' || in[k] == ':')) /* a subscript, an offset */
                note_arith(c, si, in + k, n - k);
            add_part(c, w, P_DYN, (a3s_str){0}, src);
            size_t d = k + (k < n && in[k] == ':');
            if (k > 0 && is_name_start(in[0]) && d < n && (in[d] == '-' || in[d] == '=')) {
                a3s_str word = {in + d + 1, n - d - 1};
                bool plain = true;
                for (size_t q = 0; q < word.n && plain; q++)
                    plain = !strchr("$`'\"\\{}", word.p[q]);
                if (plain)
                    VEC_AT(c->parts, struct part, c->parts.len - 1).dflt = word;
            }
        }
    } else if (is_name_start(next)) {
        size_t k = i + 1;
        while (k < len && is_name_char(code[k]))
            k++;
        flush_lit(c, w, *lit_start, start, code);
        add_part(c, w, P_VAR, (a3s_str){code + i + 1, k - i - 1}, (a3s_str){code + i, k - i});
        i = k;
    } else if (next == '[') { /* $[ expression ]: the old arithmetic expansion */
        const char *close = memchr(code + i, ']', len - i);
        size_t end = close ? (size_t)(close - code) + 1 : len;
        if (!close || has(code + i + 2, end - i - 2, "$(") || memchr(code + i, '`', end - i))
            c->incomplete = true;
        note_arith(c, si, code + i + 2, end > i + 2 ? end - i - 2 : 0);
        flush_lit(c, w, *lit_start, start, code);
        i = end;
        add_part(c, w, P_GLOB, (a3s_str){0}, (a3s_str){code + start, i - start});
    } else if (next && strchr("0123456789@*", next)) { /* positional: a shell -c sets them */
        flush_lit(c, w, *lit_start, start, code);
        add_part(c, w, P_VAR, (a3s_str){code + i + 1, 1}, (a3s_str){code + i, 2});
        i += 2;
    } else if (next && strchr("#?$!-", next)) {
        flush_lit(c, w, *lit_start, start, code);
        add_part(c, w, P_DYN, (a3s_str){0}, (a3s_str){code + i, 2});
        i += 2;
    } else {
        buf_ch(&c->lit, '$');
        return i + 1;
    }
    *lit_start = i;
    return i;
}

/* A backquoted substitution at code[i]; returns the index after it. */
static size_t backquote(struct ctx *c, size_t si, struct word *w, const char *code, size_t i,
                        size_t len, size_t *lit_start) {
    size_t j = i + 1;
    c->tmp.n = 0;
    while (j < len && code[j] != '`') {
        if (code[j] == '\\' && j + 1 < len && strchr("`\\$", code[j + 1]))
            j++;
        buf_ch(&c->tmp, code[j++]);
    }
    if (j >= len)
        c->incomplete = true;
    flush_lit(c, w, *lit_start, i, code);
    push_source(c, si, c->tmp.p ? c->tmp.p : "", c->tmp.n);
    a3s_str out = known_output(c, c->tmp.p ? c->tmp.p : "", c->tmp.n);
    size_t end = j < len ? j + 1 : len;
    add_part(c, w, P_SUB, out, (a3s_str){code + i, end - i});
    if (out.p)
        VEC_AT(c->parts, struct part, c->parts.len - 1).known = true;
    *lit_start = end;
    return end;
}

/* Whether code[i] starts a pattern bash expands against file names: `*`,
 * `?`, or `[` closed by a `]` in the same word (a lone `[` is the test
 * command). Quoted text never reaches here. */
static bool is_glob_at(const char *code, size_t i, size_t len) {
    if (code[i] == '*' || code[i] == '?')
        return true;
    if (code[i] != '[')
        return false;
    for (size_t j = i + 1; j < len && !is_meta(code[j]) && !strchr("'\"\\$`", code[j]); j++)
        if (code[j] == ']')
            return j > i + 1;
    return false;
}

/* The bytes that end a plain run of a word: metacharacters, quotes,
 * backslashes, expansions, patterns (and NUL). */
static const bool WORD_STOP[256] = {
    [0] = true,    [' '] = true, ['\t'] = true, ['\n'] = true, [';'] = true, ['&'] = true,
    ['|'] = true,  ['<'] = true, ['>'] = true,  ['('] = true,  [')'] = true, ['\\'] = true,
    ['\''] = true, ['"'] = true, ['$'] = true,  ['`'] = true,  ['*'] = true, ['?'] = true,
    ['['] = true,
};

/* One word starting at code[*at]; returns its index in ctx.words. */
static size_t lex_word(struct ctx *c, size_t si, const char *code, size_t *at, size_t len) {
    size_t i = *at, lit_start = i;
    struct word w = {.part0 = c->parts.len, .plain = true, .sub0 = c->sources.len,
                     .sub1 = c->sources.len};
    c->lit.n = 0;
    size_t stop = i; /* most words hold no quote, backslash or expansion: no parts needed */
    while (stop < len && !WORD_STOP[(unsigned char)code[stop]])
        stop++;
    if (stop > i && (stop == len || is_meta(code[stop])) &&
        !(code[i] == '<' || code[i] == '>')) {
        w.src = (a3s_str){code + i, stop - i};
        *at = stop;
        struct word *slot = vec_push(&c->words, &c->nomem);
        if (!slot)
            return SIZE_MAX;
        *slot = w;
        return c->words.len - 1;
    }
    if (i + 1 < len && (code[i] == '<' || code[i] == '>') && code[i + 1] == '(') {
        /* a process substitution: runs its code, and the word is a path we cannot know */
        size_t end = find_close(c, code, i + 2, len, '(');
        push_source(c, si, code + i + 2, end - i - 2);
        i = end < len ? end + 1 : len;
        add_part(c, &w, P_DYN, (a3s_str){0}, (a3s_str){code + *at, i - *at});
        lit_start = i;
        w.plain = false;
    }
    while (i < len && !is_meta(code[i])) {
        char ch = code[i];
        if (ch == '\\') {
            w.plain = false;
            if (i + 1 < len && code[i + 1] == '\n') {
                i += 2;
            } else if (i + 1 < len) {
                buf_ch(&c->lit, code[i + 1]);
                i += 2;
            } else {
                buf_ch(&c->lit, '\\');
                i++;
            }
        } else if (ch == '\'') {
            w.plain = false;
            const char *q = memchr(code + i + 1, '\'', len - i - 1);
            size_t end = q ? (size_t)(q - code) : len;
            buf_add(&c->lit, code + i + 1, end - i - 1);
            if (!q)
                c->incomplete = true;
            i = q ? end + 1 : len;
        } else if (ch == '$' && i + 1 < len && code[i + 1] == '\'') {
            w.plain = false;
            i = ansi_c(c, code, i + 1, len);
        } else if (ch == '"' || (ch == '$' && i + 1 < len && code[i + 1] == '"')) {
            w.plain = false;
            i += ch == '$' ? 2 : 1;
            bool closed = false;
            c->in_dquote = true;
            while (i < len) {
                char d = code[i];
                if (d == '"') {
                    closed = true;
                    i++;
                    break;
                }
                if (d == '\\' && i + 1 < len && strchr("$`\"\\\n", code[i + 1])) {
                    if (code[i + 1] != '\n')
                        buf_ch(&c->lit, code[i + 1]);
                    i += 2;
                } else if (d == '$') {
                    i = dollar(c, si, &w, code, i, len, &lit_start);
                } else if (d == '`') {
                    i = backquote(c, si, &w, code, i, len, &lit_start);
                } else {
                    buf_ch(&c->lit, d);
                    i++;
                }
            }
            c->in_dquote = false;
            if (!closed) {
                c->incomplete = true;
                i = len;
            }
        } else if (ch == '$') {
            size_t before = c->parts.len;
            i = dollar(c, si, &w, code, i, len, &lit_start);
            if (c->parts.len != before)
                w.plain = false;
        } else if (ch == '`') {
            w.plain = false;
            i = backquote(c, si, &w, code, i, len, &lit_start);
        } else if (is_glob_at(code, i, len)) {
            w.plain = false;
            flush_lit(c, &w, lit_start, i, code);
            size_t end = i + 1;
            if (ch == '[') {
                while (code[end] != ']')
                    end++;
                end++;
            }
            add_part(c, &w, P_GLOB, (a3s_str){0}, (a3s_str){code + i, end - i});
            i = lit_start = end;
        } else {
            buf_ch(&c->lit, ch);
            i++;
        }
    }
    flush_lit(c, &w, lit_start, i, code);
    w.src = (a3s_str){code + *at, i - *at};
    w.sub1 = c->sources.len;
    *at = i;
    struct word *slot = vec_push(&c->words, &c->nomem);
    if (!slot)
        return SIZE_MAX;
    *slot = w;
    return c->words.len - 1;
}

static struct token *push_token(struct ctx *c, int type) {
    struct token *t = vec_push(&c->tokens, &c->nomem);
    if (t) {
        t->type = type;
        t->word = SIZE_MAX;
    }
    return t;
}

/* The value of a word when it is all literal (quotes removed), else {NULL}. */
static a3s_str literal(struct ctx *c, size_t wi) {
    const struct word *w = &VEC_AT(c->words, struct word, wi);
    if (w->plain)
        return w->src;
    c->tmp.n = 0;
    for (size_t k = 0; k < w->nparts; k++) {
        const struct part *p = &VEC_AT(c->parts, struct part, w->part0 + k);
        if (p->kind != P_LIT)
            return (a3s_str){NULL, 0};
        buf_add(&c->tmp, p->text.p, p->text.n);
    }
    return arena_str(c->mem, c->tmp.p ? c->tmp.p : "", c->tmp.n);
}

/* Here-document bodies start after the newline that ends their command. */
static size_t read_heredocs(struct ctx *c, size_t si, const char *code, size_t i, size_t len,
                            const size_t *pending, size_t npending) {
    for (size_t h = 0; h < npending; h++) {
        struct token *t = &VEC_AT(c->tokens, struct token, pending[h]);
        bool strip = t->src.n >= 3 && t->src.p[t->src.n - 1] == '-';
        a3s_str delim = t->word == SIZE_MAX ? (a3s_str){"", 0} : literal(c, t->word);
        if (!delim.p) {
            c->incomplete = true; /* a delimiter with an expansion */
            delim = VEC_AT(c->words, struct word, t->word).src;
        }
        size_t start = i, body_end = len;
        bool found = false;
        while (i < len) {
            const char *nl = memchr(code + i, '\n', len - i);
            size_t eol = nl ? (size_t)(nl - code) : len, from = i;
            while (strip && from < eol && code[from] == '\t')
                from++;
            if (eol - from == delim.n && memcmp(code + from, delim.p, delim.n) == 0) {
                body_end = i;
                i = nl ? eol + 1 : len;
                found = true;
                break;
            }
            i = nl ? eol + 1 : len;
        }
        if (!found)
            c->incomplete = true;
        t = &VEC_AT(c->tokens, struct token, pending[h]);
        t->body = (a3s_str){code + start, body_end - start};
        if (!t->quoted) { /* an unquoted document expands: its substitutions run */
            struct word scratch = {0};
            size_t ls = start;
            for (size_t j = start; j < body_end;) {
                if (code[j] == '\\') {
                    j += 2;
                } else if (code[j] == '$') {
                    j = dollar(c, si, &scratch, code, j, body_end, &ls);
                } else if (code[j] == '`') {
                    j = backquote(c, si, &scratch, code, j, body_end, &ls);
                } else {
                    j++;
                }
            }
            c->lit.n = 0; /* the scratch word's parts are not kept by any word */
        }
    }
    return i;
}

static const struct {
    const char *text;
    size_t n; /* strlen(text) */
    int op;
} OPS[] = {
    {";;&", 3, OP_DSEMI}, {"&&", 2, OP_AND},  {"||", 2, OP_OR},     {";;", 2, OP_DSEMI},
    {";&", 2, OP_DSEMI},  {"|&", 2, OP_PIPE}, {";", 1, OP_SEMI},    {"&", 1, OP_AMP},
    {"|", 1, OP_PIPE},    {"(", 1, OP_LPAREN}, {")", 1, OP_RPAREN},
};

static const char *const REDIRS[] = {"<<<", "<<-", "<<", "<>", "<&", "<",  ">>",
                                     ">&",  ">|",  ">",  "&>>", "&>"};

/* ---- brace expansion ---------------------------------------------------------- */

#define MAX_BRACE_WORDS 64 /* words one brace expansion may give before the split is incomplete */

/* The index after the quoted text or expansion that starts at w[i] (a quote,
 * a backslash, `$'`, `${`, `$(`, a backquote), or i when none starts there:
 * brace expansion looks past them. */
static size_t skip_quoted(const char *w, size_t i, size_t n) {
    char ch = w[i];
    if (ch == '\\')
        return i + 2 < n ? i + 2 : n;
    if (ch == '\'' || ch == '`') {
        const char *q = memchr(w + i + 1, ch, n - i - 1);
        return q ? (size_t)(q - w) + 1 : n;
    }
    if (ch == '"') {
        for (size_t j = i + 1; j < n; j++) {
            if (w[j] == '\\')
                j++;
            else if (w[j] == '"')
                return j + 1;
        }
        return n;
    }
    if (ch == '$' && i + 1 < n && (w[i + 1] == '{' || w[i + 1] == '(' || w[i + 1] == '\'')) {
        if (w[i + 1] == '\'') {
            for (size_t j = i + 2; j < n; j++) {
                if (w[j] == '\\')
                    j++;
                else if (w[j] == '\'')
                    return j + 1;
            }
            return n;
        }
        char open = w[i + 1], close = open == '{' ? '}' : ')';
        size_t depth = 0;
        for (size_t j = i + 1; j < n; j++) {
            size_t past = w[j] == open ? j : skip_quoted(w, j, n);
            if (past != j) {
                j = past - 1;
            } else if (w[j] == open) {
                depth++;
            } else if (w[j] == close && --depth == 0) {
                return j + 1;
            }
        }
        return n;
    }
    return i;
}

/* Whether w[a..b) is a sequence `X..Y` or `X..Y..STEP` of integers or of single
 * letters; fills the range. */
static bool brace_sequence(const char *w, size_t a, size_t b, long *from, long *to, long *step,
                           bool *letters, int *width) {
    char text[64];
    if (b - a >= sizeof text)
        return false;
    memcpy(text, w + a, b - a);
    text[b - a] = '\0';
    char *dots = strstr(text, "..");
    if (!dots || dots == text)
        return false;
    *dots = '\0';
    char *second = dots + 2, *third = strstr(second, "..");
    if (third)
        *third = '\0';
    *step = 1;
    *width = 0;
    if (third) {
        char *end;
        *step = strtol(third + 2, &end, 10);
        if (*end || end == third + 2)
            return false;
        if (*step < 0)
            *step = -*step;
        if (*step == 0)
            *step = 1;
    }
    bool one = text[1] == '\0' && second[0] && second[1] == '\0';
    if (one && ((text[0] >= 'a' && text[0] <= 'z') || (text[0] >= 'A' && text[0] <= 'Z')) &&
        ((second[0] >= 'a' && second[0] <= 'z') || (second[0] >= 'A' && second[0] <= 'Z'))) {
        *letters = true;
        *from = text[0];
        *to = second[0];
        return true;
    }
    char *e1, *e2;
    *from = strtol(text, &e1, 10);
    *to = strtol(second, &e2, 10);
    if (*e1 || *e2 || e1 == text || e2 == second)
        return false;
    *letters = false;
    const char *digits1 = text[0] == '-' ? text + 1 : text, *digits2 = second[0] == '-' ? second + 1 : second;
    if ((digits1[0] == '0' && digits1[1]) || (digits2[0] == '0' && digits2[1])) {
        size_t l1 = strlen(text), l2 = strlen(second);
        *width = (int)(l1 > l2 ? l1 : l2);
    }
    return true;
}

/* The first brace expression of w[0..n): its '{' and '}' (*ob, *cb); 0 when
 * there is none. */
static bool find_brace(const char *w, size_t n, size_t *ob, size_t *cb) {
    if (!n || !memchr(w, '{', n)) /* most words: no '{' at all */
        return false;
    for (size_t i = 0; i < n; i++) {
        size_t past = skip_quoted(w, i, n);
        if (past != i) {
            i = past - 1;
            continue;
        }
        if (w[i] != '{')
            continue;
        size_t depth = 0;
        bool comma = false;
        for (size_t j = i + 1; j < n; j++) {
            size_t p2 = skip_quoted(w, j, n);
            if (p2 != j) {
                j = p2 - 1;
            } else if (w[j] == '{') {
                depth++;
            } else if (w[j] == '}' && depth > 0) {
                depth--;
            } else if (w[j] == ',' && depth == 0) {
                comma = true;
            } else if (w[j] == '}') {
                long a, b, st;
                bool letters;
                int width;
                if (comma || brace_sequence(w, i + 1, j, &a, &b, &st, &letters, &width)) {
                    *ob = i;
                    *cb = j;
                    return true;
                }
                break;
            }
        }
    }
    return false;
}

/* The words brace expansion makes of w (in ctx.lit, each ending in '\0'),
 * how many, or 0 when w has no brace expression; past MAX_BRACE_WORDS the
 * split is incomplete and only the first words are given. */
static size_t brace_expand(struct ctx *c, a3s_str w, a3s_str *out) {
    a3s_str queue[MAX_BRACE_WORDS];
    size_t nq = 0, nout = 0, rounds = 0;
    size_t ob, cb;
    if (!find_brace(w.p, w.n, &ob, &cb))
        return 0;
    queue[nq++] = w;
    while (nq > 0 && !failed(c)) {
        a3s_str x = queue[--nq];
        if (++rounds > 4 * MAX_BRACE_WORDS || !find_brace(x.p, x.n, &ob, &cb)) {
            if (rounds > 4 * MAX_BRACE_WORDS)
                c->incomplete = c->bounded = true;
            if (x.n && nout < MAX_BRACE_WORDS)
                out[nout++] = x;
            else if (x.n)
                c->incomplete = c->bounded = true;
            continue;
        }
        /* the alternatives, in order; pushed in reverse so they come out in order */
        a3s_str alts[MAX_BRACE_WORDS];
        size_t nalt = 0;
        long a, b, st;
        bool letters;
        int width;
        char num[32];
        if (brace_sequence(x.p, ob + 1, cb, &a, &b, &st, &letters, &width)) {
            for (long v = a; nalt < MAX_BRACE_WORDS && (a <= b ? v <= b : v >= b);
                 v += a <= b ? st : -st) {
                int k = letters ? snprintf(num, sizeof num, "%c", (char)v)
                                : snprintf(num, sizeof num, "%0*ld", width, v);
                alts[nalt++] = arena_str(c->mem, num, (size_t)k);
            }
            if (nalt == MAX_BRACE_WORDS)
                c->incomplete = true;
        } else {
            size_t depth = 0, start = ob + 1;
            for (size_t j = ob + 1; j <= cb && nalt < MAX_BRACE_WORDS; j++) {
                size_t p2 = j < cb ? skip_quoted(x.p, j, cb) : j;
                if (p2 != j) {
                    j = p2 - 1;
                } else if (x.p[j] == '{') {
                    depth++;
                } else if (x.p[j] == '}' && j < cb) {
                    depth--;
                } else if ((x.p[j] == ',' && depth == 0) || j == cb) {
                    alts[nalt++] = (a3s_str){x.p + start, j - start};
                    start = j + 1;
                }
            }
        }
        for (size_t k = nalt; k-- > 0;) {
            if (nq == MAX_BRACE_WORDS) {
                c->incomplete = true;
                break;
            }
            c->tmp.n = 0;
            buf_add(&c->tmp, x.p, ob);
            buf_add(&c->tmp, alts[k].p, alts[k].n);
            buf_add(&c->tmp, x.p + cb + 1, x.n - cb - 1);
            queue[nq++] = arena_str(c->mem, c->tmp.p ? c->tmp.p : "", c->tmp.n);
            if (!queue[nq - 1].p)
                nq--;
        }
    }
    return nout;
}

/* Where the `))` that ends an arithmetic command `((` at s[i] starts, or
 * SIZE_MAX when s[i] does not start one: bash reads `((` as arithmetic when
 * its parentheses close with `))`, else as two subshells. */
static size_t arith_end(const char *s, size_t i, size_t len) {
    if (i + 1 >= len || s[i + 1] != '(')
        return SIZE_MAX;
    size_t depth = 0;
    for (size_t j = i + 2; j < len; j++) {
        char ch = s[j];
        if (ch == '\\') {
            j++;
        } else if (ch == '\'' || ch == '"') {
            const char *q = memchr(s + j + 1, ch, len - j - 1);
            if (!q)
                return SIZE_MAX;
            j = (size_t)(q - s);
        } else if (ch == '(') {
            depth++;
        } else if (ch == ')') {
            if (depth == 0)
                return j + 1 < len && s[j + 1] == ')' ? j : SIZE_MAX;
            depth--;
        }
    }
    return SIZE_MAX;
}

/* Tokenizes one source into ctx.tokens. */
static void lex(struct ctx *c, size_t si) {
    a3s_str code = VEC_AT(c->sources, struct source, si).code;
    const char *s = code.p;
    size_t len = code.n, i = 0, pending[MAX_HEREDOCS], npending = 0;
    while (i < len && !failed(c)) {
        char ch = s[i];
        if (is_blank(ch)) {
            i++;
            continue;
        }
        if (ch == '\\' && i + 1 < len && s[i + 1] == '\n') {
            i += 2;
            continue;
        }
        if (ch == '#') {
            const char *nl = memchr(s + i, '\n', len - i);
            i = nl ? (size_t)(nl - s) : len;
            continue;
        }
        if (ch == '\n') {
            struct token *t = push_token(c, T_OP);
            if (t)
                t->op = OP_NL;
            i = read_heredocs(c, si, s, i + 1, len, pending, npending);
            npending = 0;
            continue;
        }
        /* a redirection: [n]op target */
        size_t k = i;
        while (k < len && s[k] >= '0' && s[k] <= '9')
            k++;
        const char *rop = NULL;
        bool angle = k < len && (s[k] == '<' || s[k] == '>' || (s[k] == '&' && k == i));
        if (angle && !(k + 1 < len && (s[k] == '<' || s[k] == '>') && s[k + 1] == '(')) {
            for (size_t r = 0; r < sizeof REDIRS / sizeof *REDIRS && !rop; r++) {
                if (REDIRS[r][0] != s[k]) /* the first byte turns most away */
                    continue;
                size_t n = strlen(REDIRS[r]);
                if ((k == i || REDIRS[r][0] != '&') && n <= len - k && memcmp(s + k, REDIRS[r], n) == 0)
                    rop = REDIRS[r];
            }
        }
        if (rop) {
            struct token *t = push_token(c, T_REDIR);
            if (!t)
                return;
            size_t n = strlen(rop);
            t->src = (a3s_str){s + i, k + n - i};
            t->rkind = rop[0] == '<' ? (n == 3 && rop[2] == '<'   ? R_HERESTRING
                                        : rop[1] == '<'             ? R_HEREDOC
                                        : n == 1                    ? R_IN
                                                                    : R_OTHER)
                                     : R_OTHER;
            size_t ti = c->tokens.len - 1;
            i = k + n;
            while (i < len && is_blank(s[i]))
                i++;
            if (i == len || (is_meta(s[i]) && !(s[i] == '<' || s[i] == '>'))) {
                c->incomplete = true; /* a redirection without its target */
                continue;
            }
            size_t wi = lex_word(c, si, s, &i, len);
            t = &VEC_AT(c->tokens, struct token, ti);
            t->word = wi;
            if (t->rkind == R_HEREDOC && wi != SIZE_MAX) {
                t->quoted = !VEC_AT(c->words, struct word, wi).plain;
                if (npending == MAX_HEREDOCS)
                    c->incomplete = c->bounded = true;
                else
                    pending[npending++] = ti;
            }
            continue;
        }
        /* inside an arithmetic command's text (read as code by the guardrail), `((`
         * is two parentheses: each level is not read again */
        bool in_arith = VEC_AT(c->sources, struct source, si).via == A3S_VIA_ARITH;
        size_t close = ch == '(' && !in_arith ? arith_end(s, i, len) : SIZE_MAX;
        if (close != SIZE_MAX) { /* (( expression )): one compound command */
            struct token *t = push_token(c, T_ARITH);
            if (!t)
                return;
            t->src = (a3s_str){s + i + 2, close - i - 2};
            if (has(t->src.p, t->src.n, "$(") || memchr(t->src.p, '`', t->src.n))
                c->incomplete = true;
            note_arith(c, si, t->src.p, t->src.n);
            if (c->guard) /* ((rm -rf /)) is arithmetic to bash; a floor reads it as code too */
                push_code(c, si, s + i + 2, close - i - 2, A3S_VIA_ARITH, (a3s_str){NULL, 0});
            i = close + 2;
            continue;
        }
        int op = -1;
        size_t opn = 0;
        bool op_char = ch == ';' || ch == '&' || ch == '|' || ch == '(' || ch == ')';
        for (size_t o = 0; op_char && o < sizeof OPS / sizeof *OPS && op < 0; o++) {
            size_t n = OPS[o].n;
            if (OPS[o].text[0] == ch && n <= len - i && memcmp(s + i, OPS[o].text, n) == 0) {
                op = OPS[o].op;
                opn = n;
            }
        }
        if (op >= 0) {
            struct token *t = push_token(c, T_OP);
            if (t)
                t->op = op;
            i += opn;
            continue;
        }
        size_t wi = lex_word(c, si, s, &i, len);
        a3s_str words[MAX_BRACE_WORDS];
        size_t nb = wi == SIZE_MAX ? 0 : brace_expand(c, VEC_AT(c->words, struct word, wi).src, words);
        for (size_t b = 0; b < nb && !failed(c); b++) { /* {git,push}: the words `git push` */
            size_t at = 0;
            size_t bw = lex_word(c, si, words[b].p, &at, words[b].n);
            struct token *t = push_token(c, T_WORD);
            if (t)
                t->word = bw;
        }
        if (nb)
            continue;
        struct token *t = push_token(c, T_WORD);
        if (t)
            t->word = wi;
    }
    if (npending)
        c->incomplete = true; /* here-documents with no body */
}

/* ---- commands ---------------------------------------------------------------- */

enum { S_NONE, S_FOR, S_CASE_WORD, S_CASE_PAT, S_DBRACKET };

/* Ends the command being collected; returns its index, or SIZE_MAX when it
 * has no word (nothing, or only redirections: no program runs). */
static size_t finish(struct ctx *c, size_t si, size_t *w0, size_t *r0, size_t pipe_prev,
                     bool piped, size_t upstream) {
    size_t nw = c->cmdwords.len - *w0, nr = c->cmdredirs.len - *r0, idx = SIZE_MAX;
    if (nw == 0 && nr > 0 && c->guard) {
        struct bare *b = vec_push(&c->bares, &c->nomem);
        if (b)
            *b = (struct bare){si, *r0, nr};
    } else if (nw == 0) {
        c->cmdredirs.len = *r0;
    } else if (c->rcmds.len >= MAX_CMDS) {
        c->incomplete = c->bounded = true;
    } else {
        struct rcmd *r = vec_push(&c->rcmds, &c->nomem);
        if (r) {
            *r = (struct rcmd){si, *w0, nw, *r0, nr, pipe_prev, false, piped, upstream, 0, 0, false};
            idx = c->rcmds.len - 1;
        }
    }
    *w0 = c->cmdwords.len;
    *r0 = c->cmdredirs.len;
    return idx;
}

static void poison(struct ctx *c, size_t si, const char *name, size_t n);
static void add_var(struct ctx *c, size_t si, a3s_str name, a3s_str value, bool known);
static a3s_str value_of(struct ctx *c, size_t si, size_t wi);

static bool in_list(a3s_str v, const char *const *list, size_t n);

static inline bool word_is(struct ctx *c, size_t wi, const char *lit) {
    const struct word *w = &VEC_AT(c->words, struct word, wi);
    return w->plain && eq(w->src, lit);
}

/* Whether the word after `coproc` at token t is the coprocess's NAME: it is
 * when a compound command follows it. */
static bool coproc_name(struct ctx *c, size_t t, size_t t1) {
    static const char *const COMPOUND[] = {"{", "while", "until", "if", "for", "case", "select", "[["};
    if (t + 2 >= t1 || VEC_AT(c->tokens, struct token, t + 1).type != T_WORD)
        return false;
    const struct token *next = &VEC_AT(c->tokens, struct token, t + 2);
    if (next->type == T_ARITH || (next->type == T_OP && next->op == OP_LPAREN))
        return true;
    for (size_t k = 0; next->type == T_WORD && k < sizeof COMPOUND / sizeof *COMPOUND; k++)
        if (word_is(c, next->word, COMPOUND[k]))
            return true;
    return false;
}

/* Groups one source's tokens into simple commands, past the shell's keywords. */
static void structure(struct ctx *c, size_t si, size_t t0, size_t t1) {
    /* Sorted in byte order: in_list() searches it by halves. */
    static const char *const SKIPPED[] = {"!", "coproc", "do", "done", "elif", "else",
                                          "fi", "if", "then", "until", "while", "{",
                                          "}"};
    int mode = S_NONE, cases = 0;
    bool expect_rparen = false, skip_name = false, for_first = false, shaped = false;
    bool poison_loop = false, time_opts = false;
    a3s_str for_name = {NULL, 0};
    long parens = 0;
    size_t w0 = c->cmdwords.len, r0 = c->cmdredirs.len, prev = SIZE_MAX, first = c->rcmds.len;
    size_t last = SIZE_MAX; /* the last command ended in this source */
    bool piped = false;
    for (size_t t = t0; t < t1 && !failed(c); t++) {
        const struct token tok = VEC_AT(c->tokens, struct token, t);
        if (tok.type == T_ARITH) {
            if (mode == S_FOR)
                mode = S_NONE; /* for (( ... )) */
            else if (mode == S_NONE && (c->cmdwords.len != w0 || c->cmdredirs.len != r0))
                c->incomplete = true; /* `cmd ((`: not a line bash runs */
            shaped = true;
            continue;
        }
        if (tok.type == T_OP) {
            if (mode == S_DBRACKET && tok.op == OP_NL && c->guard) {
                mode = S_NONE; /* `[[` then a newline: bash fails; a floor reads on */
                continue;
            }
            if (mode == S_DBRACKET || mode == S_CASE_WORD)
                continue;
            if (mode == S_CASE_PAT) {
                if (tok.op == OP_RPAREN)
                    mode = S_NONE;
                continue;
            }
            if (mode == S_FOR) {
                if (tok.op == OP_SEMI || tok.op == OP_NL) {
                    mode = S_NONE;
                    if (poison_loop && for_name.p) /* for NAME; do: the positional parameters */
                        poison(c, si, for_name.p, for_name.n);
                }
                continue;
            }
            if (tok.op != OP_NL)
                shaped = true;
            if (tok.op == OP_LPAREN)
                parens++;
            if (tok.op == OP_RPAREN && parens-- == 0)
                c->incomplete = true; /* a ')' that closes nothing */
            if (tok.op == OP_LPAREN && c->cmdwords.len - w0 == 1 && c->cmdredirs.len == r0) {
                c->cmdwords.len--; /* name ( ) { ...; }: a function definition */
                expect_rparen = true;
                continue;
            }
            if (tok.op == OP_RPAREN && expect_rparen) {
                expect_rparen = false;
                continue;
            }
            size_t done = finish(c, si, &w0, &r0, piped ? prev : SIZE_MAX, piped,
                                 piped ? last : SIZE_MAX);
            piped = tok.op == OP_PIPE;
            prev = done;
            if (done != SIZE_MAX)
                last = done;
            if (tok.op == OP_DSEMI && cases > 0)
                mode = S_CASE_PAT;
            continue;
        }
        if (tok.type == T_REDIR) {
            size_t *slot = mode == S_NONE ? vec_push(&c->cmdredirs, &c->nomem) : NULL;
            if (slot)
                *slot = t;
            continue;
        }
        size_t wi = tok.word;
        if (wi == SIZE_MAX)
            continue;
        if (skip_name) {
            skip_name = false;
            continue;
        }
        if (time_opts && c->cmdwords.len == w0 && (word_is(c, wi, "-p") || word_is(c, wi, "--")))
            continue; /* time -p: the keyword's own option */
        time_opts = false;
        if (mode == S_FOR) { /* for NAME in WORDS: NAME takes each word's value */
            const struct word *w = &VEC_AT(c->words, struct word, wi);
            if (word_is(c, wi, "do")) {
                mode = S_NONE;
            } else if (for_first) {
                for_name = w->src;
                poison_loop = true;
            } else if (poison_loop && word_is(c, wi, "in")) {
                poison_loop = false;
            } else if (!poison_loop && for_name.p) {
                a3s_str value = literal(c, wi);
                if (value.p)
                    add_var(c, si, for_name, value, true);
                else
                    poison(c, si, for_name.p, for_name.n);
            }
            for_first = false;
            continue;
        }
        if (mode == S_CASE_WORD) {
            if (word_is(c, wi, "in")) {
                mode = S_CASE_PAT;
                cases++;
            }
            continue;
        }
        if (mode == S_CASE_PAT || mode == S_DBRACKET) {
            if (mode == S_DBRACKET) /* [[ x -eq y ]] evaluates x and y as arithmetic */
                note_arith(c, si, VEC_AT(c->words, struct word, wi).src.p,
                           VEC_AT(c->words, struct word, wi).src.n);
            if (mode == S_CASE_PAT && word_is(c, wi, "esac")) {
                cases--;
                mode = S_NONE;
            } else if (mode == S_DBRACKET && word_is(c, wi, "]]")) {
                mode = S_NONE;
            }
            continue;
        }
        /* a reserved word counts only where a command starts: after a
         * redirection (`>/dev/null case x`) it is a program's name */
        if (c->cmdwords.len == w0 && c->cmdredirs.len == r0 &&
            VEC_AT(c->words, struct word, wi).src.n <= 8) {
            bool keyword = VEC_AT(c->words, struct word, wi).plain &&
                           in_list(VEC_AT(c->words, struct word, wi).src, SKIPPED,
                                   sizeof SKIPPED / sizeof *SKIPPED);
            if (word_is(c, wi, "esac") && cases > 0) {
                cases--;
                keyword = true;
            } else if (word_is(c, wi, "for") || word_is(c, wi, "select")) {
                mode = S_FOR;
                for_first = keyword = true;
            } else if (word_is(c, wi, "case")) {
                mode = S_CASE_WORD;
                keyword = true;
            } else if (word_is(c, wi, "[[")) {
                mode = S_DBRACKET;
                keyword = true;
            } else if (word_is(c, wi, "function")) {
                skip_name = keyword = true;
            } else if (word_is(c, wi, "time")) { /* the keyword times a whole pipeline */
                time_opts = keyword = true;
            } else if (word_is(c, wi, "coproc")) { /* coproc NAME { ...; }: NAME is no program */
                skip_name = coproc_name(c, t, t1);
            }
            if (keyword) {
                shaped = true;
                continue;
            }
        }
        size_t *slot = vec_push(&c->cmdwords, &c->nomem);
        if (slot)
            *slot = wi;
    }
    finish(c, si, &w0, &r0, piped ? prev : SIZE_MAX, piped, piped ? last : SIZE_MAX);
    if (parens != 0)
        c->incomplete = true; /* a '(' never closed: bash runs nothing we can vouch for */
    if (si == 0 && !shaped && c->rcmds.len - first == 1 && c->pushed_by_top == 0) {
        struct rcmd *r = &VEC_AT(c->rcmds, struct rcmd, first);
        bool heredoc = false;
        for (size_t k = 0; k < r->nr; k++) {
            size_t ti = VEC_AT(c->cmdredirs, size_t, r->r0 + k);
            heredoc = heredoc || VEC_AT(c->tokens, struct token, ti).rkind == R_HEREDOC;
        }
        r->whole = !heredoc;
    }
}

/* ---- variables the line assigns -------------------------------------------- */

static void add_var(struct ctx *c, size_t si, a3s_str name, a3s_str value, bool known) {
    if (c->vars.len >= MAX_VARS) {
        c->unreliable_env = true;
        return;
    }
    struct var *v = vec_push(&c->vars, &c->nomem);
    if (v)
        *v = (struct var){name, value, known, si};
}

/* A name that something other than a plain assignment may set (read x,
 * export x=..., for x in ...): its value is unknown from here on. */
static void poison(struct ctx *c, size_t si, const char *name, size_t n) {
    size_t k = 0;
    while (k < n && is_name_char(name[k]))
        k++;
    if (k > 0 && is_name_start(name[0]) && (k == n || name[k] == '=' || name[k] == '+' ||
                                            name[k] == '['))
        add_var(c, si, (a3s_str){name, k}, (a3s_str){NULL, 0}, false);
}

/* The length of NAME in a word `NAME=...` (0 if it is not an assignment);
 * *simple is false for NAME+=... and NAME[i]=... */
static size_t assigned_name(a3s_str src, bool *simple) {
    size_t k = 0;
    if (!src.n || !is_name_start(src.p[0]))
        return 0;
    while (k < src.n && is_name_char(src.p[k]))
        k++;
    *simple = k < src.n && src.p[k] == '=';
    if (*simple || (k + 1 < src.n && src.p[k] == '+' && src.p[k + 1] == '='))
        return k;
    if (k < src.n && src.p[k] == '[') {
        const char *close = memchr(src.p + k, ']', src.n - k);
        if (close && close + 1 < src.p + src.n && close[1] == '=')
            return k;
    }
    return 0;
}

static size_t assignments(struct ctx *c, const struct rcmd *r) {
    size_t a = 0;
    bool simple;
    while (a < r->nw &&
           assigned_name(VEC_AT(c->words, struct word,
                                VEC_AT(c->cmdwords, size_t, r->w0 + a)).src, &simple))
        a++;
    return a;
}

static bool has_option(struct ctx *c, const struct rcmd *r, size_t from, const char *letters);

/* Builtins that set the variables their arguments name (read x, export x=1 ...).
 * Sorted in byte order: in_list() searches it by halves. */
static const char *const SETS_VARS[] = {"builtin", "command", "declare", "export", "getopts", "let",
                                        "local", "mapfile", "printf", "read", "readarray", "readonly",
                                        "typeset", "unset", "wait"};

static bool changes_env(a3s_str v) { return EQ(v, "eval") || EQ(v, "source") || EQ(v, "."); }

/* Records what one command does to the line's variables. */
static void register_env(struct ctx *c, const struct rcmd *r) {
    /* Sorted in byte order: in_list() searches it by halves. */
    static const char *const EXPORTS[] = {"declare", "export", "local", "readonly", "typeset"};
    size_t a = assignments(c, r);
    bool sets_vars = false, exports = false;
    for (size_t k = 0; k < r->nw; k++) {
        size_t wi = VEC_AT(c->cmdwords, size_t, r->w0 + k);
        const struct word *w = &VEC_AT(c->words, struct word, wi);
        bool simple = false;
        size_t n = k < a || (exports && k > a) ? assigned_name(w->src, &simple) : 0;
        if ((k < a && a == r->nw && simple) || (exports && k > a && simple)) {
            /* x=/ (and export x=/): a literal value, or one made of values the
             * line shows (x=$x$x) */
            a3s_str value = literal(c, wi);
            if (!value.p)
                value = value_of(c, r->source, wi);
            bool known = value.p != NULL && value.n > n;
            value = known ? (a3s_str){value.p + n + 1, value.n - n - 1} : (a3s_str){NULL, 0};
            add_var(c, r->source, (a3s_str){w->src.p, n}, value, known);
            if (known && changes_env(value))
                c->unreliable_env = true;
        } else if (k < a || sets_vars) {
            poison(c, r->source, w->src.p, w->src.n);
        }
        if (k == a) {
            a3s_str prog = literal(c, wi);
            sets_vars = !prog.p || in_list(prog, SETS_VARS, sizeof SETS_VARS / sizeof *SETS_VARS);
            if (prog.p && changes_env(prog))
                c->unreliable_env = true;
            /* export NAME=VALUE...: without options, each word is an assignment */
            exports = prog.p && sets_vars && /* each of EXPORTS sets variables */
                      in_list(prog, EXPORTS, sizeof EXPORTS / sizeof *EXPORTS);
            for (size_t q = k + 1; exports && q < r->nw; q++) {
                a3s_str v = VEC_AT(c->words, struct word, VEC_AT(c->cmdwords, size_t, r->w0 + q)).src;
                exports = v.n && v.p[0] != '-' && v.p[0] != '+';
            }
        }
    }
}

/* The values a variable may have when the line shows them: every assignment to
 * it that can reach source `si` (x=a; x=b; for x in c d) is a literal, and
 * nothing else may set it. Returns how many distinct values there are (0:
 * unknown, or more than MAX_VALUES) and sets *value to value number `pick`. */
static size_t lookup(struct ctx *c, size_t si, a3s_str name, size_t pick, a3s_str *value) {
    a3s_str seen[MAX_VALUES];
    size_t n = 0;
    if (c->unreliable_env)
        return 0;
    for (size_t k = 0; k < c->vars.len; k++) {
        const struct var *v = &VEC_AT(c->vars, struct var, k);
        if (v->name.n != name.n || memcmp(v->name.p, name.p, name.n) != 0)
            continue;
        bool reaches = false;
        for (size_t s = si; s != SIZE_MAX && !reaches;
             s = VEC_AT(c->sources, struct source, s).parent)
            reaches = s == v->source;
        if (!reaches)
            continue;
        if (!v->known)
            return 0;
        bool dup = false;
        for (size_t q = 0; q < n && !dup; q++)
            dup = seen[q].n == v->value.n && memcmp(seen[q].p, v->value.p, v->value.n) == 0;
        if (dup)
            continue;
        if (n == MAX_VALUES)
            return 0;
        seen[n++] = v->value;
    }
    if (n)
        *value = seen[pick % n];
    return n;
}

/* ---- spelling ----------------------------------------------------------------- */

static size_t word_at(struct ctx *c, const struct rcmd *r, size_t k) {
    return VEC_AT(c->cmdwords, size_t, r->w0 + k);
}

enum { M_SRC, M_VAL, M_EXP };

/* Appends word wi in `mode` to ctx.tmp; *known is cleared when an expansion's
 * value is not shown by the line (or, with pick SIZE_MAX, has several). A
 * variable with several values reads as value number `pick`, and
 * ctx.values becomes at least their count. Returns whether an expansion was
 * replaced. */
static bool word_text(struct ctx *c, size_t si, size_t wi, int mode, size_t pick, bool *known) {
    const struct word *w = &VEC_AT(c->words, struct word, wi);
    bool expanded = false;
    if (mode == M_SRC || w->plain) {
        buf_add(&c->tmp, w->src.p, w->src.n);
        return false;
    }
    for (size_t k = 0; k < w->nparts; k++) {
        const struct part *p = &VEC_AT(c->parts, struct part, w->part0 + k);
        a3s_str value = {NULL, 0};
        size_t n = mode == M_EXP && p->kind == P_VAR
                       ? lookup(c, si, p->text, pick == SIZE_MAX ? 0 : pick, &value)
                       : 0;
        if (n > c->values)
            c->values = n;
        if (p->kind == P_LIT) {
            buf_add(&c->tmp, p->text.p, p->text.n);
            continue;
        }
        if (mode == M_EXP && p->kind == P_SUB && p->known) {
            value = p->text;
            n = 1;
        }
        if (n == 1 || (n > 1 && pick != SIZE_MAX)) {
            /* unquoted, a value is split at blanks and its pattern characters
             * match file names: split, the word is no longer one known word;
             * a pattern is any text */
            bool glob = false, blank = false;
            for (size_t q = 0; !p->quoted && q < value.n; q++) {
                glob = glob || strchr("*?[", value.p[q]) != NULL;
                blank = blank || strchr(" \t\n", value.p[q]) != NULL;
            }
            if (!glob) {
                buf_add(&c->tmp, value.p, value.n);
                expanded = true;
                if (blank) {
                    c->split_word = true;
                    *known = false;
                }
                continue;
            }
        }
        if (mode == M_EXP && c->open == SIZE_MAX)
            c->open = c->tmp.n;
        buf_add(&c->tmp, p->src.p, p->src.n);
        *known = false;
    }
    return expanded;
}

/* A word's value (expanded where the line shows how), or {NULL} if unknown. */
static a3s_str value_of(struct ctx *c, size_t si, size_t wi) {
    const struct word *w = &VEC_AT(c->words, struct word, wi);
    if (w->plain)
        return w->src;
    bool known = true;
    c->tmp.n = 0;
    word_text(c, si, wi, M_EXP, SIZE_MAX, &known);
    if (!known)
        return (a3s_str){NULL, 0};
    return arena_str(c->mem, c->tmp.p ? c->tmp.p : "", c->tmp.n);
}

struct form {
    const struct rcmd *r;
    size_t from;             /* the program's word */
    size_t skip0, skip1;     /* words left out (git's global options) */
    int mode;                /* M_SRC, M_VAL or M_EXP */
    size_t pick;             /* M_EXP: which value of a variable with several */
    bool drop;               /* leave out words that are only unknown expansions */
    bool fold;               /* the program by its bare, lower-case name */
    bool tail_open;          /* more words the line does not show follow (xargs) */
};

/* Whether word wi is nothing but expansions whose value the line does not show
 * (`$(cmd)`, `$UNSET`): it may expand to no word at all. */
static bool only_unknown(struct ctx *c, size_t si, size_t wi) {
    const struct word *w = &VEC_AT(c->words, struct word, wi);
    if (w->plain || !w->nparts)
        return false;
    for (size_t k = 0; k < w->nparts; k++) {
        const struct part *p = &VEC_AT(c->parts, struct part, w->part0 + k);
        a3s_str value;
        if (p->kind == P_LIT || p->kind == P_GLOB || (p->kind == P_SUB && p->known) ||
            (p->kind == P_VAR && lookup(c, si, p->text, 0, &value)))
            return false; /* a pattern that matches no file stays as written */
    }
    return true;
}

/* After the program's directory was cut from tmp[at..at+n): where unknown
 * text starts in the name, judged by its pattern characters and `$`
 * (conservative: a literal `$` counts too), or SIZE_MAX. */
static size_t rescan_open(struct ctx *c, size_t at, size_t n) {
    for (size_t q = 0; q < n; q++)
        if (strchr("$`*?[", c->tmp.p[at + q]))
            return at + q;
    return SIZE_MAX;
}

/* As written, the words of a command that stand one blank apart, with no
 * redirection, are that stretch of their code: copied at once (what render()
 * would build word by word). False: not such a form. */
static bool render_span(struct ctx *c, const struct form *f, a3s_str *out) {
    const struct rcmd *r = f->r;
    if (f->mode != M_SRC || f->fold || f->drop || f->tail_open || f->skip0 < f->skip1 || r->nr ||
        f->from >= r->nw)
        return false;
    /* the words must lie in their command's code (a brace expansion's do not) */
    a3s_str code = VEC_AT(c->sources, struct source, r->source).code;
    uintptr_t lo = (uintptr_t)code.p, hi = lo + code.n;
    const struct word *w = &VEC_AT(c->words, struct word, word_at(c, r, f->from));
    const char *start = w->src.p, *end = start + w->src.n;
    if ((uintptr_t)start < lo || (uintptr_t)end > hi)
        return false;
    for (size_t k = f->from + 1; k < r->nw; k++) {
        w = &VEC_AT(c->words, struct word, word_at(c, r, k));
        if ((uintptr_t)end >= hi || *end != ' ' || w->src.p != end + 1 ||
            (uintptr_t)(w->src.p + w->src.n) > hi)
            return false;
        end = w->src.p + w->src.n;
    }
    *out = arena_str(c->mem, start, (size_t)(end - start));
    return true;
}

/* One reading of a command as a string; *changed: an expansion was replaced;
 * ctx.open: where text the line does not show starts (SIZE_MAX: none). */
static a3s_str render(struct ctx *c, const struct form *f, bool *changed) {
    const struct rcmd *r = f->r;
    size_t si = r->source;
    bool known = true, any = false;
    c->tmp.n = 0;
    c->open = SIZE_MAX;
    if (changed)
        *changed = false;
    a3s_str span;
    if (render_span(c, f, &span))
        return span;
    for (size_t k = f->from; k < r->nw; k++) {
        if (k >= f->skip0 && k < f->skip1)
            continue;
        if (f->drop && k > f->from && only_unknown(c, si, VEC_AT(c->cmdwords, size_t, r->w0 + k)))
            continue;
        if (c->tmp.n)
            buf_ch(&c->tmp, ' ');
        size_t at = c->tmp.n;
        c->split_word = false;
        any |= word_text(c, si, VEC_AT(c->cmdwords, size_t, r->w0 + k), f->mode, f->pick, &known);
        size_t n = c->tmp.n - at;
        if (c->tmp.nomem)
            return (a3s_str){NULL, 0};
        if (k == f->from && f->fold) {
            char *p = c->tmp.p + at, *slash = NULL;
            for (size_t q = 0; q < n; q++)
                if (p[q] == '/')
                    slash = p + q;
            if (slash && slash + 1 < p + n) {
                size_t keep = (size_t)(p + n - slash - 1), cut = (size_t)(slash + 1 - p);
                memmove(p, slash + 1, keep);
                c->tmp.n = at + keep;
                n = keep;
                /* text not shown before the last '/' is only the directory
                 * (`$d/git`); after it, the name is partly unknown */
                if (c->open != SIZE_MAX)
                    c->open = c->open >= at + cut ? c->open - cut : rescan_open(c, at, n);
            }
            for (size_t q = 0; q < n; q++)
                p[q] = (char)a3s_lower((unsigned char)p[q]);
            if (n > 4 && memcmp(p, "git-", 4) == 0)
                p[3] = ' '; /* /usr/lib/git-core/git-push: git push */
        }
        if (f->mode != M_SRC && !c->split_word) { /* a value that is empty or holds a blank reads quoted */
            bool blank = n == 0;
            for (size_t q = 0; q < n && !blank; q++) {
                char ch = c->tmp.p[at + q];
                blank = ch == ' ' || ch == '\t' || ch == '\n';
            }
            if (blank) {
                buf_add(&c->tmp, "\"\"", 2);
                if (c->tmp.nomem)
                    return (a3s_str){NULL, 0};
                memmove(c->tmp.p + at + 1, c->tmp.p + at, n);
                c->tmp.p[at] = '"';
                c->tmp.p[at + n + 1] = '"';
            }
        }
    }
    if (f->tail_open) {
        buf_ch(&c->tmp, ' ');
        if (c->open == SIZE_MAX)
            c->open = c->tmp.n;
    }
    for (size_t k = 0; k < r->nr; k++) {
        const struct token *t = &VEC_AT(c->tokens, struct token, VEC_AT(c->cmdredirs, size_t, r->r0 + k));
        if (c->tmp.n && !(f->tail_open && k == 0))
            buf_ch(&c->tmp, ' ');
        buf_add(&c->tmp, t->src.p, t->src.n);
        if (t->word != SIZE_MAX) {
            a3s_str target = VEC_AT(c->words, struct word, t->word).src;
            buf_add(&c->tmp, target.p, target.n);
        }
    }
    if (changed)
        *changed = any;
    return arena_str(c->mem, c->tmp.p ? c->tmp.p : "", c->tmp.n);
}

struct forms {
    a3s_str spell[MAX_FORMS], alias[MAX_FORMS];
    size_t spell_open[MAX_FORMS], alias_open[MAX_FORMS]; /* see a3s_bash_cmd */
    size_t nspell, nalias;
    bool dynamic;
};

static bool same(a3s_str a, a3s_str b) { return a.n == b.n && memcmp(a.p, b.p, a.n) == 0; }

static void add_form(struct ctx *c, a3s_str *list, size_t *opens, size_t *n, a3s_str s,
                     size_t open) {
    if (!s.p)
        return;
    for (size_t k = 0; k < *n; k++) {
        if (same(list[k], s)) {
            if (open < opens[k])
                opens[k] = open;
            return;
        }
    }
    if (*n == MAX_FORMS) {
        c->incomplete = true;
        return;
    }
    opens[*n] = open;
    list[(*n)++] = s;
}

/* A form rendered again would be s once more: s, its bytes charged to the
 * arena as the copy would be (so the bound trips where it did). */
static a3s_str again(struct ctx *c, a3s_str s) {
    return arena_charge(c->mem, s.n + 1) ? s : (a3s_str){NULL, 0};
}

#define SPELL(f) (f)->spell, (f)->spell_open, &(f)->nspell
#define ALIAS(f) (f)->alias, (f)->alias_open, &(f)->nalias

/* Adds a reading as a spelling (every one must be allowed) and its unquoted
 * and bare-name forms as aliases (only deny and ask rules see them). */
/* `shown`: when not NULL, what render() gives f as written (M_SRC), already held. */
static void add_reading(struct ctx *c, struct forms *out, struct form f, a3s_str shown) {
    bool changed = false, plain = true;
    for (size_t k = f.from; k < f.r->nw && plain; k++)
        plain = VEC_AT(c->words, struct word, word_at(c, f.r, k)).plain;
    f.mode = M_SRC;
    a3s_str src = shown;
    if (shown.p) {
        c->open = SIZE_MAX; /* as written, with no tail: nothing the line does not show */
        if (!arena_charge(c->mem, shown.n + 1))
            src = (a3s_str){NULL, 0};
    } else {
        src = render(c, &f, NULL);
    }
    add_form(c, SPELL(out), src, c->open);
    /* a program word of literal text, no '/', capital or git- prefix, reads the
     * same folded: the folded forms are the forms before them */
    const struct word *pw = &VEC_AT(c->words, struct word, word_at(c, f.r, f.from));
    bool bare = true;
    for (size_t k = 0; k < pw->src.n && bare; k++)
        bare = pw->src.p[k] != '/' && !(pw->src.p[k] >= 'A' && pw->src.p[k] <= 'Z');
    bare = bare && !(pw->src.n > 4 && memcmp(pw->src.p, "git-", 4) == 0);
    if (plain) { /* quotes, backslashes and expansions aside, only the bare name differs */
        f.fold = true;
        if (!bare) {
            a3s_str folded = render(c, &f, NULL);
            add_form(c, ALIAS(out), folded, c->open);
        }
        return;
    }
    bool same_folded = bare && pw->plain;
    f.mode = M_VAL;
    a3s_str val = render(c, &f, NULL);
    size_t val_open = c->open;
    add_form(c, ALIAS(out), val, val_open);
    /* Words of literal text only (quotes and backslashes, no expansion): their expanded
     * reading is the value reading, already added; no word can expand to nothing. */
    bool literal = true;
    for (size_t k = f.from; k < f.r->nw && literal; k++) {
        const struct word *w = &VEC_AT(c->words, struct word, word_at(c, f.r, k));
        for (size_t q = 0; !w->plain && q < w->nparts && literal; q++)
            literal = VEC_AT(c->parts, struct part, w->part0 + q).kind == P_LIT;
    }
    c->values = 1;
    for (f.pick = 0; !literal && f.pick < c->values && f.pick < MAX_VALUES; f.pick++) {
        f.mode = M_EXP;
        f.fold = false;
        a3s_str exp = render(c, &f, &changed);
        size_t open = c->open;
        if (changed && exp.p && val.p && !same(exp, val))
            add_form(c, SPELL(out), exp, open);
        else if (open != SIZE_MAX) /* text not shown: deny and ask rules read it as any text */
            add_form(c, ALIAS(out), exp, open);
        f.fold = true;
        a3s_str folded = same_folded && exp.p ? again(c, exp) : render(c, &f, NULL);
        add_form(c, ALIAS(out), folded, same_folded && exp.p ? open : c->open);
    }
    f.fold = true;
    f.mode = M_VAL;
    a3s_str folded = same_folded && val.p ? again(c, val) : render(c, &f, NULL);
    add_form(c, ALIAS(out), folded, same_folded && val.p ? val_open : c->open);
    bool unknown = false; /* an argument that may expand to nothing: the reading without it */
    for (size_t k = f.from + 1; k < f.r->nw && !unknown && !literal; k++)
        unknown = only_unknown(c, f.r->source, word_at(c, f.r, k));
    if (unknown) {
        f.mode = M_EXP;
        f.pick = 0;
        f.drop = true;
        f.fold = false;
        a3s_str dropped = render(c, &f, NULL);
        add_form(c, SPELL(out), dropped, c->open);
        f.fold = true;
        dropped = render(c, &f, NULL);
        add_form(c, ALIAS(out), dropped, c->open);
    }
}

/* ---- programs that run other programs --------------------------------------- */

struct wrapper {
    const char *name;
    const char *takes;        /* short options whose value is the next word */
    const char *const *longs; /* long options whose value is the next word */
    int positional;           /* operands before the program (timeout's duration) */
    bool assigns;             /* NAME=VALUE words before the program */
    const char *sub;          /* the subcommand that runs a program (uv run), or NULL */
    int code;                 /* CODE_*: where code for a shell is found */
};

enum { CODE_NONE, CODE_DASH_C, CODE_REST }; /* -c CODE (flock, script, su); the words (watch) */

static const char *const ENV_LONG[] = {"--unset", "--chdir", "--split-string", NULL};
static const char *const NICE_LONG[] = {"--adjustment", NULL};
static const char *const TIMEOUT_LONG[] = {"--signal", "--kill-after", NULL};
static const char *const TIME_LONG[] = {"--format", "--output", NULL};
static const char *const STDBUF_LONG[] = {"--input", "--output", "--error", NULL};
static const char *const IONICE_LONG[] = {"--class", "--classdata", NULL};
static const char *const SUDO_LONG[] = {"--user", "--group", "--host", "--prompt", "--close-from",
                                        "--chdir", "--role", "--type", "--command-timeout",
                                        "--other-user", NULL};
static const char *const XARGS_LONG[] = {"--arg-file", "--delimiter", "--max-lines", "--max-args",
                                         "--max-procs", "--max-chars", NULL};
static const char *const NONE_LONG[] = {NULL};

static const char *const CHROOT_LONG[] = {"--userspec", "--groups", NULL};
static const char *const UNSHARE_LONG[] = {"--setuid", "--setgid", "--root", "--wd", NULL};
static const char *const NSENTER_LONG[] = {"--target", "--setuid", "--setgid", NULL};
static const char *const SYSTEMD_RUN_LONG[] = {
    "--unit", "--property", "--setenv", "--machine", "--host", "--description", "--slice",
    "--uid", "--gid", "--nice", "--working-directory", "--on-calendar", "--on-active", NULL};
static const char *const UV_LONG[] = {"--with", "--python", "--directory", NULL};
static const char *const CONDA_LONG[] = {"--name", "--prefix", NULL};
static const char *const WATCH_LONG[] = {"--interval", "--differences", NULL};
static const char *const SCRIPT_LONG[] = {"--log-io", "--log-in", "--log-out", "--log-timing",
                                          "--echo", "--logging-format", "--output-limit", NULL};
static const char *const SETPRIV_LONG[] = {
    "--reuid", "--regid", "--ruid", "--euid", "--rgid", "--egid", "--groups", "--inh-caps",
    "--ambient-caps", "--bounding-set", "--securebits", "--pdeathsig", "--selinux-label",
    "--apparmor-profile", "--landlock-access", "--landlock-rule", NULL};
static const char *const PRLIMIT_LONG[] = {"--pid", "--output", NULL};
static const char *const PKEXEC_LONG[] = {"--user", NULL};
static const char *const RUN0_LONG[] = {"--user", "--group", "--chdir", "--setenv", "--unit",
                                        "--property", "--description", "--slice", "--nice",
                                        "--machine", NULL};
static const char *const LDSO_LONG[] = {"--library-path", "--preload", "--audit", "--argv0",
                                        "--inhibit-rpath", NULL};

/* The programs that run the program named after their options: the one table the
 * policy, the exec check's bindings and the guardrail (a3s_bash_read_line) read with.
 * Sorted by name in byte order: find_wrapper() searches it by halves. */
static const struct wrapper WRAPPERS[] = {
    {"arch", "", NONE_LONG, 0, false, NULL, CODE_NONE},
    {"builtin", "", NONE_LONG, 0, false, NULL, CODE_NONE},
    {"bundle", "", NONE_LONG, 0, false, "exec", CODE_NONE},
    {"busybox", "", NONE_LONG, 0, false, NULL, CODE_NONE},
    {"caffeinate", "wt", NONE_LONG, 0, false, NULL, CODE_NONE},
    {"catchsegv", "", NONE_LONG, 0, false, NULL, CODE_NONE},
    {"cgexec", "g", NONE_LONG, 0, false, NULL, CODE_NONE},
    {"chronic", "", NONE_LONG, 0, false, NULL, CODE_NONE},
    {"chroot", "", CHROOT_LONG, 1, false, NULL, CODE_NONE},
    {"chrt", "TPD", NONE_LONG, 1, false, NULL, CODE_NONE},
    {"command", "", NONE_LONG, 0, false, NULL, CODE_NONE},
    {"conda", "np", CONDA_LONG, 0, false, "run", CODE_NONE},
    {"dbus-run-session", "", NONE_LONG, 0, false, NULL, CODE_NONE},
    {"doas", "uC", NONE_LONG, 0, false, NULL, CODE_NONE},
    {"dumb-init", "r", NONE_LONG, 0, false, NULL, CODE_NONE},
    {"eatmydata", "", NONE_LONG, 0, false, NULL, CODE_NONE},
    {"env", "uCSP", ENV_LONG, 0, true, NULL, CODE_NONE},
    {"exec", "a", NONE_LONG, 0, false, NULL, CODE_NONE},
    {"fakeroot", "lsib", NONE_LONG, 0, false, NULL, CODE_NONE},
    {"faketime", "f", NONE_LONG, 1, false, NULL, CODE_NONE},
    {"firejail", "", NONE_LONG, 0, false, NULL, CODE_NONE},
    {"flock", "wEc", NONE_LONG, 1, false, NULL, CODE_DASH_C},
    {"hatch", "", NONE_LONG, 0, false, "run", CODE_NONE},
    {"i386", "", NONE_LONG, 0, false, NULL, CODE_NONE},
    {"ionice", "cn", IONICE_LONG, 0, false, NULL, CODE_NONE},
    {"ld-linux-aarch64.so.1", "", LDSO_LONG, 0, false, NULL, CODE_NONE},
    {"ld-linux-x86-64.so.2", "", LDSO_LONG, 0, false, NULL, CODE_NONE},
    {"ld-linux.so.2", "", LDSO_LONG, 0, false, NULL, CODE_NONE},
    {"ld.so", "", LDSO_LONG, 0, false, NULL, CODE_NONE},
    {"linux32", "", NONE_LONG, 0, false, NULL, CODE_NONE},
    {"linux64", "", NONE_LONG, 0, false, NULL, CODE_NONE},
    {"ltrace", "oepsunaADlx", NONE_LONG, 0, false, NULL, CODE_NONE},
    {"nice", "n", NICE_LONG, 0, false, NULL, CODE_NONE},
    {"nocache", "n", NONE_LONG, 0, false, NULL, CODE_NONE},
    {"nohup", "", NONE_LONG, 0, false, NULL, CODE_NONE},
    {"nsenter", "tSG", NSENTER_LONG, 0, false, NULL, CODE_NONE},
    {"numactl", "CNmPpi", NONE_LONG, 0, false, NULL, CODE_NONE},
    {"pdm", "", NONE_LONG, 0, false, "run", CODE_NONE},
    {"pipenv", "", NONE_LONG, 0, false, "run", CODE_NONE},
    {"pkexec", "", PKEXEC_LONG, 0, false, NULL, CODE_NONE},
    {"poetry", "", NONE_LONG, 0, false, "run", CODE_NONE},
    {"prlimit", "p", PRLIMIT_LONG, 0, false, NULL, CODE_NONE},
    {"proxychains", "f", NONE_LONG, 0, false, NULL, CODE_NONE},
    {"proxychains4", "f", NONE_LONG, 0, false, NULL, CODE_NONE},
    {"rlwrap", "", NONE_LONG, 0, false, NULL, CODE_NONE},
    {"run0", "uDg", RUN0_LONG, 0, false, NULL, CODE_NONE},
    {"runuser", "ucgsG", NONE_LONG, 0, false, NULL, CODE_DASH_C},
    {"script", "cTIOBEm", SCRIPT_LONG, 0, false, NULL, CODE_DASH_C},
    {"setarch", "", NONE_LONG, 1, false, NULL, CODE_NONE},
    {"setpriv", "", SETPRIV_LONG, 0, false, NULL, CODE_NONE},
    {"setsid", "", NONE_LONG, 0, false, NULL, CODE_NONE},
    {"sg", "", NONE_LONG, 1, false, NULL, CODE_REST},
    {"ssh-agent", "aEPt", NONE_LONG, 0, false, NULL, CODE_NONE},
    {"stdbuf", "ioe", STDBUF_LONG, 0, false, NULL, CODE_NONE},
    {"strace", "oepsuEabIOSPX", NONE_LONG, 0, false, NULL, CODE_NONE},
    {"su", "cgsG", NONE_LONG, 0, false, NULL, CODE_DASH_C},
    {"sudo", "ughpCDrtTU", SUDO_LONG, 0, true, NULL, CODE_NONE},
    {"systemd-run", "upEMH", SYSTEMD_RUN_LONG, 0, false, NULL, CODE_NONE},
    {"taskset", "", NONE_LONG, 1, false, NULL, CODE_NONE},
    {"time", "fo", TIME_LONG, 0, false, NULL, CODE_NONE},
    {"timeout", "sk", TIMEOUT_LONG, 1, false, NULL, CODE_NONE},
    {"tini", "splgew", NONE_LONG, 0, false, NULL, CODE_NONE},
    {"torsocks", "uapP", NONE_LONG, 0, false, NULL, CODE_NONE},
    {"toybox", "", NONE_LONG, 0, false, NULL, CODE_NONE},
    {"trickle", "dultwn", NONE_LONG, 0, false, NULL, CODE_NONE},
    {"uname26", "", NONE_LONG, 0, false, NULL, CODE_NONE},
    {"unbuffer", "", NONE_LONG, 0, false, NULL, CODE_NONE},
    {"unshare", "SGRw", UNSHARE_LONG, 0, false, NULL, CODE_NONE},
    {"uv", "p", UV_LONG, 0, false, "run", CODE_NONE},
    {"valgrind", "", NONE_LONG, 0, false, NULL, CODE_NONE},
    {"watch", "nd", WATCH_LONG, 0, false, NULL, CODE_REST},
    {"x86_64", "", NONE_LONG, 0, false, NULL, CODE_NONE},
    {"xargs", "adEILnPs", XARGS_LONG, 0, false, NULL, CODE_NONE},
    {"xvfb-run", "nsefp", NONE_LONG, 0, false, NULL, CODE_NONE},
};

/* Sorted in byte order: in_list() searches it by halves. */
static const char *const SHELLS[] = {"ash", "bash", "csh", "dash", "elvish", "es",
                                     "fish", "ksh", "ksh93", "lksh", "loksh", "mksh",
                                     "nu", "oksh", "pdksh", "posh", "pwsh", "rbash",
                                     "rc", "sh", "tcsh", "xonsh", "yash", "zsh"};
/* Shells whose language is not bash's: what their -c code runs is read as
 * bash would read it, and the line is opaque.
 * Sorted in byte order: in_list() searches it by halves. */
static const char *const OTHER_SHELLS[] = {"csh", "elvish", "es", "fish", "nu", "pwsh",
                                           "rc", "tcsh", "xonsh"};

/* v against the NUL-terminated lit, in byte order (bytes, then length): the
 * order the name tables above are sorted in, so they are searched by halves. */
static int name_cmp(a3s_str v, const char *lit) {
    size_t k = 0;
    for (; k < v.n && lit[k]; k++)
        if (v.p[k] != lit[k])
            return (unsigned char)v.p[k] < (unsigned char)lit[k] ? -1 : 1;
    return k < v.n ? 1 : lit[k] ? -1 : 0;
}

/* The index of v in a table of n entries `stride` bytes apart, each starting with
 * its name, sorted in byte order (WRAPPERS, or a list of names); SIZE_MAX if none. */
static inline size_t find_name(a3s_str v, const void *table, size_t n, size_t stride) {
    size_t lo = 0, hi = n;
    while (v.n && lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const char *name = *(const char *const *)((const char *)table + mid * stride);
        int d = (unsigned char)v.p[0] - (unsigned char)name[0]; /* most steps end here */
        if (d == 0)
            d = name_cmp(v, name);
        if (d == 0)
            return mid;
        if (d < 0)
            hi = mid;
        else
            lo = mid + 1;
    }
    return SIZE_MAX;
}

static const struct wrapper *find_wrapper(a3s_str name) {
    size_t k = find_name(name, WRAPPERS, sizeof WRAPPERS / sizeof *WRAPPERS, sizeof *WRAPPERS);
    return k == SIZE_MAX ? NULL : &WRAPPERS[k];
}

/* Whether v is one of the n names of list (sorted in byte order). */
static bool in_list(a3s_str v, const char *const *list, size_t n) {
    return find_name(v, list, n, sizeof *list) != SIZE_MAX;
}

/* Where the program a wrapper runs starts, or SIZE_MAX when it runs none
 * (`command -v git`, `env` alone). */
static size_t unwrap(struct ctx *c, const struct rcmd *r, const struct wrapper *wr, size_t i) {
    size_t si = r->source, j = i + 1;
    bool is_env = strcmp(wr->name, "env") == 0, is_command = strcmp(wr->name, "command") == 0;
    bool code_found = false, user_given = false; /* -c CODE seen; runuser -u USER */
    if (wr->sub) { /* uv run ...: only the subcommand runs a program */
        a3s_str sub = j < r->nw ? value_of(c, si, word_at(c, r, j)) : (a3s_str){NULL, 0};
        if (!sub.p || !eq(sub, wr->sub))
            return SIZE_MAX;
        j++;
    }
    while (j < r->nw) {
        a3s_str v = value_of(c, si, word_at(c, r, j));
        if (!v.p)
            return j; /* an unknown word: it may be the program */
        if (EQ(v, "--")) {
            j++;
            break;
        }
        if (v.n > 1 && v.p[0] == '-' && v.p[1] == '-') {
            const char *e = memchr(v.p, '=', v.n);
            a3s_str name = {v.p, e ? (size_t)(e - v.p) : v.n};
            bool takes = false;
            for (const char *const *l = wr->longs; *l && !e && !takes; l++)
                takes = eq(name, *l);
            if (wr->code == CODE_DASH_C && EQ(name, "--command")) {
                a3s_str code = e ? (a3s_str){e + 1, v.n - name.n - 1}
                                 : (j + 1 < r->nw ? value_of(c, si, word_at(c, r, j + 1))
                                                  : (a3s_str){NULL, 0});
                if (code.p)
                    push_code(c, si, code.p, code.n, A3S_VIA_WRAPPER, (a3s_str){NULL, 0});
                else
                    c->incomplete = true;
                code_found = true;
                takes = !e;
            }
            if (is_env && EQ(name, "--split-string")) {
                a3s_str code = e ? (a3s_str){e + 1, v.n - name.n - 1}
                                 : (j + 1 < r->nw ? value_of(c, si, word_at(c, r, j + 1))
                                                  : (a3s_str){NULL, 0});
                if (code.p)
                    push_code(c, si, code.p, code.n, A3S_VIA_WRAPPER, (a3s_str){NULL, 0});
                else
                    c->incomplete = true;
            }
            j += takes ? 2 : 1;
            continue;
        }
        if (v.n > 1 && v.p[0] == '-') {
            size_t step = 1;
            for (size_t k = 1; k < v.n; k++) {
                if (is_command && (v.p[k] == 'v' || v.p[k] == 'V'))
                    return SIZE_MAX;
                if (!strchr(wr->takes, v.p[k]))
                    continue;
                a3s_str arg = k + 1 < v.n ? (a3s_str){v.p + k + 1, v.n - k - 1}
                                          : (j + 1 < r->nw ? value_of(c, si, word_at(c, r, j + 1))
                                                           : (a3s_str){NULL, 0});
                if (k + 1 == v.n)
                    step = 2;
                bool code = (is_env && v.p[k] == 'S') || (wr->code == CODE_DASH_C && v.p[k] == 'c');
                if (code) {
                    if (arg.p)
                        push_code(c, si, arg.p, arg.n, A3S_VIA_WRAPPER, (a3s_str){NULL, 0});
                    else
                        c->incomplete = true;
                    code_found = code_found || !is_env;
                }
                user_given = user_given || v.p[k] == 'u';
                break;
            }
            j += step;
            continue;
        }
        bool simple;
        if ((is_env && EQ(v, "-")) || (wr->assigns && assigned_name(v, &simple))) {
            j++;
            continue;
        }
        break;
    }
    if (code_found)
        return SIZE_MAX; /* script -qc CODE FILE, su -c CODE: the code is read as a source */
    bool is_su = strcmp(wr->name, "su") == 0 || (strcmp(wr->name, "runuser") == 0 && !user_given);
    if (is_su || strcmp(wr->name, "script") == 0) {
        /* su [-] [USER] [-c CODE]: a shell runs the code, or reads what the
         * line does not show */
        for (size_t k = j; is_su && k < r->nw; k++) {
            a3s_str v = value_of(c, si, word_at(c, r, k));
            if (!v.p || !(EQ(v, "-c") || EQ(v, "--command")))
                continue;
            a3s_str code = k + 1 < r->nw ? value_of(c, si, word_at(c, r, k + 1)) : (a3s_str){NULL, 0};
            if (code.p)
                push_code(c, si, code.p, code.n, A3S_VIA_WRAPPER, (a3s_str){NULL, 0});
            else
                c->opaque = true;
            return SIZE_MAX;
        }
        c->opaque = true;
        return SIZE_MAX;
    }
    j += (size_t)wr->positional;
    if (strcmp(wr->name, "setarch") == 0) { /* setarch ARCH [-R -L ...] PROGRAM: flags after the operand */
        for (a3s_str v; j < r->nw && (v = value_of(c, si, word_at(c, r, j))).p && v.n > 1 &&
                        v.p[0] == '-';)
            j++;
    }
    if (wr->code == CODE_DASH_C && j + 1 < r->nw) { /* flock FILE -c CODE */
        a3s_str v = value_of(c, si, word_at(c, r, j));
        if (v.p && EQ(v, "-c")) {
            a3s_str code = value_of(c, si, word_at(c, r, j + 1));
            if (code.p)
                push_code(c, si, code.p, code.n, A3S_VIA_WRAPPER, (a3s_str){NULL, 0});
            else
                c->incomplete = true;
            return SIZE_MAX;
        }
    }
    if (wr->code == CODE_REST && j < r->nw) { /* watch CMD ARGS: handed to sh -c as one string */
        c->lit.n = 0;
        for (size_t k = j; k < r->nw; k++) {
            a3s_str v = value_of(c, si, word_at(c, r, k));
            if (!v.p) {
                c->incomplete = true;
                return j;
            }
            if (k > j)
                buf_ch(&c->lit, ' ');
            buf_add(&c->lit, v.p, v.n);
        }
        push_code(c, si, c->lit.p ? c->lit.p : "", c->lit.n, A3S_VIA_WRAPPER, (a3s_str){NULL, 0});
        return SIZE_MAX;
    }
    return j < r->nw ? j : SIZE_MAX;
}

/* What printf FORMAT ARGS prints when the line shows it (ctx.lit): the format's
 * escapes decoded, %s and %b (escapes decoded) filled with the arguments, the
 * format used again while arguments remain; {NULL} for another directive. */
static a3s_str printed(struct ctx *c, const struct rcmd *r, size_t j) {
    size_t si = r->source;
    a3s_str fmt = j < r->nw ? value_of(c, si, word_at(c, r, j)) : (a3s_str){NULL, 0};
    if (fmt.p && EQ(fmt, "--"))
        fmt = ++j < r->nw ? value_of(c, si, word_at(c, r, j)) : (a3s_str){NULL, 0};
    if (!fmt.p || (fmt.n >= 2 && fmt.p[0] == '-' && fmt.p[1] == 'v'))
        return (a3s_str){NULL, 0};
    size_t arg = j + 1;
    c->lit.n = 0;
    for (int round = 0; round < 16; round++) {
        bool used = false;
        for (size_t q = 0; q < fmt.n; q++) {
            if (fmt.p[q] != '%') {
                size_t e = q;
                while (e < fmt.n && fmt.p[e] != '%')
                    e++;
                decode(c, fmt.p + q, e - q);
                q = e - 1;
            } else if (q + 1 < fmt.n && fmt.p[q + 1] == '%') {
                buf_ch(&c->lit, '%');
                q++;
            } else if (q + 1 < fmt.n && (fmt.p[q + 1] == 's' || fmt.p[q + 1] == 'b')) {
                a3s_str v = arg < r->nw ? value_of(c, si, word_at(c, r, arg)) : (a3s_str){"", 0};
                if (!v.p)
                    return (a3s_str){NULL, 0};
                used = used || arg < r->nw;
                arg += arg < r->nw;
                if (fmt.p[q + 1] == 'b')
                    decode(c, v.p, v.n);
                else
                    buf_add(&c->lit, v.p, v.n);
                q++;
            } else {
                return (a3s_str){NULL, 0}; /* %d, %q ...: not followed */
            }
        }
        if (!used || arg >= r->nw)
            break;
    }
    if (arg < r->nw && j + 1 < r->nw)
        return (a3s_str){NULL, 0};
    return arena_str(c->mem, c->lit.p ? c->lit.p : "", c->lit.n);
}

/* What a command prints when the line shows it: echo's words, printf's
 * output, or cat's here-document or here-string; else {NULL}. */
static a3s_str known_stdout(struct ctx *c, const struct rcmd *r) {
    size_t si = r->source, a = assignments(c, r);
    if (a >= r->nw)
        return (a3s_str){NULL, 0};
    a3s_str prog = value_of(c, si, word_at(c, r, a));
    bool escapes = false, is_echo = EQ(prog, "echo");
    if (EQ(prog, "printf"))
        return printed(c, r, a + 1);
    if (EQ(prog, "cat") && a + 1 == r->nw) { /* cat <<EOF ... EOF | sh */
        for (size_t k = r->nr; k-- > 0;) {
            const struct token *t =
                &VEC_AT(c->tokens, struct token, VEC_AT(c->cmdredirs, size_t, r->r0 + k));
            if (t->rkind == R_HEREDOC)
                return t->body.p ? t->body : (a3s_str){"", 0};
            if (t->rkind == R_HERESTRING && t->word != SIZE_MAX)
                return value_of(c, si, t->word);
            if (t->rkind == R_IN)
                break;
        }
        return (a3s_str){NULL, 0};
    }
    if (!is_echo)
        return (a3s_str){NULL, 0};
    size_t j = a + 1;
    for (; j < r->nw; j++) {
        a3s_str v = value_of(c, si, word_at(c, r, j));
        if (!v.p || v.n < 2 || v.p[0] != '-' || strspn(v.p + 1, "neE") < v.n - 1)
            break;
        escapes = escapes || memchr(v.p, 'e', v.n) != NULL;
    }
    c->lit.n = 0;
    for (size_t k = j; k < r->nw; k++) {
        a3s_str v = value_of(c, si, word_at(c, r, k));
        if (!v.p)
            return (a3s_str){NULL, 0};
        if (k > j)
            buf_ch(&c->lit, ' ');
        if (escapes)
            decode(c, v.p, v.n);
        else
            buf_add(&c->lit, v.p, v.n);
    }
    return arena_str(c->mem, c->lit.p ? c->lit.p : "", c->lit.n);
}

/* A shell (`bash -c CODE`, `bash <<EOF`, `echo ... | sh`), eval and find's
 * -exec run code of their own: it is queued as a further source. Returns
 * false when that code is not shown by the line. */
/* Word wi as code when its value is not shown (`eval "rm -rf $HOME"`): for
 * the guardrail, the text with its expansions as written; {NULL} otherwise. */
static a3s_str guard_code(struct ctx *c, size_t si, size_t wi) {
    if (!c->guard)
        return (a3s_str){NULL, 0};
    bool known = true;
    c->tmp.n = 0;
    word_text(c, si, wi, M_VAL, 0, &known);
    return arena_str(c->mem, c->tmp.p ? c->tmp.p : "", c->tmp.n);
}

static bool run_code(struct ctx *c, const struct rcmd *r, a3s_str name, size_t i) {
    size_t si = r->source;
    if (EQ(name, "eval")) {
        bool shown = true;
        c->lit.n = 0;
        for (size_t k = i + 1; k < r->nw; k++) {
            a3s_str v = value_of(c, si, word_at(c, r, k));
            if (!v.p) {
                shown = false;
                if (!(v = guard_code(c, si, word_at(c, r, k))).p)
                    return false;
            }
            if (k > i + 1)
                buf_ch(&c->lit, ' ');
            buf_add(&c->lit, v.p, v.n);
        }
        push_code(c, si, c->lit.p ? c->lit.p : "", c->lit.n, A3S_VIA_EVAL, (a3s_str){NULL, 0});
        return shown;
    }
    if (EQ(name, "find")) {
        for (size_t k = i + 1; k < r->nw; k++) {
            a3s_str v = value_of(c, si, word_at(c, r, k));
            if (!v.p || !(EQ(v, "-exec") || EQ(v, "-execdir") || EQ(v, "-ok") || EQ(v, "-okdir")))
                continue;
            size_t end = k + 1;
            while (end < r->nw) {
                a3s_str e = value_of(c, si, word_at(c, r, end));
                if (e.p && (EQ(e, ";") || EQ(e, "+")))
                    break;
                end++;
            }
            if (end > k + 1) { /* `{}` is a file name: text the line does not show */
                a3s_str a = VEC_AT(c->words, struct word, word_at(c, r, k + 1)).src;
                a3s_str b = VEC_AT(c->words, struct word, word_at(c, r, end - 1)).src;
                size_t n = (size_t)(b.p + b.n - a.p);
                c->lit.n = 0;
                for (size_t q = 0; q < n; q++) {
                    bool braces = q + 1 < n && a.p[q] == '{' && a.p[q + 1] == '}';
                    buf_add(&c->lit, braces ? "$@" : a.p + q, braces ? 2 : 1);
                    q += braces;
                }
                push_code(c, si, c->lit.p ? c->lit.p : "", c->lit.n, A3S_VIA_FIND,
                          (a3s_str){NULL, 0});
            }
            k = end;
        }
        return true;
    }
    /* at and batch read the commands they schedule from stdin (unless -f FILE) */
    bool at = (EQ(name, "at") || EQ(name, "batch")) && !has_option(c, r, i + 1, "flrdcV");
    if (!at && !in_list(name, SHELLS, sizeof SHELLS / sizeof *SHELLS))
        return true;
    if (in_list(name, OTHER_SHELLS, sizeof OTHER_SHELLS / sizeof *OTHER_SHELLS))
        c->opaque = true; /* another dialect: its code is read as bash, and not trusted */
    size_t j = at ? r->nw : i + 1;
    bool dash_c = false;
    while (j < r->nw) {
        a3s_str v = value_of(c, si, word_at(c, r, j));
        if (!v.p && dash_c)
            break; /* the code, not shown by the line */
        if (!v.p)
            return false;
        if (EQ(v, "--") || EQ(v, "-")) {
            j++;
            break;
        }
        if (v.n < 2 || (v.p[0] != '-' && v.p[0] != '+'))
            break;
        if (v.p[1] == '-') { /* a startup file, a login shell: code the line does not show */
            bool file = EQ(v, "--rcfile") || EQ(v, "--init-file");
            if (file || EQ(v, "--login") || EQ(v, "--debugger") || EQ(v, "--interactive"))
                c->opaque = true;
            j += file ? 2 : 1;
            continue;
        }
        size_t step = 1;
        for (size_t k = 1; k < v.n; k++) {
            dash_c = dash_c || (v.p[k] == 'c' && v.p[0] == '-');
            if (v.p[0] == '-' && (v.p[k] == 'i' || v.p[k] == 'l' || v.p[k] == 'O'))
                c->opaque = true; /* .bashrc, a profile, shopt -s expand_aliases */
            if (v.p[k] == 'o' || v.p[k] == 'O')
                step = 2;
        }
        j += step;
    }
    if (dash_c) {
        a3s_str code = j < r->nw ? value_of(c, si, word_at(c, r, j)) : (a3s_str){"", 0};
        if (!code.p) {
            code = guard_code(c, si, word_at(c, r, j));
            if (code.p)
                push_code(c, si, code.p, code.n, A3S_VIA_SHELL_C, name);
            return false;
        }
        size_t child = c->sources.len;
        push_code(c, si, code.p, code.n, A3S_VIA_SHELL_C, name);
        /* sh -c CODE NAME ARGS: $0 is NAME, $1... the ARGS, "$@" each of them */
        static const char DIGITS[] = "0123456789";
        for (size_t k = j + 1; child < c->sources.len && k < r->nw && k - j - 1 < 10; k++) {
            a3s_str v = value_of(c, si, word_at(c, r, k));
            add_var(c, child, (a3s_str){DIGITS + (k - j - 1), 1}, v, v.p != NULL);
            if (k > j + 1) {
                add_var(c, child, (a3s_str){"@", 1}, v, v.p != NULL);
                add_var(c, child, (a3s_str){"*", 1}, v, v.p != NULL);
            }
        }
        return true;
    }
    if (j < r->nw) { /* a script file: its content is not part of the line */
        c->opaque = true;
        return true;
    }
    for (size_t k = 0; k < r->nr; k++) {
        const struct token *t =
            &VEC_AT(c->tokens, struct token, VEC_AT(c->cmdredirs, size_t, r->r0 + k));
        if (t->rkind == R_HEREDOC) {
            push_code(c, si, t->body.p, t->body.n, A3S_VIA_HEREDOC, name);
            return true;
        }
        if (t->rkind == R_HERESTRING) {
            a3s_str code = t->word == SIZE_MAX ? (a3s_str){NULL, 0} : value_of(c, si, t->word);
            if (!code.p) {
                a3s_str text = t->word == SIZE_MAX ? code : guard_code(c, si, t->word);
                if (text.p)
                    push_code(c, si, text.p, text.n, A3S_VIA_HERESTRING, name);
                return false;
            }
            push_code(c, si, code.p, code.n, A3S_VIA_HERESTRING, name);
            return true;
        }
        if (t->rkind == R_IN)
            return false;
    }
    if (r->pipe_prev != SIZE_MAX) {
        struct rcmd prev = VEC_AT(c->rcmds, struct rcmd, r->pipe_prev);
        a3s_str code = known_stdout(c, &prev);
        if (!code.p)
            return false;
        push_code(c, si, code.p, code.n, A3S_VIA_PIPED, name);
    }
    return true;
}

bool a3s_git_option_takes_value(const char *opt, size_t n) {
    static const char *const TAKES[] = {"-c",          "-C",          "--git-dir",
                                        "--work-tree", "--namespace", "--config-env"};
    for (size_t i = 0; i < sizeof TAKES / sizeof TAKES[0]; i++)
        if (strlen(TAKES[i]) == n && memcmp(TAKES[i], opt, n) == 0)
            return true;
    return false;
}

/* git's options before its subcommand (-c x=y, -C dir, --no-pager ...): the
 * index of the subcommand's word. */
static size_t git_subcommand(struct ctx *c, const struct rcmd *r, size_t j) {
    while (j < r->nw) {
        a3s_str v = value_of(c, r->source, word_at(c, r, j));
        if (!v.p || !v.n || v.p[0] != '-')
            break;
        if (EQ(v, "--"))
            return j + 1;
        j += a3s_git_option_takes_value(v.p, v.n) ? 2 : 1;
    }
    return j < r->nw ? j : r->nw;
}

/* Whether git's global options between words j and sub set configuration
 * that names another command (an alias, autocorrection, a pager or editor, a
 * hook directory ...) or where git finds its commands: only a few harmless
 * keys are trusted. */
static bool git_config_runs_code(struct ctx *c, const struct rcmd *r, size_t j, size_t sub) {
    static const char *const SAFE[] = {"user.",   "color.", "advice.",       "init.defaultbranch",
                                       "log.",    "commit.gpgsign", "tag.gpgsign",
                                       "core.quotepath", "core.autocrlf", "safe.directory",
                                       "pull.rebase", "pull.ff", "merge.ff", "push.default",
                                       "column.", "format.pretty", "i18n."};
    for (size_t k = j; k < sub && k < r->nw; k++) {
        a3s_str v = value_of(c, r->source, word_at(c, r, k));
        if (!v.p)
            return true;
        if (v.n >= 12 && (memcmp(v.p, "--config-env", 12) == 0 || memcmp(v.p, "--exec-path", 11) == 0))
            return true;
        if (!(EQ(v, "-c") || (v.n > 2 && v.p[0] == '-' && v.p[1] == 'c')))
            continue;
        a3s_str kv = EQ(v, "-c") ? (k + 1 < r->nw ? value_of(c, r->source, word_at(c, r, ++k))
                                                 : (a3s_str){"", 0})
                                 : (a3s_str){v.p + 2, v.n - 2};
        if (!kv.p)
            return true;
        bool safe = false;
        for (size_t q = 0; q < sizeof SAFE / sizeof *SAFE && !safe; q++) {
            size_t n = strlen(SAFE[q]);
            safe = kv.n >= n && prefix_fold_eq(kv.p, SAFE[q], n);
        }
        if (!safe)
            return true;
    }
    return false;
}

static bool only_blanks_differ(a3s_str a, a3s_str b) {
    size_t i = 0, j = 0;
    for (;;) {
        while (i < a.n && strchr(" \t\n\r\v\f", a.p[i]))
            i++;
        while (j < b.n && strchr(" \t\n\r\v\f", b.p[j]))
            j++;
        if (i == a.n || j == b.n)
            return i == a.n && j == b.n;
        if (a.p[i++] != b.p[j++])
            return false;
    }
}

static a3s_str *copy_list(struct ctx *c, const a3s_str *list, size_t n) {
    a3s_str *out = arena_alloc(c->mem, (n ? n : 1) * sizeof *out);
    if (out && n)
        memcpy(out, list, n * sizeof *out);
    return out;
}

/* A program word that is known text bash splits at blanks (`x='git status';
 * $x`): the command from there, with every value the line gives, is read
 * again as a source, which finds the program among the fields (reading the
 * fields as code can only add commands: quotes and operators in a value are
 * plain text to bash). False when the word holds text the line does not show. */
static bool split_program(struct ctx *c, const struct rcmd *r, size_t i) {
    bool known = true;
    c->tmp.n = 0;
    c->open = SIZE_MAX;
    c->split_word = false;
    word_text(c, r->source, word_at(c, r, i), M_EXP, SIZE_MAX, &known);
    if (known || !c->split_word || c->open != SIZE_MAX)
        return false;
    c->values = 1;
    for (size_t pick = 0; pick < c->values && pick < MAX_VALUES; pick++) {
        struct form f = {.r = r, .from = i, .mode = M_EXP, .pick = pick, .skip0 = r->nw,
                         .skip1 = r->nw};
        a3s_str text = render(c, &f, NULL);
        if (c->open != SIZE_MAX || !text.p)
            return false;
        for (size_t q = 0; q < text.n; q++) /* bash splits at tabs and newlines too */
            if (text.p[q] == '\n' || text.p[q] == '\t')
                ((char *)text.p)[q] = ' ';
        push_code(c, r->source, text.p, text.n, A3S_VIA_SPLIT, (a3s_str){NULL, 0});
    }
    return true;
}

/* ---- code the line runs later, or reads from elsewhere ----------------------- */

/* Variables whose value bash (or a program it starts) runs as code or uses to
 * read the line differently: a line that sets one may run code it does not
 * show. */
static bool runs_value(a3s_str word, bool bare) {
    /* Sorted in byte order: in_list() searches it by halves. */
    static const char *const NAMES[] = {"BASHOPTS", "BASH_ENV", "BASH_XTRACEFD", "ENV", "EXECIGNORE", "GIT_CONFIG",
                                        "GIT_CONFIG_COUNT", "GIT_CONFIG_GLOBAL", "GIT_CONFIG_PARAMETERS", "GIT_CONFIG_SYSTEM", "GIT_EXEC_PATH", "GLOBIGNORE",
                                        "IFS", "PROMPT_COMMAND", "PS0", "PS1", "PS2", "PS3",
                                        "PS4", "SHELLOPTS"};
    if (!word.n || word.p[0] < 'A' || word.p[0] > 'Z') /* every name above is upper-case */
        return false;
    size_t k = 0;
    while (k < word.n && is_name_char(word.p[k]))
        k++;
    a3s_str name = {word.p, k};
    if (k == 0 || (k < word.n ? !strchr("=+[", word.p[k]) || !word.p[k] : !bare))
        return false;
    if ((k > 9 && memcmp(word.p, "BASH_FUNC", 9) == 0) ||
        (k > 15 && memcmp(word.p, "GIT_CONFIG_KEY_", 15) == 0) ||
        (k > 17 && memcmp(word.p, "GIT_CONFIG_VALUE_", 17) == 0))
        return true;
    return in_list(name, NAMES, sizeof NAMES / sizeof *NAMES);
}

/* Whether some option word of r (from index `from`, up to the first operand)
 * holds one of the short options in `letters`. */
static bool has_option(struct ctx *c, const struct rcmd *r, size_t from, const char *letters) {
    for (size_t k = from; k < r->nw; k++) {
        a3s_str v = value_of(c, r->source, word_at(c, r, k));
        if (!v.p)
            return true; /* an option the line does not show */
        if (v.n < 2 || v.p[0] != '-' || EQ(v, "--"))
            return false;
        if (v.p[1] == '-')
            continue;
        for (size_t q = 1; q < v.n; q++)
            if (strchr(letters, v.p[q]))
                return true;
    }
    return false;
}

/* Code a command hands to bash for later, and the builtins that make bash
 * read the rest of the line differently: the trap's code is read as a source;
 * aliases, `hash -p`, a sourced file, `mapfile -C`, namerefs and integer
 * variables, and a name with a subscript that runs a substitution make the
 * line opaque. */
static void deferred(struct ctx *c, const struct rcmd *r, size_t a) {
    size_t si = r->source;
    a3s_str first = a < r->nw ? literal(c, word_at(c, r, a)) : (a3s_str){NULL, 0};
    bool sets = !first.p || in_list(first, SETS_VARS, sizeof SETS_VARS / sizeof *SETS_VARS);
    for (size_t k = 0; k < r->nw; k++) {
        a3s_str src = VEC_AT(c->words, struct word, word_at(c, r, k)).src;
        if (runs_value(src, sets && k > a))
            c->opaque = true;
        bool simple;
        size_t name = k < a ? assigned_name(src, &simple) : 0;
        if (name && src.p[name] == '[') /* a[i]=v evaluates the subscript i */
            note_arith(c, si, src.p + name, (size_t)((const char *)memchr(src.p + name, ']', src.n - name) - src.p) - name);
        a3s_str v = memchr(src.p, '[', src.n) ? literal(c, word_at(c, r, k)) : (a3s_str){NULL, 0};
        if (v.p && memchr(v.p, '[', v.n) && (has(v.p, v.n, "$(") || memchr(v.p, '`', v.n)))
            c->opaque = true; /* 'a[$(cmd)]' evaluated as a subscript by read, declare, (( )) ... */
    }
    if (a >= r->nw)
        return;
    a3s_str prog = value_of(c, si, word_at(c, r, a));
    if (!prog.p)
        return;
    if (EQ(prog, "trap")) {
        size_t k = a + 1;
        while (k < r->nw) {
            a3s_str v = value_of(c, si, word_at(c, r, k));
            if (!v.p || v.n < 2 || v.p[0] != '-')
                break;
            k++;
            if (EQ(v, "--"))
                break;
        }
        a3s_str code = k < r->nw ? value_of(c, si, word_at(c, r, k)) : (a3s_str){"", 0};
        if (!code.p)
            c->opaque = true;
        else if (k + 1 < r->nw && !EQ(code, "-")) /* trap CODE SIGNAL...: CODE runs later */
            push_code(c, si, code.p, code.n, A3S_VIA_TRAP, (a3s_str){NULL, 0});
    } else if (EQ(prog, "alias") || EQ(prog, "source") || EQ(prog, ".") || EQ(prog, "enable")) {
        if (a + 1 < r->nw)
            c->opaque = true;
        for (size_t k = a + 1; EQ(prog, "alias") && k < r->nw; k++) { /* alias ll='rm -rf /' */
            a3s_str v = value_of(c, si, word_at(c, r, k));
            const char *e = v.p ? memchr(v.p, '=', v.n) : NULL;
            if (e)
                push_code(c, si, e + 1, v.n - (size_t)(e + 1 - v.p), A3S_VIA_ALIAS,
                          (a3s_str){NULL, 0});
        }
    } else if (EQ(prog, "shopt") || EQ(prog, "hash")) {
        for (size_t k = a + 1; k < r->nw; k++) {
            a3s_str v = value_of(c, si, word_at(c, r, k));
            if (!v.p || EQ(v, "expand_aliases") || EQ(v, "extglob") || EQ(v, "nullglob") ||
                (EQ(prog, "hash") && v.p[0] == '-'))
                c->opaque = true;
        }
    } else if (EQ(prog, "mapfile") || EQ(prog, "readarray")) {
        if (has_option(c, r, a + 1, "C"))
            c->opaque = true;
    } else if (EQ(prog, "compgen") || EQ(prog, "complete")) {
        if (has_option(c, r, a + 1, "CF")) /* -C COMMAND, -F FUNCTION run code */
            c->opaque = true;
    } else if (EQ(prog, "declare") || EQ(prog, "typeset") || EQ(prog, "local") ||
               EQ(prog, "export") || EQ(prog, "readonly")) {
        if (has_option(c, r, a + 1, "ni"))
            c->opaque = true;
    } else if (EQ(prog, "let")) {
        for (size_t k = a + 1; k < r->nw; k++) {
            a3s_str src = VEC_AT(c->words, struct word, word_at(c, r, k)).src;
            note_arith(c, si, src.p, src.n);
        }
    }
}

/* After every source was read: a name an arithmetic expression reads whose
 * value the line does not show, or shows holding a subscript or an
 * expansion, may run code when bash evaluates it. */
static void check_arith(struct ctx *c) {
    for (size_t k = 0; k < c->arith.len && !c->opaque; k++) {
        const struct arith_name *an = &VEC_AT(c->arith, struct arith_name, k);
        for (size_t v = 0; v < c->vars.len; v++) {
            const struct var *var = &VEC_AT(c->vars, struct var, v);
            if (!same(var->name, an->name))
                continue;
            if (!var->known || memchr(var->value.p, '[', var->value.n) ||
                memchr(var->value.p, '$', var->value.n) || memchr(var->value.p, '`', var->value.n))
                c->opaque = true;
        }
    }
}

/* Whether xargs at word i replaces a string in its arguments (-I, -i, --replace). */
static bool xargs_replaces(struct ctx *c, const struct rcmd *r, size_t i) {
    for (size_t k = i + 1; k < r->nw; k++) {
        a3s_str v = value_of(c, r->source, word_at(c, r, k));
        if (!v.p)
            return true;
        if (v.n < 2 || v.p[0] != '-')
            return false;
        if ((v.p[1] != '-' && (memchr(v.p, 'I', v.n) || memchr(v.p, 'i', v.n))) ||
            (v.n >= 9 && memcmp(v.p, "--replace", 9) == 0))
            return true;
    }
    return false;
}

static size_t *copy_opens(struct ctx *c, const size_t *list, size_t n) {
    size_t *out = arena_alloc(c->mem, (n ? n : 1) * sizeof *out);
    if (out && n)
        memcpy(out, list, n * sizeof *out);
    return out;
}

/* The line with blanks outside quotes folded as bash reads them: none at
 * either end, one between words (`git status ` is `git status`). */
static a3s_str fold_blanks(struct ctx *c) {
    c->tmp.n = 0;
    char quote = 0;
    bool gap = false;
    for (size_t i = 0; i < c->len; i++) {
        char ch = c->line[i];
        if (!quote && is_blank(ch)) {
            gap = c->tmp.n > 0;
            continue;
        }
        if (gap)
            buf_ch(&c->tmp, ' ');
        gap = false;
        buf_ch(&c->tmp, ch);
        if (ch == '\\' && quote != '\'' && i + 1 < c->len)
            buf_ch(&c->tmp, c->line[++i]);
        else if (!quote && (ch == '\'' || ch == '"'))
            quote = ch;
        else if (ch == quote)
            quote = 0;
    }
    return arena_str(c->mem, c->tmp.p ? c->tmp.p : "", c->tmp.n);
}

/* The directory a wrapper runs its program in, from its option words [from,
 * to): env -C DIR, -CDIR, --chdir[=]DIR; unshare --wd[=]DIR; nsenter --wd=DIR,
 * -wDIR; systemd-run --working-directory[=]DIR. The last one given, {NULL}
 * for none (or one the line does not show). */
static a3s_str wrapper_dir(struct ctx *c, const struct rcmd *r, const char *wrapper, size_t from,
                           size_t to) {
    static const struct {
        const char *wrapper, *option;
        bool next; /* the value may be the next word */
    } DIRS[] = {{"env", "-C", true},         {"env", "--chdir", true},
                {"unshare", "--wd", true},   {"nsenter", "-w", false},
                {"nsenter", "--wd", false},  {"systemd-run", "--working-directory", true}};
    a3s_str dir = {NULL, 0};
    for (size_t k = from; k < to && k < r->nw; k++) {
        a3s_str v = value_of(c, r->source, word_at(c, r, k));
        for (size_t q = 0; v.p && q < sizeof DIRS / sizeof *DIRS; q++) {
            size_t n = strlen(DIRS[q].option);
            if (strcmp(DIRS[q].wrapper, wrapper) != 0 || v.n < n || memcmp(v.p, DIRS[q].option, n))
                continue;
            if (v.n == n && DIRS[q].next && k + 1 < to)
                dir = value_of(c, r->source, word_at(c, r, ++k));
            else if (v.n > n && (n == 2 || v.p[n] == '='))
                dir = n == 2 ? (a3s_str){v.p + n, v.n - n} : (a3s_str){v.p + n + 1, v.n - n - 1};
            break;
        }
    }
    return dir;
}

/* The spellings of one command, appended to the output. */
static void spell(struct ctx *c, size_t ri) {
    const struct rcmd r = VEC_AT(c->rcmds, struct rcmd, ri);
    size_t a = assignments(c, &r), i = a, stage = 0;
    deferred(c, &r, a);
    if (a == r.nw)
        return; /* only assignments: no program runs */
    struct forms fs, ws;
    struct forms *f = &fs;
    f->nspell = f->nalias = 0;
    f->dynamic = false;
    struct form whole = {.r = &r};
    a3s_str written = render(c, &whole, NULL);
    add_form(c, SPELL(f), written, SIZE_MAX);
    size_t base = f->nspell;
    a3s_str shown = written; /* the first stage's words as written: render(from = a) */
    if (a > 0) {
        struct form words = {.r = &r, .from = a};
        a3s_str text = render(c, &words, NULL);
        add_form(c, SPELL(f), text, SIZE_MAX);
        base = f->nspell;
        shown = text;
    }
    bool tail = false, replace = false; /* xargs: words read from input follow */
    size_t st0 = c->stages.len;
    for (; i < r.nw && stage < MAX_STAGES && !failed(c); stage++) {
        if (c->guard) {
            struct stage *slot = vec_push(&c->stages, &c->nomem);
            if (slot)
                *slot = (struct stage){i, {NULL, 0}};
        }
        add_reading(c, f, (struct form){.r = &r, .from = i, .tail_open = tail},
                    stage == 0 ? shown : (a3s_str){NULL, 0});
        a3s_str prog = value_of(c, r.source, word_at(c, &r, i));
        if (!prog.p) {
            if (!split_program(c, &r, i))
                f->dynamic = true;
            break;
        }
        a3s_str name = prog;
        for (size_t k = 0; k < prog.n; k++)
            if (prog.p[k] == '/')
                name = (a3s_str){prog.p + k + 1, prog.n - k - 1};
        if (prog.n >= 6 && (memcmp(prog.p, "/proc/", 6) == 0 || has(prog.p, prog.n, "/fd/")))
            c->opaque = true; /* /proc/self/exe: the running shell, or any program */
        if (EQ(name, "git")) {
            size_t sub = git_subcommand(c, &r, i + 1);
            if (git_config_runs_code(c, &r, i + 1, sub))
                c->opaque = true;
            if (sub > i + 1)
                add_reading(c, f,
                            (struct form){.r = &r, .from = i, .skip0 = i + 1, .skip1 = sub,
                                          .tail_open = tail},
                            (a3s_str){NULL, 0});
        }
        if (EQ(name, "parallel"))
            c->opaque = true; /* GNU parallel builds commands from its input */
        const struct wrapper *wr = name.n <= 24 ? find_wrapper(name) : NULL;
        if (!wr) {
            if (!run_code(c, &r, name, i))
                f->dynamic = true;
            break;
        }
        if (strcmp(wr->name, "xargs") == 0) {
            tail = true;
            replace = replace || xargs_replaces(c, &r, i);
        }
        size_t from = i;
        i = unwrap(c, &r, wr, i);
        if (c->guard && c->stages.len > st0)
            VEC_AT(c->stages, struct stage, c->stages.len - 1).dir =
                wrapper_dir(c, &r, wr->name, from + 1, i == SIZE_MAX ? r.nw : i);
        if (i == SIZE_MAX)
            break;
    }
    if (stage == MAX_STAGES)
        c->incomplete = c->bounded = true;
    struct rcmd *kept = &VEC_AT(c->rcmds, struct rcmd, ri);
    kept->st0 = st0;
    kept->nst = c->stages.len - st0;
    kept->dynamic = f->dynamic;
    if (replace) /* xargs -I{}: input text may stand anywhere, the program included */
        for (size_t k = 0; k < f->nspell + f->nalias; k++)
            *(k < f->nspell ? &f->spell_open[k] : &f->alias_open[k - f->nspell]) = 0;
    struct forms *final = f;
    struct forms *w = NULL;
    a3s_str folded_line = {NULL, 0};
    if (r.whole) { /* the line is this command: it is matched as written, as it always was */
        w = &ws;
        w->nspell = w->nalias = 0;
        a3s_str line = {c->line, c->len}, folded = fold_blanks(c);
        add_form(c, SPELL(w), line, replace ? 0 : SIZE_MAX);
        if (folded.p && !same(folded, line)) {
            add_form(c, ALIAS(w), folded, replace ? 0 : SIZE_MAX);
            folded_line = folded;
        }
        for (size_t k = base; k < f->nspell; k++)
            if (!only_blanks_differ(f->spell[k], line))
                add_form(c, SPELL(w), f->spell[k], f->spell_open[k]);
        for (size_t k = 0; k < f->nspell + f->nalias; k++) {
            bool is_spell = k < f->nspell;
            a3s_str s = is_spell ? f->spell[k] : f->alias[k - f->nspell];
            size_t open = is_spell ? f->spell_open[k] : f->alias_open[k - f->nspell];
            bool dup = false;
            for (size_t q = 0; q < w->nspell && !dup; q++) {
                dup = same(w->spell[q], s);
                if (dup && open < w->spell_open[q])
                    w->spell_open[q] = open;
            }
            if (!dup)
                add_form(c, ALIAS(w), s, open);
        }
        w->dynamic = f->dynamic;
        final = w;
    } else { /* aliases that are spellings already say nothing more */
        size_t n = 0;
        for (size_t k = 0; k < f->nalias; k++) {
            bool dup = false;
            for (size_t q = 0; q < f->nspell && !dup; q++) {
                dup = same(f->spell[q], f->alias[k]);
                if (dup && f->alias_open[k] < f->spell_open[q])
                    f->spell_open[q] = f->alias_open[k];
            }
            if (!dup) {
                f->alias_open[n] = f->alias_open[k];
                f->alias[n++] = f->alias[k];
            }
        }
        f->nalias = n;
    }
    a3s_bash_cmd *out = vec_push(&c->out, &c->nomem);
    if (out) {
        out->shown = written;
        out->spellings = copy_list(c, final->spell, final->nspell);
        out->spelling_open = copy_opens(c, final->spell_open, final->nspell);
        out->nspellings = out->spellings ? final->nspell : 0;
        out->aliases = copy_list(c, final->alias, final->nalias);
        out->alias_open = copy_opens(c, final->alias_open, final->nalias);
        out->naliases = out->aliases ? final->nalias : 0;
        out->dynamic = final->dynamic;
        out->folded = folded_line;
        if (!written.p || !out->spellings || !out->aliases || !out->spelling_open ||
            !out->alias_open)
            c->incomplete = true;
    }
}

/* ---- the fast path --------------------------------------------------------------- */

/* The bytes of a plain command's words: 1 anywhere, 2 after its first word. */
const unsigned char a3s_bash_plain_bytes[256] = {
    ['a'] = 1, ['b'] = 1, ['c'] = 1, ['d'] = 1, ['e'] = 1, ['f'] = 1, ['g'] = 1, ['h'] = 1,
    ['i'] = 1, ['j'] = 1, ['k'] = 1, ['l'] = 1, ['m'] = 1, ['n'] = 1, ['o'] = 1, ['p'] = 1,
    ['q'] = 1, ['r'] = 1, ['s'] = 1, ['t'] = 1, ['u'] = 1, ['v'] = 1, ['w'] = 1, ['x'] = 1,
    ['y'] = 1, ['z'] = 1, ['0'] = 1, ['1'] = 1, ['2'] = 1, ['3'] = 1, ['4'] = 1, ['5'] = 1,
    ['6'] = 1, ['7'] = 1, ['8'] = 1, ['9'] = 1, ['-'] = 1, ['_'] = 1, ['.'] = 1, [','] = 1,
    [':'] = 1, ['+'] = 1, ['@'] = 1, ['%'] = 1, ['^'] = 1, ['/'] = 1, ['A'] = 1, ['B'] = 1,
    ['C'] = 1, ['D'] = 1, ['E'] = 1, ['F'] = 1, ['G'] = 1, ['H'] = 1, ['I'] = 1, ['J'] = 1,
    ['K'] = 1, ['L'] = 1, ['M'] = 1, ['N'] = 1, ['O'] = 1, ['P'] = 1, ['Q'] = 1, ['R'] = 1,
    ['S'] = 1, ['T'] = 1, ['U'] = 1, ['V'] = 1, ['W'] = 1, ['X'] = 1, ['Y'] = 1, ['Z'] = 1,
    ['='] = 2, ['~'] = 2,
};

bool a3s_bash_is_plain(const char *line, size_t len) {
    /* Sorted in byte order: in_list() searches it by halves. */
    static const char *const OTHERS[] = {"[", "alias", "compgen", "complete", "declare", "enable",
                                         "eval", "exec", "export", "find", "git", "hash",
                                         "let", "local", "mapfile", "parallel", "printf", "read",
                                         "readarray", "readonly", "shopt", "source", "test", "trap",
                                         "typeset", "unset"};
    size_t first = 0;
    if (len == 0 || line[0] == ' ' || line[len - 1] == ' ')
        return false;
    for (size_t i = 0; i < len; i++) {
        unsigned char ch = (unsigned char)line[i];
        if (ch == ' ') {
            if (line[i + 1] == ' ')
                return false;
            if (!first)
                first = i;
            continue;
        }
        unsigned char kind = a3s_bash_plain_bytes[ch];
        if (!kind || (kind == 2 && !first))
            return false;
    }
    a3s_str prog = {line, first ? first : len};
    for (size_t k = 0; k < prog.n; k++) /* a directory or capitals: the bare name is an alias */
        if (prog.p[k] == '/' || (prog.p[k] >= 'A' && prog.p[k] <= 'Z'))
            return false;
    /* Sorted in byte order: in_list() searches it by halves. */
    static const char *const KEYWORDS[] = {"case", "coproc", "do", "done", "elif", "else",
                                           "esac", "fi", "for", "function", "if", "in",
                                           "select", "then", "time", "until", "while"};
    return !(in_list(prog, KEYWORDS, sizeof KEYWORDS / sizeof *KEYWORDS) ||
             in_list(prog, SHELLS, sizeof SHELLS / sizeof *SHELLS) ||
             in_list(prog, OTHERS, sizeof OTHERS / sizeof *OTHERS) ||
             (prog.n <= 24 && find_wrapper(prog)) || changes_env(prog) ||
             (prog.n > 4 && memcmp(prog.p, "git-", 4) == 0));
}

/* ---- the reading, for the guardrail ------------------------------------------------ */

/* Whether a substitution's source (`$(pwd)`, `` `pwd -P` ``) prints the
 * working directory. */
static bool prints_pwd(a3s_str src) {
    size_t a = src.n && src.p[0] == '`' ? 1 : 2, b = src.n && src.p[0] == '`' ? 1 : 1;
    if (src.n < a + b)
        return false;
    const char *p = src.p + a;
    size_t n = src.n - a - b;
    while (n && is_blank(*p))
        p++, n--;
    while (n && is_blank(p[n - 1]))
        n--;
    if (n < 3 || memcmp(p, "pwd", 3) != 0)
        return false;
    for (size_t k = 3; k < n; k++)
        if (!strchr(" \t-LP", p[k]))
            return false;
    return true;
}

/* Appends what word wi stands for to ctx.tmp: each variable as its value
 * number `pick` (ctx.values counts them), ${x:-word} as word when `dflt`,
 * an unknown substitution as "$(\u2026)" ($(pwd) as "$PWD"), anything else as
 * written. */
static void guard_text(struct ctx *c, size_t si, size_t wi, size_t pick, bool dflt) {
    const struct word *w = &VEC_AT(c->words, struct word, wi);
    for (size_t k = 0; k < w->nparts; k++) {
        const struct part *p = &VEC_AT(c->parts, struct part, w->part0 + k);
        a3s_str value = {NULL, 0};
        if (p->kind == P_LIT) {
            buf_add(&c->tmp, p->text.p, p->text.n);
        } else if (p->kind == P_VAR) {
            size_t n = lookup(c, si, p->text, pick, &value);
            if (n > c->values)
                c->values = n;
            if (n)
                buf_add(&c->tmp, value.p, value.n);
            else
                buf_add(&c->tmp, p->src.p, p->src.n);
        } else if (p->kind == P_SUB) {
            if (p->known)
                buf_add(&c->tmp, p->text.p, p->text.n);
            else if (prints_pwd(p->src))
                buf_add(&c->tmp, "$PWD", 4);
            else
                buf_add(&c->tmp, "$(\xe2\x80\xa6)", 6);
        } else if (p->kind == P_DYN && dflt && p->dflt.p) {
            buf_add(&c->tmp, p->dflt.p, p->dflt.n);
        } else {
            buf_add(&c->tmp, p->src.p, p->src.n);
        }
    }
}

static bool guard_word(struct ctx *c, size_t si, size_t wi, a3s_bash_word *out) {
    const struct word *w = &VEC_AT(c->words, struct word, wi);
    a3s_str values[MAX_VALUES + 1];
    size_t n = 0;
    *out = (a3s_bash_word){.sub0 = w->sub0, .sub1 = w->sub1};
    if (w->plain) {
        out->shown = values[n++] = w->src;
    } else {
        bool known = true, dflt = false;
        c->tmp.n = 0;
        word_text(c, si, wi, M_VAL, 0, &known);
        out->shown = arena_str(c->mem, c->tmp.p ? c->tmp.p : "", c->tmp.n);
        for (size_t k = 0; k < w->nparts; k++) {
            const struct part *p = &VEC_AT(c->parts, struct part, w->part0 + k);
            a3s_str v;
            bool shown = p->kind == P_LIT || p->kind == P_GLOB || (p->kind == P_SUB && p->known) ||
                         (p->kind == P_VAR && lookup(c, si, p->text, 0, &v));
            out->unknown = out->unknown || !shown;
            out->split = out->split || (!p->quoted && p->kind != P_LIT && p->kind != P_GLOB);
            dflt = dflt || p->dflt.p;
        }
        c->values = 1;
        for (size_t pick = 0; pick <= c->values && pick <= MAX_VALUES; pick++) {
            bool with_dflt = pick == c->values || pick == MAX_VALUES; /* the last round */
            if (with_dflt && !dflt)
                break;
            c->tmp.n = 0;
            guard_text(c, si, wi, with_dflt ? 0 : pick, with_dflt);
            a3s_str v = arena_str(c->mem, c->tmp.p ? c->tmp.p : "", c->tmp.n);
            bool dup = !v.p;
            for (size_t q = 0; q < n && !dup; q++)
                dup = same(values[q], v);
            if (!dup)
                values[n++] = v;
            if (with_dflt)
                break;
        }
    }
    if (!out->shown.p)
        return false;
    out->values = copy_list(c, values, n);
    out->nvalues = out->values ? n : 0;
    return out->values != NULL;
}

static a3s_str op_text(int op) {
    static const char *const TEXT[] = {"\n", ";", "&", "&&", "||", "|", "(", ")", ";;"};
    const char *t = op >= 0 && op <= OP_DSEMI ? TEXT[op] : "";
    return (a3s_str){t, strlen(t)};
}

/* The redirections [r0, r0 + nr) of ctx.cmdredirs into rd (their targets into ws). */
static bool guard_redirs(struct ctx *c, size_t si, size_t r0, size_t nr, a3s_bash_redir *rd,
                         size_t *nrd, a3s_bash_word *ws, size_t *nws) {
    for (size_t k = 0; k < nr; k++) {
        const struct token *t = &VEC_AT(c->tokens, struct token, VEC_AT(c->cmdredirs, size_t, r0 + k));
        a3s_bash_redir *d = &rd[(*nrd)++];
        *d = (a3s_bash_redir){.op = t->src, .target = SIZE_MAX};
        if (t->rkind == R_HEREDOC)
            d->body = t->body.p ? t->body : (a3s_str){"", 0};
        if (t->word != SIZE_MAX) {
            if (!guard_word(c, si, t->word, &ws[*nws]))
                return false;
            d->target = (*nws)++;
        }
    }
    return true;
}

/* The reading as structure, into the arena (NULL when it is full). */
static a3s_bash_reading *build_reading(struct ctx *c) {
    a3s_bash_reading *rd = arena_alloc(c->mem, sizeof *rd);
    if (!rd)
        return NULL;
    memset(rd, 0, sizeof *rd);
    size_t nwords = 0, nredirs = c->cmdredirs.len, ncmds = c->rcmds.len + c->bares.len;
    for (size_t k = 0; k < c->rcmds.len; k++)
        nwords += VEC_AT(c->rcmds, struct rcmd, k).nw;
    nwords += nredirs;
    rd->sources = arena_alloc(c->mem, (c->sources.len + 1) * sizeof *rd->sources);
    rd->tokens = arena_alloc(c->mem, (c->tokens.len + 1) * sizeof *rd->tokens);
    rd->words = arena_alloc(c->mem, (nwords + 1) * sizeof *rd->words);
    rd->redirs = arena_alloc(c->mem, (nredirs + 1) * sizeof *rd->redirs);
    rd->cmds = arena_alloc(c->mem, (ncmds + 1) * sizeof *rd->cmds);
    if (!rd->sources || !rd->tokens || !rd->words || !rd->redirs || !rd->cmds)
        return NULL;
    for (size_t k = 0; k < c->sources.len; k++) {
        const struct source *s = &VEC_AT(c->sources, struct source, k);
        rd->sources[k] = (a3s_bash_source){s->code, s->parent, s->depth, s->via, s->via_name,
                                           s->t0, s->t1 - s->t0};
    }
    rd->nsources = c->sources.len;
    for (size_t k = 0; k < c->tokens.len; k++) {
        const struct token *t = &VEC_AT(c->tokens, struct token, k);
        a3s_bash_token *o = &rd->tokens[k];
        if (t->type == T_WORD) {
            const struct word *w = t->word == SIZE_MAX ? NULL : &VEC_AT(c->words, struct word, t->word);
            *o = (a3s_bash_token){A3S_TOK_WORD, w && w->plain ? w->src : (a3s_str){NULL, 0}};
        } else if (t->type == T_OP) {
            *o = (a3s_bash_token){A3S_TOK_OP, op_text(t->op)};
        } else if (t->type == T_ARITH) {
            *o = (a3s_bash_token){A3S_TOK_OP, {"(( ))", 5}};
        } else {
            *o = (a3s_bash_token){A3S_TOK_REDIR, {NULL, 0}};
        }
    }
    rd->ntokens = c->tokens.len;
    for (size_t k = 0; k < ncmds && !failed(c); k++) {
        a3s_bash_simple *o = &rd->cmds[rd->ncmds];
        *o = (a3s_bash_simple){.upstream = SIZE_MAX};
        size_t si, r0, nr;
        if (k < c->rcmds.len) {
            const struct rcmd *r = &VEC_AT(c->rcmds, struct rcmd, k);
            si = r->source, r0 = r->r0, nr = r->nr;
            o->w0 = rd->nwords;
            for (size_t q = 0; q < r->nw; q++)
                if (!guard_word(c, si, word_at(c, r, q), &rd->words[rd->nwords++]))
                    return NULL;
            o->nw = r->nw;
            o->stages = arena_alloc(c->mem, (r->nst + 1) * sizeof *o->stages);
            o->dirs = arena_alloc(c->mem, (r->nst + 1) * sizeof *o->dirs);
            if (!o->stages || !o->dirs)
                return NULL;
            for (size_t q = 0; q < r->nst; q++) {
                o->stages[q] = VEC_AT(c->stages, struct stage, r->st0 + q).word;
                o->dirs[q] = VEC_AT(c->stages, struct stage, r->st0 + q).dir;
            }
            o->nstages = r->nst;
            o->piped = r->piped;
            o->upstream = r->upstream;
            o->dynamic = r->dynamic;
            if (r->pipe_prev != SIZE_MAX) {
                struct rcmd prev = VEC_AT(c->rcmds, struct rcmd, r->pipe_prev);
                o->fed = known_stdout(c, &prev);
            }
        } else {
            const struct bare *b = &VEC_AT(c->bares, struct bare, k - c->rcmds.len);
            si = b->source, r0 = b->r0, nr = b->nr;
            o->w0 = rd->nwords;
        }
        o->source = si;
        o->r0 = rd->nredirs;
        if (!guard_redirs(c, si, r0, nr, rd->redirs, &rd->nredirs, rd->words, &rd->nwords))
            return NULL;
        o->nr = nr;
        rd->ncmds++;
    }
    rd->bounded = c->bounded || c->mem->over;
    return failed(c) ? NULL : rd;
}

/* ---- the entry point ------------------------------------------------------------ */

static void ctx_release(struct ctx *c) {
    vec_release(&c->sources);
    vec_release(&c->words);
    vec_release(&c->parts);
    vec_release(&c->tokens);
    vec_release(&c->rcmds);
    vec_release(&c->cmdwords);
    vec_release(&c->cmdredirs);
    vec_release(&c->vars);
    vec_release(&c->arith);
    vec_release(&c->out);
    vec_release(&c->stages);
    vec_release(&c->bares);
    if (!c->lit.lent)
        free(c->lit.p);
    if (!c->tmp.lent)
        free(c->tmp.p);
}

void a3s_bash_split_free(a3s_bash_split *split) {
    if (!split)
        return;
    arena_release(split->mem);
    free(split); /* the block: the split, its arena and the arena's first chunk */
}

#define FIRST_CHUNK 4096 /* arena bytes allocated with the split: most lines need no more */

/* A split and its arena, followed in the same allocation by the arena's first chunk. */
struct split_block {
    a3s_bash_split split;
    struct arena mem;
};

#define FIRST_CHUNK_AT ((sizeof(struct split_block) + 15) & ~(size_t)15)

static int split_line(const char *line, size_t len, bool guard, a3s_bash_split **out) {
    *out = NULL;
    struct ctx c = {.line = line ? line : "", .len = len, .guard = guard};
    c.stages.size = sizeof(struct stage);
    c.bares.size = sizeof(struct bare);
    c.sources.size = sizeof(struct source);
    c.words.size = sizeof(struct word);
    c.parts.size = sizeof(struct part);
    c.tokens.size = sizeof(struct token);
    c.rcmds.size = sizeof(struct rcmd);
    c.cmdwords.size = c.cmdredirs.size = sizeof(size_t);
    c.vars.size = sizeof(struct var);
    c.arith.size = sizeof(struct arith_name);
    c.out.size = sizeof(a3s_bash_cmd);
    char lit[BUF_SLAB], tmp[BUF_SLAB]; /* the strings' first bytes, likewise */
    c.lit = (struct buf){.p = lit, .cap = sizeof lit, .lent = true};
    c.tmp = (struct buf){.p = tmp, .cap = sizeof tmp, .lent = true};
    _Alignas(16) unsigned char slab[VEC_SLAB]; /* the vectors' first items: most lines fit */
    unsigned char *at = slab;
    struct vec *lend[] = {&c.sources, &c.words,     &c.parts, &c.tokens, &c.rcmds, &c.cmdwords,
                          &c.cmdredirs, &c.vars, &c.arith, &c.out,    &c.stages, &c.bares};
    for (size_t k = 0; k < sizeof lend / sizeof *lend; k++)
        vec_lend(lend[k], &at, slab + sizeof slab, 16);
    unsigned char *bytes = malloc(FIRST_CHUNK_AT + sizeof(struct chunk) + FIRST_CHUNK);
    if (!bytes)
        return A3S_E_NOMEM;
    struct split_block *block = (void *)bytes;
    a3s_bash_split *split = &block->split;
    *split = (a3s_bash_split){0};
    c.mem = &block->mem;
    struct chunk *first = (void *)(bytes + FIRST_CHUNK_AT);
    first->next = NULL;
    first->used = 0;
    first->cap = FIRST_CHUNK;
    *c.mem = (struct arena){.head = first, .own = first};
    size_t per_byte = guard ? 64 : 16; /* the reading keeps every word's values too */
    c.mem->cap = len > (SIZE_MAX - ARENA_SLACK) / per_byte ? SIZE_MAX : per_byte * len + ARENA_SLACK;
    c.open = SIZE_MAX;
    struct source *top = vec_push(&c.sources, &c.nomem);
    if (top)
        *top = (struct source){{c.line, len}, 0, SIZE_MAX, A3S_VIA_LINE, {NULL, 0}, 0, 0};
    for (size_t si = 0; si < c.sources.len && !failed(&c) && !c.mem->over; si++) {
        size_t t0 = c.tokens.len, r0 = c.rcmds.len;
        lex(&c, si);
        VEC_AT(c.sources, struct source, si).t0 = t0;
        VEC_AT(c.sources, struct source, si).t1 = c.tokens.len;
        structure(&c, si, t0, c.tokens.len);
        for (size_t ri = r0; ri < c.rcmds.len && !failed(&c); ri++)
            register_env(&c, &VEC_AT(c.rcmds, struct rcmd, ri));
        for (size_t ri = r0; ri < c.rcmds.len && !failed(&c); ri++)
            spell(&c, ri);
    }
    if (failed(&c)) {
        ctx_release(&c);
        a3s_bash_split_free(split);
        return A3S_E_NOMEM;
    }
    check_arith(&c);
    if (guard) {
        split->reading = build_reading(&c);
        if (!split->reading && !failed(&c)) { /* the arena is full: no reading past a bound */
            c.mem->over = true;
        }
    }
    split->mem = c.mem;
    split->complete = !c.incomplete && !c.mem->over;
    split->opaque = c.opaque;
    split->ncmds = c.out.len;
    split->cmds = c.out.len ? arena_alloc(c.mem, c.out.len * sizeof *split->cmds) : NULL;
    if (split->cmds)
        memcpy(split->cmds, c.out.items, c.out.len * sizeof *split->cmds);
    else
        split->ncmds = 0;
    if (c.out.len && !split->cmds)
        split->complete = false;
    if (c.mem->nomem) {
        ctx_release(&c);
        a3s_bash_split_free(split);
        return A3S_E_NOMEM;
    }
    ctx_release(&c);
    *out = split;
    return A3S_OK;
}

int a3s_bash_split_line(const char *line, size_t len, a3s_bash_split **out) {
    return split_line(line, len, false, out);
}

int a3s_bash_read_line(const char *line, size_t len, a3s_bash_split **out) {
    return split_line(line, len, true, out);
}
