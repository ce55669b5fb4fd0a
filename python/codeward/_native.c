/* _native.c - CPython glue over the a3s C ABI (limited API, abi3, 3.10+).
 *
 * Nothing but argument conversion and error mapping lives here: every
 * decision is made in native/src or in the Python package. The exceptions are
 * canonical_json, a faster twin of the Python reference encoder in
 * policy/_subject.py, and Ruleset.decide, a twin of PermissionPolicy.check's argument
 * strings for the common call shapes (the Python code stays the specification and the
 * fallback of both; tests/test_policy_decide.py holds them to it). Errors from the C
 * core are raised as _native.NativeError(status_name, message, detail,
 * sys_errno); the package maps them to its own exception tree.
 */
#define Py_LIMITED_API 0x030A0000
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <signal.h>
#include <string.h>
#ifdef _WIN32
#include <io.h>
#define close_fd _close
#else
#include <unistd.h>
#define close_fd close
#endif

#include "a3s/a3s.h"
/* The bash reader's split, for the guardrail (Python only; not part of the C ABI). */
#include "../../native/src/bash_split.h"

/* The argument keys Ruleset.decide reads (interned once per module). */
enum { KEY_COMMAND, KEY_FILE_PATH, KEY_FILES, KEY_PATH, KEY_MODE, KEY_QUERY, KEY_TARGET, NKEYS };
static const char *const KEY_NAMES[NKEYS] = {"command", "file_path", "files", "path",
                                             "mode",    "query",     "target"};

typedef struct {
    PyObject *keys[NKEYS];
    PyObject *native_error; /* NativeError type */
    PyObject *glob_type;
    PyObject *ruleset_type;
    PyObject *sandbox_type;
    PyObject *child_type;
} module_state;

static module_state *state_of_module(PyObject *m) { return (module_state *)PyModule_GetState(m); }

static PyObject *raise_error(PyObject *err_type, const a3s_error *err) {
    PyObject *args = Py_BuildValue("(ssLi)", a3s_status_name(err->code), err->message,
                                   (long long)err->detail, (int)err->sys_errno);
    if (args) {
        PyErr_SetObject(err_type, args);
        Py_DECREF(args);
    }
    return NULL;
}

/* Borrowed UTF-8 view of a str (lone surrogates kept via surrogatepass) or
 * bytes. *owner receives a new reference to keep alive, or NULL. */
static int as_bytes(PyObject *obj, const char **data, Py_ssize_t *len, PyObject **owner) {
    *owner = NULL;
    if (PyUnicode_Check(obj)) {
        *data = PyUnicode_AsUTF8AndSize(obj, len);
        if (*data)
            return 0;
        if (!PyErr_ExceptionMatches(PyExc_UnicodeEncodeError))
            return -1;
        PyErr_Clear();
        *owner = PyUnicode_AsEncodedString(obj, "utf-8", "surrogatepass");
        if (!*owner)
            return -1;
    } else if (PyBytes_Check(obj)) {
        Py_INCREF(obj);
        *owner = obj;
    } else {
        PyErr_SetString(PyExc_TypeError, "expected str or bytes");
        return -1;
    }
    char *buf;
    if (PyBytes_AsStringAndSize(*owner, &buf, len) < 0) {
        Py_CLEAR(*owner);
        return -1;
    }
    *data = buf;
    return 0;
}

/* ---- Glob --------------------------------------------------------------- */

typedef struct {
    PyObject_HEAD
    a3s_glob *glob;
} GlobObject;

static PyObject *glob_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
    static char *kwlist[] = {"pattern", "tool_name", NULL};
    PyObject *pattern;
    int tool_name = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O|p", kwlist, &pattern, &tool_name))
        return NULL;
    const char *data;
    Py_ssize_t len;
    PyObject *owner;
    if (as_bytes(pattern, &data, &len, &owner) < 0)
        return NULL;
    a3s_glob *glob = NULL;
    a3s_error err;
    int rc = a3s_glob_compile(data, (size_t)len, tool_name ? A3S_GLOB_TOOL_NAME : 0, &glob, &err);
    Py_XDECREF(owner);
    if (rc != A3S_OK) {
        PyObject *mod = PyType_GetModule(type);
        return raise_error(mod ? state_of_module(mod)->native_error : PyExc_RuntimeError, &err);
    }
    allocfunc alloc = (allocfunc)PyType_GetSlot(type, Py_tp_alloc);
    GlobObject *self = (GlobObject *)alloc(type, 0);
    if (!self) {
        a3s_glob_free(glob);
        return NULL;
    }
    self->glob = glob;
    return (PyObject *)self;
}

static void glob_dealloc(PyObject *obj) {
    PyTypeObject *type = Py_TYPE(obj);
    a3s_glob_free(((GlobObject *)obj)->glob);
    freefunc tp_free = (freefunc)PyType_GetSlot(type, Py_tp_free);
    tp_free(obj);
    Py_DECREF(type);
}

static PyObject *glob_match(PyObject *obj, PyObject *subject) {
    const char *data;
    Py_ssize_t len;
    PyObject *owner;
    if (as_bytes(subject, &data, &len, &owner) < 0)
        return NULL;
    int m = a3s_glob_match(((GlobObject *)obj)->glob, data, (size_t)len);
    Py_XDECREF(owner);
    if (m < 0)
        return PyErr_NoMemory();
    return PyBool_FromLong(m);
}

static PyMethodDef glob_methods[] = {
    {"match", glob_match, METH_O, "match(subject) -> bool: whole-subject match."},
    {NULL, NULL, 0, NULL},
};

static PyType_Slot glob_slots[] = {
    {Py_tp_new, glob_new},
    {Py_tp_dealloc, glob_dealloc},
    {Py_tp_methods, glob_methods},
    {Py_tp_doc, "Glob(pattern, tool_name=False): a compiled policy glob."},
    {0, NULL},
};

static PyType_Spec glob_spec = {
    "codeward._native.Glob", sizeof(GlobObject), 0, Py_TPFLAGS_DEFAULT, glob_slots,
};

/* ---- Ruleset ------------------------------------------------------------ */

/* decide() remembers the deciding list of the last bash lines (agents repeat `git status`,
 * `npm test` ...): one entry per slot of a direct-mapped table, so at most MEMO_SLOTS lines
 * of at most MEMO_LINE_MAX bytes. add() and set_default() empty it. */
#define MEMO_SLOTS 2048
#define MEMO_LINE_MAX 1024

typedef struct {
    PyObject *line; /* an exact str, or NULL */
    Py_hash_t hash;
    int list;
} memo_entry;

typedef struct {
    PyObject_HEAD
    a3s_ruleset *rs;
    /* The deny and ask rules again, alone: a search is decided deny, then ask, then allow
     * (search_list), which a3s_ruleset_check's deny, allow, ask answers in one call each only
     * on a rule set without allow rules. NULL when an add() left it behind rs: search then
     * enumerates matches. */
    a3s_ruleset *deny_ask;
    int default_list;       /* set_default's list (A3S_LIST_NONE: unset) */
    PyObject *native_error; /* borrowed from the module state, kept alive by the type */
    PyObject *const *keys;  /* likewise */
    PyObject *outcomes;     /* set_outcomes: what decide() returns per list, or NULL */
    PyObject *fallback;     /* set_fallback: what call() asks for the calls decide() declines */
    memo_entry *memo;       /* NULL until the first line is remembered */
} RulesetObject;

static void memo_clear(RulesetObject *self) {
    if (!self->memo)
        return;
    memo_entry *memo = self->memo;
    self->memo = NULL; /* a str's deallocation cannot reach a half-cleared table */
    for (size_t i = 0; i < MEMO_SLOTS; i++)
        Py_XDECREF(memo[i].line);
    PyMem_Free(memo);
}

static PyObject *ruleset_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
    if (!PyArg_ParseTuple(args, ":Ruleset") || (kwds && PyObject_Length(kwds) > 0)) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_TypeError, "Ruleset() takes no arguments");
        return NULL;
    }
    PyObject *mod = PyType_GetModule(type);
    if (!mod)
        return NULL;
    a3s_ruleset *rs = NULL, *deny_ask = NULL;
    a3s_error err;
    if (a3s_ruleset_new(&rs, &err) != A3S_OK)
        return raise_error(state_of_module(mod)->native_error, &err);
    if (a3s_ruleset_new(&deny_ask, &err) != A3S_OK) {
        a3s_ruleset_free(rs);
        return raise_error(state_of_module(mod)->native_error, &err);
    }
    allocfunc alloc = (allocfunc)PyType_GetSlot(type, Py_tp_alloc);
    RulesetObject *self = (RulesetObject *)alloc(type, 0);
    if (!self) {
        a3s_ruleset_free(rs);
        a3s_ruleset_free(deny_ask);
        return NULL;
    }
    self->rs = rs;
    self->deny_ask = deny_ask;
    self->default_list = A3S_LIST_NONE;
    self->native_error = state_of_module(mod)->native_error;
    self->keys = state_of_module(mod)->keys;
    self->outcomes = NULL;
    self->fallback = NULL;
    self->memo = NULL;
    return (PyObject *)self;
}

/* The fallback is a bound method of the policy that owns this rule set: a cycle the
 * collector breaks. The memo holds exact str only, which refer to nothing. */
static int ruleset_traverse(PyObject *obj, visitproc visit, void *arg) {
    Py_VISIT(Py_TYPE(obj));
    Py_VISIT(((RulesetObject *)obj)->outcomes);
    Py_VISIT(((RulesetObject *)obj)->fallback);
    return 0;
}

static int ruleset_clear(PyObject *obj) {
    Py_CLEAR(((RulesetObject *)obj)->outcomes);
    Py_CLEAR(((RulesetObject *)obj)->fallback);
    return 0;
}

static void ruleset_dealloc(PyObject *obj) {
    PyTypeObject *type = Py_TYPE(obj);
    PyObject_GC_UnTrack(obj);
    memo_clear((RulesetObject *)obj);
    ruleset_clear(obj);
    a3s_ruleset_free(((RulesetObject *)obj)->rs);
    a3s_ruleset_free(((RulesetObject *)obj)->deny_ask);
    freefunc tp_free = (freefunc)PyType_GetSlot(type, Py_tp_free);
    tp_free(obj);
    Py_DECREF(type);
}

static PyObject *ruleset_add(PyObject *obj, PyObject *args) {
    RulesetObject *self = (RulesetObject *)obj;
    int list;
    PyObject *rule;
    unsigned int id;
    if (!PyArg_ParseTuple(args, "iOI:add", &list, &rule, &id))
        return NULL;
    const char *data;
    Py_ssize_t len;
    PyObject *owner;
    if (as_bytes(rule, &data, &len, &owner) < 0)
        return NULL;
    a3s_error err;
    memo_clear(self);
    int rc = a3s_ruleset_add(self->rs, list, data, (size_t)len, id, &err);
    if (rc == A3S_OK && list != A3S_LIST_ALLOW && self->deny_ask &&
        a3s_ruleset_add(self->deny_ask, list, data, (size_t)len, id, &err) != A3S_OK) {
        a3s_ruleset_free(self->deny_ask); /* behind rs now: searches enumerate matches */
        self->deny_ask = NULL;
    }
    Py_XDECREF(owner);
    if (rc != A3S_OK)
        return raise_error(self->native_error, &err);
    Py_RETURN_NONE;
}

/* check(tool, subject) -> int: A3S_LIST_NONE/DENY/ALLOW/ASK. The hot path. */
static PyObject *ruleset_check(PyObject *obj, PyObject *const *args, Py_ssize_t nargs) {
    RulesetObject *self = (RulesetObject *)obj;
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "check(tool, subject) takes 2 arguments");
        return NULL;
    }
    const char *tool, *subject;
    Py_ssize_t tl, sl;
    PyObject *o1, *o2;
    if (as_bytes(args[0], &tool, &tl, &o1) < 0)
        return NULL;
    if (as_bytes(args[1], &subject, &sl, &o2) < 0) {
        Py_XDECREF(o1);
        return NULL;
    }
    a3s_match match = {.struct_size = sizeof match};
    a3s_error err;
    int rc = a3s_ruleset_check(self->rs, tool, (size_t)tl, subject, (size_t)sl, &match, &err);
    Py_XDECREF(o1);
    Py_XDECREF(o2);
    if (rc != A3S_OK)
        return raise_error(self->native_error, &err);
    return PyLong_FromLong(match.list);
}

static PyObject *ruleset_matches(PyObject *obj, PyObject *args) {
    RulesetObject *self = (RulesetObject *)obj;
    PyObject *tool_obj, *subject_obj;
    if (!PyArg_ParseTuple(args, "OO:matches", &tool_obj, &subject_obj))
        return NULL;
    const char *tool, *subject;
    Py_ssize_t tl, sl;
    PyObject *o1, *o2;
    if (as_bytes(tool_obj, &tool, &tl, &o1) < 0)
        return NULL;
    if (as_bytes(subject_obj, &subject, &sl, &o2) < 0) {
        Py_XDECREF(o1);
        return NULL;
    }
    size_t cap = a3s_ruleset_count(self->rs), count = 0;
    size_t *indices = PyMem_Malloc((cap ? cap : 1) * sizeof *indices);
    PyObject *result = NULL;
    if (!indices) {
        PyErr_NoMemory();
        goto done;
    }
    a3s_error err;
    if (a3s_ruleset_matches(self->rs, tool, (size_t)tl, subject, (size_t)sl, indices, cap, &count,
                            &err) != A3S_OK) {
        raise_error(self->native_error, &err);
        goto done;
    }
    result = PyList_New((Py_ssize_t)count);
    for (size_t i = 0; result && i < count; i++) {
        PyObject *v = PyLong_FromSize_t(indices[i]);
        if (!v) {
            Py_CLEAR(result);
            break;
        }
        PyList_SetItem(result, (Py_ssize_t)i, v);
    }
done:
    PyMem_Free(indices);
    Py_XDECREF(o1);
    Py_XDECREF(o2);
    return result;
}

/* Every list with a rule matching the search subject s into *seen (a bit per list); allow
 * rules count only if allow_counts. */
