/* binding.c - Node-API glue over the a3s C ABI (plain C, node_api.h only, N-API 8).
 *
 * Like python/codeward/_native.c, nothing but argument conversion and error
 * mapping lives here: every decision is made in native/src or in the lib/ JavaScript.
 *
 * Strings cross into C as (pointer, length) byte strings, never
 * NUL-terminated, so an embedded NUL is an ordinary byte. They are encoded
 * from the JS string's UTF-16 code units by hand rather than with
 * napi_get_value_string_utf8, because V8 replaces a lone surrogate with
 * U+FFFD while the Python binding encodes it with "surrogatepass" (as three
 * bytes, WTF-8). Doing the same here keeps the bytes the C core sees
 * identical in both bindings for every string either can hold.
 *
 * Errors from the C core are thrown as an Error whose message is
 * a3s_error.message, with .status (a3s_status_name), .detail and .sysErrno;
 * lib/errors.js maps them to the package's error classes.
 */
#include <node_api.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "a3s/a3s.h"
#include "glue.h"

/* ---- plumbing ----------------------------------------------------------- */

/* Throws a generic Error for a failed napi_* call unless one is pending. */
void throw_napi_failure(napi_env env, const char *what) {
    bool pending = false;
    napi_is_exception_pending(env, &pending);
    if (pending)
        return;
    const napi_extended_error_info *info = NULL;
    napi_get_last_error_info(env, &info);
    char msg[256];
    snprintf(msg, sizeof msg, "codeward addon: %s failed (%s)", what,
             info && info->error_message ? info->error_message : "unknown N-API error");
    napi_throw_error(env, "ERR_CODEWARD_CORE", msg);
}

napi_value throw_type_error(napi_env env, const char *msg) {
    napi_throw_type_error(env, "ERR_INVALID_ARG_TYPE", msg);
    return NULL;
}

napi_value throw_nomem(napi_env env) {
    napi_throw_error(env, "ERR_CODEWARD_CORE", "codeward addon: out of memory");
    return NULL;
}

bool set_named(napi_env env, napi_value obj, const char *name, napi_value v) {
    return napi_set_named_property(env, obj, name, v) == napi_ok;
}

bool set_number(napi_env env, napi_value obj, const char *name, double d) {
    napi_value v;
    return napi_create_double(env, d, &v) == napi_ok && set_named(env, obj, name, v);
}

/* The C core's error as a JS Error: message = err->message, plus .status,
 * .detail and .sysErrno for lib/errors.js to branch on; NULL on failure. */
napi_value make_core_error(napi_env env, const a3s_error *err) {
    napi_value msg, error, status;
    if (napi_create_string_utf8(env, err->message, NAPI_AUTO_LENGTH, &msg) != napi_ok ||
        napi_create_error(env, NULL, msg, &error) != napi_ok ||
        napi_create_string_utf8(env, a3s_status_name(err->code), NAPI_AUTO_LENGTH, &status) !=
            napi_ok ||
        !set_named(env, error, "status", status) ||
        !set_number(env, error, "detail", (double)err->detail) ||
        !set_number(env, error, "sysErrno", (double)err->sys_errno))
        return NULL;
    return error;
}

napi_value throw_core(napi_env env, const a3s_error *err) {
    napi_value error = make_core_error(env, err);
    if (!error) {
        throw_napi_failure(env, "creating an a3s error");
        return NULL;
    }
    napi_throw(env, error);
    return NULL;
}

/* Fetches up to `n` arguments (missing ones are undefined) and `this`. */
bool get_args(napi_env env, napi_callback_info info, size_t n, napi_value *argv,
                     napi_value *this_arg) {
    size_t argc = n;
    if (napi_get_cb_info(env, info, &argc, argv, this_arg, NULL) != napi_ok) {
        throw_napi_failure(env, "napi_get_cb_info");
        return false;
    }
    return true;
}

