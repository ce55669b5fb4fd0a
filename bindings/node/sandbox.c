/* sandbox.c - Node-API glue of the sandbox (a3s_sandbox_*), in plain C.
 *
 * As in binding.c, nothing but argument conversion, threads and error
 * mapping lives here; the selection rules and the option checks are in
 * lib/sandbox.js.
 *
 * Every command runs on a thread of its own, never on the event loop and
 * never on libuv's thread pool (four commands of a few minutes would stall
 * every fs call of the host there): the thread calls a3s_sandbox_exec and
 * hands the result back through a thread-safe function, which settles the
 * command's promise on the loop. Each command has a cancel pipe that the C
 * core polls; cancel(id) writes it (lib/sandbox.js calls it for an
 * AbortSignal), and so does close().
 *
 * Lifetime: the handle outlives everything that uses it (the JS object,
 * each running command or probe, a closing thread: each holds a
 * reference). The C sandbox is freed (the long-lived sandbox stopped, its
 * placeholders removed) once the handle is closed and nothing runs in it:
 * by close(), on a thread, whose promise settles then; by the teardown of
 * the environment (the process's exit, or a worker's: a cleanup hook); or
 * by the garbage collector. A command still running at a teardown is
 * cancelled, and its thread frees the sandbox when it returns: so the addon
 * is never unloaded (a worker's exit would otherwise unmap the code those
 * threads run), and a job's memory lives until its thread, its queued
 * result and its thread-safe function (which the teardown destroys, with a
 * lock that tells the thread) have all let go of it.
 */
#define _GNU_SOURCE /* strdup, pipe, pthread, dladdr */
#include "glue.h"

/* The SHA-256 of the a3s-init built with this addon (binding.gyp writes the
 * header), which the core checks the init against: an init changed since the
 * build is refused (docs/security.md, "The init is pinned, not looked up"). */
#ifdef A3S_HAVE_INIT_SHA256
#include "a3s_init_sha256.h"
#else
#define A3S_INIT_SHA256 NULL
#endif

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#if defined(_WIN32)
/* The sandbox is Linux-only (the C core says so for every call); Windows has
 * neither pipes nor pthreads as used here. */
bool register_sandbox(napi_env env, napi_value exports) {
    (void)env;
    (void)exports;
    return true;
}
#else

enum job_kind { JOB_EXEC, JOB_PROBE, JOB_CLOSE, JOB_CHUNK, JOB_SPAWN };

struct handle;

/* One call running on a thread of its own. */
struct job {
    enum job_kind kind;
    struct handle *h;
    double id;        /* exec: the caller's id for cancel() */
    int cancel[2];    /* exec: the pipe the C core polls */
    bool by_close;    /* exec: close() cancelled it */
    char *command;
    size_t command_len;
    char *cwd; /* exec: NULL, or where the command starts */
    unsigned char *stdin_data; /* exec: NULL (/dev/null), or a copy of the bytes for its stdin */
    size_t stdin_len;
    char **env;
    size_t envc;
    uint64_t timeout_ms, grace_ms, max_output;
    char **rules[3]; /* exec: the exec check's deny and ask patterns, approved commands;
                        spawn: rules[0] holds the program's arguments */
    size_t nrules[3];
    int grant_fd;    /* exec: the caller's end of a network grant's socket, or -1 */
    char *digest;    /* exec: the policy digest the command must run under, or NULL */
    a3s_child *child;     /* spawn: the started program, until the loop takes it */
    struct handle *owner; /* spawn: the handle it counts in (h->procs, a reference) */
    a3s_child_stdio stdio; /* spawn: its pipes, until the loop takes them */
    napi_deferred deferred;
    napi_ref on_output;  /* exec: the function given each piece of output, or NULL */
    napi_threadsafe_function tsfn; /* the output's pieces, then the result, in order */
    int rc;
    a3s_error err;
    a3s_process_result *result;
    struct job *next;    /* in h->jobs (exec and probe) */
    struct job *queued;  /* in h->queue: waiting for one of the handle's workers */
    pthread_mutex_t gate; /* orders the thread's last call with the tsfn's destruction */
    bool tsfn_gone;       /* the thread-safe function was destroyed (a teardown) */
    unsigned refs;        /* the thread, the tsfn, a queued result */
};

struct handle {
    pthread_mutex_t lock;
    pthread_cond_t changed; /* the jobs ended, or the sandbox was freed */
    a3s_sandbox *sb;        /* NULL once freed */
    char *workspace;
    unsigned refs;          /* the JS object, each job, each closing thread */
    bool closed;            /* no new job; the sandbox goes once idle */
    bool freeing;           /* a3s_sandbox_free runs */
    bool hooked;            /* the environment's cleanup hook is registered */
    struct job *jobs;       /* running execs and probes */
    unsigned procs;         /* owned processes started in it (they need the sandbox) */
    /* Execs and probes run on the handle's worker threads, which wait for
     * the next one a while before they end: a thread that sleeps in a
     * condition wait is woken at once, where a new thread for each call
     * first waits for the scheduler (the cost of a Node exec on a busy
     * machine). Each worker holds a reference; they end once closed. */
    pthread_cond_t work;    /* a job was queued, or the handle closed */
    struct job *queue, **queue_tail;
    unsigned queued, idle;  /* jobs waiting; workers waiting for one */
};

#define WORKER_IDLE_MS 5000 /* an idle worker waits this long for a job before it ends */

static const napi_type_tag SANDBOX_TAG = {0x6133735f73616e64ull, 0x0b0c0d0e0f101112ull};

static void handle_unref(struct handle *h) {
    pthread_mutex_lock(&h->lock);
    bool last = --h->refs == 0;
    pthread_mutex_unlock(&h->lock);
    if (last) {
        pthread_mutex_destroy(&h->lock);
        pthread_cond_destroy(&h->changed);
        pthread_cond_destroy(&h->work);
        free(h->workspace);
        free(h);
    }
}

/* Frees the C sandbox if the handle is closed and nothing runs in it (on
 * the calling thread: it stops the long-lived sandbox, a few ms). */
static void release_if_idle(struct handle *h) {
    pthread_mutex_lock(&h->lock);
    a3s_sandbox *sb = NULL;
    if (h->closed && !h->jobs && !h->procs && h->sb) {
        sb = h->sb;
        h->sb = NULL;
        h->freeing = true;
    }
    pthread_mutex_unlock(&h->lock);
    if (!sb)
        return;
    a3s_sandbox_free(sb);
    pthread_mutex_lock(&h->lock);
    h->freeing = false;
    pthread_cond_broadcast(&h->changed);
    pthread_mutex_unlock(&h->lock);
}

/* Under h->lock: no new job, and every running command is cancelled. */
static void close_locked(struct handle *h) {
    h->closed = true;
    pthread_cond_broadcast(&h->work); /* idle workers end; queued jobs still run (cancelled) */
    for (struct job *j = h->jobs; j; j = j->next) {
        if (j->kind == JOB_EXEC && !j->by_close) {
            j->by_close = true;
            ssize_t n = write(j->cancel[1], "x", 1);
            (void)n; /* a full pipe was written before: it is cancelled */
        }
    }
}

/* Closes now, on this thread: the teardown and the collector's path. */
static void shutdown_now(struct handle *h) {
    pthread_mutex_lock(&h->lock);
    close_locked(h);
    pthread_mutex_unlock(&h->lock);
    release_if_idle(h);
}

static void cleanup_hook(void *arg) {
    struct handle *h = arg;
    h->hooked = false;
    shutdown_now(h);
}

static void sandbox_finalize(napi_env env, void *data, void *hint) {
    (void)hint;
    struct handle *h = data;
    if (h->hooked) {
        napi_remove_env_cleanup_hook(env, cleanup_hook, h);
        h->hooked = false;
    }
    shutdown_now(h);
    handle_unref(h);
}

/* An owned process of h is gone: the sandbox may be freed once closed. */
static void proc_left(struct handle *h) {
    pthread_mutex_lock(&h->lock);
    h->procs--;
    pthread_mutex_unlock(&h->lock);
    release_if_idle(h);
    handle_unref(h);
}

static struct job *job_new(enum job_kind kind) {
    struct job *j = calloc(1, sizeof *j);
    if (!j)
        return NULL;
    j->kind = kind;
    j->cancel[0] = j->cancel[1] = -1;
    j->grant_fd = -1;
    j->stdio = (a3s_child_stdio){.struct_size = sizeof j->stdio,
                                 .stdin_fd = -1, .stdout_fd = -1, .stderr_fd = -1};
    pthread_mutex_init(&j->gate, NULL);
    j->refs = 1; /* the creator's, handed to the thread */
    return j;
}