static int search_lists(a3s_ruleset *rs, const char *s, size_t n, size_t *idx, size_t cap,
                        unsigned *seen, bool allow_counts, a3s_error *err) {
    size_t count = 0;
    int rc = a3s_ruleset_matches(rs, "search", 6, s, n, idx, cap, &count, err);
    if (rc != A3S_OK)
        return rc;
    for (size_t i = 0; i < count; i++) {
        a3s_rule_view view = {.struct_size = sizeof view};
        if ((rc = a3s_ruleset_rule(rs, idx[i], &view, err)) != A3S_OK)
            return rc;
        if (view.list != A3S_LIST_ALLOW || allow_counts)
            *seen |= 1u << view.list;
    }
    return A3S_OK;
}

/* The deciding list of a search (the order PermissionPolicy.evaluate gives it): deny when a
 * deny rule matches `text` or `strict`, else ask when an ask rule does, else allow when an
 * allow rule matches `strict` (an allow rule never matches the loose form), else none.
 * `strict` NULL: the same string as `text` (no space inside the mode, query or path).
 * 0, or -1 with an error set. */
static int search_list(RulesetObject *self, const char *text, size_t tn, const char *strict,
                       size_t sn, int *list) {
    a3s_error err;
    int rc;
    if (self->deny_ask) {
        /* First deny, else ask, on each form; then allow on the strict one, where neither a
         * deny nor an ask rule matches, so rs can only answer allow or none. */
        a3s_match m = {.struct_size = sizeof m}, ms = {.struct_size = sizeof ms};
        rc = a3s_ruleset_check(self->deny_ask, "search", 6, text, tn, &m, &err);
        if (rc == A3S_OK && strict && m.list != A3S_LIST_DENY)
            rc = a3s_ruleset_check(self->deny_ask, "search", 6, strict, sn, &ms, &err);
        if (rc == A3S_OK) {
            if (m.list == A3S_LIST_DENY || ms.list == A3S_LIST_DENY)
                *list = A3S_LIST_DENY;
            else if (m.list == A3S_LIST_ASK || ms.list == A3S_LIST_ASK)
                *list = A3S_LIST_ASK;
            else if ((rc = a3s_ruleset_check(self->rs, "search", 6, strict ? strict : text,
                                             strict ? sn : tn, &m, &err)) == A3S_OK)
                *list = m.list == A3S_LIST_ALLOW ? A3S_LIST_ALLOW : A3S_LIST_NONE;
        }
    } else {
        size_t cap = a3s_ruleset_count(self->rs);
        size_t stack[64], *idx = cap <= 64 ? stack : PyMem_Malloc(cap * sizeof *idx);
        if (!idx) {
            PyErr_NoMemory();
            return -1;
        }
        unsigned seen = 0;
        rc = search_lists(self->rs, text, tn, idx, cap, &seen, strict == NULL, &err);
        if (rc == A3S_OK && strict)
            rc = search_lists(self->rs, strict, sn, idx, cap, &seen, true, &err);
        if (idx != stack)
            PyMem_Free(idx);
        *list = (seen & (1u << A3S_LIST_DENY))    ? A3S_LIST_DENY
                : (seen & (1u << A3S_LIST_ASK))   ? A3S_LIST_ASK
                : (seen & (1u << A3S_LIST_ALLOW)) ? A3S_LIST_ALLOW
                                                  : A3S_LIST_NONE;
    }
    if (rc != A3S_OK) {
        raise_error(self->native_error, &err);
        return -1;
    }
    return 0;
}

static PyObject *ruleset_check_search(PyObject *obj, PyObject *const *args, Py_ssize_t nargs) {
    RulesetObject *self = (RulesetObject *)obj;
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "check_search(text, strict) takes 2 arguments");
        return NULL;
    }
    const char *text, *strict = NULL;
    Py_ssize_t tl, sl = 0;
    PyObject *o1, *o2 = NULL;
    if (as_bytes(args[0], &text, &tl, &o1) < 0)
        return NULL;
    if (args[1] != Py_None && as_bytes(args[1], &strict, &sl, &o2) < 0) {
        Py_XDECREF(o1);
        return NULL;
    }
    int list = A3S_LIST_NONE;
    int rc = search_list(self, text, (size_t)tl, strict, (size_t)sl, &list);
    Py_XDECREF(o1);
    Py_XDECREF(o2);
    return rc < 0 ? NULL : PyLong_FromLong(list);
}

/* set_default(list): the decision that applies when no rule matches (bash lines need it). */
static PyObject *ruleset_set_default(PyObject *obj, PyObject *arg) {
    RulesetObject *self = (RulesetObject *)obj;
    long list = PyLong_AsLong(arg);
    if (list == -1 && PyErr_Occurred())
        return NULL;
    a3s_error err;
    memo_clear(self);
    if (a3s_ruleset_set_default(self->rs, (int)list, &err) != A3S_OK)
        return raise_error(self->native_error, &err);
    self->default_list = (int)list;
    Py_RETURN_NONE;
}

/* *slot = value (a new reference), the old one released last: its deallocation may run code. */
static void replace_ref(PyObject **slot, PyObject *value) {
    PyObject *old = *slot;
    Py_INCREF(value);
    *slot = value;
    Py_XDECREF(old);
}

/* set_outcomes((none, deny, allow, ask)): what decide() returns for each deciding list. */
static PyObject *ruleset_set_outcomes(PyObject *obj, PyObject *arg) {
    RulesetObject *self = (RulesetObject *)obj;
    if (!PyTuple_CheckExact(arg) || PyTuple_Size(arg) != 4) {
        PyErr_SetString(PyExc_TypeError, "set_outcomes() takes a tuple of 4");
        return NULL;
    }
    replace_ref(&self->outcomes, arg);
    Py_RETURN_NONE;
}

static PyObject *ruleset_clear_memo(PyObject *obj, PyObject *unused) {
    (void)unused;
    memo_clear((RulesetObject *)obj);
    Py_RETURN_NONE;
}

static PyObject *ruleset_decide(PyObject *obj, PyObject *const *args, Py_ssize_t nargs);

/* set_fallback(fn): call() returns fn(tool, args) for the calls decide() leaves to Python. */
static PyObject *ruleset_set_fallback(PyObject *obj, PyObject *fn) {
    RulesetObject *self = (RulesetObject *)obj;
    if (!PyCallable_Check(fn)) {
        PyErr_SetString(PyExc_TypeError, "set_fallback() takes a callable");
        return NULL;
    }
    replace_ref(&self->fallback, fn);
    Py_RETURN_NONE;
}

/* call(tool, args=None): decide(tool, args), or the fallback's answer when decide() declines
 * the call: PermissionPolicy.check in one C call, without a Python frame for the common
 * shapes. Keywords as check() names them. */
static PyObject *ruleset_call(PyObject *obj, PyObject *const *args, Py_ssize_t nargs,
                              PyObject *kwnames) {
    RulesetObject *self = (RulesetObject *)obj;
    PyObject *given[2] = {NULL, Py_None};
    Py_ssize_t nkw = kwnames ? PyTuple_Size(kwnames) : 0;
    if (nargs > 2 || nargs + nkw > 2) {
        PyErr_SetString(PyExc_TypeError, "check(tool, args=None) takes at most 2 arguments");
        return NULL;
    }
    for (Py_ssize_t i = 0; i < nargs; i++)
        given[i] = args[i];
    for (Py_ssize_t i = 0; i < nkw; i++) {
        PyObject *name = PyTuple_GetItem(kwnames, i);
        int slot = PyUnicode_CompareWithASCIIString(name, "tool") == 0   ? 0
                   : PyUnicode_CompareWithASCIIString(name, "args") == 0 ? 1
                                                                           : -1;
        if (slot < 0 || slot < nargs) {
            PyErr_Format(PyExc_TypeError, "check() got an unexpected or repeated argument %R",
                         name);
            return NULL;
        }
        given[slot] = args[nargs + i];
    }
    if (!given[0]) {
        PyErr_SetString(PyExc_TypeError, "check() missing required argument 'tool'");
        return NULL;
    }
    if (!self->fallback) {
        PyErr_SetString(PyExc_RuntimeError, "call() before set_fallback()");
        return NULL;
    }
    PyObject *decision = ruleset_decide(obj, given, 2);
    if (decision != Py_None)
        return decision; /* the outcome, or NULL with the error */
    Py_DECREF(decision);
    /* The fallback may drop the last other reference to this rule set (a policy replaced
     * while its check() runs): hold it, and the fallback, for the call. */
    PyObject *fallback = self->fallback;
    Py_INCREF(obj);
    Py_INCREF(fallback);
    PyObject *result = PyObject_CallFunctionObjArgs(fallback, given[0], given[1], NULL);
    Py_DECREF(fallback);
    Py_DECREF(obj);
    return result;
}

/* check_bash(line) -> (list, flags, why, rule, commands, matched): a bash line decided per
 * simple command; commands are (list, why, rule, text_bytes, spelling_bytes), rule -1 for none. */
static PyObject *ruleset_check_bash(PyObject *obj, PyObject *arg) {
    RulesetObject *self = (RulesetObject *)obj;
    const char *line;
    Py_ssize_t len;
    PyObject *owner;
    if (as_bytes(arg, &line, &len, &owner) < 0)
        return NULL;
    a3s_bash_verdict *v = NULL;
    a3s_error err;
    int rc = a3s_ruleset_check_bash(self->rs, line, (size_t)len, &v, &err);
    Py_XDECREF(owner);
    if (rc != A3S_OK)
        return raise_error(self->native_error, &err);
    size_t n = a3s_bash_verdict_count(v), cap = a3s_ruleset_count(self->rs), count = 0;
    PyObject *commands = PyList_New((Py_ssize_t)n), *matched = NULL, *result = NULL;
    size_t *indices = PyMem_Malloc((cap ? cap : 1) * sizeof *indices);
    if (!indices)
        PyErr_NoMemory();
    for (size_t i = 0; commands && indices && i < n; i++) {
        a3s_bash_command c = {.struct_size = sizeof c};
        if (a3s_bash_verdict_command(v, i, &c, &err) != A3S_OK) {
            raise_error(self->native_error, &err);
            Py_CLEAR(commands);
            break;
        }
        PyObject *item = Py_BuildValue("(iiny#y#)", (int)c.list, (int)c.why,
                                       c.rule == SIZE_MAX ? (Py_ssize_t)-1 : (Py_ssize_t)c.rule,
                                       c.text, (Py_ssize_t)c.text_len, c.spelling,
                                       (Py_ssize_t)c.spelling_len);
        if (!item) {
            Py_CLEAR(commands);
            break;
        }
        PyList_SetItem(commands, (Py_ssize_t)i, item);
    }
    if (commands && indices) {
        if (a3s_bash_verdict_matched(v, indices, cap, &count, &err) != A3S_OK)
            raise_error(self->native_error, &err);
        else
            matched = PyTuple_New((Py_ssize_t)count);
        for (size_t i = 0; matched && i < count; i++) {
            PyObject *x = PyLong_FromSize_t(indices[i]);
            if (!x) {
                Py_CLEAR(matched);
                break;
            }
            PyTuple_SetItem(matched, (Py_ssize_t)i, x);
        }
    }
    if (commands && matched)
        result = Py_BuildValue("(iKOO)", a3s_bash_verdict_list(v),
                               (unsigned long long)a3s_bash_verdict_flags(v), commands, matched);
    Py_XDECREF(commands);
    Py_XDECREF(matched);
    PyMem_Free(indices);
    a3s_bash_verdict_free(v);
    return result;
}

static PyObject *ruleset_rule(PyObject *obj, PyObject *arg) {
    RulesetObject *self = (RulesetObject *)obj;
    Py_ssize_t index = PyLong_AsSsize_t(arg);
    if (index == -1 && PyErr_Occurred())
        return NULL;
    if (index < 0) {
        PyErr_SetString(PyExc_IndexError, "rule index out of range");
        return NULL;
    }
    a3s_rule_view view = {.struct_size = sizeof view};
    a3s_error err;
    if (a3s_ruleset_rule(self->rs, (size_t)index, &view, &err) != A3S_OK) {
        if (err.code == A3S_E_RANGE) {
            PyErr_SetString(PyExc_IndexError, err.message);
            return NULL;
        }
        return raise_error(self->native_error, &err);
    }
    return Py_BuildValue("(iIKs#y#)", (int)view.list, (unsigned int)view.id,
                         (unsigned long long)view.flags, view.tool, (Py_ssize_t)view.tool_len,
                         view.pattern, (Py_ssize_t)view.pattern_len);
}

static Py_ssize_t ruleset_len(PyObject *obj) {
    return (Py_ssize_t)a3s_ruleset_count(((RulesetObject *)obj)->rs);
}

static PyMethodDef ruleset_methods[] = {
    {"add", ruleset_add, METH_VARARGS, "add(list, rule, id): parse, compile and append a rule."},
    {"check", (PyCFunction)(void (*)(void))ruleset_check, METH_FASTCALL,
     "check(tool, subject) -> int: the deciding list (0 none, 1 deny, 2 allow, 3 ask)."},
    {"matches", ruleset_matches, METH_VARARGS,
     "matches(tool, subject) -> list[int]: indices of every matching rule."},
    {"set_default", ruleset_set_default, METH_O,
     "set_default(list): the decision when no rule matches (a bash line is decided with it)."},
    {"check_search", (PyCFunction)(void (*)(void))ruleset_check_search, METH_FASTCALL,
     "check_search(text, strict) -> int: a search's deciding list (deny, ask, then allow on the "
     "strict form); strict None when it equals text."},
    {"check_bash", ruleset_check_bash, METH_O,
     "check_bash(line) -> (list, flags, commands, matched): a bash line per simple command."},
    {"rule", ruleset_rule, METH_O,
     "rule(index) -> (list, id, flags, tool, pattern_bytes): the canonical rule."},
    {"set_outcomes", ruleset_set_outcomes, METH_O,
     "set_outcomes((none, deny, allow, ask)): what decide() returns per deciding list."},
    {"decide", (PyCFunction)(void (*)(void))ruleset_decide, METH_FASTCALL,
     "decide(tool, args) -> outcome or None: PermissionPolicy.check for the common call "
     "shapes (None: take the Python path)."},
    {"set_fallback", ruleset_set_fallback, METH_O,
     "set_fallback(fn): what call() asks for the calls decide() leaves to Python."},
    {"call", (PyCFunction)(void (*)(void))ruleset_call, METH_FASTCALL | METH_KEYWORDS,
     "call($self, /, tool, args=None)\n--\n\n"
     "decide(tool, args), else the fallback's answer (PermissionPolicy.check)."},
    {"clear_memo", ruleset_clear_memo, METH_NOARGS,
     "clear_memo(): forget the bash lines decide() remembers."},
    {NULL, NULL, 0, NULL},
};

