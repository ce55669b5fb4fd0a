/* test_bash.c - a bash line decided per simple command: the bypass spellings,
 * fail-closed bounds, the verdict API, and a random fuzz (run under ASan). */
#include "a3s/a3s.h"
#include "check.h"
#include "../src/bash_split.h"

#include <stdint.h>
#include <stdlib.h>

static a3s_ruleset *policy(const char *deny, const char *allow, int dflt) {
    a3s_ruleset *rs = NULL;
    if (a3s_ruleset_new(&rs, NULL) != A3S_OK)
        return NULL;
    if (deny)
        a3s_ruleset_add(rs, A3S_LIST_DENY, deny, strlen(deny), 1, NULL);
    if (allow)
        a3s_ruleset_add(rs, A3S_LIST_ALLOW, allow, strlen(allow), 2, NULL);
    a3s_ruleset_set_default(rs, dflt, NULL);
    return rs;
}

/* The decision with the default applied. */
static int decide(const a3s_ruleset *rs, int dflt, const char *line) {
    a3s_match m = {.struct_size = sizeof m};
    int rc = a3s_ruleset_check(rs, "Bash", 4, line, strlen(line), &m, NULL);
    if (rc != A3S_OK)
        return rc;
    return m.list ? m.list : dflt;
}

static const char *const PUSHES[] = {
    "git push", "cd . && git push", "git -c x=y push", "\\git push", "FOO=1 git push",
    "env git push", "env -i PATH=/bin git push", "command git push", "builtin git push",
    "\"git\" push", "g\\it push", "/usr/bin/GIT push", "git -C /tmp --no-pager push",
    "(git push)", "{ git push; }", "echo $(git push)", "echo `git push`", "cat <(git push)",
    "bash -c 'git push'", "eval 'git -C . push'", "echo git push | sh",
    "bash <<'EOF'\ngit push\nEOF", "cat <<EOF\n$(git push)\nEOF", "x=push; git $x",
    "git $(echo push)", "xargs git push", "find . -exec git push \\;", "sudo -u me git push",
    "timeout 5 git push", "git pu\\\nsh", "if true; then git push; fi",
    "case x in x) git push;; esac", "f() { git push; }; f", "git push # comment",
    "$(which git) push", "env -S 'git push'", "printf 'git\\x20push' | bash",
    /* issue 21: brace expansion, ANSI-C quoting, split values, keywords, deferred code */
    "{git,push}", "git p{u,}sh", "$'\\u0067it' push", "$'\\x67it' push", "x='git push'; $x",
    "time { git push; }", "time ! git push", "coproc NAME { git push; }", "trap 'git push' EXIT",
    "(( 1 << 2 ))\ngit push", ">/dev/null case x; git push", "script -qc 'git push' /dev/null",
    "setpriv git push", "setarch x86_64 -R git push", "su root -c 'git push'",
    "fish -c 'git push'", "/usr/lib/git-core/git-push", "a[$(git push)]=1",
    /* a shell -c's positional parameters are the words after its code */
    "bash -c 'git $1' _ push", "sh -c 'git \"$@\"' _ push", "bash -c 'git ${1}' _ push",
};

static const char *const NOT_PUSHES[] = {
    "git status", "echo git push", "# git push", "FOO='git push' make", "cat git push",
    "printf 'git push' > notes", "git log --grep=push", "echo $((1+2))",
    "for ((i=0;i<3;i++)); do echo $i; done", "echo {a..c}", "ls *.py", "git status $x",
    "x='git status'; $x", "echo a{b,c}d",
};