static void job_free(struct job *j) {
    pthread_mutex_destroy(&j->gate);
    if (j->cancel[0] >= 0)
        close(j->cancel[0]);
    if (j->cancel[1] >= 0)
        close(j->cancel[1]);
    for (size_t i = 0; i < j->envc; i++)
        free(j->env[i]);
    free(j->env);
    for (int l = 0; l < 3; l++) {
        for (size_t i = 0; i < j->nrules[l]; i++)
            free(j->rules[l][i]);
        free(j->rules[l]);
    }
    free(j->command);
    free(j->cwd);
    free(j->stdin_data);
    free(j->digest);
    if (j->child) { /* a spawn nobody took (a teardown): stopped */
        a3s_child_free(j->child);
        proc_left(j->owner);
    }
    int fds[3] = {j->stdio.stdin_fd, j->stdio.stdout_fd, j->stdio.stderr_fd};
    for (int i = 0; i < 3; i++)
        if (fds[i] >= 0)
            close(fds[i]);
    a3s_process_result_free(j->result);
    free(j);
}

static void job_unref(struct job *j) {
    pthread_mutex_lock(&j->gate);
    bool last = --j->refs == 0;
    pthread_mutex_unlock(&j->gate);
    if (last)
        job_free(j);
}

/* A piece of an exec's output on its way to the loop: queued on the job's
 * thread-safe function ahead of the result, so every piece is delivered
 * before the promise settles. */
struct chunk {
    enum job_kind kind; /* JOB_CHUNK: told apart from a job in job_done */
    struct job *job;
    int stream;
    size_t len;
    char data[];
};

/* The thread-safe function is destroyed (after its release, or by the
 * environment's teardown, even while the thread still holds it). */
static void tsfn_finalize(napi_env env, void *data, void *hint) {
    (void)hint;
    struct job *j = data;
    if (j->on_output && env)
        napi_delete_reference(env, j->on_output);
    j->on_output = NULL;
    pthread_mutex_lock(&j->gate);
    j->tsfn_gone = true;
    pthread_mutex_unlock(&j->gate);
    job_unref(j);
}

/* ---- results, on the loop ------------------------------------------------- */

static bool set_bool(napi_env env, napi_value obj, const char *name, bool b) {
    napi_value v;
    return napi_get_boolean(env, b, &v) == napi_ok && set_named(env, obj, name, v);
}

static bool set_buffer(napi_env env, napi_value obj, const char *name, const char *data,
                       size_t len) {
    napi_value v;
    void *copy;
    return napi_create_buffer_copy(env, len, data, &copy, &v) == napi_ok &&
           set_named(env, obj, name, v);
}

/* A C string (UTF-8, invalid bytes as U+FFFD) or null. */
static bool optional_string(napi_env env, const char *text, napi_value *out) {
    return text ? napi_create_string_utf8(env, text, NAPI_AUTO_LENGTH, out) == napi_ok
                : napi_get_null(env, out) == napi_ok;
}

/* What the exec check stopped: {decision, rule, command}, or null. */
static bool exec_stopped(napi_env env, const a3s_process_result_view *v, napi_value *out) {
    if (!(v->flags & A3S_RESULT_EXEC_STOPPED))
        return napi_get_null(env, out) == napi_ok;
    napi_value decision, rule, command;
    return napi_create_object(env, out) == napi_ok &&
           napi_create_string_utf8(env, v->exec_stop_list == A3S_LIST_DENY ? "deny" : "ask",
                                   NAPI_AUTO_LENGTH, &decision) == napi_ok &&
           napi_create_string_utf8(env, v->exec_stop_rule ? v->exec_stop_rule : "",
                                   NAPI_AUTO_LENGTH, &rule) == napi_ok &&
           napi_create_string_utf8(env, v->exec_stop_command ? v->exec_stop_command : "",
                                   NAPI_AUTO_LENGTH, &command) == napi_ok &&
           set_named(env, *out, "decision", decision) && set_named(env, *out, "rule", rule) &&
           set_named(env, *out, "command", command);
}

/* {stdout, stderr (Buffers), exitCode, termSignal, flags ..., setupError, neutralized,
 * execStopped}. */
static napi_value make_result(napi_env env, const struct job *j) {
    a3s_process_result_view v = {.struct_size = sizeof v};
    a3s_process_result_get(j->result, &v, NULL);
    napi_value obj, setup, neutralized, stopped;
    if (napi_create_object(env, &obj) != napi_ok ||
        !optional_string(env, v.setup_error, &setup) ||
        !optional_string(env, v.neutralized, &neutralized) || !exec_stopped(env, &v, &stopped))
        return NULL;
    bool ok = set_buffer(env, obj, "stdout", v.stdout_data, v.stdout_len) &&
              set_buffer(env, obj, "stderr", v.stderr_data, v.stderr_len) &&
              set_number(env, obj, "exitCode", v.exit_code) &&
              set_number(env, obj, "termSignal", v.term_signal) &&
              set_bool(env, obj, "timedOut", v.flags & A3S_RESULT_TIMED_OUT) &&
              set_bool(env, obj, "oomKilled", v.flags & A3S_RESULT_OOM_KILLED) &&
              set_bool(env, obj, "outlived", v.flags & A3S_RESULT_OUTLIVED) &&
              set_bool(env, obj, "stdoutTruncated", v.flags & A3S_RESULT_STDOUT_TRUNCATED) &&
              set_bool(env, obj, "stderrTruncated", v.flags & A3S_RESULT_STDERR_TRUNCATED) &&
              set_bool(env, obj, "cancelled", v.flags & A3S_RESULT_CANCELLED) &&
              set_bool(env, obj, "closed", j->by_close) &&
              set_number(env, obj, "stdoutTotal", (double)v.stdout_total) &&
              set_number(env, obj, "stderrTotal", (double)v.stderr_total) &&
              set_number(env, obj, "durationUs", (double)v.duration_us) &&
              set_named(env, obj, "setupError", setup) &&
              set_named(env, obj, "neutralized", neutralized) &&
              set_named(env, obj, "execStopped", stopped);
    return ok ? obj : NULL;
}

/* The thread-safe function's callback: settles the job's promise. env is
 * NULL when the environment is being torn down: nobody waits any more. */
/* On the loop: on_output(stream, Buffer). lib/sandbox.js's wrapper catches
 * what the caller's callback throws, so nothing is pending afterwards. */
static void deliver_chunk(napi_env env, struct chunk *c) {
    napi_value fn, global, args[2];
    if (env && c->job->on_output &&
        napi_get_reference_value(env, c->job->on_output, &fn) == napi_ok && fn &&
        napi_get_global(env, &global) == napi_ok &&
        napi_create_int32(env, c->stream, &args[0]) == napi_ok &&
        napi_create_buffer_copy(env, c->len, c->data, NULL, &args[1]) == napi_ok) {
        napi_value ignored;
        if (napi_call_function(env, global, fn, 2, args, &ignored) != napi_ok) {
            bool pending = false;
            napi_is_exception_pending(env, &pending);
            if (pending)
                napi_get_and_clear_last_exception(env, &ignored);
        }
    }
    free(c);
}

/* On the exec's thread (a3s_exec_options.on_output): queues a copy of the
 * piece; waits while the queue is full, so a slow loop holds the command
 * back as a full pipe would. */
static void queue_chunk(void *ctx, int stream, const char *data, size_t len) {
    struct job *j = ctx;
    struct chunk *c = malloc(sizeof *c + len);
    if (!c)
        return; /* the result still has the output's head and tail */
    c->kind = JOB_CHUNK;
    c->job = j;
    c->stream = stream;
    c->len = len;
    memcpy(c->data, data, len);
    pthread_mutex_lock(&j->gate);
    bool gone = j->tsfn_gone;
    pthread_mutex_unlock(&j->gate);
    if (gone || napi_call_threadsafe_function(j->tsfn, c, napi_tsfn_blocking) != napi_ok)
        free(c);
}

/* ---- owned processes (a3s_sandbox_spawn) ---------------------------------------
 *
 * A process started by spawn() is held by a struct proc: the JS object (until
 * release() or the collector), its waiter thread (until the program ends)
 * and each stop() in flight hold a reference; the last one frees the C
 * handle (a3s_child_free must not race with a wait or a stop) and lets the
 * sandbox go. The waiter thread blocks in a3s_child_wait and reports the
 * exit through a thread-safe function, which keeps the event loop alive
 * while the program runs, as a child_process does. */

static const napi_type_tag PROCESS_TAG = {0x6133735f70726f63ull, 0x1112131415161718ull};

static int start_thread(void *(*fn)(void *), void *arg);

struct proc {
    pthread_mutex_t lock;
    unsigned refs;
    a3s_child *c;
    struct handle *owner;
    napi_threadsafe_function tsfn; /* onExit(code | Error) */
    bool tsfn_gone;
    bool released;  /* the JS object let go (release()) */
    bool hooked;    /* the environment's cleanup hook is registered */
    napi_env env;
};