static PyType_Slot ruleset_slots[] = {
    {Py_tp_new, ruleset_new},
    {Py_tp_dealloc, ruleset_dealloc},
    {Py_tp_traverse, ruleset_traverse},
    {Py_tp_clear, ruleset_clear},
    {Py_tp_methods, ruleset_methods},
    {Py_sq_length, ruleset_len},
    {Py_tp_doc, "Ruleset(): a compiled deny/allow/ask rule list."},
    {0, NULL},
};

static PyType_Spec ruleset_spec = {
    "codeward._native.Ruleset",
    sizeof(RulesetObject),
    0,
    Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    ruleset_slots,
};

/* ---- Sandbox ------------------------------------------------------------ */

typedef struct {
    PyObject_HEAD
    a3s_sandbox *sb;
    PyObject *native_error;
} SandboxObject;

static void free_strings(char **v, Py_ssize_t n) {
    for (Py_ssize_t i = 0; v && i < n; i++)
        PyMem_Free(v[i]);
    PyMem_Free(v);
}

/* A list of str/bytes -> a PyMem array of NUL-terminated copies. */
static int string_array(PyObject *seq, char ***out, Py_ssize_t *n) {
    *out = NULL;
    *n = 0;
    if (seq == NULL || seq == Py_None)
        return 0;
    PyObject *fast = PySequence_Fast(seq, "expected a list of strings");
    if (!fast)
        return -1;
    Py_ssize_t len = PySequence_Size(fast);
    char **v = PyMem_Calloc((size_t)(len ? len : 1), sizeof *v);
    if (!v) {
        Py_DECREF(fast);
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < len; i++) {
        PyObject *item = PySequence_GetItem(fast, i);
        const char *data;
        Py_ssize_t dl;
        PyObject *owner;
        int bad = !item || as_bytes(item, &data, &dl, &owner) < 0;
        Py_XDECREF(item);
        if (!bad && memchr(data, '\0', (size_t)dl)) {
            PyErr_SetString(PyExc_ValueError, "a string contains a NUL byte");
            Py_XDECREF(owner);
            bad = 1;
        }
        if (bad) {
            free_strings(v, len);
            Py_DECREF(fast);
            return -1;
        }
        v[i] = PyMem_Malloc((size_t)dl + 1);
        if (v[i]) {
            memcpy(v[i], data, (size_t)dl);
            v[i][dl] = '\0';
        }
        Py_XDECREF(owner);
        if (!v[i]) {
            free_strings(v, len);
            Py_DECREF(fast);
            PyErr_NoMemory();
            return -1;
        }
    }
    Py_DECREF(fast);
    *out = v;
    *n = len;
    return 0;
}

static PyObject *sandbox_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
    static char *kwlist[] = {"workspace",
                             "init",
                             "bwrap",
                             "process_host",
                             "no_landlock",
                             "scratch_parent",
                             "host_env",
                             "reuse",
                             "readonly_workspace",
                             "share_net",
                             "memory_max_bytes",
                             "max_processes",
                             "tmpfs_max_bytes",
                             "inotify_watch_budget",
                             "idle_stop_ms",
                             "init_sha256",
                             "host_code",
                             NULL};
    const char *workspace, *init, *bwrap = NULL, *scratch = NULL, *init_sha256 = NULL;
    int process_host = 0, no_landlock = 0, reuse = 0, readonly_workspace = 0, share_net = 0;
    unsigned long long memory_max = 0, max_processes = 0, tmpfs_max = 0, watch_budget = 0,
                       idle_stop = 0;
    PyObject *host_env = Py_None, *host_code = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "ss|zppzOpppKKKKKzO", kwlist, &workspace, &init,
                                     &bwrap, &process_host, &no_landlock, &scratch, &host_env,
                                     &reuse, &readonly_workspace, &share_net, &memory_max,
                                     &max_processes, &tmpfs_max, &watch_budget, &idle_stop,
                                     &init_sha256, &host_code))
        return NULL;
    PyObject *mod = PyType_GetModule(type);
    if (!mod)
        return NULL;
    char **env = NULL, **code = NULL;
    Py_ssize_t envc = 0, codec = 0;
    if (host_env != Py_None && string_array(host_env, &env, &envc) < 0)
        return NULL;
    if (host_code != Py_None && string_array(host_code, &code, &codec) < 0) {
        free_strings(env, envc);
        return NULL;
    }
    a3s_sandbox_config cfg = {
        .struct_size = sizeof cfg,
        .flags = (process_host ? A3S_SANDBOX_PROCESS_HOST : 0) |
                 (no_landlock ? A3S_SANDBOX_NO_LANDLOCK : 0) | (reuse ? A3S_SANDBOX_REUSE : 0) |
                 (readonly_workspace ? A3S_SANDBOX_WORKSPACE_READONLY : 0) |
                 (share_net ? A3S_SANDBOX_SHARE_NET : 0),
        .workspace = workspace,
        .bwrap_path = bwrap,
        .init_path = init,
        .scratch_parent = scratch,
        .host_env = (const char *const *)env,
        .host_envc = (size_t)envc,
        .memory_max_bytes = memory_max,
        .max_processes = max_processes,
        .tmpfs_max_bytes = tmpfs_max,
        .inotify_watch_budget = watch_budget,
        .idle_stop_ms = idle_stop,
        .init_sha256 = init_sha256,
        .host_code = (const char *const *)code,
        .host_code_count = (size_t)codec,
    };
    a3s_sandbox *sb = NULL;
    a3s_error err;
    int rc = a3s_sandbox_new(&cfg, &sb, &err);
    free_strings(env, envc);
    free_strings(code, codec);
    if (rc != A3S_OK)
        return raise_error(state_of_module(mod)->native_error, &err);
    allocfunc alloc = (allocfunc)PyType_GetSlot(type, Py_tp_alloc);
    SandboxObject *self = (SandboxObject *)alloc(type, 0);
    if (!self) {
        a3s_sandbox_free(sb);
        return NULL;
    }
    self->sb = sb;
    self->native_error = state_of_module(mod)->native_error;
    return (PyObject *)self;
}

static void sandbox_dealloc(PyObject *obj) {
    PyTypeObject *type = Py_TYPE(obj);
    a3s_sandbox *sb = ((SandboxObject *)obj)->sb;
    /* stopping a long-lived sandbox waits a few ms for it to go */
    Py_BEGIN_ALLOW_THREADS
    a3s_sandbox_free(sb);
    Py_END_ALLOW_THREADS
    freefunc tp_free = (freefunc)PyType_GetSlot(type, Py_tp_free);
    tp_free(obj);
    Py_DECREF(type);
}

static PyObject *result_dict(const a3s_process_result *r) {
    a3s_process_result_view v = {.struct_size = sizeof v};
    a3s_process_result_get(r, &v, NULL);
    PyObject *out = PyBytes_FromStringAndSize(v.stdout_data, (Py_ssize_t)v.stdout_len);
    PyObject *err = PyBytes_FromStringAndSize(v.stderr_data, (Py_ssize_t)v.stderr_len);
    PyObject *setup = v.setup_error && v.setup_error[0]
                          ? PyUnicode_DecodeUTF8(v.setup_error, (Py_ssize_t)strlen(v.setup_error),
                                                 "replace")
                          : (Py_INCREF(Py_None), Py_None);
    /* one line per item the sandbox neutralized; "" when none */
    const char *notes = v.neutralized ? v.neutralized : "";
    PyObject *neutralized = PyUnicode_DecodeUTF8(notes, (Py_ssize_t)strlen(notes), "replace");
    /* the exec check: what it stopped, by which rule ("deny"/"ask"; None when nothing) */
    PyObject *stop = NULL;
    if (v.flags & A3S_RESULT_EXEC_STOPPED)
        stop = Py_BuildValue("{s:s,s:s,s:s}", "decision",
                             v.exec_stop_list == A3S_LIST_DENY ? "deny" : "ask", "rule",
                             v.exec_stop_rule ? v.exec_stop_rule : "", "command",
                             v.exec_stop_command ? v.exec_stop_command : "");
    else
        stop = (Py_INCREF(Py_None), Py_None);
    PyObject *d = NULL;
    if (out && err && setup && neutralized && stop)
        d = Py_BuildValue(
            "{s:i,s:i,s:O,s:O,s:O,s:O,s:O,s:O,s:O,s:O,s:O,s:O,s:O,s:K,s:K,s:K,s:O,s:O}", "exit_code",
            (int)v.exit_code, "term_signal", (int)v.term_signal, "timed_out",
            (v.flags & A3S_RESULT_TIMED_OUT) ? Py_True : Py_False, "oom_killed",
            (v.flags & A3S_RESULT_OOM_KILLED) ? Py_True : Py_False, "hard_linked",
            (v.flags & A3S_RESULT_HARD_LINKED) ? Py_True : Py_False, "outlived",
            (v.flags & A3S_RESULT_OUTLIVED) ? Py_True : Py_False, "stdout_truncated",
            (v.flags & A3S_RESULT_STDOUT_TRUNCATED) ? Py_True : Py_False, "stderr_truncated",
            (v.flags & A3S_RESULT_STDERR_TRUNCATED) ? Py_True : Py_False, "cancelled",
            (v.flags & A3S_RESULT_CANCELLED) ? Py_True : Py_False, "setup_failed",
            (v.flags & A3S_RESULT_SETUP_FAILED) ? Py_True : Py_False, "policy_changed",
            (v.flags & A3S_RESULT_POLICY_CHANGED) ? Py_True : Py_False, "stdout", out, "stderr",
            err, "stdout_total", (unsigned long long)v.stdout_total, "stderr_total",
            (unsigned long long)v.stderr_total, "duration_us", (unsigned long long)v.duration_us,
            "setup_error", setup, "neutralized", neutralized);
    if (d && PyDict_SetItemString(d, "exec_stopped", stop) < 0)
        Py_CLEAR(d);
    Py_XDECREF(stop);
    Py_XDECREF(out);
    Py_XDECREF(err);
    Py_XDECREF(setup);
    Py_XDECREF(neutralized);
    return d;
}

/* The on_output callable of one exec: called with (stream, bytes) under the GIL for
 * each piece of output; its first exception is kept (and later pieces dropped) and
 * raised once the command is over. */
struct output_sink {
    PyObject *fn;
    PyObject *type, *value, *traceback; /* the exception it raised, if any */
};

static void call_output_sink(void *ctx, int stream, const char *data, size_t len) {
    struct output_sink *s = ctx;
    PyGILState_STATE gil = PyGILState_Ensure();
    if (!s->type) {
        PyObject *chunk = PyBytes_FromStringAndSize(data, (Py_ssize_t)len);
        PyObject *r = chunk ? PyObject_CallFunction(s->fn, "iO", stream, chunk) : NULL;
        Py_XDECREF(chunk);
        if (r)
            Py_DECREF(r);
        else
            PyErr_Fetch(&s->type, &s->value, &s->traceback);
    }
    PyGILState_Release(gil);
}

/* exec(command, env, timeout_ms, grace_ms, max_output_bytes, cancel_fd, grant_fd=-1,
 * policy_digest=None, on_output=None, cwd=None, exec_deny=None, exec_ask=None,
 * exec_approved=None, stdin=None) -> dict (exec_*: lists of strings for the exec check,
 * a3s_exec_options; stdin: bytes or None). Runs without the GIL: other Python threads go
 * on while the command runs (a network grant's mediator must: it answers the sandbox
 * meanwhile). on_output(stream, data) gets the output as it arrives (1 stdout, 2 stderr). */
static PyObject *sandbox_exec(PyObject *obj, PyObject *args) {
    SandboxObject *self = (SandboxObject *)obj;
    PyObject *command, *env_list, *on_output = Py_None, *stdin_obj = Py_None;
    unsigned long long timeout_ms, grace_ms, max_output;
    int cancel_fd, grant_fd = -1;
    const char *policy_digest = NULL, *cwd = NULL;
    PyObject *deny_list = NULL, *ask_list = NULL, *approved_list = NULL;
    if (!PyArg_ParseTuple(args, "OOKKKi|izOzOOOO:exec", &command, &env_list, &timeout_ms,
                          &grace_ms, &max_output, &cancel_fd, &grant_fd, &policy_digest,
                          &on_output, &cwd, &deny_list, &ask_list, &approved_list, &stdin_obj))
        return NULL;
    /* the bytes object is kept alive by args while the GIL is released */
    char *stdin_data = NULL;
    Py_ssize_t stdin_len = 0;
    if (stdin_obj != Py_None && PyBytes_AsStringAndSize(stdin_obj, &stdin_data, &stdin_len) < 0)
        return NULL;
    if (on_output != Py_None && !PyCallable_Check(on_output)) {
        PyErr_SetString(PyExc_TypeError, "on_output must be callable or None");
        return NULL;
    }
    struct output_sink sink = {.fn = on_output};
    /* the exec check: the policy's bash deny and ask patterns, the approved commands */
    char **rules[3] = {NULL, NULL, NULL};
    Py_ssize_t nrules[3] = {0, 0, 0};
    PyObject *given[3] = {deny_list, ask_list, approved_list};
    for (int i = 0; i < 3; i++) {
        if (given[i] && given[i] != Py_None && string_array(given[i], &rules[i], &nrules[i]) < 0) {
            for (int k = 0; k < i; k++)
                free_strings(rules[k], nrules[k]);
            return NULL;
        }
    }
    const char *cmd;
    Py_ssize_t cmd_len;
    PyObject *owner;
    if (as_bytes(command, &cmd, &cmd_len, &owner) < 0)
        goto fail_rules;
    char **env = NULL;
    Py_ssize_t envc = 0;
    if (string_array(env_list, &env, &envc) < 0) {
        Py_XDECREF(owner);
        goto fail_rules;
    }
    a3s_exec_options o = {
        .struct_size = sizeof o,
        .flags = (cancel_fd >= 0 ? A3S_EXEC_CANCEL_FD : 0) |
                 (grant_fd >= 0 ? A3S_EXEC_NETWORK_GRANT : 0),
        .command = cmd,
        .command_len = (size_t)cmd_len,
        .env = (const char *const *)env,
        .envc = (size_t)envc,
        .timeout_ms = timeout_ms,
        .kill_grace_ms = grace_ms,
        .max_output_bytes = max_output,
        .cancel_fd = cancel_fd,
        .grant_fd = grant_fd,
        .policy_digest = policy_digest,
        .on_output = on_output != Py_None ? call_output_sink : NULL,
        .on_output_ctx = &sink,
        .cwd = cwd,
        .exec_deny = (const char *const *)rules[0],
        .exec_deny_count = (size_t)nrules[0],
        .exec_ask = (const char *const *)rules[1],
        .exec_ask_count = (size_t)nrules[1],
        .exec_approved = (const char *const *)rules[2],
        .exec_approved_count = (size_t)nrules[2],
        .stdin_data = stdin_data,
        .stdin_len = (size_t)stdin_len,
    };
    a3s_process_result *r = NULL;
    a3s_error err;
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = a3s_sandbox_exec(self->sb, &o, &r, &err);
    Py_END_ALLOW_THREADS
    free_strings(env, envc);
    Py_XDECREF(owner);
    for (int i = 0; i < 3; i++)
        free_strings(rules[i], nrules[i]);
    if (sink.type) { /* the callback failed: its error, not the output */
        a3s_process_result_free(r);
        PyErr_Restore(sink.type, sink.value, sink.traceback);
        return NULL;
    }
    if (rc != A3S_OK)
        return raise_error(self->native_error, &err);
    PyObject *d = result_dict(r);
    a3s_process_result_free(r);
    return d;
fail_rules:
    for (int i = 0; i < 3; i++)
        free_strings(rules[i], nrules[i]);
    return NULL;
}

