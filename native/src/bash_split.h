/* bash_split.h - the simple commands of a bash line, each with the spellings
 * a permission rule is matched on (bash_split.c); not part of the ABI. */
#ifndef A3S_BASH_SPLIT_H
#define A3S_BASH_SPLIT_H

#include <stdbool.h>
#include <stddef.h>

typedef struct a3s_str {
    const char *p;
    size_t n;
} a3s_str;

/* One simple command. A deny or ask rule that matches any spelling or alias
 * applies; an allow rule covers the command only if it matches every
 * spelling. `dynamic`: the program's name (or the code a shell runs) comes
 * from something whose value is unknown. */
typedef struct a3s_bash_cmd {
    a3s_str shown; /* the command as written (words joined by one space) */
    a3s_str *spellings;
    size_t nspellings;
    a3s_str *aliases;
    size_t naliases;
    /* per spelling and alias: the offset where text the line does not show
     * starts (an unknown expansion, a file-name pattern, xargs' input), or
     * SIZE_MAX. A deny or ask rule that some text with that prefix could
     * match makes the command at least ask. */
    size_t *spelling_open, *alias_open;
    /* a line that is this one command, with its blanks folded (`git status `
     * is `git status`), when that differs: an allow rule that matches it
     * covers the line's own spelling (spellings[0]); {NULL}: none */
    a3s_str folded;
    bool dynamic;
} a3s_bash_cmd;

/* ---- the reading, for the guardrail (a3s_bash_read_line) ----------------
 *
 * The same reading the spellings come from, as structure: every simple
 * command with its words, the programs its wrappers run, its redirections
 * and the command that writes into its pipe; every piece of code the line
 * runs (a source) with what ran it. The guardrail judges these; it has no
 * reader of its own. */

/* What ran a source's code (a3s_bash_source.via). */
enum {
    A3S_VIA_LINE,       /* the line itself */
    A3S_VIA_SUB,        /* a substitution: $(...), `...`, <(...) */
    A3S_VIA_SHELL_C,    /* a shell's -c argument (via_name: the shell) */
    A3S_VIA_EVAL,       /* eval's words */
    A3S_VIA_HEREDOC,    /* a here-document a shell reads (via_name) */
    A3S_VIA_HERESTRING, /* a here-string a shell reads (via_name) */
    A3S_VIA_PIPED,      /* text echoed into a shell's pipe (via_name) */
    A3S_VIA_TRAP,       /* a trap's code */
    A3S_VIA_ALIAS,      /* an alias' value */
    A3S_VIA_WRAPPER,    /* a command string a wrapper hands to a shell (env -S, watch, su -c) */
    A3S_VIA_FIND,       /* find -exec's command */
    A3S_VIA_SPLIT,      /* a value bash splits into the words of a command */
    A3S_VIA_ARITH       /* the text of an arithmetic command, read as code too */
};

typedef struct a3s_bash_source {
    a3s_str code;
    size_t parent; /* SIZE_MAX for the line */
    int depth, via;
    a3s_str via_name;
    size_t tok0, ntok; /* into a3s_bash_reading.tokens */
} a3s_bash_source;

/* A token of a source, for the fork-bomb scan: a word (text: its value when
 * it is a plain word, else {NULL}), an operator (text: as written, "\n" for a
 * newline) or a redirection (text {NULL}). */
enum { A3S_TOK_WORD, A3S_TOK_OP, A3S_TOK_REDIR };
typedef struct a3s_bash_token {
    int kind;
    a3s_str text;
} a3s_bash_token;

typedef struct a3s_bash_word {
    a3s_str shown;   /* quotes removed, expansions as written */
    a3s_str *values; /* what it may stand for: expanded where the line shows how (each
                      * value of a variable, a ${x:-default}'s default), else as written;
                      * an unknown substitution reads "$(\u2026)", $(pwd) "$PWD" */
    size_t nvalues;
    size_t sub0, sub1; /* the sources its substitutions run: [sub0, sub1) */
    bool split;        /* an unquoted expansion: bash splits its value at blanks */
    bool unknown;      /* some of it is a value the line does not show */
} a3s_bash_word;

