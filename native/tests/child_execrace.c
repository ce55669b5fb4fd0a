/* child_execrace.c - a hostile program for the exec check's race test
 * (tests/sandbox/test_exec_check.py): it execs PROGRAM with one argument
 * while a second thread flips that argument's bytes between ALLOWED and
 * DENIED as fast as it can, so that what a checker reads of execve's
 * pointers may differ from what the kernel copies. A check that reads the
 * new image's argv after the exec (what runs) is immune; one that reads the
 * caller's memory before it is not.
 *
 * Usage: child_execrace PROGRAM ALLOWED DENIED [from-thread]
 * (ALLOWED and DENIED of the same length; with from-thread the exec is made
 * by a second thread while the main one flips: the kernel then ends every
 * other thread and the execing one takes over the process.)
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char arg[256];
static const char *flip[2];
static size_t len;

static void *flipper(void *unused) {
    (void)unused;
    for (unsigned long i = 0;; i++) {
        memcpy(arg, flip[i & 1], len);
        atomic_signal_fence(memory_order_seq_cst);
    }
    return NULL;
}

static const char *program;

static void *execer(void *unused) {
    (void)unused;
    usleep(1000);
    char *const args[] = {(char *)program, arg, NULL};
    execv(program, args);
    perror("execv");
    _exit(127);
}

int main(int argc, char **argv) {
    bool from_thread = argc == 5 && strcmp(argv[4], "from-thread") == 0;
    if ((argc != 4 && !from_thread) || strlen(argv[2]) != strlen(argv[3]) ||
        strlen(argv[2]) >= sizeof arg) {
        fprintf(stderr, "usage: child_execrace PROGRAM ALLOWED DENIED [from-thread]\n");
        return 2;
    }
    program = argv[1];
    flip[0] = argv[2];
    flip[1] = argv[3];
    len = strlen(argv[2]);
    memcpy(arg, argv[2], len + 1);
    pthread_t t;
    if (from_thread) {
        if (pthread_create(&t, NULL, execer, NULL) != 0)
            return 2;
        flipper(NULL); /* until the exec ends this thread */
    }
    if (pthread_create(&t, NULL, flipper, NULL) != 0)
        return 2;
    usleep(1000); /* let it run */
    char *const args[] = {argv[1], arg, NULL};
    execv(argv[1], args);
    perror("execv");
    return 127;
}
