/* sandbox_driver.c - run one command through the C core's sandbox, from argv.
 *
 * The hostile suite (tests/sandbox/test_proc_unprivileged.py) builds this
 * against the sources in native/src and runs it as an unprivileged user, where the
 * root-owned Python environment is out of reach, to check that the boundary
 * holds for a non-root caller too.
 *
 * Usage: sandbox_driver [--process-host] [--reuse] [--no-landlock] [--timeout-ms N]
 *                       [--grace-ms N] [--max-output N] [--state-dir DIR] [--scratch DIR]
 *                       [--memory-max N] [--max-processes N] [--tmpfs-max N]
 *                       [--watch-budget N] [--grant-fd N] [--exec-deny PATTERN]...
 *                       INIT BWRAP WORKSPACE COMMAND...
 *        sandbox_driver --probe [--reuse] INIT BWRAP WORKSPACE
 *
 * --grant-fd N: each command runs with a network grant served through the
 * AF_UNIX SOCK_SEQPACKET socket N (the caller's mediator holds the other
 * end), pinned to the policy digest the driver reads just before it.
 *
 * Several commands run one after the other through the same handle (with
 * --reuse: in one long-lived sandbox); a block as below is printed for each,
 * and with --reuse a line "starts=N" says how many sandboxes it took and a
 * last line "cgroups=memory,pids" which bounds a cgroup carried (either may
 * be missing: "cgroups=" for none).
 *
 * Output (stdout), for a run:
 *   rc=<a3s status name>
 *   exit_code=N
 *   timed_out=0|1  cancelled=0|1  setup_failed=0|1  oom_killed=0|1  (one per line)
 *   stdout_total=N
 *   stderr_total=N
 *   setup_error=<text or empty>
 *   stdout <len>\n<bytes>\n
 *   stderr <len>\n<bytes>\n
 * For an error: "rc=<status>\nmessage=<text>\n" and exit status 3.
 * For --probe: "rc=<status>\nmessage=<text>\n", exit status 0 or 3.
 * Usage errors exit 2.
 */
#include "a3s/a3s.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int usage(void) {
    fprintf(stderr, "usage: sandbox_driver [--process-host] [--reuse] [--no-landlock] "
                    "[--timeout-ms N] [--grace-ms N] [--max-output N] [--state-dir DIR] "
                    "[--scratch DIR] [--memory-max N] [--max-processes N] [--tmpfs-max N] "
                    "[--watch-budget N] [--grant-fd N] [--exec-deny PATTERN]... "
                    "INIT BWRAP WORKSPACE COMMAND...\n"
                    "       sandbox_driver --probe [--reuse] INIT BWRAP WORKSPACE\n");
    return 2;
}

static int report_error(int rc, const a3s_error *err) {
    printf("rc=%s\nmessage=%s\n", a3s_status_name(rc), err->message);
    return 3;
}

static void dump(const char *name, const char *data, size_t len) {
    printf("%s %zu\n", name, len);
    fwrite(data, 1, len, stdout);
    printf("\n");
}