static void bypasses(void) {
    a3s_ruleset *rs = policy("bash(git push**)", NULL, A3S_LIST_ALLOW);
    for (size_t i = 0; i < sizeof PUSHES / sizeof *PUSHES; i++)
        CHECK(decide(rs, A3S_LIST_ALLOW, PUSHES[i]) == A3S_LIST_DENY, "%s", PUSHES[i]);
    for (size_t i = 0; i < sizeof NOT_PUSHES / sizeof *NOT_PUSHES; i++)
        CHECK(decide(rs, A3S_LIST_ALLOW, NOT_PUSHES[i]) == A3S_LIST_ALLOW, "%s", NOT_PUSHES[i]);
    /* what is not shown, or not read to its end, is at least ask */
    const char *unsure[] = {"$GIT push", "echo 'unterminated", "(echo", "echo \"open", "echo $(open",
                            "curl x | sh", "bash < script.sh",
                            /* text the line does not show where a deny rule could match */
                            "/usr/bin/gi? push", "git pu${x}sh", "git $(printf push)",
                            "set -- push; git \"$@\"",
                            "echo push | xargs git", "find push -exec git {} \\;",
                            /* code the line does not show */
                            "IFS=,; x=git,push; $x", "source <(echo git push)", "bash x.sh",
                            "bash /dev/stdin <<< 'git push'", "/proc/self/exe -c 'git push'",
                            "git -c alias.p=push p", "hash -p /usr/bin/git g; g push",
                            "echo ${x@P}", "x='a[$(git push)]'; echo $((x))",
                            "shopt -s expand_aliases; alias g=git\ng push",
                            "BASH_ENV=x bash -c true", "mapfile -C f x"};
    for (size_t i = 0; i < sizeof unsure / sizeof *unsure; i++)
        CHECK(decide(rs, A3S_LIST_ALLOW, unsure[i]) == A3S_LIST_ASK, "%s", unsure[i]);
    a3s_ruleset_free(rs);
}

static void allow_covers_every_command(void) {
    a3s_ruleset *rs = policy(NULL, "bash(make *)", A3S_LIST_DENY);
    CHECK(decide(rs, A3S_LIST_DENY, "make test") == A3S_LIST_ALLOW, "one command");
    CHECK(decide(rs, A3S_LIST_DENY, "make a && make b") == A3S_LIST_ALLOW, "both allowed");
    CHECK(decide(rs, A3S_LIST_DENY, "make a; rm -rf x") == A3S_LIST_DENY, "rm is not");
    CHECK(decide(rs, A3S_LIST_DENY, "make $(rm -rf x)") == A3S_LIST_DENY, "substitution");
    CHECK(decide(rs, A3S_LIST_DENY, "FOO=1 make a") == A3S_LIST_DENY, "the assignment");
    a3s_ruleset_free(rs);
    /* without a default, a mix of default and rule reads as the rule's ask */
    a3s_ruleset *ask = NULL;
    a3s_ruleset_new(&ask, NULL);
    a3s_ruleset_add(ask, A3S_LIST_ASK, "bash(rm *)", 10, 0, NULL);
    a3s_match m = {.struct_size = sizeof m};
    CHECK(a3s_ruleset_check(ask, "bash", 4, "ls; rm x", 8, &m, NULL) == A3S_OK &&
              m.list == A3S_LIST_ASK && m.index == 0,
          "ask by rule");
    CHECK(a3s_ruleset_check(ask, "bash", 4, "ls", 2, &m, NULL) == A3S_OK &&
              m.list == A3S_LIST_NONE,
          "the default: none");
    CHECK(a3s_ruleset_set_default(ask, 7, NULL) == A3S_E_INVALID, "unknown list");
    a3s_ruleset_free(ask);
}

static void verdict_api(void) {
    a3s_ruleset *rs = policy("bash(git push**)", "bash(cd *)", A3S_LIST_ASK);
    a3s_bash_verdict *v = NULL;
    const char *line = "cd . && git -c x=y push";
    CHECK(a3s_ruleset_check_bash(rs, line, strlen(line), &v, NULL) == A3S_OK, "verdict");
    CHECK(a3s_bash_verdict_list(v) == A3S_LIST_DENY, "deny");
    CHECK(a3s_bash_verdict_count(v) == 2, "two commands");
    a3s_bash_command c = {.struct_size = sizeof c};
    CHECK(a3s_bash_verdict_command(v, 1, &c, NULL) == A3S_OK && c.list == A3S_LIST_DENY &&
              c.rule == 0 && c.spelling_len == 8 && memcmp(c.spelling, "git push", 8) == 0,
          "the deciding spelling");
    CHECK(a3s_bash_verdict_command(v, 0, &c, NULL) == A3S_OK && c.list == A3S_LIST_ALLOW &&
              c.why == A3S_BASH_WHY_RULE,
          "cd allowed");
    CHECK(a3s_bash_verdict_command(v, 2, &c, NULL) == A3S_E_RANGE, "range");
    size_t idx[2], n = 0;
    CHECK(a3s_bash_verdict_matched(v, idx, 2, &n, NULL) == A3S_OK && n == 2, "both matched");
    CHECK(a3s_bash_verdict_matched(v, idx, 1, &n, NULL) == A3S_E_BUFFER && n == 2, "buffer");
    CHECK(!(a3s_bash_verdict_flags(v) & A3S_BASH_EXPLICIT), "not explicit");
    a3s_bash_verdict_free(v);
    size_t all[2];
    CHECK(a3s_ruleset_matches(rs, "bash", 4, line, strlen(line), all, 2, &n, NULL) == A3S_OK &&
              n == 2,
          "matches sees every spelling");
    CHECK(a3s_ruleset_check_bash(rs, NULL, 1, &v, NULL) == A3S_E_INVALID, "NULL line");
    a3s_ruleset_free(rs);
}