/* policy() -> (text, digest): the canonical text of the handle's policy and its digest. */
static PyObject *sandbox_policy(PyObject *obj, PyObject *unused) {
    (void)unused;
    SandboxObject *self = (SandboxObject *)obj;
    a3s_policy *policy = NULL;
    a3s_error err;
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = a3s_sandbox_policy(self->sb, &policy, &err);
    Py_END_ALLOW_THREADS
    if (rc != A3S_OK)
        return raise_error(self->native_error, &err);
    size_t len = 0;
    const char *text = a3s_policy_text(policy, &len);
    PyObject *out = Py_BuildValue("(Ns)", PyUnicode_DecodeUTF8(text, (Py_ssize_t)len, "replace"),
                                  a3s_policy_digest(policy));
    a3s_policy_free(policy);
    return out;
}

static PyObject *sandbox_probe(PyObject *obj, PyObject *arg) {
    SandboxObject *self = (SandboxObject *)obj;
    unsigned long long timeout_ms = PyLong_AsUnsignedLongLong(arg);
    if (PyErr_Occurred())
        return NULL;
    a3s_error err;
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = a3s_sandbox_probe(self->sb, timeout_ms, &err);
    Py_END_ALLOW_THREADS
    if (rc != A3S_OK)
        return raise_error(self->native_error, &err);
    Py_RETURN_NONE;
}

/* stop(): ends the long-lived sandbox (a running command is cancelled). */
static PyObject *sandbox_stop(PyObject *obj, PyObject *unused) {
    (void)unused;
    SandboxObject *self = (SandboxObject *)obj;
    a3s_error err;
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = a3s_sandbox_stop(self->sb, &err);
    Py_END_ALLOW_THREADS
    if (rc != A3S_OK)
        return raise_error(self->native_error, &err);
    Py_RETURN_NONE;
}

/* info() -> {"running": bool, "starts": int, "pid": int, "memory_cgroup": bool,
 * "pids_cgroup": bool}. */
static PyObject *sandbox_info(PyObject *obj, PyObject *unused) {
    (void)unused;
    SandboxObject *self = (SandboxObject *)obj;
    a3s_sandbox_info info = {.struct_size = sizeof info};
    a3s_error err;
    if (a3s_sandbox_info_get(self->sb, &info, &err) != A3S_OK)
        return raise_error(self->native_error, &err);
    return Py_BuildValue("{s:O,s:K,s:i,s:O,s:O}", "running",
                         (info.flags & A3S_SANDBOX_INFO_RUNNING) ? Py_True : Py_False, "starts",
                         (unsigned long long)info.starts, "pid", (int)info.pid, "memory_cgroup",
                         (info.flags & A3S_SANDBOX_INFO_MEMORY_CGROUP) ? Py_True : Py_False,
                         "pids_cgroup",
                         (info.flags & A3S_SANDBOX_INFO_PIDS_CGROUP) ? Py_True : Py_False);
}

static PyObject *sandbox_workspace(PyObject *obj, void *closure) {
    (void)closure;
    return PyUnicode_DecodeFSDefault(a3s_sandbox_workspace(((SandboxObject *)obj)->sb));
}


/* ---- Child (an owned process) ------------------------------------------- */

typedef struct {
    PyObject_HEAD
    a3s_child *child;
    PyObject *native_error;
    PyObject *sandbox; /* the Sandbox it runs in (kept alive: its plan is held), or NULL */
} ChildObject;

static PyObject *child_status_dict(const a3s_child_status *st) {
    return Py_BuildValue("{s:O,s:i,s:i,s:O,s:O,s:O,s:O}", "exited",
                         (st->flags & A3S_CHILD_EXITED) ? Py_True : Py_False, "exit_code",
                         (int)st->exit_code, "pid", (int)st->pid, "killed",
                         (st->flags & A3S_CHILD_KILLED) ? Py_True : Py_False, "sandboxed",
                         (st->flags & A3S_CHILD_SANDBOXED) ? Py_True : Py_False,
                         "pid_namespace",
                         (st->flags & A3S_CHILD_PID_NAMESPACE) ? Py_True : Py_False, "cgroup",
                         (st->flags & A3S_CHILD_CGROUP) ? Py_True : Py_False);
}

/* Runs a3s_child_spawn or a3s_sandbox_spawn without the GIL and wraps the
 * result as (Child, stdin_fd, stdout_fd, stderr_fd). */
static PyObject *child_spawn_common(PyObject *mod, SandboxObject *sandbox, PyObject *args,
                                    PyObject *kwds) {
    static char *kwlist[] = {"path",        "args",  "env",           "cwd",
                             "init",        "host_env", "grace_ms",   "init_sha256",
                             "bwrap",       "allow_unowned", NULL};
    const char *path, *cwd = NULL, *init = NULL, *init_sha256 = NULL, *bwrap = NULL;
    PyObject *arg_list, *env_list, *host_env = Py_None;
    unsigned long long grace_ms = 0;
    int allow_unowned = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "sOO|zzOKzzp:spawn", kwlist, &path, &arg_list,
                                     &env_list, &cwd, &init, &host_env, &grace_ms, &init_sha256,
                                     &bwrap, &allow_unowned))
        return NULL;
    module_state *st = state_of_module(mod);
    char **argv = NULL, **env = NULL, **henv = NULL;
    Py_ssize_t argc = 0, envc = 0, henvc = 0;
    if (string_array(arg_list, &argv, &argc) < 0 || string_array(env_list, &env, &envc) < 0 ||
        (host_env != Py_None && string_array(host_env, &henv, &henvc) < 0)) {
        free_strings(argv, argc);
        free_strings(env, envc);
        return NULL;
    }
    a3s_child_options o = {
        .struct_size = sizeof o,
        .path = path,
        .args = (const char *const *)argv,
        .nargs = (size_t)argc,
        .env = (const char *const *)env,
        .envc = (size_t)envc,
        .host_env = (const char *const *)henv,
        .host_envc = (size_t)henvc,
        .cwd = cwd,
        .init_path = init,
        .kill_grace_ms = grace_ms,
        .init_sha256 = init_sha256,
        .bwrap_path = bwrap,
        .flags = allow_unowned ? A3S_CHILD_ALLOW_UNOWNED : 0,
    };
    a3s_child *c = NULL;
    a3s_child_stdio io = {.struct_size = sizeof io};
    a3s_error err;
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = sandbox ? a3s_sandbox_spawn(sandbox->sb, &o, &c, &io, &err)
                 : a3s_child_spawn(&o, &c, &io, &err);
    Py_END_ALLOW_THREADS
    free_strings(argv, argc);
    free_strings(env, envc);
    free_strings(henv, henvc);
    if (rc != A3S_OK)
        return raise_error(st->native_error, &err);
    PyTypeObject *type = (PyTypeObject *)st->child_type;
    allocfunc alloc = (allocfunc)PyType_GetSlot(type, Py_tp_alloc);
    ChildObject *self = (ChildObject *)alloc(type, 0);
    if (!self) {
        Py_BEGIN_ALLOW_THREADS
        a3s_child_free(c);
        Py_END_ALLOW_THREADS
        close_fd(io.stdin_fd);
        close_fd(io.stdout_fd);
        close_fd(io.stderr_fd);
        return NULL;
    }
    self->child = c;
    self->native_error = st->native_error;
    self->sandbox = (PyObject *)sandbox;
    Py_XINCREF(self->sandbox);
    PyObject *result = Py_BuildValue("(Niii)", (PyObject *)self, (int)io.stdin_fd,
                                     (int)io.stdout_fd, (int)io.stderr_fd);
    if (!result) { /* the Child went with the tuple's failure; the fds did not */
        close_fd(io.stdin_fd);
        close_fd(io.stdout_fd);
        close_fd(io.stderr_fd);
    }
    return result;
}

/* spawn_child(path, args, env, cwd=None, init=None, host_env=None, grace_ms=0,
 *             init_sha256=None, bwrap=None, allow_unowned=False)
 *   -> (Child, stdin_fd, stdout_fd, stderr_fd): an owned process on the host. */
static PyObject *py_spawn_child(PyObject *mod, PyObject *args, PyObject *kwds) {
    return child_spawn_common(mod, NULL, args, kwds);
}

/* Sandbox.spawn(path, args, env, cwd=None, grace_ms=0): the same in a sandbox of its own. */
static PyObject *sandbox_spawn(PyObject *obj, PyObject *args, PyObject *kwds) {
    PyObject *mod = PyType_GetModule(Py_TYPE(obj));
    if (!mod)
        return NULL;
    return child_spawn_common(mod, (SandboxObject *)obj, args, kwds);
}

static void child_dealloc(PyObject *obj) {
    PyTypeObject *type = Py_TYPE(obj);
    ChildObject *self = (ChildObject *)obj;
    a3s_child *c = self->child;
    /* a running program is stopped: TERM, the grace, KILL */
    Py_BEGIN_ALLOW_THREADS
    a3s_child_free(c);
    Py_END_ALLOW_THREADS
    Py_CLEAR(self->sandbox);
    freefunc tp_free = (freefunc)PyType_GetSlot(type, Py_tp_free);
    tp_free(obj);
    Py_DECREF(type);
}

/* wait(timeout_ms) -> status dict; runs without the GIL. */
static PyObject *child_wait(PyObject *obj, PyObject *arg) {
    ChildObject *self = (ChildObject *)obj;
    unsigned long long timeout_ms = PyLong_AsUnsignedLongLong(arg);
    if (PyErr_Occurred())
        return NULL;
    a3s_child_status st = {.struct_size = sizeof st};
    a3s_error err;
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = a3s_child_wait(self->child, timeout_ms, &st, &err);
    Py_END_ALLOW_THREADS
    if (rc != A3S_OK)
        return raise_error(self->native_error, &err);
    return child_status_dict(&st);
}

/* stop(sig=SIGTERM) -> status dict: sig (through the init), the grace, KILL, reaped;
 * runs without the GIL. */
static PyObject *child_stop(PyObject *obj, PyObject *args) {
    ChildObject *self = (ChildObject *)obj;
    int sig = SIGTERM;
    if (!PyArg_ParseTuple(args, "|i:stop", &sig))
        return NULL;
    a3s_child_status st = {.struct_size = sizeof st};
    a3s_error err;
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = a3s_child_stop_with(self->child, sig, &st, &err);
    Py_END_ALLOW_THREADS
    if (rc != A3S_OK)
        return raise_error(self->native_error, &err);
    return child_status_dict(&st);
}

/* signal(sig): sig to every process of the program, through its init (a pipe
 * write: it does not block). */
static PyObject *child_signal(PyObject *obj, PyObject *arg) {
    ChildObject *self = (ChildObject *)obj;
    long sig = PyLong_AsLong(arg);
    if (sig == -1 && PyErr_Occurred())
        return NULL;
    if (sig < INT_MIN || sig > INT_MAX)
        sig = 0; /* no signal: refused below */
    a3s_error err;
    if (a3s_child_signal(self->child, (int)sig, &err) != A3S_OK)
        return raise_error(self->native_error, &err);
    Py_RETURN_NONE;
}

static PyObject *child_info(PyObject *obj, PyObject *unused) {
    (void)unused;
    ChildObject *self = (ChildObject *)obj;
    a3s_child_status st = {.struct_size = sizeof st};
    a3s_error err;
    if (a3s_child_info(self->child, &st, &err) != A3S_OK)
        return raise_error(self->native_error, &err);
    return child_status_dict(&st);
}

static PyMethodDef child_methods[] = {
    {"wait", child_wait, METH_O, "wait(timeout_ms) -> dict: wait for the program's end."},
    {"stop", child_stop, METH_VARARGS,
     "stop(sig=SIGTERM) -> dict: end it and everything it started (sig first, KILL after "
     "the grace)."},
    {"signal", child_signal, METH_O, "signal(sig): send sig to every process of it."},
    {"info", child_info, METH_NOARGS, "info() -> dict: its state, without waiting."},
    {NULL, NULL, 0, NULL},
};

static PyType_Slot child_slots[] = {
    {Py_tp_dealloc, child_dealloc},
    {Py_tp_methods, child_methods},
    {Py_tp_doc, "An owned process (from spawn_child or Sandbox.spawn); stopped when collected."},
    {0, NULL},
};