int main(int argc, char **argv) {
    a3s_sandbox_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.struct_size = sizeof cfg;
    a3s_exec_options o;
    memset(&o, 0, sizeof o);
    o.struct_size = sizeof o;
    int probe = 0;
    const char *deny[8];
    size_t ndeny = 0;
    int i = 1;
    for (; i < argc && strncmp(argv[i], "--", 2) == 0; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--process-host") == 0) {
            cfg.flags |= A3S_SANDBOX_PROCESS_HOST;
            continue;
        }
        if (strcmp(a, "--probe") == 0) {
            probe = 1;
            continue;
        }
        if (strcmp(a, "--reuse") == 0) {
            cfg.flags |= A3S_SANDBOX_REUSE;
            continue;
        }
        if (strcmp(a, "--no-landlock") == 0) {
            cfg.flags |= A3S_SANDBOX_NO_LANDLOCK;
            continue;
        }
        if (!v)
            return usage();
        if (strcmp(a, "--timeout-ms") == 0)
            o.timeout_ms = strtoull(v, NULL, 10);
        else if (strcmp(a, "--grace-ms") == 0)
            o.kill_grace_ms = strtoull(v, NULL, 10);
        else if (strcmp(a, "--max-output") == 0)
            o.max_output_bytes = strtoull(v, NULL, 10);
        else if (strcmp(a, "--state-dir") == 0)
            cfg.state_dir = v;
        else if (strcmp(a, "--scratch") == 0)
            cfg.scratch_parent = v;
        else if (strcmp(a, "--memory-max") == 0)
            cfg.memory_max_bytes = strtoull(v, NULL, 10);
        else if (strcmp(a, "--max-processes") == 0)
            cfg.max_processes = strtoull(v, NULL, 10);
        else if (strcmp(a, "--tmpfs-max") == 0)
            cfg.tmpfs_max_bytes = strtoull(v, NULL, 10);
        else if (strcmp(a, "--exec-deny") == 0 && ndeny < sizeof deny / sizeof *deny) {
            deny[ndeny++] = v;
            o.exec_deny = deny;
            o.exec_deny_count = ndeny;
        } else if (strcmp(a, "--watch-budget") == 0)
            cfg.inotify_watch_budget = strtoull(v, NULL, 10);
        else if (strcmp(a, "--grant-fd") == 0) {
            o.flags |= A3S_EXEC_NETWORK_GRANT;
            o.grant_fd = atoi(v);
        } else
            return usage();
        i++;
    }
    if (probe ? argc - i != 3 : argc - i < 4)
        return usage();
    cfg.init_path = argv[i];
    cfg.bwrap_path = argv[i + 1];
    cfg.workspace = argv[i + 2];

    a3s_error err;
    memset(&err, 0, sizeof err);
    a3s_sandbox *sb = NULL;
    int rc = a3s_sandbox_new(&cfg, &sb, &err);
    if (rc != A3S_OK)
        return report_error(rc, &err);
    if (probe) {
        rc = a3s_sandbox_probe(sb, 0, &err);
        a3s_sandbox_free(sb);
        printf("rc=%s\nmessage=%s\n", a3s_status_name(rc), rc == A3S_OK ? "" : err.message);
        return rc == A3S_OK ? 0 : 3;
    }
    for (int c = i + 3; c < argc; c++) {
        o.command = argv[c];
        o.command_len = strlen(o.command);
        a3s_policy *policy = NULL;
        if ((o.flags & A3S_EXEC_NETWORK_GRANT) &&
            (rc = a3s_sandbox_policy(sb, &policy, &err)) != A3S_OK) {
            a3s_sandbox_free(sb);
            return report_error(rc, &err);
        }
        o.policy_digest = policy ? a3s_policy_digest(policy) : NULL;
        a3s_process_result *r = NULL;
        rc = a3s_sandbox_exec(sb, &o, &r, &err);
        a3s_policy_free(policy);
        o.policy_digest = NULL;
        if (rc != A3S_OK) {
            a3s_sandbox_free(sb);
            return report_error(rc, &err);
        }
        a3s_process_result_view v;
        memset(&v, 0, sizeof v);
        v.struct_size = sizeof v;
        rc = a3s_process_result_get(r, &v, &err);
        if (rc != A3S_OK) {
            a3s_process_result_free(r);
            a3s_sandbox_free(sb);
            return report_error(rc, &err);
        }
        printf("rc=ok\nexit_code=%d\n", (int)v.exit_code);
        printf("timed_out=%d\n", (v.flags & A3S_RESULT_TIMED_OUT) ? 1 : 0);
        printf("cancelled=%d\n", (v.flags & A3S_RESULT_CANCELLED) ? 1 : 0);
        printf("setup_failed=%d\n", (v.flags & A3S_RESULT_SETUP_FAILED) ? 1 : 0);
        printf("oom_killed=%d\n", (v.flags & A3S_RESULT_OOM_KILLED) ? 1 : 0);
        printf("stdout_total=%llu\nstderr_total=%llu\n", (unsigned long long)v.stdout_total,
               (unsigned long long)v.stderr_total);
        printf("setup_error=%s\n", v.setup_error ? v.setup_error : "");
        dump("stdout", v.stdout_data, v.stdout_len);
        dump("stderr", v.stderr_data, v.stderr_len);
        fflush(stdout);
        a3s_process_result_free(r);
    }
    if (cfg.flags & A3S_SANDBOX_REUSE) {
        a3s_sandbox_info info;
        memset(&info, 0, sizeof info);
        info.struct_size = sizeof info;
        a3s_sandbox_info_get(sb, &info, NULL);
        printf("starts=%llu\n", (unsigned long long)info.starts);
        bool mem = info.flags & A3S_SANDBOX_INFO_MEMORY_CGROUP;
        bool pids = info.flags & A3S_SANDBOX_INFO_PIDS_CGROUP;
        printf("cgroups=%s%s%s\n", mem ? "memory" : "", mem && pids ? "," : "",
               pids ? "pids" : "");
    }
    a3s_sandbox_free(sb);
    return 0;
}