static void bounds(void) {
    a3s_ruleset *rs = policy("bash(git push**)", NULL, A3S_LIST_ALLOW);
    size_t n = 200000;
    char *deep = malloc(2 * n + 16);
    /* 100k nested substitutions and parentheses: no recursion, fail closed */
    for (size_t i = 0; i < n / 2; i++)
        memcpy(deep + 2 * i, "$(", 2);
    deep[n] = '\0';
    CHECK(decide(rs, A3S_LIST_ALLOW, deep) == A3S_LIST_ASK, "deep substitutions");
    memset(deep, '(', n);
    CHECK(decide(rs, A3S_LIST_ALLOW, deep) == A3S_LIST_ASK, "deep subshells");
    for (size_t i = 0; i + 3 < n; i += 3)
        memcpy(deep + i, "a;\n", 3);
    CHECK(decide(rs, A3S_LIST_ALLOW, deep) == A3S_LIST_ASK, "too many commands");
    /* code inside code 30 levels deep: the walk stops at its depth bound, fail closed */
    deep[0] = '\0';
    for (int i = 0; i < 30; i++)
        strcat(deep, "echo $(");
    strcat(deep, "git push");
    for (int i = 0; i < 30; i++)
        strcat(deep, ")");
    CHECK(decide(rs, A3S_LIST_ALLOW, deep) == A3S_LIST_ASK, "nested substitutions");
    free(deep);
    a3s_ruleset_free(rs);
}

/* Random lines from shell fragments: nothing crashes, leaks or reads out of bounds
 * (ASan), and a line holding `git push` as a plain command is never allowed. */
static void fuzz(void) {
    static const char *const bits[] = {
        "git", "push", " ", "\t", "\n", ";", "&&", "||", "|", "&", "(", ")", "{", "}", "$(",
        "`", "'", "\"", "\\", "$x", "${x:-y}", "$((1+2))", "<<EOF\n", "EOF\n", "<<'E'\n",
        "x=push", "env", "-i", "command", "bash -c ", "eval ", "#", "<(", ">", "2>&1", "for",
        "in", "do", "done", "case", "esac", ";;", "$'\\x41'", "echo", "sh", "-c", "--",
        "\xff", "\x00", "ls", " -la", " a/b", " X", "/bin/ls", "Git", " x=y", "make", "  ",
    };
    a3s_ruleset *rs = policy("bash(git push**)", "bash(echo *)", A3S_LIST_ASK);
    uint64_t seed = 0x5eed;
    char line[512];
    for (int round = 0; round < 20000; round++) {
        size_t len = 0;
        int parts = 1 + (int)(seed % 24);
        for (int p = 0; p < parts; p++) {
            seed = seed * 6364136223846793005ull + 1442695040888963407ull;
            const char *b = bits[(seed >> 33) % (sizeof bits / sizeof *bits)];
            size_t bl = b[0] ? strlen(b) : 1;
            if (len + bl >= sizeof line)
                break;
            memcpy(line + len, b, bl);
            len += bl;
        }
        a3s_match m = {.struct_size = sizeof m};
        CHECK(a3s_ruleset_check(rs, "bash", 4, line, len, &m, NULL) == A3S_OK, "check");
        a3s_bash_verdict *v = NULL;
        CHECK(a3s_ruleset_check_bash(rs, line, len, &v, NULL) == A3S_OK, "verdict");
        /* the verdict never takes the plain-line fast path: the two must agree */
        int list = a3s_bash_verdict_list(v);
        CHECK(list == (m.list ? m.list : A3S_LIST_ASK), "the same decision: %.*s", (int)len, line);
        size_t idx[2], n, vidx[2], vn;
        CHECK(a3s_ruleset_matches(rs, "bash", 4, line, len, idx, 2, &n, NULL) == A3S_OK, "m");
        CHECK(a3s_bash_verdict_matched(v, vidx, 2, &vn, NULL) == A3S_OK && vn == n &&
                  memcmp(idx, vidx, n * sizeof *idx) == 0,
              "the same rules: %.*s", (int)len, line);
        a3s_bash_verdict_free(v);
        a3s_bash_split *sp = NULL; /* the guardrail's reading of the same line */
        CHECK(a3s_bash_read_line(line, len, &sp) == A3S_OK && sp, "read");
        a3s_bash_split_free(sp);
    }
    for (int k = 0; k < 3; k++) { /* the plain spelling, after any prefix, is denied */
        const char *prefix[] = {"echo a; ", "x=1 ", "env -- "};
        char l[64];
        snprintf(l, sizeof l, "%sgit push", prefix[k]);
        CHECK(decide(rs, A3S_LIST_ASK, l) == A3S_LIST_DENY, "%s", l);
    }
    a3s_ruleset_free(rs);
}

