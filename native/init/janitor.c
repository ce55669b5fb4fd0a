/* janitor.c - janitor mode: a sandbox's placeholders go when the sandbox and its caller are gone.
 *
 * A missing protected name is held by a read-only placeholder in the
 * workspace for as long as the sandbox lives (docs/security.md, "Why
 * placeholders are on the host"): a mount needs a real directory entry, so
 * the placeholder is visible to the host too. The caller removes them when
 * the sandbox ends; a caller killed with SIGKILL cannot, so the core starts
 * this janitor with the plan, detached from the caller, on the host and
 * outside the sandbox's mount namespace (inside it a placeholder is a
 * mount point and cannot be removed):
 *
 *   a3s-init --mode janitor --alive-fd N --lock-fd N --workspace-fd N --journal-fd N
 *            --journal PATH --workspace PATH
 *
 * --alive-fd   the read end of a pipe whose write end the caller's plan and
 *              every process of the sandbox hold: it reads end-of-file once
 *              the sandbox is gone (its mounts with it) and the caller has
 *              closed its copy (released its plan, or died);
 * --lock-fd    an open file description of the workspace lock (not held:
 *              the janitor takes it exclusively at the end, to know whether
 *              any other run over the workspace is active);
 * --workspace-fd the workspace directory, likewise (not held): the lock that
 *              runs of callers with other state directories share (without
 *              it, or if it is held, another run may be active: hand over);
 * --journal-fd the run's journal (another open file description than the
 *              caller's), locked here only once the caller's lock is gone.
 *
 * When the journal is still where the caller put it once its lock is free,
 * the caller died without releasing its plan: the janitor removes each
 * placeholder that is still the untouched object made (the same test as the
 * caller's) if no other run over the workspace is active, and the journal
 * with it; otherwise it hands the journal to the last run ("done"), as the
 * caller would. A journal the caller removed or handed over means there is
 * nothing to do. A janitor never waits for the caller while the sandbox
 * lives, and never removes a placeholder of a live sandbox: the pipe is
 * open until every process of the sandbox has exited.
 */
#define _GNU_SOURCE
#include "init.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#define JANITOR_MAX_JOURNAL 65536

int fd_number(const char *s) {
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    return errno || *end || v < 0 || v > INT_MAX ? -1 : (int)v;
}

/* One journal line: 'd' or 'f', then "dev:ino:sec.nsec:path". The path must
 * name an entry directly in the workspace; the object is removed only while
 * it is still the empty, read-only object the caller made (an inode number
 * alone is not enough: ext4 hands a freed one straight back). */
static void janitor_remove(const char *line, const char *workspace) {
    unsigned long dev, ino;
    long long csec;
    long cnsec;
    int off = 0;
    if ((line[0] != 'd' && line[0] != 'f') ||
        sscanf(line + 1, "%lu:%lu:%lld.%ld:%n", &dev, &ino, &csec, &cnsec, &off) != 4 || !off)
        return;
    const char *path = line + 1 + off;
    size_t n = strlen(workspace);
    if (strncmp(path, workspace, n) != 0 || path[n] != '/' || !path[n + 1] ||
        strchr(path + n + 1, '/'))
        return;
    struct stat st;
    if (lstat(path, &st) < 0 || st.st_dev != dev || st.st_ino != ino ||
        st.st_ctim.tv_sec != csec || st.st_ctim.tv_nsec != cnsec ||
        (st.st_mode & 07777) != (line[0] == 'f' ? 0444 : 0555))
        return;
    if (line[0] == 'f' && S_ISREG(st.st_mode) && st.st_size == 0)
        unlink(path);
    else if (line[0] == 'd' && S_ISDIR(st.st_mode))
        rmdir(path); /* fails, as it should, unless still empty */
}

int janitor_main(int argc, char **argv) {
    int alive = -1, lock = -1, journal = -1, wsdir = -1;
    bool detach = false;
    const char *journal_path = NULL, *workspace = NULL;
    for (int i = 1; i + 1 < argc; i += 2) {
        const char *a = argv[i], *v = argv[i + 1];
        if (!strcmp(a, "--mode"))
            continue;
        else if (!strcmp(a, "--alive-fd"))
            alive = fd_number(v);
        else if (!strcmp(a, "--lock-fd"))
            lock = fd_number(v);
        else if (!strcmp(a, "--workspace-fd"))
            wsdir = fd_number(v);
        else if (!strcmp(a, "--journal-fd"))
            journal = fd_number(v);
        else if (!strcmp(a, "--journal"))
            journal_path = v;
        else if (!strcmp(a, "--workspace"))
            workspace = v;
        else if (!strcmp(a, "--detach")) /* the core's spawn waits for us: fork, it returns */
            detach = !strcmp(v, "1");
        else
            return 2;
    }
    if (alive < 0 || lock < 0 || journal < 0 || !journal_path || !workspace || argc % 2 == 0)
        return 2;
    if (detach) {
        pid_t pid = fork(); /* a small static process: cheap, unlike a copy of the host */
        if (pid < 0)
            return 1;
        if (pid > 0)
            _exit(0);
    }
    /* a stop of the caller's terminal or session is not ours to obey */
    signal(SIGHUP, SIG_IGN);
    signal(SIGINT, SIG_IGN);
    prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);

    /* 1. the sandbox is gone and the caller has let go of the plan */
    struct pollfd pfd = {.fd = alive, .events = POLLIN};
    char c;
    for (;;) {
        int r = poll(&pfd, 1, -1);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return 1;
        ssize_t n = read(alive, &c, 1);
        if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN))
            break;
    }
    /* 2. the caller's lock on the journal: free once it released or died */
    while (flock(journal, LOCK_EX) < 0)
        if (errno != EINTR)
            return 1;
    struct stat held, named;
    if (fstat(journal, &held) < 0 || held.st_nlink == 0 || lstat(journal_path, &named) < 0 ||
        named.st_dev != held.st_dev || named.st_ino != held.st_ino)
        return 0; /* removed or handed over by the caller: nothing left to do */
    /* 3. the caller died with its plan: clean up as it would have */
    if (flock(lock, LOCK_EX | LOCK_NB) < 0 || wsdir < 0 || flock(wsdir, LOCK_EX | LOCK_NB) < 0) {
        char done[PATH_MAX + 8];
        if (snprintf(done, sizeof done, "%s.done", journal_path) < (int)sizeof done)
            rename(journal_path, done); /* another run relies on them: the last one removes */
        return 0;
    }
    char *text = malloc(JANITOR_MAX_JOURNAL + 1);
    size_t len = 0;
    while (text && len < JANITOR_MAX_JOURNAL) {
        ssize_t r = pread(journal, text + len, JANITOR_MAX_JOURNAL - len, (off_t)len);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        len += (size_t)r;
    }
    if (text) {
        text[len] = '\0';
        for (char *line = text; *line;) {
            char *end = strchr(line, '\n');
            if (end)
                *end = '\0';
            janitor_remove(line, workspace);
            line = end ? end + 1 : line + strlen(line);
        }
        free(text);
    }
    unlink(journal_path);
    return 0;
}
