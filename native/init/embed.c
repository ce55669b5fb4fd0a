/* embed.c - the init inside a host program (A3S_SANDBOX_SELF_INIT).
 *
 * The Go package compiles the init's sources into itself (each with embed.h
 * included first) and this file. When the core starts the program's own
 * executable as the init, argv[0] is A3S_INIT_PATH (in a sandbox bubblewrap
 * runs it from there; on the process host it is /proc/self/exe given that
 * name), and the constructor below runs the init's main before the
 * program's own start-up: for Go, before the Go runtime exists (one thread,
 * no signal handlers), the way runc's nsexec lives inside Go programs. The
 * init never returns into the program. Every other start of the program is
 * left alone at the cost of one string comparison (on glibc; elsewhere one
 * read of /proc/self/cmdline).
 */
#define _GNU_SOURCE
#include "embed.h"

#include "a3s/a3s.h"

#if defined(__linux__)
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv); /* the init's, renamed by embed.h */

static _Noreturn void run_as_init(int argc, char **argv) {
    int rc = main(argc, argv); /* returns only for --probe */
    fflush(NULL);
    _exit(rc); /* none of the host program's exit handlers runs in the init */
}

#if defined(__GLIBC__)
/* glibc calls the executable's constructors with (argc, argv, envp). */
__attribute__((constructor(101))) static void a3s_init_embedded(int argc, char **argv,
                                                                char **envp) {
    (void)envp;
    if (argc > 0 && argv && argv[0] && strcmp(argv[0], A3S_INIT_PATH) == 0)
        run_as_init(argc, argv);
}
#else
/* Other C libraries call constructors with no arguments: they come from
 * /proc/self/cmdline, which is read whole only when it starts with the
 * init's name. */
static char *read_all(int fd, size_t *len) {
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap + 1);
    for (;;) {
        if (!buf)
            return NULL;
        ssize_t r = read(fd, buf + n, cap - n);
        if (r < 0) {
            free(buf);
            return NULL;
        }
        if (r == 0)
            break;
        n += (size_t)r;
        if (n == cap) {
            char *grown = realloc(buf, 2 * cap + 1);
            if (!grown)
                free(buf);
            buf = grown;
            cap *= 2;
        }
    }
    buf[n] = '\0';
    *len = n;
    return buf;
}

__attribute__((constructor(101))) static void a3s_init_embedded(void) {
    int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    char head[sizeof A3S_INIT_PATH]; /* the name and its NUL */
    if (read(fd, head, sizeof head) != (ssize_t)sizeof head ||
        memcmp(head, A3S_INIT_PATH, sizeof head) != 0) {
        close(fd);
        return;
    }
    /* named as the init from here on: if it cannot run, never the host program */
    size_t len = 0;
    char *all = lseek(fd, 0, SEEK_SET) == 0 ? read_all(fd, &len) : NULL;
    close(fd);
    size_t argc = 0;
    for (size_t i = 0; all && i < len; i++)
        argc += all[i] == '\0';
    char **argv = all ? calloc(argc + 1, sizeof *argv) : NULL;
    if (!argv)
        _exit(125);
    for (size_t i = 0, k = 0; i < len && k < argc; k++) {
        argv[k] = all + i;
        i += strlen(all + i) + 1;
    }
    run_as_init((int)argc, argv);
}
#endif

#else
typedef int a3s_init_embed_unused; /* ISO C forbids an empty unit */
#endif
