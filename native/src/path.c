/* path.c - the lexical path form used in policy argument strings. */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

/* Segment boundaries are found in a copy where '\' is already '/'. The
 * output never grows: every step removes or copies bytes of the input. */
A3S_API int a3s_path_normalize(const char *path, size_t len, char *out, size_t cap,
                               size_t *out_len, a3s_error *err) {
    if ((!path && len) || !out_len || (!out && cap))
        return a3s_fail(err, A3S_E_INVALID, 0, 0, "a3s_path_normalize: invalid argument");
    if (len == 0) {
        *out_len = 0;
        return a3s_ok(err);
    }
    char *buf = malloc(len);
    if (!buf)
        return a3s_fail(err, A3S_E_NOMEM, 0, 0, "out of memory normalizing a path");
    bool absolute = path[0] == '/' || path[0] == '\\';
    size_t n = 0;     /* bytes written to buf */
    size_t depth = 0; /* segments in buf that a ".." may remove */
    if (absolute)
        buf[n++] = '/';
    size_t i = 0;
    while (i < len) {
        while (i < len && (path[i] == '/' || path[i] == '\\'))
            i++;
        size_t start = i;
        while (i < len && path[i] != '/' && path[i] != '\\')
            i++;
        size_t seg = i - start;
        if (seg == 0 || (seg == 1 && path[start] == '.'))
            continue;
        if (seg == 2 && path[start] == '.' && path[start + 1] == '.') {
            if (depth > 0) {
                /* drop the last segment and its separator */
                while (n > 0 && buf[n - 1] != '/')
                    n--;
                if (n > (size_t)absolute)
                    n--; /* the separator before it */
                depth--;
                continue;
            }
            if (absolute)
                continue; /* "/.." is "/" */
            /* a leading ".." of a relative path is kept */
        } else {
            depth++;
        }
        if (n > (size_t)absolute)
            buf[n++] = '/';
        memcpy(buf + n, path + start, seg);
        n += seg;
    }
    if (n == 0)
        buf[n++] = '.';
    *out_len = n;
    if (n > cap) {
        free(buf);
        return a3s_fail(err, A3S_E_BUFFER, 0, (int64_t)n, "path needs %zu bytes, buffer holds %zu",
                        n, cap);
    }
    memcpy(out, buf, n);
    free(buf);
    return a3s_ok(err);
}