static bool str_is(a3s_str s, const char *lit) {
    return s.p && s.n == strlen(lit) && memcmp(s.p, lit, s.n) == 0;
}

/* The reading the guardrail judges: programs behind wrappers, directories, values. */
static void reading(void) {
    const char *line = "d=/; sudo -u x env -C / rm -rf $d ${e:-/tmp} $(pwd)/.. > /dev/sda";
    a3s_bash_split *sp = NULL;
    CHECK(a3s_bash_read_line(line, strlen(line), &sp) == A3S_OK && sp && sp->reading, "read");
    const a3s_bash_reading *rd = sp->reading;
    CHECK(rd->nsources == 2 && rd->ncmds == 3 && !rd->bounded, "sources and commands");
    const a3s_bash_simple *c = &rd->cmds[1];
    CHECK(c->nw == 11 && c->nstages == 3 && c->stages[0] == 0 && c->stages[1] == 3 &&
              c->stages[2] == 6, "sudo, env, rm");
    CHECK(!c->dirs[0].p && str_is(c->dirs[1], "/") && !c->dirs[2].p, "env -C /");
    const a3s_bash_word *d = &rd->words[c->w0 + 8];
    CHECK(d->nvalues == 1 && str_is(d->values[0], "/") && str_is(d->shown, "$d"), "$d is /");
    const a3s_bash_word *e = &rd->words[c->w0 + 9];
    CHECK(e->nvalues == 2 && str_is(e->values[1], "/tmp") && e->unknown, "a default");
    CHECK(c->nr == 1 && str_is(rd->redirs[c->r0].op, ">") &&
              str_is(rd->words[rd->redirs[c->r0].target].values[0], "/dev/sda"), "redirection");
    a3s_bash_split_free(sp);
    /* a shell's positional parameters, past the depth bound */
    line = "sh -c 'rm -rf \"$1\"' _ /";
    CHECK(a3s_bash_read_line(line, strlen(line), &sp) == A3S_OK, "read");
    CHECK(sp->reading->nsources == 2 && sp->reading->sources[1].via == A3S_VIA_SHELL_C, "sh -c");
    c = &sp->reading->cmds[1];
    CHECK(str_is(sp->reading->words[c->w0 + 2].values[0], "/"), "$1 is /");
    a3s_bash_split_free(sp);
    char deep[512] = "";
    for (int i = 0; i < A3S_BASH_MAX_DEPTH + 2; i++)
        strcat(deep, "$(");
    CHECK(a3s_bash_read_line(deep, strlen(deep), &sp) == A3S_OK && sp->reading->bounded, "bounded");
    a3s_bash_split_free(sp);
}

int main(void) {
    reading();
    bypasses();
    allow_covers_every_command();
    verdict_api();
    bounds();
    fuzz();
    return check_report("test_bash");
}