static PyType_Spec child_spec = {
    "codeward._native.Child", sizeof(ChildObject), 0, Py_TPFLAGS_DEFAULT, child_slots,
};

static PyMethodDef sandbox_methods[] = {
    {"exec", sandbox_exec, METH_VARARGS,
     "exec(command, env, timeout_ms, grace_ms, max_output_bytes, cancel_fd, grant_fd=-1, "
     "policy_digest=None, exec_deny=None, exec_ask=None, exec_approved=None) -> dict"},
    {"policy", sandbox_policy, METH_NOARGS,
     "policy() -> (text, digest): the canonical text of the sandbox's policy, and its digest."},
    {"probe", sandbox_probe, METH_O, "probe(timeout_ms): self-test through the boundary."},
    {"stop", sandbox_stop, METH_NOARGS, "stop(): end the long-lived sandbox, if one runs."},
    {"info", sandbox_info, METH_NOARGS, "info() -> dict: the long-lived sandbox's state."},
    {"spawn", (PyCFunction)(void (*)(void))sandbox_spawn, METH_VARARGS | METH_KEYWORDS,
     "spawn(path, args, env, cwd=None, grace_ms=0) -> (Child, stdin, stdout, stderr)."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef sandbox_getset[] = {
    {"workspace", sandbox_workspace, NULL, "the canonical workspace path", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyType_Slot sandbox_slots[] = {
    {Py_tp_new, sandbox_new},
    {Py_tp_dealloc, sandbox_dealloc},
    {Py_tp_methods, sandbox_methods},
    {Py_tp_getset, sandbox_getset},
    {Py_tp_doc, "Sandbox(workspace, init, bwrap=None, ...): a C sandbox handle."},
    {0, NULL},
};

static PyType_Spec sandbox_spec = {
    "codeward._native.Sandbox", sizeof(SandboxObject), 0, Py_TPFLAGS_DEFAULT, sandbox_slots,
};

/* ---- module functions --------------------------------------------------- */

static PyObject *py_version(PyObject *mod, PyObject *unused) {
    (void)mod;
    (void)unused;
    const a3s_version_info *v = a3s_version();
    return Py_BuildValue("{s:I,s:I,s:I,s:I,s:s}", "major", v->major, "minor", v->minor, "patch",
                         v->patch, "abi", v->abi, "string", v->string);
}

static PyObject *py_abi_version(PyObject *mod, PyObject *unused) {
    (void)mod;
    (void)unused;
    return PyLong_FromUnsignedLong(a3s_abi_version());
}

static PyObject *py_features(PyObject *mod, PyObject *unused) {
    (void)unused;
    a3s_features_info info = {.struct_size = sizeof info};
    a3s_error err;
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = a3s_features(&info, &err);
    Py_END_ALLOW_THREADS
    if (rc != A3S_OK)
        return raise_error(state_of_module(mod)->native_error, &err);
    return Py_BuildValue("{s:O,s:O,s:O,s:O,s:O,s:O,s:O,s:i}", "user_namespaces",
                         (info.flags & A3S_FEATURE_USER_NAMESPACES) ? Py_True : Py_False,
                         "pid_namespaces",
                         (info.flags & A3S_FEATURE_PID_NAMESPACES) ? Py_True : Py_False,
                         "seccomp_filter",
                         (info.flags & A3S_FEATURE_SECCOMP_FILTER) ? Py_True : Py_False, "landlock",
                         (info.flags & A3S_FEATURE_LANDLOCK) ? Py_True : Py_False, "pidfd",
                         (info.flags & A3S_FEATURE_PIDFD) ? Py_True : Py_False, "cgroup_kill",
                         (info.flags & A3S_FEATURE_CGROUP_KILL) ? Py_True : Py_False,
                         "names_emulated",
                         (info.flags & A3S_FEATURE_NAMES_EMULATED) ? Py_True : Py_False,
                         "landlock_abi", (int)info.landlock_abi);
}

static PyObject *py_status_name(PyObject *mod, PyObject *arg) {
    (void)mod;
    long code = PyLong_AsLong(arg);
    if (code == -1 && PyErr_Occurred())
        return NULL;
    return PyUnicode_FromString(a3s_status_name((int)code));
}

/* path_normalize(str) -> str */
static PyObject *py_path_normalize(PyObject *mod, PyObject *arg) {
    const char *data;
    Py_ssize_t len;
    PyObject *owner;
    if (as_bytes(arg, &data, &len, &owner) < 0)
        return NULL;
    char stack[512];
    char *out = len <= (Py_ssize_t)sizeof stack ? stack : PyMem_Malloc((size_t)len);
    PyObject *result = NULL;
    if (!out) {
        PyErr_NoMemory();
    } else {
        size_t n = 0;
        a3s_error err;
        if (a3s_path_normalize(data, (size_t)len, out, len ? (size_t)len : sizeof stack, &n,
                               &err) != A3S_OK)
            raise_error(state_of_module(mod)->native_error, &err);
        else
            result = PyUnicode_DecodeUTF8(out, (Py_ssize_t)n, "surrogatepass");
        if (out != stack)
            PyMem_Free(out);
    }
    Py_XDECREF(owner);
    return result;
}

/* ---- canonical_json ----------------------------------------------------- */

/* canonical_json(value) -> str: the fast path of codeward.policy._subject's
 * canonical_json, byte for byte the text of its Python reference (_encode):
 * compact, keys sorted by code point, only '"', '\\' and controls escaped,
 * numbers as ECMAScript prints them (docs/policy.md "The argument string").
 *
 * Only exact dict (with exact str keys), list and tuple, str (subclasses
 * too: json prints their characters), None, bool, int (subclasses too: the
 * reference prints int.__repr__) and exact float are encoded here. Anything
 * else raises TypeError, nesting deeper than CJ_MAX_DEPTH raises ValueError
 * and a lone surrogate raises UnicodeEncodeError (via PyUnicode_AsUTF8AndSize);
 * the Python caller then falls back to the reference, which decides what such
 * a value gives (text, or PolicyError). No Python code runs during the walk. */

#define CJ_MAX_DEPTH 1000
#define CJ_STACK_BUF 1024
#define CJ_STACK_KEYS 16

typedef struct {
    char *data;
    size_t len, cap;
    char stack[CJ_STACK_BUF];
} cj_buf;

static int cj_grow(cj_buf *b, size_t extra) {
    size_t cap = b->cap;
    if (extra > (size_t)PY_SSIZE_T_MAX - b->len) {
        PyErr_NoMemory();
        return -1;
    }
    while (cap - b->len < extra)
        cap = cap < (size_t)PY_SSIZE_T_MAX / 2 ? cap * 2 : (size_t)PY_SSIZE_T_MAX;
    char *data = b->data == b->stack ? PyMem_Malloc(cap) : PyMem_Realloc(b->data, cap);
    if (!data) {
        PyErr_NoMemory();
        return -1;
    }
    if (b->data == b->stack)
        memcpy(data, b->stack, b->len);
    b->data = data;
    b->cap = cap;
    return 0;
}

static int cj_put(cj_buf *b, const char *s, size_t n) {
    if (b->cap - b->len < n && cj_grow(b, n) < 0)
        return -1;
    memcpy(b->data + b->len, s, n);
    b->len += n;
    return 0;
}

#define CJ_PUT_LIT(b, lit) cj_put((b), (lit), sizeof(lit) - 1)

/* What json.encoder.encode_basestring writes after a '\\' for a byte, 0 for
 * a byte copied as is ('u' is \u00xx, lower-case hex). UTF-8 lead and
 * continuation bytes are all >= 0x80, so they are copied unchanged. */
static const char cj_escape[256] = {
    'u', 'u', 'u', 'u', 'u', 'u', 'u', 'u', 'b', 't', 'n', 'u', 'f', 'r', 'u', 'u',
    'u', 'u', 'u', 'u', 'u', 'u', 'u', 'u', 'u', 'u', 'u', 'u', 'u', 'u', 'u', 'u',
    0,   0,   '"', 0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,
    0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,
    0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,
    0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   '\\',
};

/* Whether any of the 8 bytes of w is one cj_escape marks: below 0x20, '"' or '\\'.
 * (x - 0x0101..) & ~x & 0x8080.. is nonzero exactly when some byte of x is zero, and
 * (x - 0x2020..) & ~x & 0x8080.. when some byte is below 0x20 (bytes >= 0x80 never count). */
static bool cj_word_escapes(uint64_t w) {
    const uint64_t ones = 0x0101010101010101u, highs = 0x8080808080808080u;
    uint64_t quote = w ^ (ones * '"'), backslash = w ^ (ones * '\\');
    uint64_t below = (w - ones * 0x20) & ~w;
    return ((below | ((quote - ones) & ~quote) | ((backslash - ones) & ~backslash)) & highs) != 0;
}

static int cj_string(cj_buf *b, const char *s, Py_ssize_t n) {
    static const char hex[] = "0123456789abcdef";
    /* Most strings need no escape: reserve for the plain case up front. */
    if (b->cap - b->len < (size_t)n + 2 && cj_grow(b, (size_t)n + 2) < 0)
        return -1;
    b->data[b->len++] = '"';
    Py_ssize_t start = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        uint64_t w;
        /* Eight plain bytes at a time (most strings have no byte to escape). */
        while (n - i >= 8 && (memcpy(&w, s + i, 8), !cj_word_escapes(w)))
            i += 8;
        if (i >= n)
            break;
        unsigned char c = (unsigned char)s[i];
        char e = cj_escape[c];
        if (!e)
            continue;
        char esc[6] = {'\\', e, '0', '0', hex[c >> 4], hex[c & 15]};
        if (cj_put(b, s + start, (size_t)(i - start)) < 0 ||
            cj_put(b, esc, e == 'u' ? 6 : 2) < 0)
            return -1;
        start = i + 1;
    }
    if (cj_put(b, s + start, (size_t)(n - start)) < 0)
        return -1;
    return cj_put(b, "\"", 1);
}

static int cj_str_object(cj_buf *b, PyObject *v) {
    Py_ssize_t n;
    const char *s = PyUnicode_AsUTF8AndSize(v, &n); /* fails on a lone surrogate */
    return s ? cj_string(b, s, n) : -1;
}

static int cj_decimal(cj_buf *b, long long x) {
    char tmp[24];
    char *p = tmp + sizeof tmp;
    unsigned long long u = x < 0 ? 0ULL - (unsigned long long)x : (unsigned long long)x;
    do {
        *--p = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    if (x < 0)
        *--p = '-';
    return cj_put(b, p, (size_t)(tmp + sizeof tmp - p));
}

/* int.__repr__: a subclass (IntEnum, ...) prints as the plain int it is. */
static int cj_int(cj_buf *b, PyObject *v) {
    int overflow;
    long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
    if (x == -1 && PyErr_Occurred())
        return -1;
    if (!overflow)
        return cj_decimal(b, x);
    /* PyNumber_Index returns an exact int and calls no __index__ on an int. */
    PyObject *exact = PyNumber_Index(v);
    if (!exact)
        return -1;
    PyObject *text = PyObject_Str(exact); /* ValueError past sys.get_int_max_str_digits() */
    Py_DECREF(exact);
    if (!text)
        return -1;
    Py_ssize_t n;
    const char *s = PyUnicode_AsUTF8AndSize(text, &n);
    int rc = s ? cj_put(b, s, (size_t)n) : -1;
    Py_DECREF(text);
    return rc;
}

/* ECMAScript Number::toString, as _subject._number prints it. */
static int cj_float(cj_buf *b, double x) {
    if (x != x)
        return CJ_PUT_LIT(b, "NaN");
    if (x == 0)
        return CJ_PUT_LIT(b, "0"); /* -0.0 too */
    double ax = x < 0 ? -x : x;
    if (ax > 1.7976931348623157e308)
        return x > 0 ? CJ_PUT_LIT(b, "Infinity") : CJ_PUT_LIT(b, "-Infinity");
    /* An integral value below 2**53: its shortest round-trip digits are its
     * own digits, so ECMAScript prints the integer. */
    if (ax < 9007199254740992.0 && (double)(long long)x == x)
        return cj_decimal(b, (long long)x);
    /* Shortest round-trip digits, as repr() gives them: "1.5", "0.0001",
     * "1e-07", "1.2345e+16" (never a sign: ax > 0). */
    char *r = PyOS_double_to_string(ax, 'r', 0, 0, NULL);
    if (!r)
        return -1;
    char all[40];
    int nd = 0, point = -1, exp10 = 0, bad = 0;
    for (const char *p = r; *p; p++) {
        if (*p >= '0' && *p <= '9') {
            if (nd == (int)sizeof all) {
                bad = 1;
                break;
            }
            all[nd++] = *p;
        } else if (*p == '.') {
            point = nd;
        } else if (*p == 'e' || *p == 'E') {
            int neg = p[1] == '-';
            for (p += (p[1] == '-' || p[1] == '+') ? 2 : 1; *p >= '0' && *p <= '9'; p++)
                exp10 = exp10 * 10 + (*p - '0');
            if (neg)
                exp10 = -exp10;
            break;
        } else {
            bad = 1;
            break;
        }
    }
    PyMem_Free(r);
    if (bad || nd == 0) {
        PyErr_SetString(PyExc_ValueError, "canonical_json: unexpected float repr");
        return -1;
    }
    /* value = 0.<digits> * 10**n, digits without leading or trailing zeros */
    int n = (point < 0 ? nd : point) + exp10;
    const char *d = all;
    while (nd > 0 && *d == '0') {
        d++;
        nd--;
        n--;
    }
    while (nd > 0 && d[nd - 1] == '0')
        nd--;
    int k = nd;
    char out[64];
    size_t o = 0;
    if (x < 0)
        out[o++] = '-';
    if (k <= n && n <= 21) {
        memcpy(out + o, d, (size_t)k);
        o += (size_t)k;
        memset(out + o, '0', (size_t)(n - k));
        o += (size_t)(n - k);
    } else if (0 < n && n <= 21) {
        memcpy(out + o, d, (size_t)n);
        o += (size_t)n;
        out[o++] = '.';
        memcpy(out + o, d + n, (size_t)(k - n));
        o += (size_t)(k - n);
    } else if (-6 < n && n <= 0) {
        out[o++] = '0';
        out[o++] = '.';
        memset(out + o, '0', (size_t)-n);
        o += (size_t)-n;
        memcpy(out + o, d, (size_t)k);
        o += (size_t)k;
    } else {
        out[o++] = d[0];
        if (k > 1) {
            out[o++] = '.';
            memcpy(out + o, d + 1, (size_t)(k - 1));
            o += (size_t)(k - 1);
        }
        int e = n - 1;
        out[o++] = 'e';
        out[o++] = e > 0 ? '+' : '-';
        if (e < 0)
            e = -e;
        char tmp[8];
        int t = 0;
        do {
            tmp[t++] = (char)('0' + e % 10);
            e /= 10;
        } while (e);
        while (t)
            out[o++] = tmp[--t];
    }
    return cj_put(b, out, o);
}

typedef struct {
    const char *s; /* the key's UTF-8, owned by key */
    Py_ssize_t n;
    PyObject *key, *value; /* strong references */
} cj_entry;

/* UTF-8 byte order is code point order (what sorted() gives for str keys). */
static int cj_compare(const void *pa, const void *pb) {
    const cj_entry *a = pa, *b = pb;
    Py_ssize_t n = a->n < b->n ? a->n : b->n;
    int c = memcmp(a->s, b->s, (size_t)n);
    return c ? c : (a->n > b->n) - (a->n < b->n);
}

static int cj_encode(cj_buf *b, PyObject *v, int depth);

static int cj_dict(cj_buf *b, PyObject *v, int depth) {
    Py_ssize_t size = PyDict_Size(v);
    if (size == 0)
        return CJ_PUT_LIT(b, "{}");
    cj_entry stack[CJ_STACK_KEYS];
    cj_entry *e = size <= CJ_STACK_KEYS ? stack : PyMem_Malloc((size_t)size * sizeof *e);
    if (!e) {
        PyErr_NoMemory();
        return -1;
    }
    int rc = -1;
    Py_ssize_t n = 0, pos = 0;
    PyObject *key, *value;
    while (n < size && PyDict_Next(v, &pos, &key, &value)) {
        if (!PyUnicode_CheckExact(key)) {
            PyErr_Format(PyExc_TypeError, "canonical_json: %s key",
                         PyUnicode_Check(key) ? "str subclass" : "non-string");
            goto done;
        }
        Py_INCREF(key);
        Py_INCREF(value);
        e[n].key = key;
        e[n].value = value;
        n++;
        e[n - 1].s = PyUnicode_AsUTF8AndSize(key, &e[n - 1].n);
        if (!e[n - 1].s)
            goto done;
    }
    if (n < 8) {
        for (Py_ssize_t i = 1; i < n; i++) {
            cj_entry t = e[i];
            Py_ssize_t j = i;
            for (; j > 0 && cj_compare(&t, &e[j - 1]) < 0; j--)
                e[j] = e[j - 1];
            e[j] = t;
        }
    } else {
        qsort(e, (size_t)n, sizeof *e, cj_compare);
    }
    if (cj_put(b, "{", 1) < 0)
        goto done;
    for (Py_ssize_t i = 0; i < n; i++) {
        if ((i && cj_put(b, ",", 1) < 0) || cj_string(b, e[i].s, e[i].n) < 0 ||
            cj_put(b, ":", 1) < 0 || cj_encode(b, e[i].value, depth + 1) < 0)
            goto done;
    }
    rc = cj_put(b, "}", 1);
done:
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_DECREF(e[i].key);
        Py_DECREF(e[i].value);
    }
    if (e != stack)
        PyMem_Free(e);
    return rc;
}

static int cj_sequence(cj_buf *b, PyObject *v, int depth, int is_list) {
    if (cj_put(b, "[", 1) < 0)
        return -1;
    for (Py_ssize_t i = 0;; i++) {
        /* The size is read each time: no Python code runs here, but the list
         * stays memory-safe even if a finalizer shrank it. */
        Py_ssize_t size = is_list ? PyList_Size(v) : PyTuple_Size(v);
        if (size < 0)
            return -1;
        if (i >= size)
            break;
        PyObject *item = is_list ? PyList_GetItem(v, i) : PyTuple_GetItem(v, i);
        if (!item)
            return -1;
        Py_INCREF(item);
        int rc = (i && cj_put(b, ",", 1) < 0) ? -1 : cj_encode(b, item, depth + 1);
        Py_DECREF(item);
        if (rc < 0)
            return -1;
    }
    return cj_put(b, "]", 1);
}

static int cj_encode(cj_buf *b, PyObject *v, int depth) {
    /* The reference's order: str, None, True, False, int, float, Mapping, list/tuple. */
    if (PyUnicode_Check(v))
        return cj_str_object(b, v);
    if (v == Py_None)
        return CJ_PUT_LIT(b, "null");
    if (v == Py_True)
        return CJ_PUT_LIT(b, "true");
    if (v == Py_False)
        return CJ_PUT_LIT(b, "false");
    if (PyLong_Check(v))
        return cj_int(b, v);
    if (PyFloat_CheckExact(v)) {
        double x = PyFloat_AsDouble(v);
        if (x == -1.0 && PyErr_Occurred())
            return -1;
        return cj_float(b, x);
    }
    int is_dict = PyDict_CheckExact(v), is_list = PyList_CheckExact(v);
    if (is_dict || is_list || PyTuple_CheckExact(v)) {
        if (depth >= CJ_MAX_DEPTH) {
            PyErr_SetString(PyExc_ValueError, "canonical_json: nested too deeply");
            return -1;
        }
        return is_dict ? cj_dict(b, v, depth) : cj_sequence(b, v, depth, is_list);
    }
    PyErr_Format(PyExc_TypeError, "canonical_json: %s value needs the Python encoder",
                 PyFloat_Check(v) ? "float subclass" : "unsupported");
    return -1;
}

/* relay(a, b, cancel_fd=-1, pipe_bytes=0) -> (a_to_b, b_to_a, reset, cancelled): bytes both
 * ways between two connected sockets until both directions end (a3s_relay), without the GIL. */
static PyObject *py_relay(PyObject *mod, PyObject *args, PyObject *kwds) {
    static char *kwlist[] = {"a", "b", "cancel_fd", "pipe_bytes", NULL};
    int a, b, cancel_fd = -1;
    unsigned int pipe_bytes = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "ii|iI:relay", kwlist, &a, &b, &cancel_fd,
                                     &pipe_bytes))
        return NULL;
    a3s_relay_options o = {
        .struct_size = sizeof o,
        .flags = cancel_fd >= 0 ? A3S_RELAY_CANCEL_FD : 0,
        .cancel_fd = cancel_fd,
        .pipe_bytes = pipe_bytes,
    };
    a3s_relay_stats st = {.struct_size = sizeof st};
    a3s_error err;
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = a3s_relay(a, b, &o, &st, &err);
    Py_END_ALLOW_THREADS
    if (rc != A3S_OK)
        return raise_error(state_of_module(mod)->native_error, &err);
    return Py_BuildValue("(KKOO)", (unsigned long long)st.a_to_b, (unsigned long long)st.b_to_a,
                         (st.flags & A3S_RELAY_RESET) ? Py_True : Py_False,
                         (st.flags & A3S_RELAY_CANCELLED) ? Py_True : Py_False);
}

/* canonical_json(value) -> str */
static PyObject *py_canonical_json(PyObject *mod, PyObject *value) {
    (void)mod;
    cj_buf b;
    b.data = b.stack;
    b.len = 0;
    b.cap = sizeof b.stack;
    PyObject *result = NULL;
    if (cj_encode(&b, value, 0) == 0)
        result = PyUnicode_DecodeUTF8(b.data, (Py_ssize_t)b.len, NULL);
    if (b.data != b.stack)
        PyMem_Free(b.data);
    return result;
}

/* ---- Ruleset.decide: PermissionPolicy.check's common calls in one C call -------------- */

/* decide(tool, args) -> the outcome (set_outcomes) for the calls whose argument string is
 * built the same way every time, or None: the caller then takes the Python path
 * (policy/_policy.py: PermissionPolicy.check), which stays the specification. A twin of
 * policy/_subject.py's named_argument_string for an exact str tool and an exact dict (or
 * None) of arguments: bash (its "command", a str), read/write/edit/download (a str or
 * missing "file_path", lexically normalised as normalize_path does; a read of a path with
 * a newline is left to Python), a multi-file read (a list or tuple of "files", each decided
 * alone: decide_files), ls ("path"), search and its modes (search_list), git unless a
 * "REV:path" target has other spellings, and every other tool's canonical JSON. Anything else
 * (a str subclass, another Mapping, a value canonical_json leaves to Python, a lone
 * surrogate, a non-ASCII tool name) gives None, never a guess. */

#define DECIDE_TOOL_MAX 128

/* The UTF-8 of an exact str, or NULL (no error set) when it is not one or has a lone
 * surrogate. */
static const char *exact_utf8(PyObject *v, Py_ssize_t *n) {
    if (!PyUnicode_CheckExact(v))
        return NULL;
    const char *s = PyUnicode_AsUTF8AndSize(v, n);
    if (!s)
        PyErr_Clear();
    return s;
}

static bool has_pair(const char *s, size_t n, char a, char b) {
    for (size_t i = 0; i + 1 < n; i++)
        if (s[i] == a && s[i + 1] == b)
            return true;
    return false;
}

/* args[key] (borrowed), NULL when missing or args is NULL (None); errors are left set. */
static PyObject *arg(RulesetObject *self, PyObject *args, int key) {
    return args ? PyDict_GetItemWithError(args, self->keys[key]) : NULL;
}

/* normalize_path's test: a path it leaves alone is its own normal form. */
static bool needs_normalizing(const char *p, size_t n) {
    return memchr(p, '\\', n) || has_pair(p, n, '/', '/') || has_pair(p, n, '/', '.') ||
           (n && (p[0] == '.' || p[n - 1] == '/'));
}

/* A text the decision is made on: either borrowed (p) or in the buffer. */
typedef struct {
    const char *p;
    size_t n;
    cj_buf buf;
} subject_text;

static void subject_init(subject_text *t) {
    t->p = "";
    t->n = 0;
    t->buf.data = t->buf.stack;
    t->buf.len = 0;
    t->buf.cap = sizeof t->buf.stack;
}

static void subject_release(subject_text *t) {
    if (t->buf.data != t->buf.stack)
        PyMem_Free(t->buf.data);
}

/* Appends the normal form of path p[0..n) to b. 0, or -1 with an error set. */
static int put_path(RulesetObject *self, cj_buf *b, const char *p, size_t n) {
    if (!needs_normalizing(p, n))
        return cj_put(b, p, n);
    if (b->cap - b->len < n && cj_grow(b, n) < 0)
        return -1;
    size_t out = 0;
    a3s_error err; /* room for n bytes, as path_normalize() gives it */
    if (a3s_path_normalize(p, n, b->data + b->len, n, &out, &err) != A3S_OK) {
        raise_error(self->native_error, &err);
        return -1;
    }
    b->len += out;
    return 0;
}

/* _path_field(args, key) appended to b: missing or None "", a str normalised. 1 done,
 * 0 not a shape decide takes, -1 error. */
static int put_path_field(RulesetObject *self, cj_buf *b, PyObject *args, int key) {
    PyObject *v = arg(self, args, key);
    if (!v || v == Py_None)
        return PyErr_Occurred() ? -1 : 1;
    Py_ssize_t n;
    const char *p = exact_utf8(v, &n);
    if (!p)
        return 0;
    return put_path(self, b, p, (size_t)n) < 0 ? -1 : 1;
}

/* _text(args[key]) appended to b: missing or None "", a str as is, else its canonical
 * JSON. 1 done, 0 not a shape decide takes, -1 error. */
static int put_text_field(RulesetObject *self, cj_buf *b, PyObject *args, int key) {
    PyObject *v = arg(self, args, key);
    if (!v || v == Py_None)
        return PyErr_Occurred() ? -1 : 1;
    Py_ssize_t n;
    const char *p = exact_utf8(v, &n);
    if (p)
        return cj_put(b, p, (size_t)n) < 0 ? -1 : 1;
    if (PyUnicode_Check(v))
        return 0;
    if (cj_encode(b, v, 0) < 0) {
        if (PyErr_ExceptionMatches(PyExc_MemoryError))
            return -1;
        PyErr_Clear(); /* the reference encoder decides (or refuses) it */
        return 0;
    }
    return 1;
}

/* The deciding list of a search call, as PermissionPolicy.check decides it (search_texts,
 * then check_search). `mode` is the tool name unless it is "search". */
static int decide_search(RulesetObject *self, PyObject *args, const char *mode, size_t mode_n,
                         int *list) {
    cj_buf b = {.data = b.stack, .len = 0, .cap = sizeof b.stack};
    size_t cut[2] = {0, 0}; /* where the two separators are */
    int rc = 1;
    if (mode)
        rc = cj_put(&b, mode, mode_n) < 0 ? -1 : 1;
    else
        rc = put_text_field(self, &b, args, KEY_MODE);
    if (rc == 1) {
        cut[0] = b.len;
        rc = cj_put(&b, " ", 1) < 0 ? -1 : put_text_field(self, &b, args, KEY_QUERY);
    }
    if (rc == 1) {
        cut[1] = b.len;
        rc = cj_put(&b, " ", 1) < 0 ? -1 : put_path_field(self, &b, args, KEY_PATH);
    }
    if (rc == 1) {
        /* The strict form: spaces inside the mode, query or path read as \x1f. */
        char small[256], *strict = NULL;
        bool spaced = false;
        for (size_t i = 0; i < b.len && !spaced; i++)
            spaced = b.data[i] == ' ' && i != cut[0] && i != cut[1];
        if (spaced && !(strict = b.len <= sizeof small ? small : PyMem_Malloc(b.len))) {
            PyErr_NoMemory();
            rc = -1;
        }
        for (size_t i = 0; strict && i < b.len; i++)
            strict[i] = b.data[i] == ' ' && i != cut[0] && i != cut[1] ? '\x1f' : b.data[i];
        if (rc == 1 && search_list(self, b.data, b.len, strict, b.len, list) < 0)
            rc = -1;
        if (strict != small)
            PyMem_Free(strict);
    }
    if (b.data != b.stack)
        PyMem_Free(b.data);
    return rc;
}

/* A multi-file read ("files", no "file_path"), as _check_slow decides it: each file's path
 * (_read_paths: a dict's "path" or a str, normalised; None "") decided alone, the default
 * when no rule matches; deny if any file is denied, else ask if any is asked, else allow.
 * "files" of another type, an entry of another type and a str subclass are left to Python.
 * 1 done, 0 not a shape decide takes, -1 error. */
static int decide_files(RulesetObject *self, PyObject *args, int *list) {
    PyObject *files = arg(self, args, KEY_FILES);
    if (!files)
        return PyErr_Occurred() ? -1 : 0;
    bool is_list = PyList_CheckExact(files);
    if ((!is_list && !PyTuple_CheckExact(files)) || self->default_list == A3S_LIST_NONE)
        return 0;
    Py_INCREF(files); /* a dict lookup below may run a key's __eq__ */
    cj_buf b = {.data = b.stack, .len = 0, .cap = sizeof b.stack};
    int rc = 1;
    bool asked = false, denied = false;
    for (Py_ssize_t i = 0; rc == 1 && !denied; i++) {
        Py_ssize_t n = is_list ? PyList_Size(files) : PyTuple_Size(files);
        if (i >= n && (i > 0 || n > 0))
            break; /* an empty list is one empty path */
        PyObject *entry = i >= n ? Py_None
                          : is_list ? PyList_GetItem(files, i)
                                    : PyTuple_GetItem(files, i);
        if (!entry) {
            rc = -1;
            break;
        }
        Py_INCREF(entry);
        b.len = 0;
        if (PyDict_CheckExact(entry)) {
            rc = put_path_field(self, &b, entry, KEY_PATH);
        } else if (entry != Py_None) {
            Py_ssize_t pn;
            const char *p = exact_utf8(entry, &pn);
            rc = !p ? 0 : put_path(self, &b, p, (size_t)pn) < 0 ? -1 : 1;
        }
        Py_DECREF(entry);
        a3s_match m = {.struct_size = sizeof m};
        a3s_error err;
        if (rc == 1 && a3s_ruleset_check(self->rs, "read", 4, b.data, b.len, &m, &err) != A3S_OK) {
            raise_error(self->native_error, &err);
            rc = -1;
        }
        int got = m.list == A3S_LIST_NONE ? self->default_list : m.list;
        denied = rc == 1 && got == A3S_LIST_DENY;
        asked = asked || got == A3S_LIST_ASK;
    }
    Py_DECREF(files);
    if (b.data != b.stack)
        PyMem_Free(b.data);
    *list = denied ? A3S_LIST_DENY : asked ? A3S_LIST_ASK : A3S_LIST_ALLOW;
    return rc;
}

/* Whether git_target_spellings finds no other spelling of a git target: after each ':',
 * the path is absolute, or already as _tree_path writes it (no empty, "." or ".." part). */
static bool git_target_normal(const char *t, size_t n) {
    for (const char *colon = memchr(t, ':', n); colon;
         colon = memchr(colon + 1, ':', n - (size_t)(colon + 1 - t))) {
        const char *p = colon + 1, *end = t + n;
        if (p == end || *p == '/')
            continue;
        for (const char *part = p;; part++) {
            const char *slash = memchr(part, '/', (size_t)(end - part));
            size_t len = (size_t)((slash ? slash : end) - part);
            if (len == 0 || (len <= 2 && memcmp(part, "..", len) == 0))
                return false;
            if (!slash)
                break;
            part = slash;
        }
    }
    return true;
}

/* The remembered list of a bash line, or -1. */
static int memo_get(RulesetObject *self, PyObject *line, Py_hash_t h) {
    if (!self->memo)
        return -1;
    memo_entry *e = &self->memo[(size_t)h & (MEMO_SLOTS - 1)];
    if (!e->line || e->hash != h)
        return -1;
    if (e->line != line) {
        int same = PyObject_RichCompareBool(e->line, line, Py_EQ);
        if (same <= 0) {
            if (same < 0)
                PyErr_Clear();
            return -1;
        }
    }
    return e->list;
}

static void memo_put(RulesetObject *self, PyObject *line, Py_hash_t h, int list) {
    if (!self->memo && !(self->memo = PyMem_Calloc(MEMO_SLOTS, sizeof *self->memo)))
        return; /* no memo: every line is decided afresh */
    memo_entry *e = &self->memo[(size_t)h & (MEMO_SLOTS - 1)];
    Py_INCREF(line);
    Py_XDECREF(e->line);
    e->line = line;
    e->hash = h;
    e->list = list;
}

static PyObject *ruleset_decide(PyObject *obj, PyObject *const *args, Py_ssize_t nargs) {
    RulesetObject *self = (RulesetObject *)obj;
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "decide(tool, args) takes 2 arguments");
        return NULL;
    }
    if (!self->outcomes) {
        PyErr_SetString(PyExc_RuntimeError, "decide() before set_outcomes()");
        return NULL;
    }
    PyObject *a = args[1] == Py_None ? NULL : args[1];
    if (a && !PyDict_CheckExact(a))
        Py_RETURN_NONE;
    Py_ssize_t tn;
    const char *tool = exact_utf8(args[0], &tn);
    if (!tool || tn > DECIDE_TOOL_MAX)
        Py_RETURN_NONE;
    char name[DECIDE_TOOL_MAX + 1];
    for (Py_ssize_t i = 0; i < tn; i++) {
        if ((unsigned char)tool[i] >= 0x80)
            Py_RETURN_NONE;
        name[i] = (char)(tool[i] >= 'A' && tool[i] <= 'Z' ? tool[i] + 32 : tool[i]);
    }
    size_t n = (size_t)tn;
    name[n] = '\0';
    int list = A3S_LIST_NONE, rc = 1;
    subject_text s;
    subject_init(&s);
    PyObject *line = NULL;
    Py_hash_t hash = -1;