/* ---- strings: UTF-16 <-> WTF-8 -------------------------------------------- */

void bytes_release(bytes_buf *b) {
    if (b->data && b->data != b->small)
        free(b->data);
    b->data = NULL;
}

/* UTF-16 to UTF-8, a lone surrogate as its three-byte form (like Python's
 * "surrogatepass"). Writes at most 3 bytes per unit; returns the length. */
static size_t encode_wtf8(const char16_t *u, size_t n, char *out) {
    unsigned char *o = (unsigned char *)out;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t c = u[i];
        if (c < 0x80) {
            o[k++] = (unsigned char)c;
        } else if (c < 0x800) {
            o[k++] = (unsigned char)(0xC0 | (c >> 6));
            o[k++] = (unsigned char)(0x80 | (c & 0x3F));
        } else if (c >= 0xD800 && c <= 0xDBFF && i + 1 < n && u[i + 1] >= 0xDC00 &&
                   u[i + 1] <= 0xDFFF) {
            uint32_t cp = 0x10000 + ((c - 0xD800) << 10) + (uint32_t)(u[++i] - 0xDC00);
            o[k++] = (unsigned char)(0xF0 | (cp >> 18));
            o[k++] = (unsigned char)(0x80 | ((cp >> 12) & 0x3F));
            o[k++] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
            o[k++] = (unsigned char)(0x80 | (cp & 0x3F));
        } else {
            o[k++] = (unsigned char)(0xE0 | (c >> 12));
            o[k++] = (unsigned char)(0x80 | ((c >> 6) & 0x3F));
            o[k++] = (unsigned char)(0x80 | (c & 0x3F));
        }
    }
    return k;
}

/* Reads a JS string argument as bytes. `what` names it in the TypeError. */
bool get_bytes(napi_env env, napi_value v, const char *what, bytes_buf *out) {
    out->data = NULL;
    out->len = 0;
    napi_valuetype type;
    if (napi_typeof(env, v, &type) != napi_ok) {
        throw_napi_failure(env, "napi_typeof");
        return false;
    }
    if (type != napi_string) {
        char msg[128];
        snprintf(msg, sizeof msg, "%s must be a string", what);
        throw_type_error(env, msg);
        return false;
    }
    size_t units = 0;
    if (napi_get_value_string_utf16(env, v, NULL, 0, &units) != napi_ok) {
        throw_napi_failure(env, "napi_get_value_string_utf16");
        return false;
    }
    char16_t small16[SMALL_UNITS + 1];
    char16_t *u = units < SMALL_UNITS ? small16 : malloc((units + 1) * sizeof *u);
    char *bytes = units <= SMALL_UNITS ? out->small : malloc(units ? 3 * units : 1);
    if (!u || !bytes) {
        if (u != small16)
            free(u);
        if (bytes != out->small)
            free(bytes);
        throw_nomem(env);
        return false;
    }
    size_t copied = 0;
    if (napi_get_value_string_utf16(env, v, u, units + 1, &copied) != napi_ok) {
        if (u != small16)
            free(u);
        if (bytes != out->small)
            free(bytes);
        throw_napi_failure(env, "napi_get_value_string_utf16");
        return false;
    }
    out->data = bytes;
    out->len = encode_wtf8(u, copied, bytes);
    if (u != small16)
        free(u);
    return true;
}

/* Whether s[i..i+k) are all continuation bytes (0x80-0xBF). */
static bool continuations(const unsigned char *s, size_t n, size_t i, size_t k) {
    if (i + k > n)
        return false;
    for (size_t j = 0; j < k; j++)
        if ((s[i + j] & 0xC0) != 0x80)
            return false;
    return true;
}

/* WTF-8 back to a JS string (the inverse of encode_wtf8; a byte that starts
 * no valid sequence becomes U+FFFD). The C core only returns rearranged
 * input bytes, so the fallback is never hit in practice. */
