/* test_exec_match.c - the exec check's decision (native/src/exec_match.c):
 * which exec a bash deny or ask pattern stops, under each name a program may
 * run as (git's helpers, its global options and aliases, a copy or a link of
 * a named binary, a script by its own name), and the approvals of an ask.
 * The tracer that feeds it real execs is tested end to end in
 * tests/sandbox/test_exec_check.py.
 */
#define _GNU_SOURCE
#include "check.h"
#include "../src/exec_match.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static a3s_exec_rules *rules(const char *const *deny, const char *const *ask,
                             const char *const *approved) {
    a3s_exec_rules *r = a3s_exec_rules_new();
    a3s_error err;
    for (size_t i = 0; deny && deny[i]; i++)
        CHECK(a3s_exec_rules_add(r, A3S_LIST_DENY, deny[i], &err) == A3S_OK, "%s", err.message);
    for (size_t i = 0; ask && ask[i]; i++)
        CHECK(a3s_exec_rules_add(r, A3S_LIST_ASK, ask[i], &err) == A3S_OK, "%s", err.message);
    for (size_t i = 0; approved && approved[i]; i++)
        CHECK(a3s_exec_rules_approve(r, approved[i]) == A3S_OK, "approve");
    return r;
}

/* Decides exe + argv ("a b c", split on spaces); returns the list, and the
 * reading in `reading` (empty when it runs). */
static int decide_fd(a3s_exec_rules *r, const char *exe, int exe_fd, const char *args,
                     int cwd_fd, char *reading, size_t cap) {
    char *copy = strdup(args), *save = NULL;
    const char *argv[32];
    size_t argc = 0;
    for (char *w = strtok_r(copy, " ", &save); w && argc < 32; w = strtok_r(NULL, " ", &save))
        argv[argc++] = w;
    struct a3s_exec_call c = {.exe = exe, .exe_fd = exe_fd, .argv = argv, .argc = argc,
                              .cwd_fd = cwd_fd};
    struct a3s_exec_decision d;
    CHECK(a3s_exec_decide(r, &c, &d) == A3S_OK, "decide %s", args);
    snprintf(reading, cap, "%s", d.reading ? d.reading : "");
    free(d.reading);
    free(copy);
    return d.list;
}

static int decide(a3s_exec_rules *r, const char *exe, const char *args, char *reading,
                  size_t cap) {
    return decide_fd(r, exe, -1, args, -1, reading, cap);
}