#define NAME_IS(lit) (n == sizeof(lit) - 1 && memcmp(name, lit, n) == 0)
    if (NAME_IS("search") || NAME_IS("grep") || NAME_IS("glob") || NAME_IS("bm25")) {
        if (!a)
            rc = 0; /* None is no Mapping: check() reads it another way */
        else
            rc = decide_search(self, a, NAME_IS("search") ? NULL : name, n, &list);
        if (rc != 1)
            goto done;
        goto decided;
    }
    if (NAME_IS("bash")) {
        line = arg(self, a, KEY_COMMAND);
        if (!line && PyErr_Occurred()) {
            rc = -1;
            goto done;
        }
        if (line) {
            Py_ssize_t ln;
            if (!(s.p = exact_utf8(line, &ln))) {
                rc = 0;
                goto done;
            }
            s.n = (size_t)ln;
            if (s.n <= MEMO_LINE_MAX) {
                if ((hash = PyObject_Hash(line)) == -1) {
                    rc = -1;
                    goto done;
                }
                int hit = memo_get(self, line, hash);
                if (hit >= 0) {
                    list = hit;
                    goto decided;
                }
            }
        }
    } else if (NAME_IS("read") || NAME_IS("write") || NAME_IS("edit") || NAME_IS("download")) {
        if (NAME_IS("read") && a) {
            int has_path = PyDict_Contains(a, self->keys[KEY_FILE_PATH]);
            int has_files = has_path ? 0 : PyDict_Contains(a, self->keys[KEY_FILES]);
            if (has_path < 0 || has_files < 0) {
                rc = -1;
                goto done;
            }
            if (has_files) {
                if ((rc = decide_files(self, a, &list)) == 1)
                    goto decided; /* one decision per file */
                goto done;
            }
        }
        if ((rc = put_path_field(self, &s.buf, a, KEY_FILE_PATH)) != 1)
            goto done;
        s.p = s.buf.data;
        s.n = s.buf.len;
        if (NAME_IS("read") && memchr(s.p, '\n', s.n)) {
            rc = 0;
            goto done;
        }
    } else if (NAME_IS("ls")) {
        if ((rc = put_path_field(self, &s.buf, a, KEY_PATH)) != 1)
            goto done;
        s.p = s.buf.data;
        s.n = s.buf.len;
    } else {
        PyObject *target = NAME_IS("git") ? arg(self, a, KEY_TARGET) : NULL;
        if (PyErr_Occurred()) {
            rc = -1;
            goto done;
        }
        if (target && PyUnicode_Check(target)) {
            Py_ssize_t tl;
            const char *t = exact_utf8(target, &tl);
            if (!t || !git_target_normal(t, (size_t)tl)) {
                rc = 0; /* REV:path: every spelling of the path */
                goto done;
            }
        }
        if (!a) {
            rc = cj_put(&s.buf, "{}", 2) < 0 ? -1 : 1;
        } else if (cj_encode(&s.buf, a, 0) < 0) {
            rc = PyErr_ExceptionMatches(PyExc_MemoryError) ? -1 : 0;
            if (rc == 0)
                PyErr_Clear();
        }
        if (rc != 1)
            goto done;
        s.p = s.buf.data;
        s.n = s.buf.len;
    }
    {
        a3s_match match = {.struct_size = sizeof match};
        a3s_error err;
        if (a3s_ruleset_check(self->rs, name, n, s.p, s.n, &match, &err) != A3S_OK) {
            raise_error(self->native_error, &err);
            rc = -1;
            goto done;
        }
        list = match.list;
        if (hash != -1)
            memo_put(self, line, hash, list);
    }
