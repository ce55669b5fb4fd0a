/* credscan.h - cached discovery of credential files in a workspace (internal). */
#ifndef A3S_CREDSCAN_H
#define A3S_CREDSCAN_H

#include "strvec.h"

struct a3s_credscan;

int a3s_credscan_new(const char *root, struct a3s_credscan **out, a3s_error *err);

/* The first run walks without inotify; the instance and its watches come with
 * the second. For a handle that may run one command only: that run reads every
 * directory whether watched or not, and closing an instance that held watches
 * waits for an SRCU grace period (8-20 ms, at every stop and at process exit).
 * Only before the first run. */
void a3s_credscan_watch_later(struct a3s_credscan *cs);

/* At most `budget` inotify watches (UINT64_MAX: no bound; the default is
 * none): beyond them, directories are checked by their metadata, as when
 * the kernel refuses a watch. */
void a3s_credscan_set_watch_budget(struct a3s_credscan *cs, uint64_t budget);

/* How many inotify watches the scan holds (for the tests). */
size_t a3s_credscan_watches(const struct a3s_credscan *cs);

/* Appends every credential entry under the root to `found`, each tagged
 * by its first byte: 'f' regular file, 'd' directory, 'l' symlink, then
 * the absolute path. Not thread-safe: the caller serializes runs. */
int a3s_credscan_run(struct a3s_credscan *cs, struct a3s_strvec *found, a3s_error *err);

/* Makes the next runs stop with A3S_E_SYSTEM (sys_errno ETIMEDOUT) once
 * CLOCK_MONOTONIC passes deadline_ns (0: never), or (ECANCELED) once
 * cancel_fd is readable (-1: never): a scan counts against the time of the
 * command it is for. An interrupted run leaves the cache consistent. */
void a3s_credscan_set_deadline(struct a3s_credscan *cs, uint64_t deadline_ns, int cancel_fd);

/* Drops every watch, the inotify instance and the cached tree (a stopped
 * sandbox holds none); the next run builds them again. */
void a3s_credscan_release(struct a3s_credscan *cs);

void a3s_credscan_free(struct a3s_credscan *cs);

#endif