static napi_value make_string(napi_env env, const char *data, size_t n) {
    const unsigned char *s = (const unsigned char *)data;
    char16_t small16[SMALL_UNITS] = {0}; /* zeroed: GCC cannot see k bounds the read */
    char16_t *u = n <= SMALL_UNITS ? small16 : malloc(n * sizeof *u);
    if (!u)
        return throw_nomem(env);
    size_t k = 0;
    for (size_t i = 0; i < n;) {
        unsigned char b = s[i];
        if (b < 0x80) {
            u[k++] = b;
            i++;
        } else if (b >= 0xC2 && b <= 0xDF && continuations(s, n, i + 1, 1)) {
            u[k++] = (char16_t)(((b & 0x1F) << 6) | (s[i + 1] & 0x3F));
            i += 2;
        } else if (b >= 0xE0 && b <= 0xEF && continuations(s, n, i + 1, 2) &&
                   (b != 0xE0 || s[i + 1] >= 0xA0)) {
            u[k++] = (char16_t)(((b & 0x0F) << 12) | ((s[i + 1] & 0x3F) << 6) | (s[i + 2] & 0x3F));
            i += 3;
        } else if (b >= 0xF0 && b <= 0xF4 && continuations(s, n, i + 1, 3) &&
                   (b != 0xF0 || s[i + 1] >= 0x90) && (b != 0xF4 || s[i + 1] < 0x90)) {
            uint32_t cp = ((uint32_t)(b & 0x07) << 18) | ((uint32_t)(s[i + 1] & 0x3F) << 12) |
                          ((uint32_t)(s[i + 2] & 0x3F) << 6) | (s[i + 3] & 0x3F);
            cp -= 0x10000;
            u[k++] = (char16_t)(0xD800 + (cp >> 10));
            u[k++] = (char16_t)(0xDC00 + (cp & 0x3FF));
            i += 4;
        } else {
            u[k++] = 0xFFFD;
            i++;
        }
    }
    napi_value result = NULL;
    napi_status st = napi_create_string_utf16(env, u, k, &result);
    if (u != small16)
        free(u);
    if (st != napi_ok) {
        throw_napi_failure(env, "napi_create_string_utf16");
        return NULL;
    }
    return result;
}

static bool get_int32(napi_env env, napi_value v, const char *what, int32_t *out) {
    napi_valuetype type;
    if (napi_typeof(env, v, &type) != napi_ok || type != napi_number) {
        char msg[128];
        snprintf(msg, sizeof msg, "%s must be a number", what);
        throw_type_error(env, msg);
        return false;
    }
    return napi_get_value_int32(env, v, out) == napi_ok;
}

/* ---- wrapped handles ---------------------------------------------------- */

/* Type tags make a method called on the wrong kind of object a TypeError
 * instead of a wrong-pointer cast. */
static const napi_type_tag GLOB_TAG = {0x6133735f676c6f62ull, 0x1f2e3d4c5b6a7988ull};
static const napi_type_tag RULESET_TAG = {0x6133735f72756c65ull, 0x8897a6b5c4d3e2f1ull};

void *unwrap(napi_env env, napi_value obj, const napi_type_tag *tag, const char *cls) {
    bool ok = false;
    void *p = NULL;
    if (napi_check_object_type_tag(env, obj, tag, &ok) != napi_ok || !ok ||
        napi_unwrap(env, obj, &p) != napi_ok || !p) {
        bool pending = false;
        napi_is_exception_pending(env, &pending);
        if (!pending) {
            char msg[128];
            snprintf(msg, sizeof msg, "method called on an object that is not a %s", cls);
            throw_type_error(env, msg);
        }
        return NULL;
    }
    return p;
}

void *get_handle_args(napi_env env, napi_callback_info info, size_t n, napi_value *argv,
                      const napi_type_tag *tag, const char *cls, napi_value *this_arg) {
    napi_value self;
    if (!get_args(env, info, n, argv, &self))
        return NULL;
    if (this_arg)
        *this_arg = self;
    return unwrap(env, self, tag, cls);
}

