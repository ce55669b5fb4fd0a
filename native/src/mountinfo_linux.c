/* mountinfo_linux.c - one parser of /proc/self/mountinfo (see mountinfo.h).
 *
 * A line: ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE SUPER
 * The optional fields end at a lone "-"; paths escape space, tab, newline
 * and backslash as \ooo. */
#define _GNU_SOURCE
#include "mountinfo.h"

#if defined(__linux__)

#include <string.h>

/* Decodes the octal escapes of a mountinfo field in place; true if it had any. */
static bool unescape(char *s) {
    bool any = false;
    char *w = s;
    for (const char *r = s; *r; w++) {
        if (r[0] == '\\' && r[1] >= '0' && r[1] <= '3' && r[2] >= '0' && r[2] <= '7' &&
            r[3] >= '0' && r[3] <= '7') {
            *w = (char)((r[1] - '0') * 64 + (r[2] - '0') * 8 + (r[3] - '0'));
            r += 4;
            any = true;
        } else {
            any |= *r == '\\';
            *w = *r++;
        }
    }
    *w = '\0';
    return any;
}

int a3s_mountinfo_next(FILE *f, char *line, size_t cap, struct a3s_mount *m) {
    if (cap < 2 || !fgets(line, (int)cap, f))
        return 0;
    size_t len = strlen(line);
    if (len && line[len - 1] != '\n' && !feof(f)) {
        int c;
        while ((c = fgetc(f)) != EOF && c != '\n') {
        }
        return -1; /* longer than the buffer */
    }
    char *tok[6], *save = NULL, *t = strtok_r(line, " \n", &save);
    int n = 0;
    for (; t && n < 6; t = strtok_r(NULL, " \n", &save))
        tok[n++] = t;
    while (t && strcmp(t, "-") != 0)
        t = strtok_r(NULL, " \n", &save);
    char *fstype = t ? strtok_r(NULL, " \n", &save) : NULL;
    char *source = fstype ? strtok_r(NULL, " \n", &save) : NULL;
    char *super = source ? strtok_r(NULL, " \n", &save) : NULL;
    if (n < 6 || !super)
        return -1;
    *m = (struct a3s_mount){.root = tok[3],
                            .mount_point = tok[4],
                            .fstype = fstype,
                            .source = source,
                            .super_options = super};
    bool a = unescape(m->root), b = unescape(m->mount_point);
    m->escaped = a || b;
    return 1;
}

#else
typedef int a3s_mountinfo_linux_unused; /* ISO C forbids an empty unit */
#endif
