/* child_probe.c - the program test_process runs to look at its own child.
 *
 * Usage: child_probe MODE [ARG]...
 *   fds              the open fds (from /proc/self/fd), space-separated
 *   env              every environment entry, one per line
 *   cwd              the working directory
 *   self             "sigblk=HEX sigign=HEX session=0|1 group=0|1 stdin=TARGET"
 *   gen N SALT       N pattern bytes to stdout (see pattern_byte)
 *   flood N          N pattern bytes to stdout (salt 1) and stderr (salt 2),
 *                    interleaved in uneven chunks
 *   bin              bytes with NULs, invalid UTF-8 and no newline
 *   ignterm          ignore SIGTERM, print "ready", sleep until killed
 *   keyread ID       try to read key ID (keyctl): "key-read" or "key-denied"
 *   setsid_hold SEC  fork a grandchild that calls setsid() and sleeps SEC
 *                    seconds holding stdout/stderr; print its pid and exit 0
 * Exit status 2 on a usage error.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

extern char **environ;

/* Must match test_process.c. */
static unsigned char pattern_byte(unsigned long long i, unsigned salt) {
    return (unsigned char)((i * 131u) ^ (i >> 9) ^ (i >> 17) ^ salt);
}

static void write_all(int fd, const void *p, size_t n) {
    const char *c = p;
    while (n) {
        ssize_t w = write(fd, c, n);
        if (w < 0)
            exit(3);
        c += w;
        n -= (size_t)w;
    }
}

static void gen(int fd, unsigned long long *pos, size_t n, unsigned salt) {
    static unsigned char buf[65536 + 8192];
    for (size_t k = 0; k < n; k++)
        buf[k] = pattern_byte(*pos + k, salt);
    write_all(fd, buf, n);
    *pos += n;
}

static int cmp_int(const void *a, const void *b) {
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

static int list_fds(void) {
    DIR *d = opendir("/proc/self/fd");
    if (!d)
        return 1;
    int fds[1024];
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL && n < 1024) {
        if (e->d_name[0] < '0' || e->d_name[0] > '9')
            continue;
        int fd = atoi(e->d_name);
        if (fd != dirfd(d))
            fds[n++] = fd;
    }
    closedir(d);
    qsort(fds, n, sizeof fds[0], cmp_int);
    for (size_t i = 0; i < n; i++)
        printf(i ? " %d" : "%d", fds[i]);
    return 0;
}

static int self_report(void) {
    FILE *f = fopen("/proc/self/status", "r");
    if (!f)
        return 1;
    char line[256], blk[64] = "?", ign[64] = "?";
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "SigBlk:", 7) == 0)
            sscanf(line + 7, "%63s", blk);
        else if (strncmp(line, "SigIgn:", 7) == 0)
            sscanf(line + 7, "%63s", ign);
    }
    fclose(f);
    char target[PATH_MAX] = "";
    ssize_t n = readlink("/proc/self/fd/0", target, sizeof target - 1);
    if (n > 0)
        target[n] = '\0';
    printf("sigblk=%s sigign=%s session=%d group=%d stdin=%s", blk, ign, getsid(0) == getpid(),
           getpgrp() == getpid(), target);
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 2)
        return 2;
    const char *mode = argv[1];
    if (strcmp(mode, "fds") == 0)
        return list_fds();
    if (strcmp(mode, "env") == 0) {
        for (char **e = environ; *e; e++)
            printf("%s\n", *e);
        return 0;
    }
    if (strcmp(mode, "cwd") == 0) {
        char buf[PATH_MAX];
        if (!getcwd(buf, sizeof buf))
            return 1;
        fputs(buf, stdout);
        return 0;
    }
    if (strcmp(mode, "self") == 0)
        return self_report();
    if (strcmp(mode, "gen") == 0 && argc == 4) {
        unsigned long long total = strtoull(argv[2], NULL, 10), pos = 0;
        unsigned salt = (unsigned)atoi(argv[3]);
        while (pos < total)
            gen(1, &pos, total - pos < 65536 ? (size_t)(total - pos) : 65536, salt);
        return 0;
    }
    if (strcmp(mode, "flood") == 0 && argc == 3) {
        /* Blocking writes alternate between the streams: a reader that
         * drained one stream at a time would deadlock here. */
        unsigned long long total = strtoull(argv[2], NULL, 10), pos_out = 0, pos_err = 0;
        for (unsigned k = 0; pos_out < total || pos_err < total; k++) {
            size_t chunk = 65536 + (k * 977u) % 8192 - 4096;
            if (pos_out < total)
                gen(1, &pos_out, total - pos_out < chunk ? (size_t)(total - pos_out) : chunk, 1);
            if (pos_err < total)
                gen(2, &pos_err, total - pos_err < chunk ? (size_t)(total - pos_err) : chunk, 2);
        }
        return 0;
    }
    if (strcmp(mode, "bin") == 0) {
        static const char bytes[] = {'a', '\0', 'b', '\xff', '\xfe', '\xc3', '(', '\0', '\x80'};
        write_all(1, bytes, sizeof bytes);
        write_all(2, bytes + 3, 3);
        return 0;
    }
    if (strcmp(mode, "keyread") == 0 && argc == 3) {
        char payload[64];
        long n = syscall(SYS_keyctl, 11 /* KEYCTL_READ */, atol(argv[2]), payload, sizeof payload);
        printf("%s\n", n >= 0 ? "key-read" : "key-denied");
        return 0;
    }
    if (strcmp(mode, "ignterm") == 0) {
        signal(SIGTERM, SIG_IGN);
        write_all(1, "ready\n", 6);
        for (;;)
            pause();
    }
    if (strcmp(mode, "setsid_hold") == 0 && argc == 3) {
        /* Exit only once the grandchild has left the group, or the group
         * kill at our exit could still reach it. */
        int sync[2];
        if (pipe(sync) < 0)
            return 1;
        pid_t pid = fork();
        if (pid < 0)
            return 1;
        if (pid == 0) {
            close(sync[0]);
            setsid();
            close(sync[1]);
            sleep((unsigned)atoi(argv[2]));
            _exit(0);
        }
        close(sync[1]);
        char c;
        while (read(sync[0], &c, 1) > 0) {
        }
        printf("%d", (int)pid);
        return 0;
    }
    return 2;
}
