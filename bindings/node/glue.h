/* glue.h - the Node-API helpers binding.c defines and sandbox.c shares.
 *
 * Conventions: a helper that fails has thrown a JS exception (or left one
 * pending) and returns NULL or false; the caller returns NULL at once.
 */
#ifndef CODEWARD_NODE_GLUE_H
#define CODEWARD_NODE_GLUE_H

#include <node_api.h>

#include <stdbool.h>
#include <stddef.h>

#include "a3s/a3s.h"

/* Evaluates a napi_* call; on failure throws and returns NULL from the caller. */
#define CHECK(env, call)                                                                           \
    do {                                                                                           \
        if ((call) != napi_ok) {                                                                   \
            throw_napi_failure((env), #call);                                                      \
            return NULL;                                                                           \
        }                                                                                          \
    } while (0)

/* A method's property descriptor. */
#define METHOD(name, fn) {name, NULL, fn, NULL, NULL, NULL, napi_default_method, NULL}

#define SMALL_UNITS 256

/* The bytes of one JS string; `data` points into `small` or to the heap. */
typedef struct {
    char *data;
    size_t len;
    char small[3 * SMALL_UNITS];
} bytes_buf;

/* Throws a generic Error for a failed napi_* call unless one is pending. */
void throw_napi_failure(napi_env env, const char *what);
napi_value throw_type_error(napi_env env, const char *msg);
napi_value throw_nomem(napi_env env);
/* The C core's error as a JS Error (message, .status, .detail and .sysErrno),
 * or NULL if it cannot be built; throw_core throws it. */
napi_value make_core_error(napi_env env, const a3s_error *err);
napi_value throw_core(napi_env env, const a3s_error *err);
bool set_named(napi_env env, napi_value obj, const char *name, napi_value v);
bool set_number(napi_env env, napi_value obj, const char *name, double d);
/* Fetches up to `n` arguments (missing ones are undefined) and `this`. */
bool get_args(napi_env env, napi_callback_info info, size_t n, napi_value *argv,
              napi_value *this_arg);
/* A JS string argument as WTF-8 bytes (`what` names it in the TypeError). */
bool get_bytes(napi_env env, napi_value v, const char *what, bytes_buf *out);
void bytes_release(bytes_buf *b);
/* The native handle of a tagged object, or a TypeError naming `cls`. */
void *unwrap(napi_env env, napi_value obj, const napi_type_tag *tag, const char *cls);
/* get_args, then the native handle of `this` (unwrap); `this` in *this_arg
 * unless this_arg is NULL. */
void *get_handle_args(napi_env env, napi_callback_info info, size_t n, napi_value *argv,
                      const napi_type_tag *tag, const char *cls, napi_value *this_arg);
/* Tags and wraps `this`; on failure frees the handle with `release`. */
bool attach(napi_env env, napi_value this_arg, void *handle, const napi_type_tag *tag,
            napi_finalize release);
/* A TypeError unless the function was called with `new`. */
bool require_new(napi_env env, napi_callback_info info, const char *cls);
bool define_class(napi_env env, napi_value exports, const char *name, napi_callback ctor,
                  const napi_property_descriptor *methods, size_t n);

/* sandbox.c: NativeSandbox and features() on exports. */
bool register_sandbox(napi_env env, napi_value exports);

#endif
