/* error.c - status names and the caller-owned error struct. */
#include "internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

A3S_API const char *a3s_status_name(int code) {
    switch (code) {
    case A3S_OK: return "ok";
    case A3S_E_INVALID: return "invalid";
    case A3S_E_NOMEM: return "nomem";
    case A3S_E_SYNTAX: return "syntax";
    case A3S_E_TOO_LARGE: return "too_large";
    case A3S_E_BUFFER: return "buffer";
    case A3S_E_RANGE: return "range";
    case A3S_E_UNSUPPORTED: return "unsupported";
    case A3S_E_SYSTEM: return "system";
    case A3S_E_REFUSED: return "refused";
    default: return "unknown";
    }
}

int a3s_fail(a3s_error *err, int code, int sys_errno, int64_t detail, const char *fmt, ...) {
    if (err) {
        err->code = code;
        err->sys_errno = sys_errno;
        err->detail = detail;
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(err->message, sizeof err->message, fmt, ap);
        va_end(ap);
        if (n < 0)
            err->message[0] = '\0';
    }
    return code;
}

int a3s_ok(a3s_error *err) {
    if (err) {
        err->code = A3S_OK;
        err->sys_errno = 0;
        err->detail = 0;
        err->message[0] = '\0';
    }
    return A3S_OK;
}
