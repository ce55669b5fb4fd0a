/* exec_match.h - the decision of the exec check: is this program, with these
 * arguments, named by a deny or ask rule of bash? (exec_match.c; internal,
 * not part of the ABI).
 *
 * The sandbox's init (init/exectrace.c) stops every program a command runs
 * at its exec, before its first instruction, and asks this file about the
 * argv it will really run. The rules are the patterns of the policy's
 * `bash(...)` deny and ask rules, matched with the same globs as the line's
 * simple commands (glob.c); an ask rule is waived for a command the human
 * approved for this call (the exact simple commands of the approved line).
 */
#ifndef A3S_EXEC_MATCH_H
#define A3S_EXEC_MATCH_H

#include "internal.h"

#include <stdbool.h>
#include <stddef.h>

typedef struct a3s_exec_rules a3s_exec_rules;

/* An empty rule set, or NULL when memory ran out. */
a3s_exec_rules *a3s_exec_rules_new(void);
void a3s_exec_rules_free(a3s_exec_rules *r);

/* Adds the pattern of a bash rule (what is inside `bash(...)`, "*" for any
 * command) to `list`, A3S_LIST_DENY or A3S_LIST_ASK. A3S_E_SYNTAX (and a
 * message in err) for a pattern the glob compiler refuses, A3S_E_INVALID
 * for another list, A3S_E_NOMEM. */
int a3s_exec_rules_add(a3s_exec_rules *r, int list, const char *pattern, a3s_error *err);

/* Adds one simple command the human approved for this call (words joined
 * by one space, as the line reader spells it): an ask rule does not stop
 * an exec that reads as exactly this. A3S_E_NOMEM. */
int a3s_exec_rules_approve(a3s_exec_rules *r, const char *command);

/* The number of deny and ask rules. */
size_t a3s_exec_rules_count(const a3s_exec_rules *r);

/* Rule `index`'s list and pattern (borrowed). */
const char *a3s_exec_rules_pattern(const a3s_exec_rules *r, size_t index, int *list);

/* Finds, on `path` (a PATH value; NULL: a default), the executables the
 * rules name by their first word (git for `git push**`), and records
 * their identity (device, inode, size): a copy, a hard link or a renamed
 * binary is then read as what it is (a3s_exec_decide). Call it once, in
 * the sandbox, before the command starts. */
void a3s_exec_rules_locate(a3s_exec_rules *r, const char *path);

/* How many executables a3s_exec_rules_locate found (0: no identity to
 * check, the executable need not be opened). */
size_t a3s_exec_rules_located(const a3s_exec_rules *r);

/* One exec, as the tracer saw it at the exec stop. */
struct a3s_exec_call {
    const char *exe;         /* the executable's path (/proc/PID/exe), or NULL if unknown */
    int exe_fd;              /* open for reading on that very file, or -1 */
    const char *const *argv; /* the arguments it runs with (argv[0] included) */
    size_t argc;
    int cwd_fd; /* its working directory (for a relative script path), or -1 */
};

struct a3s_exec_decision {
    int list;     /* A3S_LIST_NONE (runs), A3S_LIST_DENY or A3S_LIST_ASK (stopped) */
    size_t rule;  /* the rule that stopped it */
    char *reading; /* the command the rule matched ("git push origin"), malloc'd; NULL
                      with A3S_LIST_NONE */
};

/* Decides one exec: each reading of it (the executable's base name and
 * argv[0]'s, with git's `git-<cmd>` helpers read as `git <cmd>`, git's
 * global options left out, the program a copy or link of a named
 * executable is, a `#!` script by its own name) is matched against the
 * deny rules, then the ask rules; the strictest wins, and an ask is waived
 * when a reading is an approved command. A git subcommand git does not
 * know (an alias, a typo help.autocorrect may run) and `-c alias.*` or
 * `--config-env` read as any git command. Fails closed: A3S_E_NOMEM
 * leaves out->list A3S_LIST_DENY. Free out->reading. */
int a3s_exec_decide(a3s_exec_rules *r, const struct a3s_exec_call *c,
                    struct a3s_exec_decision *out);

/* Checks the exec check's fields of a3s_exec_options (a NULL array with a
 * count, a NULL entry, a pattern over A3S_RULE_MAX_LENGTH bytes or that does
 * not compile): A3S_OK, A3S_E_INVALID, A3S_E_TOO_LARGE or A3S_E_SYNTAX. */
int a3s_exec_options_check(const a3s_exec_options *o, a3s_error *err);

/* Whether the options carry any deny or ask pattern (the command is traced). */
bool a3s_exec_options_trace(const a3s_exec_options *o);

/* The init's record of a stopped exec in its status text ("X" and the
 * hex of "LIST TAB PATTERN TAB COMMAND", anywhere in it: the other status
 * letters are never lower-case hex digits), decoded (malloc'd), or NULL. */
char *a3s_exec_stop_unhex(const char *status);

/* Marks r as stopped by the exec check (A3S_RESULT_EXEC_STOPPED) with what
 * the record "deny|ask TAB PATTERN TAB COMMAND" says. */
void a3s_exec_stop_apply(a3s_process_result *r, const char *record);

#endif
