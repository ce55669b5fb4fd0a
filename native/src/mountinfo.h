/* mountinfo.h - reading /proc/self/mountinfo one mount at a time (mountinfo_linux.c).
 * Internal; built into the core and into the init (its owned host mode checks the
 * proc mounts the core covered). */
#ifndef A3S_MOUNTINFO_H
#define A3S_MOUNTINFO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* One mount, its fields pointing into the caller's line buffer. */
struct a3s_mount {
    char *root;        /* the mount's root within its file system, unescaped */
    char *mount_point; /* unescaped (\040 and the like are octal escapes in the file) */
    char *fstype;
    char *source;
    char *super_options;
    bool escaped; /* root or mount_point held an escape: decoded here, but a caller that
                     builds paths from them may prefer to pass such a mount over */
};

/* Reads the next line of f (/proc/self/mountinfo, opened "re") into line[cap]
 * and fills *m. 1: a mount; 0: the end of the file; -1: a line that is
 * malformed or longer than cap (the rest of it is consumed): the caller
 * decides whether a mount it cannot read may be passed over. */
int a3s_mountinfo_next(FILE *f, char *line, size_t cap, struct a3s_mount *m);

#endif