static void test_names(void) {
    const char *deny[] = {"git push**", "rm -rf /", NULL};
    a3s_exec_rules *r = rules(deny, NULL, NULL);
    char got[256];
    struct {
        const char *exe, *args;
        int list;
        const char *reading;
    } cases[] = {
        {"/usr/bin/git", "git push", A3S_LIST_DENY, "git push"},
        {"/usr/bin/git", "git push origin main", A3S_LIST_DENY, "git push origin main"},
        {"/usr/bin/git", "git status", A3S_LIST_NONE, ""},
        {"/usr/bin/git", "git log --format=push", A3S_LIST_NONE, ""},
        /* the executable's name wins over argv[0], and argv[0]'s counts too */
        {"/usr/bin/git", "sh push", A3S_LIST_DENY, "git push"},
        {"/opt/x/busybox", "git push", A3S_LIST_DENY, "git push"},
        /* git's global options are left out, as the line reader does */
        {"/usr/bin/git", "git -C /w push", A3S_LIST_DENY, "git push"},
        {"/usr/bin/git", "git -c user.name=x --no-pager push", A3S_LIST_DENY, "git push"},
        {"/usr/bin/git", "git --git-dir=/w/.git push", A3S_LIST_DENY, "git push"},
        {"/usr/bin/git", "git --git-dir /w/.git status", A3S_LIST_NONE, ""},
        /* git's helpers: git-push is git push */
        {"/usr/lib/git-core/git-push", "/usr/lib/git-core/git-push origin", A3S_LIST_DENY,
         "git push origin"},
        {"/usr/bin/git", "git-push", A3S_LIST_DENY, "git push"},
        {"/usr/lib/git-core/git-status", "git-status", A3S_LIST_NONE, ""},
        /* aliases and unknown subcommands can be anything */
        {"/usr/bin/git", "git -c alias.p=push p", A3S_LIST_DENY, "git -c alias.p=push p"},
        {"/usr/bin/git", "git -c ALIAS.p=push p", A3S_LIST_DENY, "git -c ALIAS.p=push p"},
        {"/usr/bin/git", "git --config-env=alias.p=X p", A3S_LIST_DENY,
         "git --config-env=alias.p=X p"},
        {"/usr/bin/git", "git psuh", A3S_LIST_DENY, "git psuh"},
        {"/usr/lib/git-core/git-lg", "git-lg", A3S_LIST_DENY, "git lg"},
        /* the program by its lower-case name */
        {"/usr/bin/GIT", "GIT push", A3S_LIST_DENY, "git push"},
        {"/bin/rm", "rm -rf /", A3S_LIST_DENY, "rm -rf /"},
        {"/bin/rm", "rm -rf /tmp/x", A3S_LIST_NONE, ""},
        {NULL, "rm -rf /", A3S_LIST_DENY, "rm -rf /"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        int list = decide(r, cases[i].exe, cases[i].args, got, sizeof got);
        CHECK(list == cases[i].list, "%s (%s): list %d", cases[i].args,
              cases[i].exe ? cases[i].exe : "-", list);
        CHECK(!strcmp(got, cases[i].reading), "%s: reading '%s'", cases[i].args, got);
    }
    a3s_exec_rules_free(r);
}

/* Every command git ships is known (the table is sorted for bsearch): none
 * of them reads as "anything" under a rule for another command. */
static void test_known_git_commands(void) {
    const char *deny[] = {"git push**", NULL};
    a3s_exec_rules *r = rules(deny, NULL, NULL);
    const char *known[] = {"add", "am", "bisect", "blame", "branch", "checkout", "cherry-pick",
                           "clone", "commit", "config", "diff", "fetch", "grep", "init",
                           "log", "merge", "pull", "rebase", "remote", "reset", "restore",
                           "rev-parse", "show", "stash", "status", "switch", "tag",
                           "upload-pack", "worktree", "write-tree"};
    char args[64], got[256];
    for (size_t i = 0; i < sizeof known / sizeof *known; i++) {
        snprintf(args, sizeof args, "git %s", known[i]);
        CHECK(decide(r, "/usr/bin/git", args, got, sizeof got) == A3S_LIST_NONE, "%s", args);
    }
    /* a command git runs from its exec path is known where this machine has it, and is
     * anything (an alias may take its name) where it does not */
    const char *helpers[] = {"remote-https", "mergetool", "svn", "send-email"};
    a3s_exec_rules_locate(r, "/nonexistent");
    for (size_t i = 0; i < sizeof helpers / sizeof *helpers; i++) {
        char path[128];
        snprintf(args, sizeof args, "git %s", helpers[i]);
        bool here = false;
        const char *dirs[] = {"/usr/lib/git-core", "/usr/libexec/git-core"};
        for (int d = 0; d < 2; d++) {
            snprintf(path, sizeof path, "%s/git-%s", dirs[d], helpers[i]);
            here |= access(path, F_OK) == 0;
        }
        int want = here ? A3S_LIST_NONE : A3S_LIST_DENY;
        CHECK(decide(r, "/usr/bin/git", args, got, sizeof got) == want, "%s (installed: %d)",
              args, here);
    }
    a3s_exec_rules_free(r);
}

static void test_ask_and_approvals(void) {
    const char *deny[] = {"git push --force**", NULL};
    const char *ask[] = {"git push**", "curl **", NULL};
    const char *approved[] = {"git push origin main", "git p", NULL};
    a3s_exec_rules *r = rules(deny, ask, approved);
    char got[256];
    CHECK(decide(r, "/usr/bin/git", "git push origin main", got, sizeof got) == A3S_LIST_NONE,
          "the approved command runs");
    CHECK(decide(r, "/usr/bin/git", "git -C /w push origin main", got, sizeof got) ==
              A3S_LIST_NONE,
          "a spelling of it runs too");
    CHECK(decide(r, "/usr/bin/git", "git push origin other", got, sizeof got) == A3S_LIST_ASK,
          "another push asks");
    CHECK(decide(r, "/usr/bin/git", "git push --force origin main", got, sizeof got) ==
              A3S_LIST_DENY,
          "a deny is never waived");
    CHECK(decide(r, "/usr/bin/curl", "curl https://example.com", got, sizeof got) ==
              A3S_LIST_ASK,
          "an ask without approval");
    /* an alias can be anything, a denied command too: a deny is never waived */
    CHECK(decide(r, "/usr/bin/git", "git -c alias.p=push p", got, sizeof got) == A3S_LIST_DENY,
          "an alias under a git deny rule");
    a3s_exec_rules_free(r);
    r = rules(NULL, ask, approved);
    CHECK(decide(r, "/usr/bin/git", "git -c alias.p=push p", got, sizeof got) == A3S_LIST_NONE,
          "an approved alias line runs");
    CHECK(decide(r, "/usr/bin/git", "git -c alias.q=push q", got, sizeof got) == A3S_LIST_ASK,
          "another alias asks");
    a3s_exec_rules_free(r);
}

/* An alias may be any of git's commands with the arguments it is given: a
 * rule that names git's command only through a glob still applies. */
static void test_aliases_under_glob_rules(void) {
    const char *deny[] = {"*push*", NULL};
    a3s_exec_rules *r = rules(deny, NULL, NULL);
    char got[256];
    CHECK(decide(r, "/usr/bin/git", "git p origin", got, sizeof got) == A3S_LIST_DENY,
          "an unknown subcommand under *push*");
    CHECK(decide(r, "/usr/bin/git", "git status", got, sizeof got) == A3S_LIST_NONE,
          "a known one that is not push");
    a3s_exec_rules_free(r);
    const char *deny2[] = {"git push --force**", NULL};
    r = rules(deny2, NULL, NULL);
    CHECK(decide(r, "/usr/bin/git", "git pf", got, sizeof got) == A3S_LIST_DENY,
          "an alias may carry options of its own");
    a3s_exec_rules_free(r);
}

static void write_file(const char *path, const char *text, mode_t mode) {
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
    CHECK(fd >= 0, "create %s", path);
    CHECK(write(fd, text, strlen(text)) == (ssize_t)strlen(text), "write %s", path);
    close(fd);
}

/* A copy, a hard link and a renamed file of a program the rules name are
 * read as it; a `#!` script by its own name. */
static void test_identity(void) {
    char dir[] = "/tmp/a3s-exec-match-XXXXXX";
    CHECK(mkdtemp(dir) != NULL, "mkdtemp");
    char bin[128], git[256], copy[256], link_[256], other[256], script[256];
    snprintf(bin, sizeof bin, "%s/bin", dir);
    mkdir(bin, 0700);
    snprintf(git, sizeof git, "%s/git", bin);
    snprintf(copy, sizeof copy, "%s/renamed", dir);
    snprintf(link_, sizeof link_, "%s/hardlink", dir);
    snprintf(other, sizeof other, "%s/other", dir);
    snprintf(script, sizeof script, "%s/git", dir);
    write_file(git, "\177ELF pretend git binary", 0700);
    write_file(copy, "\177ELF pretend git binary", 0700);
    write_file(other, "\177ELF pretend gix binary", 0700); /* same size, other bytes */
    CHECK(link(git, link_) == 0, "link");
    write_file(script, "#!/bin/sh\necho pretend\n", 0700);

    const char *deny[] = {"git push**", NULL};
    a3s_exec_rules *r = rules(deny, NULL, NULL);
    a3s_exec_rules_locate(r, bin);
    char got[256];
    const char *paths[] = {copy, link_, other};
    int want[] = {A3S_LIST_DENY, A3S_LIST_DENY, A3S_LIST_NONE};
    for (int i = 0; i < 3; i++) {
        int fd = open(paths[i], O_RDONLY | O_CLOEXEC);
        int list = decide_fd(r, paths[i], fd, "x push", -1, got, sizeof got);
        CHECK(list == want[i], "%s: %d", paths[i], list);
        close(fd);
    }
    int fd = open(copy, O_RDONLY | O_CLOEXEC);
    CHECK(decide_fd(r, copy, fd, "git-push", -1, got, sizeof got) == A3S_LIST_DENY &&
              !strcmp(got, "git push"),
          "a copy of git run as git-push: '%s'", got);
    close(fd);
    /* the kernel runs a script as INTERPRETER SCRIPT ARGS */
    char args[512];
    snprintf(args, sizeof args, "/bin/sh %s push", script);
    CHECK(decide(r, "/bin/sh", args, got, sizeof got) == A3S_LIST_DENY && !strcmp(got, "git push"),
          "a script called git: '%s'", got);
    int dfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
    CHECK(decide_fd(r, "/bin/sh", -1, "/bin/sh ./git push", dfd, got, sizeof got) ==
              A3S_LIST_DENY,
          "a script by a path relative to the program's directory");
    CHECK(decide_fd(r, "/bin/sh", -1, "/bin/sh -e ./git push", dfd, got, sizeof got) ==
              A3S_LIST_DENY,
          "a script after the interpreter's argument");
    /* a copy of git run by the dynamic loader, as itself or under another argv[0] */
    CHECK(decide_fd(r, "/lib64/ld-linux-x86-64.so.2", -1,
                    "/lib64/ld-linux-x86-64.so.2 ./renamed push", dfd, got,
                    sizeof got) == A3S_LIST_DENY &&
              !strcmp(got, "git push"),
          "a loader running a copy of git: '%s'", got);
    CHECK(decide_fd(r, "/lib64/ld-linux-x86-64.so.2", -1,
                    "/lib64/ld-linux-x86-64.so.2 --argv0 git-push ./renamed origin", dfd, got,
                    sizeof got) == A3S_LIST_DENY &&
              !strcmp(got, "git push origin"),
          "--argv0 git-push: '%s'", got);
    CHECK(decide_fd(r, "/usr/bin/cat", -1, "cat ./other push", dfd, got, sizeof got) ==
              A3S_LIST_NONE,
          "a file of the same size and other bytes is another program");
    close(dfd);
    a3s_exec_rules_free(r);
    unlink(git);
    unlink(copy);
    unlink(link_);
    unlink(other);
    unlink(script);
    rmdir(bin);
    rmdir(dir);
}

static void test_options_and_records(void) {
    const char *good[] = {"git push**"}, *bad_null[] = {NULL};
    a3s_exec_options o = {.struct_size = sizeof o, .exec_deny = good, .exec_deny_count = 1};
    a3s_error err;
    CHECK(a3s_exec_options_check(&o, &err) == A3S_OK, "good options");
    CHECK(a3s_exec_options_trace(&o), "traced");
    o.exec_deny = NULL;
    CHECK(a3s_exec_options_check(&o, &err) == A3S_E_INVALID, "NULL array with a count");
    o.exec_deny = bad_null;
    CHECK(a3s_exec_options_check(&o, &err) == A3S_E_INVALID, "NULL entry");
    a3s_exec_options none = {.struct_size = sizeof none};
    CHECK(!a3s_exec_options_trace(&none), "no rules, no tracing");
    char *raw = a3s_exec_stop_unhex("RL" "X6465" "6e79" "09" "61" "09" "62" ".");
    CHECK(raw && !strcmp(raw, "deny\ta\tb"), "unhex: %s", raw ? raw : "NULL");
    free(raw);
    CHECK(a3s_exec_stop_unhex("RLT") == NULL, "no record");
}

int main(void) {
    test_names();
    test_known_git_commands();
    test_ask_and_approvals();
    test_aliases_under_glob_rules();
    test_identity();
    test_options_and_records();
    return check_report("test_exec_match");
}
