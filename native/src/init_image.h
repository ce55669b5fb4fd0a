/* init_image.h - the init's bytes, pinned in a sealed memfd (init_image_linux.c). Internal.
 *
 * The init is found by path, in a package that may lie in the workspace
 * (a .venv, node_modules), where any sandboxed command can rewrite it. So
 * the core copies it once into a memory file that nothing can change
 * (sealed against writes, growth and shrinking) and runs that: bubblewrap
 * gets a fresh read-only descriptor of it for every start (--ro-bind-data),
 * the host runs it with execveat(AT_EMPTY_PATH). */
#ifndef A3S_INIT_IMAGE_H
#define A3S_INIT_IMAGE_H

#include "a3s/a3s.h"

#define A3S_INIT_MAX_BYTES (64u << 20) /* far above any init we build */

/* Opens `path` (O_NOFOLLOW, non-blocking, a regular file of at most
 * A3S_INIT_MAX_BYTES) and copies it into a sealed memfd, *out (>= 3,
 * close-on-exec). sha256: NULL, or the 64 hex digits the bytes must have
 * (A3S_E_REFUSED otherwise). workspace: NULL, or the canonical workspace;
 * with no sha256, an init that lies inside it is refused (A3S_E_REFUSED).
 * Errors: A3S_E_INVALID (a malformed sha256), A3S_E_UNSUPPORTED (not a
 * regular file, too large, cannot be read), A3S_E_REFUSED, A3S_E_SYSTEM
 * (memfd_create or sealing failed), A3S_E_NOMEM. */
int a3s_init_image_open(const char *path, const char *sha256, const char *workspace, int *out,
                        a3s_error *err);

/* A new read-only descriptor of the image at offset 0 (its own file
 * position: bubblewrap reads it to the end), close-on-exec; -1 and errno. */
int a3s_init_image_reopen(int image);

#endif