/* Tags and wraps `this`; on failure frees the handle with `release`. */
bool attach(napi_env env, napi_value this_arg, void *handle, const napi_type_tag *tag,
                   napi_finalize release) {
    if (napi_type_tag_object(env, this_arg, tag) != napi_ok ||
        napi_wrap(env, this_arg, handle, release, NULL, NULL) != napi_ok) {
        release(env, handle, NULL);
        throw_napi_failure(env, "wrapping a native handle");
        return false;
    }
    return true;
}

bool require_new(napi_env env, napi_callback_info info, const char *cls) {
    napi_value target = NULL;
    if (napi_get_new_target(env, info, &target) != napi_ok || !target) {
        char msg[128];
        snprintf(msg, sizeof msg, "Class constructor %s cannot be invoked without 'new'", cls);
        throw_type_error(env, msg);
        return false;
    }
    return true;
}

/* ---- NativeGlob --------------------------------------------------------- */

static void glob_release(napi_env env, void *data, void *hint) {
    (void)env;
    (void)hint;
    a3s_glob_free(data);
}

/* new NativeGlob(pattern, toolName) */
static napi_value glob_construct(napi_env env, napi_callback_info info) {
    napi_value argv[2], this_arg;
    if (!require_new(env, info, "NativeGlob") || !get_args(env, info, 2, argv, &this_arg))
        return NULL;
    bool tool_name = false;
    napi_valuetype type;
    CHECK(env, napi_typeof(env, argv[1], &type));
    if (type != napi_undefined && (type != napi_boolean ||
                                   napi_get_value_bool(env, argv[1], &tool_name) != napi_ok))
        return throw_type_error(env, "toolName must be a boolean");
    bytes_buf pattern;
    if (!get_bytes(env, argv[0], "pattern", &pattern))
        return NULL;
    a3s_glob *glob = NULL;
    a3s_error err;
    int rc = a3s_glob_compile(pattern.data, pattern.len, tool_name ? A3S_GLOB_TOOL_NAME : 0, &glob,
                              &err);
    bytes_release(&pattern);
    if (rc != A3S_OK)
        return throw_core(env, &err);
    if (!attach(env, this_arg, glob, &GLOB_TAG, glob_release))
        return NULL;
    return this_arg;
}

static napi_value glob_match(napi_env env, napi_callback_info info) {
    napi_value argv[1];
    a3s_glob *glob = get_handle_args(env, info, 1, argv, &GLOB_TAG, "NativeGlob", NULL);
    bytes_buf subject;
    if (!glob || !get_bytes(env, argv[0], "subject", &subject))
        return NULL;
    int m = a3s_glob_match(glob, subject.data, subject.len);
    bytes_release(&subject);
    if (m < 0)
        return throw_nomem(env);
    napi_value result;
    CHECK(env, napi_get_boolean(env, m == 1, &result));
    return result;
}

/* ---- NativeRuleset ------------------------------------------------------ */

static void ruleset_release(napi_env env, void *data, void *hint) {
    (void)env;
    (void)hint;
    a3s_ruleset_free(data);
}

/* The NativeRuleset that `this` is, and up to `n` arguments. */
static a3s_ruleset *ruleset_args(napi_env env, napi_callback_info info, size_t n,
                                 napi_value *argv) {
    return get_handle_args(env, info, n, argv, &RULESET_TAG, "NativeRuleset", NULL);
}

static napi_value ruleset_construct(napi_env env, napi_callback_info info) {
    napi_value this_arg;
    if (!require_new(env, info, "NativeRuleset") || !get_args(env, info, 0, NULL, &this_arg))
        return NULL;
    a3s_ruleset *rs = NULL;
    a3s_error err;
    if (a3s_ruleset_new(&rs, &err) != A3S_OK)
        return throw_core(env, &err);
    if (!attach(env, this_arg, rs, &RULESET_TAG, ruleset_release))
        return NULL;
    return this_arg;
}