struct proc_exit {
    int rc;
    int32_t code;
    a3s_error err;
};

static void proc_unref(struct proc *p) {
    pthread_mutex_lock(&p->lock);
    bool last = --p->refs == 0;
    pthread_mutex_unlock(&p->lock);
    if (!last)
        return;
    a3s_child_free(p->c); /* it has ended (or the environment is going: stopped) */
    proc_left(p->owner);
    pthread_mutex_destroy(&p->lock);
    free(p);
}

static void *proc_waiter(void *arg) {
    struct proc *p = arg;
    struct proc_exit *e = calloc(1, sizeof *e);
    a3s_child_status st = {.struct_size = sizeof st};
    a3s_error err = {0};
    int rc;
    do
        rc = a3s_child_wait(p->c, 3600 * 1000, &st, &err);
    while (rc == A3S_OK && !(st.flags & A3S_CHILD_EXITED));
    pthread_mutex_lock(&p->lock);
    if (!p->tsfn_gone) {
        if (e) {
            e->rc = rc;
            e->code = st.exit_code;
            e->err = err;
        }
        if (!e || napi_call_threadsafe_function(p->tsfn, e, napi_tsfn_blocking) != napi_ok)
            free(e);
        napi_release_threadsafe_function(p->tsfn, napi_tsfn_release);
    } else {
        free(e);
    }
    pthread_mutex_unlock(&p->lock);
    proc_unref(p); /* the waiter's */
    return NULL;
}

/* On the loop: onExit(exitCode) or onExit(Error). */
static void proc_exited(napi_env env, napi_value js_cb, void *context, void *data) {
    (void)context;
    struct proc_exit *e = data;
    if (env && js_cb) {
        napi_value arg = NULL, global, ignored;
        if (e->rc == A3S_OK)
            napi_create_int32(env, e->code, &arg);
        else
            arg = make_core_error(env, &e->err);
        if (arg && napi_get_global(env, &global) == napi_ok &&
            napi_call_function(env, global, js_cb, 1, &arg, &ignored) != napi_ok) {
            bool pending = false;
            napi_is_exception_pending(env, &pending);
            if (pending) /* lib/process.js's handler does not throw; keep the loop going */
                napi_get_and_clear_last_exception(env, &ignored);
        }
    }
    free(e);
}

static void proc_tsfn_finalize(napi_env env, void *data, void *hint) {
    (void)env;
    (void)hint;
    struct proc *p = data;
    pthread_mutex_lock(&p->lock);
    p->tsfn_gone = true;
    pthread_mutex_unlock(&p->lock);
    proc_unref(p);
}

/* Stops the program on a thread of its own (a teardown or the collector). */
static void *proc_stopper(void *arg) {
    struct proc *p = arg;
    a3s_child_stop(p->c, NULL, NULL);
    proc_unref(p);
    return NULL;
}

static void proc_stop_detached(struct proc *p) {
    pthread_mutex_lock(&p->lock);
    p->refs++;
    pthread_mutex_unlock(&p->lock);
    if (start_thread(proc_stopper, p) != 0) {
        a3s_child_stop(p->c, NULL, NULL);
        proc_unref(p);
    }
}

static void proc_cleanup_hook(void *arg) {
    struct proc *p = arg;
    p->hooked = false;
    proc_stop_detached(p); /* at the process's exit the init's lifeline ends it anyway */
}

static void proc_finalize(napi_env env, void *data, void *hint) {
    (void)hint;
    struct proc *p = data;
    if (p->hooked) {
        napi_remove_env_cleanup_hook(env, proc_cleanup_hook, p);
        p->hooked = false;
    }
    if (!p->released) {
        p->released = true;
        proc_stop_detached(p); /* collected while it runs: it dies with its handle */
        proc_unref(p);
    }
}

struct proc_stop_work {
    struct proc *p;
    napi_async_work work;
    napi_deferred deferred;
    int sig; /* the stop's first signal */
    int rc;
    a3s_child_status st;
    a3s_error err;
};

static void proc_stop_execute(napi_env env, void *data) {
    (void)env;
    struct proc_stop_work *w = data;
    w->st.struct_size = sizeof w->st;
    w->rc = a3s_child_stop_with(w->p->c, w->sig, &w->st, &w->err);
}

static void proc_stop_complete(napi_env env, napi_status status, void *data) {
    struct proc_stop_work *w = data;
    napi_value v = NULL;
    if (status == napi_ok && w->rc == A3S_OK && napi_create_int32(env, w->st.exit_code, &v) == napi_ok)
        napi_resolve_deferred(env, w->deferred, v);
    else {
        if (w->rc == A3S_OK) {
            w->err = (a3s_error){.code = A3S_E_SYSTEM};
            snprintf(w->err.message, sizeof w->err.message, "stopping the process was cancelled");
        }
        v = make_core_error(env, &w->err);
        if (!v)
            napi_get_undefined(env, &v);
        napi_reject_deferred(env, w->deferred, v);
    }
    napi_delete_async_work(env, w->work);
    proc_unref(w->p);
    free(w);
}

/* A signal number argument (lib/process.js maps names): 1 to 64, else a TypeError. */
static bool get_signal(napi_env env, napi_value v, int *sig) {
    int32_t n = 0;
    if (napi_get_value_int32(env, v, &n) != napi_ok || n < 1 || n > 64) {
        throw_type_error(env, "the signal must be a number from 1 to 64");
        return false;
    }
    *sig = (int)n;
    return true;
}

/* The process of a stop(signal) or signal(signal) call, and its signal argument. */
static struct proc *get_signal_call(napi_env env, napi_callback_info info, int *sig) {
    napi_value argv[1], this_arg;
    if (!get_args(env, info, 1, argv, &this_arg) || !get_signal(env, argv[0], sig))
        return NULL;
    return unwrap(env, this_arg, &PROCESS_TAG, "NativeProcess"); /* released: unwrapped */
}

/* stop(signal) -> Promise<exit code>: signal (through the init) to every process of it,
 * KILL after the grace. */
static napi_value process_stop(napi_env env, napi_callback_info info) {
    napi_value promise, name;
    int sig = 0;
    struct proc *p = get_signal_call(env, info, &sig);
    if (!p)
        return NULL;
    struct proc_stop_work *w = calloc(1, sizeof *w);
    if (!w)
        return throw_nomem(env);
    w->p = p;
    w->sig = sig;
    if (napi_create_promise(env, &w->deferred, &promise) != napi_ok ||
        napi_create_string_utf8(env, "codeward.process.stop", NAPI_AUTO_LENGTH, &name) != napi_ok ||
        napi_create_async_work(env, NULL, name, proc_stop_execute, proc_stop_complete, w,
                               &w->work) != napi_ok) {
        free(w);
        throw_napi_failure(env, "stopping a process");
        return NULL;
    }
    pthread_mutex_lock(&p->lock);
    p->refs++;
    pthread_mutex_unlock(&p->lock);
    if (napi_queue_async_work(env, w->work) != napi_ok) {
        napi_delete_async_work(env, w->work);
        proc_unref(p);
        free(w);
        throw_napi_failure(env, "stopping a process");
        return NULL;
    }
    return promise;
}

/* signal(signal): sends it to every process of the program through its init (a pipe
 * write that does not block); throws the core's error if the request cannot be written. */
static napi_value process_signal(napi_env env, napi_callback_info info) {
    int sig = 0;
    struct proc *p = get_signal_call(env, info, &sig);
    if (!p)
        return NULL;
    a3s_error err;
    if (a3s_child_signal(p->c, sig, &err) != A3S_OK)
        return throw_core(env, &err);
    return NULL;
}

/* release(): the JS side is done with it (it has ended); the handle goes once the
 * waiter is done too. The object is unwrapped: a later call on it is a TypeError. */
static napi_value process_release(napi_env env, napi_callback_info info) {
    napi_value this_arg;
    struct proc *p =
        get_handle_args(env, info, 0, NULL, &PROCESS_TAG, "NativeProcess", &this_arg);
    if (!p)
        return NULL;
    if (!p->released) {
        /* the object lets go of p now: its finalizer must not run on a freed p later */
        void *ignored;
        if (napi_remove_wrap(env, this_arg, &ignored) != napi_ok) {
            throw_napi_failure(env, "releasing a process");
            return NULL;
        }
        p->released = true;
        if (p->hooked) {
            napi_remove_env_cleanup_hook(env, proc_cleanup_hook, p);
            p->hooked = false;
        }
        proc_stop_detached(p); /* a no-op for an ended program: it only reaps */
        proc_unref(p);
    }
    return NULL;
}

