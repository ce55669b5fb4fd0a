/* child_owned.h - the namespaces of an owned program (child_owned_linux.c). Internal. */
#ifndef A3S_CHILD_OWNED_H
#define A3S_CHILD_OWNED_H

#include "internal.h"
#include "strvec.h"

#include <stdbool.h>
#include <stddef.h>

/* Whether a program can be owned here: bwrap is an executable absolute path
 * and this process can create user and pid namespaces. If not, why[] says
 * what is missing. */
bool a3s_child_can_own(const char *bwrap, char *why, size_t cap);

/* Pushes bubblewrap's argv up to and including the init's own path (the
 * pinned image image_fd, which bubblewrap must inherit), and the caller's
 * pid namespace inode for the init's --own-pidns. Nothing allocated stays
 * behind on failure but what argv holds. */
int a3s_child_owned_argv(const char *bwrap, int image_fd, struct a3s_strvec *argv,
                         unsigned long long *pidns, a3s_error *err);

#endif