/* add(list, rule, id): parse, compile and append one rule. */
static napi_value ruleset_add(napi_env env, napi_callback_info info) {
    napi_value argv[3];
    a3s_ruleset *rs = ruleset_args(env, info, 3, argv);
    int32_t list, id;
    if (!rs || !get_int32(env, argv[0], "list", &list) || !get_int32(env, argv[2], "id", &id))
        return NULL;
    bytes_buf rule;
    if (!get_bytes(env, argv[1], "rule", &rule))
        return NULL;
    a3s_error err;
    int rc = a3s_ruleset_add(rs, list, rule.data, rule.len, (uint32_t)id, &err);
    bytes_release(&rule);
    if (rc != A3S_OK)
        return throw_core(env, &err);
    return NULL; /* undefined */
}

/* The ruleset of a (tool, subject) call, both read from the arguments and
 * released by the caller; NULL (nothing to release) on failure. */
static a3s_ruleset *get_call(napi_env env, napi_callback_info info, bytes_buf *tool,
                             bytes_buf *subject) {
    napi_value argv[2];
    a3s_ruleset *rs = ruleset_args(env, info, 2, argv);
    if (!rs || !get_bytes(env, argv[0], "tool", tool))
        return NULL;
    if (!get_bytes(env, argv[1], "subject", subject)) {
        bytes_release(tool);
        return NULL;
    }
    return rs;
}

/* check(tool, subject) -> the deciding list (0 none, 1 deny, 2 allow, 3 ask). */
static napi_value ruleset_check(napi_env env, napi_callback_info info) {
    bytes_buf tool, subject;
    a3s_ruleset *rs = get_call(env, info, &tool, &subject);
    if (!rs)
        return NULL;
    a3s_match match = {.struct_size = sizeof match};
    a3s_error err;
    int rc = a3s_ruleset_check(rs, tool.data, tool.len, subject.data, subject.len, &match, &err);
    bytes_release(&tool);
    bytes_release(&subject);
    if (rc != A3S_OK)
        return throw_core(env, &err);
    napi_value result;
    CHECK(env, napi_create_int32(env, match.list, &result));
    return result;
}

/* matches(tool, subject) -> indices of every matching rule, ascending. */
static napi_value ruleset_matches(napi_env env, napi_callback_info info) {
    bytes_buf tool, subject;
    a3s_ruleset *rs = get_call(env, info, &tool, &subject);
    if (!rs)
        return NULL;
    size_t cap = a3s_ruleset_count(rs), count = 0;
    size_t *indices = malloc((cap ? cap : 1) * sizeof *indices);
    a3s_error err = {0};
    int rc = indices ? a3s_ruleset_matches(rs, tool.data, tool.len, subject.data, subject.len,
                                           indices, cap, &count, &err)
                     : A3S_E_NOMEM;
    bytes_release(&tool);
    bytes_release(&subject);
    napi_value result = NULL;
    if (rc == A3S_E_NOMEM && !indices) {
        throw_nomem(env);
    } else if (rc != A3S_OK) {
        throw_core(env, &err);
    } else if (napi_create_array_with_length(env, count, &result) != napi_ok) {
        throw_napi_failure(env, "napi_create_array_with_length");
        result = NULL;
    } else {
        for (size_t i = 0; i < count; i++) {
            napi_value v;
            if (napi_create_double(env, (double)indices[i], &v) != napi_ok ||
                napi_set_element(env, result, (uint32_t)i, v) != napi_ok) {
                throw_napi_failure(env, "building the match list");
                result = NULL;
                break;
            }
        }
    }
    free(indices);
    return result;
}