/* The spawn job's result: {pid, stdin, stdout, stderr (fds), process (stop(), signal(),
 * release())}; the job's onExit (rules' slot: on_output) gets the exit code. */
static napi_value make_process(napi_env env, struct job *j) {
    struct proc *p = calloc(1, sizeof *p);
    if (!p)
        return throw_nomem(env);
    pthread_mutex_init(&p->lock, NULL);
    p->env = env;
    napi_value obj, fn, name;
    a3s_child_status st = {.struct_size = sizeof st};
    a3s_child_info(j->child, &st, NULL);
    static const napi_property_descriptor methods[] = {
        METHOD("stop", process_stop),
        METHOD("signal", process_signal),
        METHOD("release", process_release),
    };
    if (napi_create_object(env, &obj) != napi_ok ||
        napi_define_properties(env, obj, sizeof methods / sizeof *methods, methods) != napi_ok ||
        napi_get_reference_value(env, j->on_output, &fn) != napi_ok ||
        napi_create_string_utf8(env, "codeward.process", NAPI_AUTO_LENGTH, &name) != napi_ok ||
        napi_create_threadsafe_function(env, fn, NULL, name, 0, 1, p, proc_tsfn_finalize, NULL,
                                        proc_exited, &p->tsfn) != napi_ok) {
        pthread_mutex_destroy(&p->lock);
        free(p);
        throw_napi_failure(env, "wrapping a process");
        return NULL;
    }
    /* from here on p owns the child: the tsfn's reference frees it at worst */
    p->c = j->child;
    p->owner = j->owner;
    j->child = NULL;
    j->owner = NULL;
    p->refs = 2; /* the tsfn's, the waiter's */
    pthread_mutex_lock(&p->lock);
    p->refs++; /* the JS object's */
    pthread_mutex_unlock(&p->lock);
    if (napi_type_tag_object(env, obj, &PROCESS_TAG) != napi_ok ||
        napi_wrap(env, obj, p, proc_finalize, NULL, NULL) != napi_ok) {
        p->released = true;
        proc_unref(p); /* the JS object's */
    }
    if (start_thread(proc_waiter, p) != 0) {
        /* no waiter: stop it now (nothing will report its end) */
        a3s_child_stop(p->c, NULL, NULL);
        napi_release_threadsafe_function(p->tsfn, napi_tsfn_abort);
        proc_unref(p); /* the waiter's that never was */
        throw_napi_failure(env, "starting a process's waiter thread");
        return NULL;
    }
    if (!p->released && napi_add_env_cleanup_hook(env, proc_cleanup_hook, p) == napi_ok)
        p->hooked = true;
    bool ok = set_number(env, obj, "pid", st.pid) &&
              set_number(env, obj, "stdin", j->stdio.stdin_fd) &&
              set_number(env, obj, "stdout", j->stdio.stdout_fd) &&
              set_number(env, obj, "stderr", j->stdio.stderr_fd);
    if (!ok)
        return NULL; /* the fds are still the job's: closed with it */
    j->stdio.stdin_fd = j->stdio.stdout_fd = j->stdio.stderr_fd = -1; /* the caller's now */
    return obj;
}

static void job_done(napi_env env, napi_value js_cb, void *context, void *data) {
    (void)js_cb;
    (void)context;
    if (*(enum job_kind *)data == JOB_CHUNK) {
        deliver_chunk(env, data);
        return;
    }
    struct job *j = data;
    if (env) {
        napi_value value = NULL;
        bool resolve = j->rc == A3S_OK;
        if (!resolve)
            value = make_core_error(env, &j->err);
        else if (j->kind == JOB_EXEC)
            value = make_result(env, j);
        else if (j->kind == JOB_SPAWN)
            value = make_process(env, j);
        else
            napi_get_undefined(env, &value);
        if (!value) { /* building it failed: reject with what is pending, or a plain error */
            resolve = false;
            bool pending = false;
            napi_is_exception_pending(env, &pending);
            if (pending)
                napi_get_and_clear_last_exception(env, &value);
            else {
                napi_value msg;
                napi_create_string_utf8(env, "codeward addon: cannot build the result",
                                        NAPI_AUTO_LENGTH, &msg);
                napi_create_error(env, NULL, msg, &value);
            }
        }
        if (resolve)
            napi_resolve_deferred(env, j->deferred, value);
        else
            napi_reject_deferred(env, j->deferred, value);
    }
    job_unref(j); /* the queued result's */
}

/* ---- threads ---------------------------------------------------------------- */

static void unlink_job(struct handle *h, struct job *j) {
    pthread_mutex_lock(&h->lock);
    for (struct job **p = &h->jobs; *p; p = &(*p)->next) {
        if (*p == j) {
            *p = j->next;
            break;
        }
    }
    pthread_cond_broadcast(&h->changed);
    pthread_mutex_unlock(&h->lock);
}

static void run_job(struct job *j) {
    struct handle *h = j->h;
    if (j->kind == JOB_EXEC) {
        a3s_exec_options o = {
            .struct_size = sizeof o,
            .flags = A3S_EXEC_CANCEL_FD | (j->grant_fd >= 0 ? A3S_EXEC_NETWORK_GRANT : 0),
            .grant_fd = j->grant_fd,
            .policy_digest = j->digest,
            .command = j->command,
            .command_len = j->command_len,
            .env = (const char *const *)j->env,
            .envc = j->envc,
            .timeout_ms = j->timeout_ms,
            .kill_grace_ms = j->grace_ms,
            .max_output_bytes = j->max_output,
            .cancel_fd = j->cancel[0],
            .on_output = j->on_output ? queue_chunk : NULL,
            .on_output_ctx = j,
            .cwd = j->cwd,
            .exec_deny = (const char *const *)j->rules[0],
            .exec_deny_count = j->nrules[0],
            .exec_ask = (const char *const *)j->rules[1],
            .exec_ask_count = j->nrules[1],
            .exec_approved = (const char *const *)j->rules[2],
            .exec_approved_count = j->nrules[2],
            .stdin_data = j->stdin_data,
            .stdin_len = j->stdin_len,
        };
        j->rc = a3s_sandbox_exec(h->sb, &o, &j->result, &j->err);
    } else if (j->kind == JOB_PROBE) {
        j->rc = a3s_sandbox_probe(h->sb, j->timeout_ms, &j->err);
    } else if (j->kind == JOB_SPAWN) {
        a3s_child_options o = {
            .struct_size = sizeof o,
            .path = j->command,
            .args = (const char *const *)j->rules[0],
            .nargs = j->nrules[0],
            .env = (const char *const *)j->env,
            .envc = j->envc,
            .cwd = j->cwd,
            .kill_grace_ms = j->grace_ms,
        };
        j->rc = a3s_sandbox_spawn(h->sb, &o, &j->child, &j->stdio, &j->err);
        if (j->rc == A3S_OK) { /* counted before the job ends: the sandbox stays */
            pthread_mutex_lock(&h->lock);
            h->procs++;
            h->refs++;
            pthread_mutex_unlock(&h->lock);
            j->owner = h;
        }
    }
    if (j->kind == JOB_CLOSE) {
        /* wait for the cancelled commands, then free the sandbox (or wait
         * for whoever is freeing it) */
        pthread_mutex_lock(&h->lock);
        while (h->jobs)
            pthread_cond_wait(&h->changed, &h->lock);
        pthread_mutex_unlock(&h->lock);
        release_if_idle(h);
        pthread_mutex_lock(&h->lock);
        while (h->freeing)
            pthread_cond_wait(&h->changed, &h->lock);
        pthread_mutex_unlock(&h->lock);
        j->rc = A3S_OK;
    } else {
        unlink_job(h, j);
        release_if_idle(h); /* closed while it ran: the last one out frees it */
    }
    j->h = NULL;
    handle_unref(h);
    pthread_mutex_lock(&j->gate);
    if (!j->tsfn_gone) {
        j->refs++; /* the queued result's */
        if (napi_call_threadsafe_function(j->tsfn, j, napi_tsfn_blocking) != napi_ok)
            j->refs--; /* closing: the environment is going, nobody waits */
        napi_release_threadsafe_function(j->tsfn, napi_tsfn_release);
    }
    pthread_mutex_unlock(&j->gate);
    job_unref(j); /* the thread's */
}

/* A close: on a thread of its own (it waits for the workers' jobs). */
static void *job_thread(void *arg) {
    run_job(arg);
    return NULL;
}

/* A worker of h: runs queued jobs, and ends after WORKER_IDLE_MS without one
 * or once the handle is closed and nothing is queued. */