decided:
    subject_release(&s);
    {
        PyObject *out = PyTuple_GetItem(self->outcomes, list);
        Py_XINCREF(out);
        return out;
    }
done:
    subject_release(&s);
    if (rc < 0)
        return NULL;
    Py_RETURN_NONE;
#undef NAME_IS
}

/* protected_names() -> (dirs, files): the top-level names the sandbox keeps
 * read-only, exact spellings, from the C core (one list for every layer). */
static PyObject *py_protected_names(PyObject *mod, PyObject *unused) {
    (void)mod;
    (void)unused;
    PyObject *dirs = PyList_New(0), *files = PyList_New(0), *out = NULL;
    const char *name;
    uint64_t flags;
    for (size_t i = 0; dirs && files && a3s_protected_name(i, &name, &flags, NULL) == A3S_OK;
         i++) {
        PyObject *s = PyUnicode_FromString(name);
        if (!s || PyList_Append((flags & A3S_PROTECTED_DIR) ? dirs : files, s) < 0) {
            Py_XDECREF(s);
            goto done;
        }
        Py_DECREF(s);
    }
    if (dirs && files) {
        PyObject *d = PyList_AsTuple(dirs), *f = d ? PyList_AsTuple(files) : NULL;
        if (d && f)
            out = PyTuple_Pack(2, d, f);
        Py_XDECREF(d);
        Py_XDECREF(f);
    }
done:
    Py_XDECREF(dirs);
    Py_XDECREF(files);
    return out;
}

#if defined(__linux__)
/* ---- inotify and statfs --------------------------------------------------
 * The system calls the workspace tracker (verification/_inotify.py) needs and
 * Python's os module lacks; what to watch and what an event means is decided
 * there. Failures raise OSError with the errno. */
#include <errno.h>
#include <sys/inotify.h>
#include <sys/vfs.h>

/* inotify_init() -> fd: a non-blocking, close-on-exec instance. */
static PyObject *py_inotify_init(PyObject *mod, PyObject *noargs) {
    (void)mod;
    (void)noargs;
    int fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    if (fd < 0)
        return PyErr_SetFromErrno(PyExc_OSError);
    return PyLong_FromLong(fd);
}

/* inotify_add_watch(fd, path, mask) -> wd */
static PyObject *py_inotify_add_watch(PyObject *mod, PyObject *args) {
    (void)mod;
    int fd, wd;
    unsigned int mask;
    PyObject *path = NULL;
    if (!PyArg_ParseTuple(args, "iO&I", &fd, PyUnicode_FSConverter, &path, &mask))
        return NULL;
    const char *cpath = PyBytes_AsString(path);
    if (!cpath) {
        Py_DECREF(path);
        return NULL;
    }
    Py_BEGIN_ALLOW_THREADS
    wd = inotify_add_watch(fd, cpath, mask);
    Py_END_ALLOW_THREADS
    Py_DECREF(path);
    if (wd < 0)
        return PyErr_SetFromErrno(PyExc_OSError);
    return PyLong_FromLong(wd);
}

/* inotify_rm_watch(fd, wd) */
static PyObject *py_inotify_rm_watch(PyObject *mod, PyObject *args) {
    (void)mod;
    int fd, wd;
    if (!PyArg_ParseTuple(args, "ii", &fd, &wd))
        return NULL;
    if (inotify_rm_watch(fd, wd) < 0)
        return PyErr_SetFromErrno(PyExc_OSError);
    Py_RETURN_NONE;
}

/* fstatfs_type(fd) -> the file system's magic number (statfs f_type) */
static PyObject *py_fstatfs_type(PyObject *mod, PyObject *arg) {
    (void)mod;
    int fd = (int)PyLong_AsLong(arg);
    if (fd == -1 && PyErr_Occurred())
        return NULL;
    struct statfs sfs;
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = fstatfs(fd, &sfs);
    Py_END_ALLOW_THREADS
    if (rc < 0)
        return PyErr_SetFromErrno(PyExc_OSError);
    return PyLong_FromUnsignedLong((unsigned long)sfs.f_type);
}

static int add_inotify_constants(PyObject *m) {
    static const struct {
        const char *name;
        unsigned long value;
    } constants[] = {
        {"IN_MODIFY", IN_MODIFY},           {"IN_ATTRIB", IN_ATTRIB},
        {"IN_CLOSE_WRITE", IN_CLOSE_WRITE}, {"IN_MOVED_FROM", IN_MOVED_FROM},
        {"IN_MOVED_TO", IN_MOVED_TO},       {"IN_CREATE", IN_CREATE},
        {"IN_DELETE", IN_DELETE},           {"IN_DELETE_SELF", IN_DELETE_SELF},
        {"IN_MOVE_SELF", IN_MOVE_SELF},     {"IN_UNMOUNT", IN_UNMOUNT},
        {"IN_Q_OVERFLOW", IN_Q_OVERFLOW},   {"IN_IGNORED", IN_IGNORED},
        {"IN_ONLYDIR", IN_ONLYDIR},         {"IN_EXCL_UNLINK", IN_EXCL_UNLINK},
        {"IN_ISDIR", IN_ISDIR},
    };
    for (size_t i = 0; i < sizeof constants / sizeof constants[0]; i++) {
        PyObject *v = PyLong_FromUnsignedLong(constants[i].value);
        if (!v || PyModule_AddObjectRef(m, constants[i].name, v) < 0) {
            Py_XDECREF(v);
            return -1;
        }
        Py_DECREF(v);
    }
    return 0;
}

