/* test_other.c - the core as every platform but Linux builds it, run here.
 *
 * `make test-other` compiles every native/src file with __linux__ undefined
 * and __APPLE__ defined, so the *_linux.c files are empty and the *_other.c
 * files are in, as on macOS (ci/cross_compile.py also cross-compiles them
 * for macOS and Windows with zig cc). The portable part (glob, rule set,
 * path) works; every process, owned-process and sandbox call that returns a
 * status is A3S_E_UNSUPPORTED with a message naming the call and the
 * platform. */
#include "a3s/a3s.h"
#include "check.h"

#if defined(__linux__) || !defined(__APPLE__)
#error "build test_other.c with -U__linux__ -D__APPLE__ (make test-other)"
#endif

static void check_unsupported(int rc, const a3s_error *err, const char *call) {
    CHECK(rc == A3S_E_UNSUPPORTED, "%s returned %d", call, rc);
    CHECK(err->code == A3S_E_UNSUPPORTED, "%s set code %d", call, (int)err->code);
    CHECK(strstr(err->message, " not supported on macOS") != NULL, "%s: %s", call, err->message);
    CHECK(strncmp(err->message, call, strlen(call)) == 0, "%s: %s", call, err->message);
}

int main(void) {
    a3s_error err;

    a3s_features_info features = {.struct_size = sizeof features, .flags = ~0ull,
                                  .landlock_abi = 7};
    CHECK(a3s_features(&features, &err) == A3S_OK, "a3s_features: %s", err.message);
    CHECK(features.flags == 0 && features.landlock_abi == 0, "features reported off Linux");

    a3s_glob *glob = NULL;
    CHECK(a3s_glob_compile("src/**", 6, 0, &glob, &err) == A3S_OK, "glob: %s", err.message);
    CHECK(glob && a3s_glob_match(glob, "src/a/b.c", 9) == 1, "the glob works off Linux");
    a3s_glob_free(glob);

    a3s_process_options popts = {.struct_size = sizeof popts};
    a3s_process_result *result = (a3s_process_result *)&popts; /* must be reset to NULL */
    check_unsupported(a3s_process_run(&popts, &result, &err), &err, "a3s_process_run");
    CHECK(result == NULL, "a3s_process_run left *out set");
    a3s_process_result_view view = {.struct_size = sizeof view};
    check_unsupported(a3s_process_result_get(NULL, &view, &err), &err, "a3s_process_result_get");
    a3s_process_result_free(NULL);

    a3s_sandbox_config cfg = {.struct_size = sizeof cfg};
    a3s_sandbox *sb = (a3s_sandbox *)&cfg; /* must be reset to NULL */
    check_unsupported(a3s_sandbox_new(&cfg, &sb, &err), &err, "a3s_sandbox_new");
    CHECK(sb == NULL, "a3s_sandbox_new left *out set");
    a3s_exec_options eopts = {.struct_size = sizeof eopts};
    result = (a3s_process_result *)&eopts;
    check_unsupported(a3s_sandbox_exec(NULL, &eopts, &result, &err), &err, "a3s_sandbox_exec");
    CHECK(result == NULL, "a3s_sandbox_exec left *out set");
    check_unsupported(a3s_sandbox_probe(NULL, 1000, &err), &err, "a3s_sandbox_probe");
    check_unsupported(a3s_sandbox_stop(NULL, &err), &err, "a3s_sandbox_stop");
    a3s_sandbox_info info = {.struct_size = sizeof info};
    check_unsupported(a3s_sandbox_info_get(NULL, &info, &err), &err, "a3s_sandbox_info_get");
    CHECK(a3s_sandbox_workspace(NULL) == NULL, "a3s_sandbox_workspace off Linux");
    a3s_sandbox_free(NULL);
    a3s_policy *policy = (a3s_policy *)&cfg; /* must be reset to NULL */
    check_unsupported(a3s_sandbox_policy(NULL, &policy, &err), &err, "a3s_sandbox_policy");
    CHECK(policy == NULL, "a3s_sandbox_policy left *out set");
    size_t text_len = 1;
    CHECK(a3s_policy_text(NULL, &text_len) == NULL && text_len == 0, "a3s_policy_text");
    CHECK(a3s_policy_digest(NULL) == NULL, "a3s_policy_digest");
    a3s_policy_free(NULL);
    a3s_relay_stats stats = {.struct_size = sizeof stats};
    check_unsupported(a3s_relay(3, 4, NULL, &stats, &err), &err, "a3s_relay");

    a3s_child_options copts = {.struct_size = sizeof copts};
    a3s_child_stdio stdio = {.struct_size = sizeof stdio};
    a3s_child *child = (a3s_child *)&copts; /* must be reset to NULL */
    check_unsupported(a3s_child_spawn(&copts, &child, &stdio, &err), &err, "a3s_child_spawn");
    CHECK(child == NULL, "a3s_child_spawn left *out set");
    child = (a3s_child *)&copts;
    check_unsupported(a3s_sandbox_spawn(NULL, &copts, &child, &stdio, &err), &err,
                      "a3s_sandbox_spawn");
    CHECK(child == NULL, "a3s_sandbox_spawn left *out set");
    a3s_child_status status = {.struct_size = sizeof status};
    check_unsupported(a3s_child_wait(NULL, 0, &status, &err), &err, "a3s_child_wait");
    check_unsupported(a3s_child_stop(NULL, &status, &err), &err, "a3s_child_stop");
    check_unsupported(a3s_child_info(NULL, &status, &err), &err, "a3s_child_info");
    a3s_child_free(NULL);

    return check_report("test_other");
}