static void *worker_thread(void *arg) {
    struct handle *h = arg;
    pthread_mutex_lock(&h->lock);
    for (;;) {
        if (!h->queue && !h->closed) {
            struct timespec until;
            clock_gettime(CLOCK_MONOTONIC, &until);
            until.tv_sec += WORKER_IDLE_MS / 1000;
            h->idle++;
            int e = 0;
            while (!h->queue && !h->closed && e != ETIMEDOUT)
                e = pthread_cond_timedwait(&h->work, &h->lock, &until);
            h->idle--;
        }
        struct job *j = h->queue;
        if (!j)
            break;
        h->queue = j->queued;
        if (!h->queue)
            h->queue_tail = &h->queue;
        h->queued--;
        pthread_mutex_unlock(&h->lock);
        run_job(j);
        pthread_mutex_lock(&h->lock);
    }
    pthread_mutex_unlock(&h->lock);
    handle_unref(h); /* the worker's */
    return NULL;
}

/* Starts a detached thread; 0 or an errno value. */
static int start_thread(void *(*fn)(void *), void *arg) {
    pthread_attr_t attr;
    pthread_t thread;
    int e = pthread_attr_init(&attr);
    if (!e) {
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        e = pthread_create(&thread, &attr, fn, arg);
        pthread_attr_destroy(&attr);
    }
    return e;
}

/* Hands j to an idle worker of h, or to a new one when none is idle; 0 or an
 * errno value (then j is not queued). */
static int dispatch(struct handle *h, struct job *j) {
    pthread_mutex_lock(&h->lock);
    j->queued = NULL;
    *h->queue_tail = j;
    h->queue_tail = &j->queued;
    h->queued++;
    int e = 0;
    if (h->queued > h->idle) {
        h->refs++; /* the new worker's */
        e = start_thread(worker_thread, h);
        if (e) {
            h->refs--;
            /* take j back out (it is the last one queued) */
            struct job **p = &h->queue;
            while (*p != j)
                p = &(*p)->queued;
            *p = NULL;
            h->queue_tail = p;
            h->queued--;
        }
    } else {
        pthread_cond_signal(&h->work);
    }
    pthread_mutex_unlock(&h->lock);
    return e;
}

/* Creates the job's promise and thread-safe function and starts its thread;
 * the job joins h->jobs (unless it closes) and holds a reference. */
static napi_value start_job(napi_env env, struct handle *h, struct job *j) {
    napi_value promise, name;
    j->h = h;
    if (napi_create_promise(env, &j->deferred, &promise) != napi_ok ||
        napi_create_string_utf8(env, "codeward.sandbox", NAPI_AUTO_LENGTH, &name) != napi_ok) {
        throw_napi_failure(env, "starting a sandbox call");
        if (j->on_output)
            napi_delete_reference(env, j->on_output);
        job_free(j); /* a created deferred is dropped with the pending exception */
        return NULL;
    }
    /* at most 64 pieces of output wait for the loop (then the exec's thread waits) */
    if (napi_create_threadsafe_function(env, NULL, NULL, name, 64, 1, j, tsfn_finalize, j,
                                        job_done, &j->tsfn) != napi_ok) {
        throw_napi_failure(env, "starting a sandbox call");
        if (j->on_output)
            napi_delete_reference(env, j->on_output);
        job_free(j);
        return NULL;
    }
    j->refs++; /* the tsfn's, dropped when it is destroyed */
    pthread_mutex_lock(&h->lock);
    if (h->closed && j->kind != JOB_CLOSE) {
        pthread_mutex_unlock(&h->lock);
        napi_value msg, error, code;
        napi_create_string_utf8(env, "codeward: the sandbox is closed", NAPI_AUTO_LENGTH, &msg);
        napi_create_error(env, NULL, msg, &error);
        napi_create_string_utf8(env, "ERR_SANDBOX_CLOSED", NAPI_AUTO_LENGTH, &code);
        set_named(env, error, "code", code);
        napi_reject_deferred(env, j->deferred, error);
        napi_release_threadsafe_function(j->tsfn, napi_tsfn_release);
        job_unref(j); /* the creator's; the tsfn's goes with it */
        return promise;
    }
    if (j->kind != JOB_CLOSE) {
        j->next = h->jobs;
        h->jobs = j;
    }
    h->refs++;
    pthread_mutex_unlock(&h->lock);
    int e = j->kind == JOB_CLOSE ? start_thread(job_thread, j) : dispatch(h, j);
    if (e) { /* as if it had run and failed */
        if (j->kind != JOB_CLOSE)
            unlink_job(h, j);
        handle_unref(h);
        j->rc = A3S_E_SYSTEM;
        j->err = (a3s_error){.code = A3S_E_SYSTEM, .sys_errno = e};
        snprintf(j->err.message, sizeof j->err.message, "pthread_create: %s", strerror(e));
        j->refs++; /* as a queued result, settled at once */
        job_done(env, NULL, NULL, j);
        napi_release_threadsafe_function(j->tsfn, napi_tsfn_release);
        job_unref(j); /* the thread's that never was */
    }
    return promise;
}

/* ---- NativeSandbox ------------------------------------------------------------ */

static bool get_u64_number(napi_env env, napi_value v, const char *what, uint64_t *out) {
    double d;
    if (napi_get_value_double(env, v, &d) != napi_ok || !(d >= 0) || d > 9007199254740991.0) {
        char msg[128];
        snprintf(msg, sizeof msg, "%s must be a non-negative safe integer", what);
        throw_type_error(env, msg);
        return false;
    }
    *out = (uint64_t)d;
    return true;
}

static bool get_u64_bigint(napi_env env, napi_value v, const char *what, uint64_t *out) {
    bool lossless = false;
    if (napi_get_value_bigint_uint64(env, v, out, &lossless) != napi_ok || !lossless) {
        char msg[128];
        snprintf(msg, sizeof msg, "%s must be a BigInt from 0 to 2**64 - 1", what);
        throw_type_error(env, msg);
        return false;
    }
    return true;
}

/* A JS string as a NUL-terminated heap copy of its bytes (how many in *len unless
 * len is NULL), or NULL with an exception thrown. With `nul_msg`, a NUL among the
 * bytes is a TypeError with that message. */
static char *get_cstring(napi_env env, napi_value v, const char *what, const char *nul_msg,
                         size_t *len) {
    bytes_buf b;
    if (!get_bytes(env, v, what, &b))
        return NULL;
    bool nul = nul_msg && memchr(b.data, '\0', b.len) != NULL;
    char *copy = nul ? NULL : malloc(b.len + 1);
    if (copy) {
        memcpy(copy, b.data, b.len);
        copy[b.len] = '\0';
        if (len)
            *len = b.len;
    }
    bytes_release(&b);
    if (!copy)
        nul ? throw_type_error(env, nul_msg) : throw_nomem(env);
    return copy;
}

/* An optional string argument: NULL for null or undefined (a NUL inside: TypeError). */
static bool get_optional_path(napi_env env, napi_value v, const char *what, char **out) {
    *out = NULL;
    napi_valuetype type;
    if (napi_typeof(env, v, &type) != napi_ok) {
        throw_napi_failure(env, "napi_typeof");
        return false;
    }
    if (type == napi_null || type == napi_undefined)
        return true;
    char msg[128];
    snprintf(msg, sizeof msg, "%s must not contain a NUL byte", what);
    *out = get_cstring(env, v, what, msg, NULL);
    return *out != NULL;
}

/* An array of JS strings as NUL-terminated copies (NUL inside: TypeError). */
static bool get_string_array(napi_env env, napi_value v, const char *what, char ***out,
                             size_t *n) {
    *out = NULL;
    *n = 0;
    bool is_array = false;
    uint32_t len = 0;
    if (napi_is_array(env, v, &is_array) != napi_ok || !is_array ||
        napi_get_array_length(env, v, &len) != napi_ok) {
        char msg[128];
        snprintf(msg, sizeof msg, "%s must be an array of strings", what);
        throw_type_error(env, msg);
        return false;
    }
    char **arr = calloc(len ? len : 1, sizeof *arr);
    if (!arr) {
        throw_nomem(env);
        return false;
    }
    for (uint32_t i = 0; i < len; i++) {
        napi_value item;
        if (napi_get_element(env, v, i, &item) != napi_ok ||
            !(arr[i] = get_cstring(env, item, what, "a string of the array contains a NUL byte",
                                   NULL))) {
            *out = arr;
            *n = i;
            return false;
        }
    }
    *out = arr;
    *n = len;
    return true;
}

static void free_string_array(char **arr, size_t n) {
    for (size_t i = 0; i < n; i++)
        free(arr[i]);
    free(arr);
}

/* The NativeSandbox that `this` is, and up to `n` arguments. */
static struct handle *sandbox_args(napi_env env, napi_callback_info info, size_t n,
                                   napi_value *argv) {
    return get_handle_args(env, info, n, argv, &SANDBOX_TAG, "NativeSandbox", NULL);
}