typedef struct a3s_bash_redir {
    a3s_str op;     /* with its fd: "2>", ">>", "<<<" */
    size_t target;  /* into a3s_bash_reading.words, SIZE_MAX: none */
    a3s_str body;   /* a here-document's text, {NULL} otherwise */
} a3s_bash_redir;

typedef struct a3s_bash_simple {
    size_t source;
    size_t w0, nw;    /* words, into a3s_bash_reading.words (none: only redirections) */
    size_t r0, nr;    /* redirections */
    size_t *stages;   /* the word of each program it runs: the first, then each one a
                       * wrapper runs (env nice rm: 0, 2) */
    a3s_str *dirs;    /* per stage: the directory that wrapper runs the next program in
                       * (env -C DIR, unshare --wd DIR ...), {NULL}: unchanged */
    size_t nstages;
    size_t upstream;  /* the command writing into its stdin pipe, SIZE_MAX: none known */
    a3s_str fed;      /* what upstream prints when the line shows it (echo, printf) */
    bool piped;       /* its stdin is a pipe */
    bool dynamic;     /* the last program's name is not shown by the line */
} a3s_bash_simple;

typedef struct a3s_bash_reading {
    a3s_bash_source *sources;
    size_t nsources;
    a3s_bash_token *tokens;
    size_t ntokens;
    a3s_bash_word *words;
    size_t nwords;
    a3s_bash_redir *redirs;
    size_t nredirs;
    a3s_bash_simple *cmds; /* per source in order, each source's commands in order */
    size_t ncmds;
    bool bounded; /* a bound (nesting, sources, commands, size) ended the reading */
} a3s_bash_reading;

typedef struct a3s_bash_split {
    a3s_bash_cmd *cmds;
    size_t ncmds;
    bool complete; /* false: the line could not be read to its end (or past a bound) */
    bool opaque;   /* the line may run code it does not show: decided as an unknown command */
    void *mem;     /* the arena every string above lives in */
    a3s_bash_reading *reading; /* a3s_bash_read_line only, else NULL */
} a3s_bash_split;

/* Splits `line`. Returns A3S_OK (with *out set; free it with
 * a3s_bash_split_free) or A3S_E_NOMEM. Bounds (nesting, commands, bytes) make
 * the split incomplete, never an error. */
int a3s_bash_split_line(const char *line, size_t len, a3s_bash_split **out);
void a3s_bash_split_free(a3s_bash_split *split);

/* a3s_bash_split_line with the reading as structure (split->reading) for the
 * guardrail; it also reads an arithmetic command's text as code (a floor
 * fails closed where bash would only fail to parse). */
int a3s_bash_read_line(const char *line, size_t len, a3s_bash_split **out);

/* How deep code nested in code is read (bash -c 'eval "..."'): past it the
 * reading is bounded. */
#define A3S_BASH_MAX_DEPTH 24

/* Whether `line` is one simple command whose only spelling is the line itself
 * and which has no other reading: words of plain bytes separated by single
 * spaces (no quote, expansion, operator, redirection, comment, assignment or
 * glob of a wrapper), whose program is no wrapper, shell, keyword, git, eval
 * or find, and is spelled in lower case without a directory. The split of
 * such a line is exactly {line}, so the rule set matches it as one string. */
bool a3s_bash_is_plain(const char *line, size_t len);

/* The bytes a plain command's words may hold: 1 anywhere, 2 ('=', '~') after its
 * first word; 0 for any other byte. */
extern const unsigned char a3s_bash_plain_bytes[256];

/* Whether `opt` (n bytes), one of git's global options (before its
 * subcommand), takes the next word as its value: -c x=y, -C dir,
 * --git-dir dir ... The one table the line reader and the exec check
 * (exec_match.c) share. */
bool a3s_git_option_takes_value(const char *opt, size_t n);

#endif