/* The ruleset of a call with one number argument (`what`), read into *out. */
static a3s_ruleset *get_int32_call(napi_env env, napi_callback_info info, const char *what,
                                   int32_t *out) {
    napi_value argv[1];
    a3s_ruleset *rs = ruleset_args(env, info, 1, argv);
    return rs && get_int32(env, argv[0], what, out) ? rs : NULL;
}

/* rule(index) -> {list, id, flags, tool, pattern}: the canonical rule. */
static napi_value ruleset_rule(napi_env env, napi_callback_info info) {
    int32_t index;
    a3s_ruleset *rs = get_int32_call(env, info, "index", &index);
    if (!rs)
        return NULL;
    if (index < 0) {
        napi_throw_range_error(env, NULL, "rule index out of range");
        return NULL;
    }
    a3s_rule_view view = {.struct_size = sizeof view};
    a3s_error err;
    if (a3s_ruleset_rule(rs, (size_t)index, &view, &err) != A3S_OK) {
        if (err.code == A3S_E_RANGE) {
            napi_throw_range_error(env, NULL, err.message);
            return NULL;
        }
        return throw_core(env, &err);
    }
    napi_value obj, tool, pattern;
    CHECK(env, napi_create_object(env, &obj));
    if (!(tool = make_string(env, view.tool, view.tool_len)) ||
        !(pattern = make_string(env, view.pattern, view.pattern_len)))
        return NULL;
    if (!set_number(env, obj, "list", view.list) || !set_number(env, obj, "id", view.id) ||
        !set_number(env, obj, "flags", (double)view.flags) || !set_named(env, obj, "tool", tool) ||
        !set_named(env, obj, "pattern", pattern)) {
        throw_napi_failure(env, "building a rule view");
        return NULL;
    }
    return obj;
}

/* setDefault(list): the decision when no rule matches; a bash line is decided with it. */
static napi_value ruleset_set_default(napi_env env, napi_callback_info info) {
    int32_t list;
    a3s_ruleset *rs = get_int32_call(env, info, "list", &list);
    if (!rs)
        return NULL;
    a3s_error err;
    if (a3s_ruleset_set_default(rs, list, &err) != A3S_OK)
        return throw_core(env, &err);
    napi_value result;
    CHECK(env, napi_get_undefined(env, &result));
    return result;
}

static napi_value ruleset_count(napi_env env, napi_callback_info info) {
    napi_value result;
    a3s_ruleset *rs = ruleset_args(env, info, 0, NULL);
    if (!rs)
        return NULL;
    CHECK(env, napi_create_double(env, (double)a3s_ruleset_count(rs), &result));
    return result;
}

/* ---- module functions --------------------------------------------------- */

static napi_value version(napi_env env, napi_callback_info info) {
    (void)info;
    const a3s_version_info *v = a3s_version();
    napi_value obj, str;
    CHECK(env, napi_create_object(env, &obj));
    CHECK(env, napi_create_string_utf8(env, v->string, NAPI_AUTO_LENGTH, &str));
    if (!set_number(env, obj, "major", v->major) || !set_number(env, obj, "minor", v->minor) ||
        !set_number(env, obj, "patch", v->patch) || !set_number(env, obj, "abi", v->abi) ||
        !set_named(env, obj, "string", str)) {
        throw_napi_failure(env, "building the version object");
        return NULL;
    }
    return obj;
}

static napi_value abi_version(napi_env env, napi_callback_info info) {
    (void)info;
    napi_value result;
    CHECK(env, napi_create_uint32(env, a3s_abi_version(), &result));
    return result;
}

static napi_value status_name(napi_env env, napi_callback_info info) {
    napi_value argv[1], result;
    int32_t code;
    if (!get_args(env, info, 1, argv, NULL) || !get_int32(env, argv[0], "code", &code))
        return NULL;
    CHECK(env, napi_create_string_utf8(env, a3s_status_name(code), NAPI_AUTO_LENGTH, &result));
    return result;
}