/* A new job of `kind` for a call on the NativeSandbox `this` (*h), with up to `n`
 * arguments; NULL with an exception thrown on failure. */
static struct job *job_for_call(napi_env env, napi_callback_info info, size_t n,
                                napi_value *argv, enum job_kind kind, struct handle **h) {
    *h = sandbox_args(env, info, n, argv);
    if (!*h)
        return NULL;
    struct job *j = job_new(kind);
    if (!j)
        throw_nomem(env);
    return j;
}

/* new NativeSandbox(workspace, initPath, bwrapPath, flags, limits[5 BigInts], hostEnv[],
 *                   hostCode[]?): hostCode, the directories the host program loads code
 * from (a3s_sandbox_config.host_code) */
static napi_value sandbox_construct(napi_env env, napi_callback_info info) {
    napi_value argv[7], this_arg;
    if (!require_new(env, info, "NativeSandbox") || !get_args(env, info, 7, argv, &this_arg))
        return NULL;
    char *workspace = NULL, *init = NULL, *bwrap = NULL, **host_env = NULL, **host_code = NULL;
    size_t host_envc = 0, host_codec = 0;
    uint64_t flags = 0, limits[5] = {0};
    bool ok = get_optional_path(env, argv[0], "workspace", &workspace) &&
              get_optional_path(env, argv[1], "initPath", &init) &&
              get_optional_path(env, argv[2], "bwrapPath", &bwrap) &&
              get_u64_number(env, argv[3], "flags", &flags);
    for (uint32_t i = 0; ok && i < 5; i++) {
        napi_value item;
        ok = napi_get_element(env, argv[4], i, &item) == napi_ok &&
             get_u64_bigint(env, item, "a limit", &limits[i]);
    }
    if (ok)
        ok = get_string_array(env, argv[5], "hostEnv", &host_env, &host_envc);
    napi_valuetype code_type = napi_undefined;
    if (ok && napi_typeof(env, argv[6], &code_type) == napi_ok && code_type != napi_undefined)
        ok = get_string_array(env, argv[6], "hostCode", &host_code, &host_codec);
    a3s_sandbox *sb = NULL;
    a3s_error err = {0};
    int rc = A3S_E_INVALID;
    if (ok) {
        a3s_sandbox_config cfg = {
            .struct_size = sizeof cfg,
            .flags = flags,
            .workspace = workspace,
            .bwrap_path = bwrap,
            .init_path = init,
            .host_env = (const char *const *)host_env,
            .host_envc = host_envc,
            .memory_max_bytes = limits[0],
            .max_processes = limits[1],
            .tmpfs_max_bytes = limits[2],
            .inotify_watch_budget = limits[3],
            .idle_stop_ms = limits[4],
            .init_sha256 = A3S_INIT_SHA256,
            .host_code = (const char *const *)host_code,
            .host_code_count = host_codec,
        };
        rc = a3s_sandbox_new(&cfg, &sb, &err);
    }
    free(workspace);
    free(init);
    free(bwrap);
    free_string_array(host_env, host_envc);
    free_string_array(host_code, host_codec);
    if (!ok)
        return NULL;
    if (rc != A3S_OK)
        return throw_core(env, &err);
    struct handle *h = calloc(1, sizeof *h);
    char *ws = strdup(a3s_sandbox_workspace(sb));
    if (!h || !ws) {
        free(h);
        free(ws);
        a3s_sandbox_free(sb);
        return throw_nomem(env);
    }
    pthread_mutex_init(&h->lock, NULL);
    pthread_cond_init(&h->changed, NULL);
    pthread_condattr_t cattr;
    pthread_condattr_init(&cattr);
    pthread_condattr_setclock(&cattr, CLOCK_MONOTONIC);
    pthread_cond_init(&h->work, &cattr);
    pthread_condattr_destroy(&cattr);
    h->queue_tail = &h->queue;
    h->sb = sb;
    h->workspace = ws;
    h->refs = 1; /* the JS object's */
    if (!attach(env, this_arg, h, &SANDBOX_TAG, sandbox_finalize))
        return NULL;
    if (napi_add_env_cleanup_hook(env, cleanup_hook, h) == napi_ok)
        h->hooked = true;
    return this_arg;
}

/* Copies a Uint8Array (a Buffer) argument for the job's thread: the JS object may
 * be changed or collected while the command runs. undefined: none. */
static bool get_stdin(napi_env env, napi_value v, struct job *j) {
    napi_valuetype type = napi_undefined;
    bool is_array = false;
    if (napi_typeof(env, v, &type) != napi_ok || type == napi_undefined || type == napi_null)
        return true;
    napi_typedarray_type kind;
    size_t len = 0;
    void *data = NULL;
    if (napi_is_typedarray(env, v, &is_array) != napi_ok || !is_array ||
        napi_get_typedarray_info(env, v, &kind, &len, &data, NULL, NULL) != napi_ok ||
        kind != napi_uint8_array) {
        throw_type_error(env, "stdin must be a Uint8Array");
        return false;
    }
    j->stdin_data = malloc(len ? len : 1);
    if (!j->stdin_data) {
        throw_nomem(env);
        return false;
    }
    if (len)
        memcpy(j->stdin_data, data, len);
    j->stdin_len = len;
    return true;
}

/* exec(id, command, env[], timeoutMs, graceMs, maxOutputBytes, onOutput, cwd, [deny[], ask[],
 * approved[]] (the exec check's lists, a3s_exec_options), stdin, grantFd, policyDigest)
 * -> Promise<raw result>; grantFd (a network grant's socket, grantPair) is the caller's and
 * stays open */
static napi_value sandbox_exec(napi_env env, napi_callback_info info) {
    napi_value argv[12];
    struct handle *h;
    struct job *j = job_for_call(env, info, 12, argv, JOB_EXEC, &h);
    if (!j)
        return NULL;
    /* the command's bytes as they are, a NUL among them too */
    bool ok = napi_get_value_double(env, argv[0], &j->id) == napi_ok &&
              (j->command = get_cstring(env, argv[1], "command", NULL, &j->command_len)) != NULL;
    ok = ok && get_string_array(env, argv[2], "env", &j->env, &j->envc) &&
         get_u64_number(env, argv[3], "timeoutMs", &j->timeout_ms) &&
         get_u64_number(env, argv[4], "killGraceMs", &j->grace_ms) &&
         get_u64_number(env, argv[5], "maxOutputBytes", &j->max_output);
    napi_valuetype rules_type = napi_undefined;
    if (ok && napi_typeof(env, argv[8], &rules_type) == napi_ok && rules_type != napi_undefined) {
        static const char *const WHAT[3] = {"execRules.deny", "execRules.ask",
                                            "execRules.approved"};
        for (uint32_t l = 0; ok && l < 3; l++) {
            napi_value list;
            ok = napi_get_element(env, argv[8], l, &list) == napi_ok &&
                 get_string_array(env, list, WHAT[l], &j->rules[l], &j->nrules[l]);
        }
    }
    if (ok && (pipe(j->cancel) < 0 || fcntl(j->cancel[0], F_SETFD, FD_CLOEXEC) < 0 ||
               fcntl(j->cancel[1], F_SETFD, FD_CLOEXEC) < 0)) {
        a3s_error err = {.code = A3S_E_SYSTEM, .sys_errno = errno};
        snprintf(err.message, sizeof err.message, "pipe: %s", strerror(errno));
        job_free(j);
        return throw_core(env, &err);
    }
    napi_valuetype cwd_type = napi_undefined;
    if (ok && napi_typeof(env, argv[7], &cwd_type) == napi_ok && cwd_type == napi_string)
        ok = (j->cwd = get_cstring(env, argv[7], "cwd", "cwd must not contain a NUL byte",
                                       NULL)) != NULL;
    ok = ok && get_stdin(env, argv[9], j);
    napi_valuetype grant_type = napi_undefined;
    if (ok && napi_typeof(env, argv[10], &grant_type) == napi_ok && grant_type == napi_number &&
        (napi_get_value_int32(env, argv[10], &j->grant_fd) != napi_ok || j->grant_fd < 0)) {
        throw_type_error(env, "grantFd must be a descriptor number");
        ok = false;
    }
    ok = ok && get_optional_path(env, argv[11], "policyDigest", &j->digest);
    napi_valuetype sink_type = napi_undefined;
    if (ok && napi_typeof(env, argv[6], &sink_type) == napi_ok && sink_type == napi_function &&
        napi_create_reference(env, argv[6], 1, &j->on_output) != napi_ok)
        ok = false;
    if (!ok) {
        if (j->on_output)
            napi_delete_reference(env, j->on_output);
        job_free(j);
        return NULL;
    }
    return start_job(env, h, j);
}