#define INOTIFY_METHODS                                                                        \
    {"inotify_init", py_inotify_init, METH_NOARGS,                                             \
     "inotify_init() -> fd: a non-blocking, close-on-exec inotify instance."},                 \
        {"inotify_add_watch", py_inotify_add_watch, METH_VARARGS,                              \
         "inotify_add_watch(fd, path, mask) -> wd."},                                          \
        {"inotify_rm_watch", py_inotify_rm_watch, METH_VARARGS, "inotify_rm_watch(fd, wd)."},  \
        {"fstatfs_type", py_fstatfs_type, METH_O,                                              \
         "fstatfs_type(fd) -> int: the file system's magic number."},
#else
#define INOTIFY_METHODS
static int add_inotify_constants(PyObject *m) {
    (void)m;
    return 0;
}
#endif

/* A reader's string as str (bytes that are not UTF-8 as surrogate escapes), None for {NULL}. */
static PyObject *reader_str(a3s_str s) {
    if (!s.p)
        Py_RETURN_NONE;
    return PyUnicode_DecodeUTF8(s.p, (Py_ssize_t)s.n, "surrogateescape");
}

static PyObject *reader_index(size_t i) {
    return PyLong_FromSsize_t(i == SIZE_MAX ? -1 : (Py_ssize_t)i);
}

/* One item of a reading's sequence: item i of `of` (a source, a word, a command, or NULL for
 * the reading's own lists). NULL with the error set when it cannot be built. */
typedef PyObject *(*reader_item)(const a3s_bash_reading *rd, const void *of, size_t i);

/* A list (or tuple) of the n items `item` builds; NULL when one of them fails. */
static PyObject *reader_seq(const a3s_bash_reading *rd, const void *of, size_t n,
                            reader_item item, bool tuple) {
    PyObject *seq = tuple ? PyTuple_New((Py_ssize_t)n) : PyList_New((Py_ssize_t)n);
    for (size_t i = 0; seq && i < n; i++) {
        PyObject *v = item(rd, of, i);
        if (!v) {
            Py_CLEAR(seq);
            break;
        }
        if (tuple)
            PyTuple_SetItem(seq, (Py_ssize_t)i, v);
        else
            PyList_SetItem(seq, (Py_ssize_t)i, v);
    }
    return seq;
}

static PyObject *token_item(const a3s_bash_reading *rd, const void *of, size_t k) {
    const a3s_bash_token *t = &rd->tokens[((const a3s_bash_source *)of)->tok0 + k];
    return Py_BuildValue("(iN)", t->kind, reader_str(t->text));
}

static PyObject *source_item(const a3s_bash_reading *rd, const void *of, size_t i) {
    (void)of;
    const a3s_bash_source *s = &rd->sources[i];
    PyObject *tokens = reader_seq(rd, s, s->ntok, token_item, true);
    return tokens ? Py_BuildValue("(NNiiNN)", reader_str(s->code), reader_index(s->parent),
                                  s->depth, s->via, reader_str(s->via_name), tokens)
                  : NULL;
}

static PyObject *value_item(const a3s_bash_reading *rd, const void *of, size_t k) {
    (void)rd;
    return reader_str(((const a3s_bash_word *)of)->values[k]);
}

static PyObject *word_item(const a3s_bash_reading *rd, const void *of, size_t i) {
    (void)of;
    const a3s_bash_word *w = &rd->words[i];
    PyObject *values = reader_seq(rd, w, w->nvalues, value_item, true);
    return values ? Py_BuildValue("(NNnnOO)", reader_str(w->shown), values, (Py_ssize_t)w->sub0,
                                  (Py_ssize_t)w->sub1, w->split ? Py_True : Py_False,
                                  w->unknown ? Py_True : Py_False)
                  : NULL;
}

static PyObject *redir_item(const a3s_bash_reading *rd, const void *of, size_t i) {
    (void)of;
    const a3s_bash_redir *r = &rd->redirs[i];
    return Py_BuildValue("(NNN)", reader_str(r->op), reader_index(r->target),
                         reader_str(r->body));
}

static PyObject *stage_item(const a3s_bash_reading *rd, const void *of, size_t k) {
    (void)rd;
    const a3s_bash_simple *c = of;
    return Py_BuildValue("(nN)", (Py_ssize_t)c->stages[k], reader_str(c->dirs[k]));
}

static PyObject *command_item(const a3s_bash_reading *rd, const void *of, size_t i) {
    (void)of;
    const a3s_bash_simple *c = &rd->cmds[i];
    PyObject *stages = reader_seq(rd, c, c->nstages, stage_item, true);
    return stages ? Py_BuildValue("(nnnnnNNNOO)", (Py_ssize_t)c->source, (Py_ssize_t)c->w0,
                                  (Py_ssize_t)c->nw, (Py_ssize_t)c->r0, (Py_ssize_t)c->nr, stages,
                                  reader_index(c->upstream), reader_str(c->fed),
                                  c->piped ? Py_True : Py_False, c->dynamic ? Py_True : Py_False)
                  : NULL;
}

/* bash_read(line) -> (complete, bounded, sources, commands, words, redirs): the C reader's
 * reading of a bash line as structure, for the guardrail (see a3s_bash_reading in
 * native/src/bash_split.h; python/codeward/guardrail/_reading.py builds on it). */
static PyObject *py_bash_read(PyObject *mod, PyObject *arg) {
    (void)mod;
    const char *line;
    Py_ssize_t len;
    PyObject *owner;
    if (as_bytes(arg, &line, &len, &owner) < 0)
        return NULL;
    a3s_bash_split *sp = NULL;
    int rc = a3s_bash_read_line(line, (size_t)len, &sp);
    Py_XDECREF(owner);
    if (rc != A3S_OK)
        return PyErr_NoMemory();
    const a3s_bash_reading *rd = sp->reading;
    PyObject *result;
    if (!rd) {
        result = Py_BuildValue("(OO[][][][])", Py_False, Py_True);
    } else {
        result = Py_BuildValue("(OONNNN)", sp->complete ? Py_True : Py_False,
                               rd->bounded ? Py_True : Py_False,
                               reader_seq(rd, NULL, rd->nsources, source_item, false),
                               reader_seq(rd, NULL, rd->ncmds, command_item, false),
                               reader_seq(rd, NULL, rd->nwords, word_item, false),
                               reader_seq(rd, NULL, rd->nredirs, redir_item, false));
    }
    a3s_bash_split_free(sp);
    return result;
}

static PyMethodDef module_methods[] = {
    {"bash_read", py_bash_read, METH_O,
     "bash_read(line) -> (complete, bounded, sources, commands, words, redirs): the C "
     "reader's reading of a bash line, for the guardrail."},
    {"protected_names", py_protected_names, METH_NOARGS,
     "protected_names() -> (dirs, files): the names the sandbox keeps read-only."},
    {"version", py_version, METH_NOARGS, "version() -> dict: the C library's version."},
    {"abi_version", py_abi_version, METH_NOARGS, "abi_version() -> int."},
    {"features", py_features, METH_NOARGS, "features() -> dict: what the kernel offers."},
    {"status_name", py_status_name, METH_O, "status_name(code) -> str."},
    {"path_normalize", py_path_normalize, METH_O, "path_normalize(path) -> str."},
    {"spawn_child", (PyCFunction)(void (*)(void))py_spawn_child, METH_VARARGS | METH_KEYWORDS,
     "spawn_child(path, args, env, cwd=None, init=None, host_env=None, grace_ms=0, "
     "init_sha256=None, bwrap=None, allow_unowned=False) -> "
     "(Child, stdin_fd, stdout_fd, stderr_fd): an owned process on the host."},
    {"relay", (PyCFunction)(void (*)(void))py_relay, METH_VARARGS | METH_KEYWORDS,
     "relay(a, b, cancel_fd=-1, pipe_bytes=0) -> (a_to_b, b_to_a, reset, cancelled)."},
    {"canonical_json", py_canonical_json, METH_O,
     "canonical_json(value) -> str: compact JSON, keys sorted, ECMAScript numbers."},
    INOTIFY_METHODS{NULL, NULL, 0, NULL},
};

static int module_exec(PyObject *m) {
    module_state *st = state_of_module(m);
    for (int k = 0; k < NKEYS; k++)
        if (!(st->keys[k] = PyUnicode_InternFromString(KEY_NAMES[k])))
            return -1;
    if (a3s_abi_version() != A3S_ABI_VERSION) {
        PyErr_SetString(PyExc_ImportError, "codeward._native: C library ABI mismatch");
        return -1;
    }
    st->native_error = PyErr_NewExceptionWithDoc(
        "codeward._native.NativeError",
        "An error from the C core: args are (status_name, message, detail, sys_errno).",
        PyExc_Exception, NULL);
    if (!st->native_error || PyModule_AddObjectRef(m, "NativeError", st->native_error) < 0)
        return -1;
    st->glob_type = PyType_FromModuleAndSpec(m, &glob_spec, NULL);
    if (!st->glob_type || PyModule_AddObjectRef(m, "Glob", st->glob_type) < 0)
        return -1;
    st->ruleset_type = PyType_FromModuleAndSpec(m, &ruleset_spec, NULL);
    if (!st->ruleset_type || PyModule_AddObjectRef(m, "Ruleset", st->ruleset_type) < 0)
        return -1;
    st->sandbox_type = PyType_FromModuleAndSpec(m, &sandbox_spec, NULL);
    if (!st->sandbox_type || PyModule_AddObjectRef(m, "Sandbox", st->sandbox_type) < 0)
        return -1;
    st->child_type = PyType_FromModuleAndSpec(m, &child_spec, NULL);
    if (!st->child_type || PyModule_AddObjectRef(m, "Child", st->child_type) < 0)
        return -1;
    /* the SHA-256 of the a3s-init built with this module (setup.py): the core
     * checks the init it is given against it (docs/security.md) */
#ifdef A3S_INIT_SHA256
    if (PyModule_AddStringConstant(m, "INIT_SHA256", A3S_INIT_SHA256) < 0)
        return -1;
#else
    if (PyModule_AddObjectRef(m, "INIT_SHA256", Py_None) < 0)
        return -1;
#endif
    if (PyModule_AddIntConstant(m, "ABI_VERSION", A3S_ABI_VERSION) < 0 ||
        PyModule_AddIntConstant(m, "BASH_MAX_DEPTH", A3S_BASH_MAX_DEPTH) < 0 ||
        PyModule_AddIntConstant(m, "LIST_NONE", A3S_LIST_NONE) < 0 ||
        PyModule_AddIntConstant(m, "LIST_DENY", A3S_LIST_DENY) < 0 ||
        PyModule_AddIntConstant(m, "LIST_ALLOW", A3S_LIST_ALLOW) < 0 ||
        PyModule_AddIntConstant(m, "LIST_ASK", A3S_LIST_ASK) < 0 ||
        PyModule_AddIntConstant(m, "RULE_ANY_ARGS", (long)A3S_RULE_ANY_ARGS) < 0 ||
        PyModule_AddIntConstant(m, "RULE_TOOL_GLOB", (long)A3S_RULE_TOOL_GLOB) < 0 ||
        PyModule_AddIntConstant(m, "RULE_MCP_SERVER", (long)A3S_RULE_MCP_SERVER) < 0 ||
        PyModule_AddIntConstant(m, "RULE_REWRITTEN", (long)A3S_RULE_REWRITTEN) < 0 ||
        PyModule_AddIntConstant(m, "RULE_PREFIX", (long)A3S_RULE_PREFIX) < 0 ||
        PyModule_AddIntConstant(m, "BASH_INCOMPLETE", (long)A3S_BASH_INCOMPLETE) < 0 ||
        PyModule_AddIntConstant(m, "BASH_EXPLICIT", (long)A3S_BASH_EXPLICIT) < 0 ||
        PyModule_AddIntConstant(m, "BASH_WHY_RULE", A3S_BASH_WHY_RULE) < 0 ||
        PyModule_AddIntConstant(m, "BASH_WHY_DEFAULT", A3S_BASH_WHY_DEFAULT) < 0 ||
        PyModule_AddIntConstant(m, "BASH_WHY_DYNAMIC", A3S_BASH_WHY_DYNAMIC) < 0 ||
        PyModule_AddIntConstant(m, "BASH_WHY_INCOMPLETE", A3S_BASH_WHY_INCOMPLETE) < 0)
        return -1;
    return add_inotify_constants(m);
}

static int module_traverse(PyObject *m, visitproc visit, void *arg) {
    module_state *st = state_of_module(m);
    for (int k = 0; k < NKEYS; k++)
        Py_VISIT(st->keys[k]);
    Py_VISIT(st->native_error);
    Py_VISIT(st->glob_type);
    Py_VISIT(st->ruleset_type);
    Py_VISIT(st->sandbox_type);
    Py_VISIT(st->child_type);
    return 0;
}

static int module_clear(PyObject *m) {
    module_state *st = state_of_module(m);
    for (int k = 0; k < NKEYS; k++)
        Py_CLEAR(st->keys[k]);
    Py_CLEAR(st->native_error);
    Py_CLEAR(st->glob_type);
    Py_CLEAR(st->ruleset_type);
    Py_CLEAR(st->sandbox_type);
    Py_CLEAR(st->child_type);
    return 0;
}

static PyModuleDef_Slot module_slots[] = {
    {Py_mod_exec, module_exec},
    {0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,
    "codeward._native",
    "The a3s C core (private: use the codeward package).",
    sizeof(module_state),
    module_methods,
    module_slots,
    module_traverse,
    module_clear,
    NULL,
};

PyMODINIT_FUNC PyInit__native(void) { return PyModuleDef_Init(&module_def); }
