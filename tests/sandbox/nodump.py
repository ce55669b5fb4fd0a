"""A program that makes itself non-dumpable, then makes names (native/init/names.c).

prctl(PR_SET_DUMPABLE, 0), as ssh-agent does, closes the program's /proc/PID/mem, cwd and
fd links to every process without CAP_SYS_PTRACE, the init's name supervisor included; the
supervisor opens what it needs while the program waits in that prctl. Compiled by the tests
into the workspace and run inside the sandbox; prints one line "<what> <ok|ERRNO>" per call.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

SOURCE = r"""
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static void say(const char *what, long rc) {
    printf("%s %s\n", what, rc < 0 ? strerrorname_np(errno) : "ok");
    fflush(stdout);
}

static void *in_thread(void *arg) {
    (void)arg;
    int fd = open("from-thread", O_CREAT | O_WRONLY | O_EXCL, 0600);
    say("thread-create", fd);
    if (fd >= 0)
        close(fd);
    return NULL;
}

/* a racing thread flips the path between an ordinary name and a protected one */
static char racy[32] = "race-ordinary";
static volatile int racing = 1;
static void *flipper(void *arg) {
    (void)arg;
    while (racing) {
        memcpy(racy, ".mcp.json", 10);
        memcpy(racy, "race-ordinary", 14);
    }
    return NULL;
}

int main(void) {
    int root = open(".", O_RDONLY | O_DIRECTORY);
    say("prctl", prctl(PR_SET_DUMPABLE, 0, 0, 0, 0));
    printf("dumpable %d\n", prctl(PR_GET_DUMPABLE, 0, 0, 0, 0));
    int fd = open("made", O_CREAT | O_WRONLY | O_TRUNC, 0666);
    say("create", fd);
    if (fd >= 0) {
        say("write", write(fd, "hello\n", 6));
        close(fd);
    }
    say("mkdir", mkdir("dir", 0777));
    say("create-in-dir", open("dir/inner", O_CREAT | O_WRONLY, 0666));
    char abs[4096];
    if (getcwd(abs, sizeof abs - 16))
        strcat(abs, "/dir/absolute");
    say("create-abs", open(abs, O_CREAT | O_WRONLY, 0600));
    say("rename", rename("made", "dir/moved"));
    say("symlink", symlink("moved", "dir/link"));
    say("link", link("dir/moved", "dir/hard"));
    pthread_t t;
    pthread_create(&t, NULL, in_thread, NULL);
    pthread_join(t, NULL);
    say("protected-create", open(".mcp.json", O_CREAT | O_WRONLY, 0600));
    say("protected-mkdir", mkdir(".vscode", 0700));
    say("protected-rename", rename("dir/hard", ".git"));
    say("protected-symlink", symlink("x", ".bashrc"));
    say("protected-dotdot", open("dir/../.claude", O_CREAT | O_WRONLY, 0600));
    say("protected-dirfd", openat(root, ".codex", O_CREAT | O_WRONLY, 0600));
    say("ordinary-dirfd", openat(root, "via-dirfd", O_CREAT | O_WRONLY, 0600));
    pthread_create(&t, NULL, flipper, NULL);
    long made = 0;
    for (int i = 0; i < 300; i++) {
        int r = open(racy, O_CREAT | O_WRONLY, 0600);
        if (r >= 0)
            made++, close(r);
    }
    racing = 0;
    pthread_join(t, NULL);
    say("race", made > 0 ? 0 : -1);
    pid_t pid = fork();
    if (pid == 0) {
        say("child-protected", open(".gitmodules", O_CREAT | O_WRONLY, 0600));
        _exit(0);
    }
    waitpid(pid, NULL, 0);
    say("chdir", chdir("dir"));
    say("after-chdir", open("after", O_CREAT | O_WRONLY, 0600));
    return 0;
}
"""


def build(into: Path, tmp: Path) -> Path:
    """Compiles the program into `into` (the workspace); the path of the binary."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        raise RuntimeError("no C compiler")
    src = tmp / "nodump.c"
    src.write_text(SOURCE)
    out = into / "nodump"
    subprocess.run([cc, "-O1", "-pthread", str(src), "-o", str(out)], check=True)
    return out


def results(stdout: str) -> dict[str, str]:
    return dict(line.split(" ", 1) for line in stdout.splitlines() if " " in line)
