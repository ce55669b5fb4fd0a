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

typedef struct a3s_bash_split {
    a3s_bash_cmd *cmds;
    size_t ncmds;
    bool complete; /* false: the line could not be read to its end (or past a bound) */
    bool opaque;   /* the line may run code it does not show: decided as an unknown command */
    void *mem;     /* the arena every string above lives in */
} a3s_bash_split;

/* Splits `line`. Returns A3S_OK (with *out set; free it with
 * a3s_bash_split_free) or A3S_E_NOMEM. Bounds (nesting, commands, bytes) make
 * the split incomplete, never an error. */
int a3s_bash_split_line(const char *line, size_t len, a3s_bash_split **out);
void a3s_bash_split_free(a3s_bash_split *split);

/* Whether `line` is one simple command whose only spelling is the line itself
 * and which has no other reading: words of plain bytes separated by single
 * spaces (no quote, expansion, operator, redirection, comment, assignment or
 * glob of a wrapper), whose program is no wrapper, shell, keyword, git, eval
 * or find, and is spelled in lower case without a directory. The split of
 * such a line is exactly {line}, so the rule set matches it as one string. */
bool a3s_bash_is_plain(const char *line, size_t len);

/* Whether `opt` (n bytes), one of git's global options (before its
 * subcommand), takes the next word as its value: -c x=y, -C dir,
 * --git-dir dir ... The one table the line reader and the exec check
 * (exec_match.c) share. */
bool a3s_git_option_takes_value(const char *opt, size_t n);

#endif