/* spawn(path, args[], env[], cwd|undefined, graceMs, onExit) -> Promise<{pid, stdin, stdout,
 * stderr, stop(), release()}>: a long-lived program in a sandbox of its own (a3s_sandbox_spawn),
 * owned whole; onExit(code | Error) is called once it has ended. */
static napi_value sandbox_spawn(napi_env env, napi_callback_info info) {
    napi_value argv[6];
    struct handle *h;
    struct job *j = job_for_call(env, info, 6, argv, JOB_SPAWN, &h);
    if (!j)
        return NULL;
    napi_valuetype fn_type = napi_undefined;
    bool ok = get_optional_path(env, argv[0], "path", &j->command) && j->command &&
              get_string_array(env, argv[1], "args", &j->rules[0], &j->nrules[0]) &&
              get_string_array(env, argv[2], "env", &j->env, &j->envc) &&
              get_optional_path(env, argv[3], "cwd", &j->cwd) &&
              get_u64_number(env, argv[4], "killGraceMs", &j->grace_ms) &&
              napi_typeof(env, argv[5], &fn_type) == napi_ok;
    if (ok && fn_type != napi_function) {
        throw_type_error(env, "onExit must be a function");
        ok = false;
    }
    if (ok && napi_create_reference(env, argv[5], 1, &j->on_output) != napi_ok)
        ok = false;
    if (!ok) {
        bool pending = false;
        napi_is_exception_pending(env, &pending);
        if (!pending)
            throw_type_error(env, "path must be a string");
        if (j->on_output)
            napi_delete_reference(env, j->on_output);
        job_free(j);
        return NULL;
    }
    return start_job(env, h, j);
}

/* policy() -> {text, digest}: the sandbox's effective policy (a3s_sandbox_policy), what a
 * network grant is approved against. */
static napi_value sandbox_policy(napi_env env, napi_callback_info info) {
    napi_value obj, text, digest;
    struct handle *h = sandbox_args(env, info, 0, NULL);
    if (!h)
        return NULL;
    a3s_policy *policy = NULL;
    a3s_error err = {0};
    int rc = A3S_E_INVALID;
    pthread_mutex_lock(&h->lock); /* the sandbox is not freed meanwhile */
    if (h->sb)
        rc = a3s_sandbox_policy(h->sb, &policy, &err);
    else {
        err.code = A3S_E_INVALID;
        snprintf(err.message, sizeof err.message, "codeward: the sandbox is closed");
    }
    pthread_mutex_unlock(&h->lock);
    if (rc != A3S_OK)
        return throw_core(env, &err);
    size_t len = 0;
    const char *t = a3s_policy_text(policy, &len);
    bool ok = napi_create_object(env, &obj) == napi_ok &&
              napi_create_string_utf8(env, t, len, &text) == napi_ok &&
              napi_create_string_utf8(env, a3s_policy_digest(policy), NAPI_AUTO_LENGTH,
                                      &digest) == napi_ok &&
              set_named(env, obj, "text", text) && set_named(env, obj, "digest", digest);
    a3s_policy_free(policy);
    if (!ok) {
        throw_napi_failure(env, "building the policy");
        return NULL;
    }
    return obj;
}

/* ---- network grants (docs/security.md, "Network grants") ---------------------------
 *
 * Node's sockets cannot carry a descriptor (SCM_RIGHTS) nor speak SOCK_SEQPACKET, so the
 * grant socket's handshake is done here: grantPair() makes the pair, grantAccept(fd) waits
 * (on libuv's pool) for the proxy socket the init sends, checks it is exactly the TCP
 * socket bound to 127.0.0.1:A3S_GRANT_PROXY_PORT, listens on it, answers 'L' and resolves
 * with its fd, which lib/netgrant/mediator.js serves with node:net. grantShutdown(fd)
 * ends a wait (and tells the init the grant is refused, if it has not started). */

/* grantPair() -> [mediator's end, exec's end] */
static napi_value grant_pair(napi_env env, napi_callback_info info) {
    (void)info;
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) {
        a3s_error err = {.code = A3S_E_SYSTEM, .sys_errno = errno};
        snprintf(err.message, sizeof err.message, "socketpair for a network grant: %s",
                 strerror(errno));
        return throw_core(env, &err);
    }
    napi_value arr, a, b;
    if (napi_create_array_with_length(env, 2, &arr) != napi_ok ||
        napi_create_int32(env, sv[0], &a) != napi_ok ||
        napi_create_int32(env, sv[1], &b) != napi_ok || napi_set_element(env, arr, 0, a) != napi_ok ||
        napi_set_element(env, arr, 1, b) != napi_ok) {
        close(sv[0]);
        close(sv[1]);
        throw_napi_failure(env, "grantPair");
        return NULL;
    }
    return arr;
}

struct grant_work {
    int fd;       /* the mediator's end of the grant socket */
    int listener; /* out: the proxy socket, listening; -1 if refused */
    char why[160];
    napi_async_work work;
    napi_deferred deferred;
};

/* The proxy socket of one grant message, checked; -1 (why says it) otherwise. */
static int grant_receive(struct grant_work *w) {
    unsigned char msg[64];
    union {
        struct cmsghdr align;
        char buf[CMSG_SPACE(4 * sizeof(int))];
    } control;
    struct iovec iov = {.iov_base = msg, .iov_len = sizeof msg};
    struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = control.buf,
                        .msg_controllen = sizeof control.buf};
    struct pollfd pfd = {.fd = w->fd, .events = POLLIN};
    while (poll(&pfd, 1, -1) < 0 && errno == EINTR)
        ;
    ssize_t n;
    do
        n = recvmsg(w->fd, &mh, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
    while (n < 0 && errno == EINTR);
    int fds[4], nfds = 0;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
            continue;
        size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (size_t i = 0; i < k && nfds < 4; i++)
            memcpy(&fds[nfds++], CMSG_DATA(c) + i * sizeof(int), sizeof(int));
    }
    if (n <= 0) {
        snprintf(w->why, sizeof w->why, "the grant socket closed before the sandbox's message");
        goto refuse;
    }
    /* "A3SM", u16 type 18, u16 version 1, u32 length 14, u16 port, little-endian */
    static const unsigned char want[A3S_GRANT_MESSAGE_SIZE] = {
        'A', '3', 'S', 'M', 18, 0, 1, 0, 14, 0, 0, 0,
        A3S_GRANT_PROXY_PORT & 0xff, A3S_GRANT_PROXY_PORT >> 8};
    if (n != A3S_GRANT_MESSAGE_SIZE || (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) || nfds != 1 ||
        memcmp(msg, want, sizeof want) != 0) {
        snprintf(w->why, sizeof w->why, "a malformed grant message was refused");
        goto refuse;
    }
    int domain = 0, type = 0;
    socklen_t ol = sizeof domain;
    struct sockaddr_in sin;
    socklen_t sl = sizeof sin;
    if (getsockopt(fds[0], SOL_SOCKET, SO_DOMAIN, &domain, &ol) < 0 || domain != AF_INET ||
        (ol = sizeof type, getsockopt(fds[0], SOL_SOCKET, SO_TYPE, &type, &ol) < 0) ||
        type != SOCK_STREAM || getsockname(fds[0], (struct sockaddr *)&sin, &sl) < 0 ||
        sl != sizeof sin || sin.sin_family != AF_INET ||
        sin.sin_addr.s_addr != htonl(INADDR_LOOPBACK) ||
        ntohs(sin.sin_port) != A3S_GRANT_PROXY_PORT) {
        snprintf(w->why, sizeof w->why, "the sandbox's proxy socket was not as expected");
        goto refuse;
    }
    if (listen(fds[0], 256) < 0 || send(w->fd, "L", 1, MSG_NOSIGNAL) != 1) {
        snprintf(w->why, sizeof w->why, "listening on the proxy socket failed: %s",
                 strerror(errno));
        goto refuse;
    }
    return fds[0];
refuse:
    for (int i = 0; i < nfds; i++)
        close(fds[i]);
    shutdown(w->fd, SHUT_RDWR); /* the init sees the refusal */
    return -1;
}

static void grant_execute(napi_env env, void *data) {
    (void)env;
    struct grant_work *w = data;
    w->listener = grant_receive(w);
}

static void grant_complete(napi_env env, napi_status status, void *data) {
    struct grant_work *w = data;
    napi_value v = NULL, msg;
    if (status == napi_ok && w->listener >= 0 && napi_create_int32(env, w->listener, &v) == napi_ok)
        napi_resolve_deferred(env, w->deferred, v);
    else {
        if (w->listener >= 0)
            close(w->listener);
        napi_create_string_utf8(env, w->why[0] ? w->why : "the grant handshake failed",
                                NAPI_AUTO_LENGTH, &msg);
        napi_create_error(env, NULL, msg, &v);
        napi_reject_deferred(env, w->deferred, v);
    }
    napi_delete_async_work(env, w->work);
    free(w);
}

