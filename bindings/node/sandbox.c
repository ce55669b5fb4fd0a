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

#if defined(_WIN32)
/* The sandbox is Linux-only (the C core says so for every call); Windows has
 * neither pipes nor pthreads as used here. */
bool register_sandbox(napi_env env, napi_value exports) {
    (void)env;
    (void)exports;
    return true;
}
#else

enum job_kind { JOB_EXEC, JOB_PROBE, JOB_CLOSE, JOB_CHUNK };

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
    char **rules[3]; /* exec: the exec check's deny and ask patterns, approved commands */
    size_t nrules[3];
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
    if (h->closed && !h->jobs && h->sb) {
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

static struct job *job_new(enum job_kind kind) {
    struct job *j = calloc(1, sizeof *j);
    if (!j)
        return NULL;
    j->kind = kind;
    j->cancel[0] = j->cancel[1] = -1;
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

static napi_value make_core_error(napi_env env, const a3s_error *err) {
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
            .flags = A3S_EXEC_CANCEL_FD,
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
    bytes_buf b;
    if (!get_bytes(env, v, what, &b))
        return false;
    bool nul = memchr(b.data, '\0', b.len) != NULL;
    char *copy = nul ? NULL : malloc(b.len + 1);
    if (copy) {
        memcpy(copy, b.data, b.len);
        copy[b.len] = '\0';
    }
    bytes_release(&b);
    if (!copy) {
        char msg[128];
        snprintf(msg, sizeof msg, "%s must not contain a NUL byte", what);
        nul ? throw_type_error(env, msg) : throw_nomem(env);
        return false;
    }
    *out = copy;
    return true;
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
        bytes_buf b;
        if (napi_get_element(env, v, i, &item) != napi_ok || !get_bytes(env, item, what, &b)) {
            *out = arr;
            *n = i;
            return false;
        }
        bool nul = memchr(b.data, '\0', b.len) != NULL;
        arr[i] = nul ? NULL : malloc(b.len + 1);
        if (arr[i]) {
            memcpy(arr[i], b.data, b.len);
            arr[i][b.len] = '\0';
        }
        bytes_release(&b);
        if (!arr[i]) {
            *out = arr;
            *n = i;
            if (nul)
                throw_type_error(env, "a string of the array contains a NUL byte");
            else
                throw_nomem(env);
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
 * approved[]] (the exec check's lists, a3s_exec_options), stdin) -> Promise<raw result> */
static napi_value sandbox_exec(napi_env env, napi_callback_info info) {
    napi_value argv[10], this_arg;
    if (!get_args(env, info, 10, argv, &this_arg))
        return NULL;
    struct handle *h = unwrap(env, this_arg, &SANDBOX_TAG, "NativeSandbox");
    if (!h)
        return NULL;
    struct job *j = job_new(JOB_EXEC);
    if (!j)
        return throw_nomem(env);
    bytes_buf cmd = {0};
    bool ok = napi_get_value_double(env, argv[0], &j->id) == napi_ok &&
              get_bytes(env, argv[1], "command", &cmd);
    if (ok) {
        j->command = malloc(cmd.len + 1);
        if (j->command) {
            memcpy(j->command, cmd.data, cmd.len);
            j->command[cmd.len] = '\0';
            j->command_len = cmd.len;
        }
        bytes_release(&cmd);
        if (!j->command) {
            job_free(j);
            return throw_nomem(env);
        }
    }
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
    if (ok && napi_typeof(env, argv[7], &cwd_type) == napi_ok && cwd_type == napi_string) {
        bytes_buf dir = {0};
        ok = get_bytes(env, argv[7], "cwd", &dir);
        if (ok) {
            j->cwd = malloc(dir.len + 1);
            if (j->cwd) {
                memcpy(j->cwd, dir.data, dir.len);
                j->cwd[dir.len] = '\0';
            }
            bytes_release(&dir);
            if (!j->cwd) {
                job_free(j);
                return throw_nomem(env);
            }
        }
    }
    ok = ok && get_stdin(env, argv[9], j);
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

/* cancel(id) -> whether a running command had that id (it is being stopped) */
static napi_value sandbox_cancel(napi_env env, napi_callback_info info) {
    napi_value argv[1], this_arg, result;
    double id;
    if (!get_args(env, info, 1, argv, &this_arg))
        return NULL;
    struct handle *h = unwrap(env, this_arg, &SANDBOX_TAG, "NativeSandbox");
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
    napi_value argv[1], this_arg;
    if (!get_args(env, info, 1, argv, &this_arg))
        return NULL;
    struct handle *h = unwrap(env, this_arg, &SANDBOX_TAG, "NativeSandbox");
    if (!h)
        return NULL;
    struct job *j = job_new(JOB_PROBE);
    if (!j)
        return throw_nomem(env);
    if (!get_u64_number(env, argv[0], "timeoutMs", &j->timeout_ms)) {
        job_free(j);
        return NULL;
    }
    return start_job(env, h, j);
}

/* close() -> Promise<undefined>, settled once the sandbox is freed */
static napi_value sandbox_close(napi_env env, napi_callback_info info) {
    napi_value this_arg;
    if (!get_args(env, info, 0, NULL, &this_arg))
        return NULL;
    struct handle *h = unwrap(env, this_arg, &SANDBOX_TAG, "NativeSandbox");
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
    napi_value this_arg, obj;
    if (!get_args(env, info, 0, NULL, &this_arg))
        return NULL;
    struct handle *h = unwrap(env, this_arg, &SANDBOX_TAG, "NativeSandbox");
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
    napi_value this_arg, result;
    if (!get_args(env, info, 0, NULL, &this_arg))
        return NULL;
    struct handle *h = unwrap(env, this_arg, &SANDBOX_TAG, "NativeSandbox");
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

#define METHOD(name, fn) {name, NULL, fn, NULL, NULL, NULL, napi_default_method, NULL}

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
    };
    static const napi_property_descriptor functions[] = {METHOD("features", features)};
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
        napi_define_properties(env, exports, 1, functions) != napi_ok)
        return false;
    for (size_t i = 0; i < sizeof constants / sizeof constants[0]; i++)
        if (!set_number(env, exports, constants[i].name, constants[i].value))
            return false;
    return true;
}
#endif