/* pathNormalize(path) -> the lexical normal form (a3s_path_normalize). */
static napi_value path_normalize(napi_env env, napi_callback_info info) {
    napi_value argv[1];
    bytes_buf path;
    if (!get_args(env, info, 1, argv, NULL) || !get_bytes(env, argv[0], "path", &path))
        return NULL;
    /* The result is never longer than the input. */
    char small[3 * SMALL_UNITS];
    char *out = path.len <= sizeof small ? small : malloc(path.len);
    if (!out) {
        bytes_release(&path);
        return throw_nomem(env);
    }
    size_t n = 0;
    a3s_error err;
    int rc = a3s_path_normalize(path.data, path.len, out, path.len ? path.len : sizeof small, &n,
                                &err);
    bytes_release(&path);
    napi_value result = rc == A3S_OK ? make_string(env, out, n) : throw_core(env, &err);
    if (out != small)
        free(out);
    return result;
}

/* ---- registration ------------------------------------------------------- */

bool define_class(napi_env env, napi_value exports, const char *name, napi_callback ctor,
                         const napi_property_descriptor *methods, size_t n) {
    napi_value cls;
    return napi_define_class(env, name, NAPI_AUTO_LENGTH, ctor, NULL, n, methods, &cls) ==
               napi_ok &&
           set_named(env, exports, name, cls);
}

NAPI_MODULE_INIT() {
    if (a3s_abi_version() != A3S_ABI_VERSION) {
        napi_throw_error(env, "ERR_CODEWARD_CORE", "codeward addon: C library ABI mismatch");
        return NULL;
    }
    static const napi_property_descriptor glob_methods[] = {METHOD("match", glob_match)};
    static const napi_property_descriptor ruleset_methods[] = {
        METHOD("add", ruleset_add),         METHOD("check", ruleset_check),
        METHOD("matches", ruleset_matches), METHOD("rule", ruleset_rule),
        METHOD("count", ruleset_count),     METHOD("setDefault", ruleset_set_default),
    };
    static const napi_property_descriptor functions[] = {
        METHOD("version", version),
        METHOD("abiVersion", abi_version),
        METHOD("statusName", status_name),
        METHOD("pathNormalize", path_normalize),
    };
    static const struct {
        const char *name;
        double value;
    } constants[] = {
        {"ABI_VERSION", A3S_ABI_VERSION},
        {"LIST_NONE", A3S_LIST_NONE},
        {"LIST_DENY", A3S_LIST_DENY},
        {"LIST_ALLOW", A3S_LIST_ALLOW},
        {"LIST_ASK", A3S_LIST_ASK},
        {"RULE_ANY_ARGS", (double)A3S_RULE_ANY_ARGS},
        {"RULE_TOOL_GLOB", (double)A3S_RULE_TOOL_GLOB},
        {"RULE_MCP_SERVER", (double)A3S_RULE_MCP_SERVER},
        {"RULE_REWRITTEN", (double)A3S_RULE_REWRITTEN},
        {"RULE_PREFIX", (double)A3S_RULE_PREFIX},
        {"GLOB_TOOL_NAME", (double)A3S_GLOB_TOOL_NAME},
    };
    if (!define_class(env, exports, "NativeGlob", glob_construct, glob_methods,
                      sizeof glob_methods / sizeof glob_methods[0]) ||
        !define_class(env, exports, "NativeRuleset", ruleset_construct, ruleset_methods,
                      sizeof ruleset_methods / sizeof ruleset_methods[0]) ||
        !register_sandbox(env, exports) ||
        napi_define_properties(env, exports, sizeof functions / sizeof functions[0], functions) !=
            napi_ok) {
        throw_napi_failure(env, "registering the addon");
        return NULL;
    }
    for (size_t i = 0; i < sizeof constants / sizeof constants[0]; i++) {
        if (!set_number(env, exports, constants[i].name, constants[i].value)) {
            throw_napi_failure(env, "registering the addon's constants");
            return NULL;
        }
    }
    return exports;
}