/* grantAccept(fd) -> Promise<listening proxy socket fd> (rejects: refused, or ended) */
static napi_value grant_accept(napi_env env, napi_callback_info info) {
    napi_value argv[1], promise, name;
    int32_t fd;
    if (!get_args(env, info, 1, argv, NULL))
        return NULL;
    if (napi_get_value_int32(env, argv[0], &fd) != napi_ok || fd < 0)
        return throw_type_error(env, "fd must be a descriptor number");
    struct grant_work *w = calloc(1, sizeof *w);
    if (!w)
        return throw_nomem(env);
    w->fd = fd;
    w->listener = -1;
    if (napi_create_promise(env, &w->deferred, &promise) != napi_ok ||
        napi_create_string_utf8(env, "codeward.grant", NAPI_AUTO_LENGTH, &name) != napi_ok ||
        napi_create_async_work(env, NULL, name, grant_execute, grant_complete, w, &w->work) !=
            napi_ok ||
        napi_queue_async_work(env, w->work) != napi_ok) {
        free(w);
        throw_napi_failure(env, "grantAccept");
        return NULL;
    }
    return promise;
}

/* grantShutdown(fd): shuts the grant socket down both ways (a waiting grantAccept ends) */
static napi_value grant_shutdown(napi_env env, napi_callback_info info) {
    napi_value argv[1];
    int32_t fd;
    if (!get_args(env, info, 1, argv, NULL))
        return NULL;
    if (napi_get_value_int32(env, argv[0], &fd) != napi_ok || fd < 0)
        return throw_type_error(env, "fd must be a descriptor number");
    shutdown(fd, SHUT_RDWR);
    return NULL;
}

/* cancel(id) -> whether a running command had that id (it is being stopped) */
static napi_value sandbox_cancel(napi_env env, napi_callback_info info) {
    napi_value argv[1], result;
    double id;
    struct handle *h = sandbox_args(env, info, 1, argv);
    if (!h || napi_get_value_double(env, argv[0], &id) != napi_ok)
        return h ? throw_type_error(env, "id must be a number") : NULL;
    bool found = false;
    pthread_mutex_lock(&h->lock);
    for (struct job *j = h->jobs; j; j = j->next) {
        if (j->kind == JOB_EXEC && j->id == id) {
            ssize_t n = write(j->cancel[1], "x", 1);
            (void)n;
            found = true;
        }
    }
    pthread_mutex_unlock(&h->lock);
    CHECK(env, napi_get_boolean(env, found, &result));
    return result;
}

/* probe(timeoutMs) -> Promise<undefined>: the self-test through the boundary */
static napi_value sandbox_probe(napi_env env, napi_callback_info info) {
    napi_value argv[1];
    struct handle *h;
    struct job *j = job_for_call(env, info, 1, argv, JOB_PROBE, &h);
    if (!j)
        return NULL;
    if (!get_u64_number(env, argv[0], "timeoutMs", &j->timeout_ms)) {
        job_free(j);
        return NULL;
    }
    return start_job(env, h, j);
}

/* close() -> Promise<undefined>, settled once the sandbox is freed */
static napi_value sandbox_close(napi_env env, napi_callback_info info) {
    struct handle *h = sandbox_args(env, info, 0, NULL);
    if (!h)
        return NULL;
    if (h->hooked) {
        napi_remove_env_cleanup_hook(env, cleanup_hook, h);
        h->hooked = false;
    }
    pthread_mutex_lock(&h->lock);
    close_locked(h);
    pthread_mutex_unlock(&h->lock);
    struct job *j = job_new(JOB_CLOSE);
    if (!j)
        return throw_nomem(env);
    return start_job(env, h, j);
}

/* info() -> {running, starts, pid, memoryCgroup, pidsCgroup} (closed: not running) */
static napi_value sandbox_info(napi_env env, napi_callback_info info) {
    napi_value obj;
    struct handle *h = sandbox_args(env, info, 0, NULL);
    if (!h)
        return NULL;
    a3s_sandbox_info in = {.struct_size = sizeof in};
    pthread_mutex_lock(&h->lock); /* the sandbox is not freed meanwhile */
    if (h->sb)
        a3s_sandbox_info_get(h->sb, &in, NULL);
    pthread_mutex_unlock(&h->lock);
    CHECK(env, napi_create_object(env, &obj));
    if (!set_bool(env, obj, "running", in.flags & A3S_SANDBOX_INFO_RUNNING) ||
        !set_number(env, obj, "starts", (double)in.starts) ||
        !set_number(env, obj, "pid", in.pid) ||
        !set_bool(env, obj, "memoryCgroup", in.flags & A3S_SANDBOX_INFO_MEMORY_CGROUP) ||
        !set_bool(env, obj, "pidsCgroup", in.flags & A3S_SANDBOX_INFO_PIDS_CGROUP)) {
        throw_napi_failure(env, "building the sandbox info");
        return NULL;
    }
    return obj;
}

static napi_value sandbox_workspace(napi_env env, napi_callback_info info) {
    napi_value result;
    struct handle *h = sandbox_args(env, info, 0, NULL);
    if (!h)
        return NULL;
    CHECK(env, napi_create_string_utf8(env, h->workspace, NAPI_AUTO_LENGTH, &result));
    return result;
}

/* features() -> what the running kernel offers (a3s_features) */
static napi_value features(napi_env env, napi_callback_info info) {
    (void)info;
    a3s_features_info f = {.struct_size = sizeof f};
    a3s_error err;
    if (a3s_features(&f, &err) != A3S_OK)
        return throw_core(env, &err);
    napi_value obj;
    CHECK(env, napi_create_object(env, &obj));
    if (!set_bool(env, obj, "userNamespaces", f.flags & A3S_FEATURE_USER_NAMESPACES) ||
        !set_bool(env, obj, "pidNamespaces", f.flags & A3S_FEATURE_PID_NAMESPACES) ||
        !set_bool(env, obj, "seccompFilter", f.flags & A3S_FEATURE_SECCOMP_FILTER) ||
        !set_bool(env, obj, "landlock", f.flags & A3S_FEATURE_LANDLOCK) ||
        !set_bool(env, obj, "pidfd", f.flags & A3S_FEATURE_PIDFD) ||
        !set_bool(env, obj, "cgroupKill", f.flags & A3S_FEATURE_CGROUP_KILL) ||
        !set_bool(env, obj, "namesEmulated", f.flags & A3S_FEATURE_NAMES_EMULATED) ||
        !set_number(env, obj, "landlockAbi", f.landlock_abi)) {
        throw_napi_failure(env, "building the features");
        return NULL;
    }
    return obj;
}

/* Keeps this addon loaded for good: a worker's exit unloads an addon that
 * only it loaded, and a command's thread may still run code of it then. */
static void pin_addon(void) {
    static const char anchor = 0; /* any address inside this addon */
    Dl_info self;
    if (dladdr(&anchor, &self) && self.dli_fname)
        dlopen(self.dli_fname, RTLD_LAZY | RTLD_NOLOAD | RTLD_NODELETE); /* never closed */
}

bool register_sandbox(napi_env env, napi_value exports) {
    pin_addon();
    static const napi_property_descriptor methods[] = {
        METHOD("exec", sandbox_exec),   METHOD("cancel", sandbox_cancel),
        METHOD("probe", sandbox_probe), METHOD("close", sandbox_close),
        METHOD("info", sandbox_info),   METHOD("workspace", sandbox_workspace),
        METHOD("spawn", sandbox_spawn), METHOD("policy", sandbox_policy),
    };
    static const napi_property_descriptor functions[] = {
        METHOD("features", features), METHOD("grantPair", grant_pair),
        METHOD("grantAccept", grant_accept), METHOD("grantShutdown", grant_shutdown)};
    static const struct {
        const char *name;
        double value;
    } constants[] = {
        {"SANDBOX_PROCESS_HOST", (double)A3S_SANDBOX_PROCESS_HOST},
        {"SANDBOX_NO_LANDLOCK", (double)A3S_SANDBOX_NO_LANDLOCK},
        {"SANDBOX_REUSE", (double)A3S_SANDBOX_REUSE},
    };
    if (!define_class(env, exports, "NativeSandbox", sandbox_construct, methods,
                      sizeof methods / sizeof methods[0]) ||
        napi_define_properties(env, exports, sizeof functions / sizeof functions[0], functions) !=
            napi_ok)
        return false;
    for (size_t i = 0; i < sizeof constants / sizeof constants[0]; i++)
        if (!set_number(env, exports, constants[i].name, constants[i].value))
            return false;
    return true;
}
#endif
