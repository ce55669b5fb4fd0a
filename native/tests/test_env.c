/* test_env.c - the sandboxed command's environment: allowlist, scrubbing, per-call checks. */
#include "../src/env.h"
#include "check.h"

#include <stdlib.h>

static const char *get(const struct a3s_strvec *v, const char *name) {
    size_t n = strlen(name);
    for (size_t i = 0; i < v->len; i++)
        if (!strncmp(v->items[i], name, n) && v->items[i][n] == '=')
            return v->items[i] + n + 1;
    return NULL;
}

struct secret_case {
    const char *entry;
    int secret; /* 1: dropped from the host environment */
};

static const struct secret_case host_cases[] = {
    {"LANG=C.UTF-8", 0},
    {"LC_ALL=C", 0},
    {"TERM=xterm", 0},
    {"CARGO_HOME=/root/.cargo", 0},
    {"SHELL=/bin/bash", 1}, /* not on the allowlist */
    {"GITHUB_TOKEN=abc", 1},
    {"AWS_SECRET_ACCESS_KEY=x", 1},
    {"SSH_AUTH_SOCK=/tmp/agent", 1},
    {"DBUS_SESSION_BUS_ADDRESS=unix:path=/run/bus", 1},
    {"HTTPS_PROXY=http://proxy:3128", 1},
    {"LD_PRELOAD=/evil.so", 1},
    {"PYTHONPATH=/evil", 1},
    {"BASH_ENV=/evil", 1},
    {"NODE_OPTIONS=--require=/evil", 1},
    /* allowlisted names carrying a secret-shaped value are dropped too */
    {"LANG=ghp_0123456789abcdefghijklmnopqrstuvwxyz", 1},
    {"TERM=AKIAABCDEFGHIJKLMNOP", 1},
    {"TZ=eyJhbGciOi.eyJzdWIiOi.c2lnbmF0dXJl", 1},
    {"CI=https://user:pass@example.com/", 1},
};

static void host_filtering(void) {
    for (size_t i = 0; i < sizeof host_cases / sizeof host_cases[0]; i++) {
        struct a3s_strvec out = {0};
        const char *host[] = {host_cases[i].entry};
        CHECK(a3s_env_build(host, 1, NULL, 0, "/scratch", &out, NULL) == A3S_OK, "build");
        char name[64];
        size_t n = strcspn(host_cases[i].entry, "=");
        snprintf(name, sizeof name, "%.*s", (int)n, host_cases[i].entry);
        const char *v = get(&out, name);
        if (!strcmp(name, "HOME") || !strcmp(name, "PATH"))
            continue;
        CHECK((v == NULL) == (host_cases[i].secret == 1), "host entry %s kept=%d",
              host_cases[i].entry, v != NULL);
        a3s_strvec_free(&out);
    }
}

static void scratch_and_path(void) {
    struct a3s_strvec out = {0};
    const char *host[] = {"PATH=/usr/bin::.:relative:/bin", "HOME=/root", "TMPDIR=/var/x",
                          "XDG_CONFIG_HOME=/root/.config"};
    CHECK(a3s_env_build(host, 4, NULL, 0, "/s", &out, NULL) == A3S_OK, "build");
    CHECK(!strcmp(get(&out, "PATH"), "/usr/bin:/bin"), "relative PATH entries dropped: %s",
          get(&out, "PATH"));
    CHECK(!strcmp(get(&out, "HOME"), "/s") && !strcmp(get(&out, "TMPDIR"), "/s"), "scratch");
    CHECK(!strcmp(get(&out, "XDG_CONFIG_HOME"), "/s/.config"), "xdg under scratch");
    a3s_strvec_free(&out);
    struct a3s_strvec none = {0};
    CHECK(a3s_env_build(NULL, 0, NULL, 0, "/s", &none, NULL) == A3S_OK, "empty host env");
    CHECK(get(&none, "PATH") && !strcmp(get(&none, "PATH"), A3S_DEFAULT_PATH), "default PATH");
    a3s_strvec_free(&none);
}

struct extra_case {
    const char *entry;
    int ok;
};

static const struct extra_case extra_cases[] = {
    {"FOO=1", 1},
    {"FOO=", 1},
    {"PATH=/opt/bin", 1},
    {"RUST_LOG=debug", 1},
    {"=x", 0},
    {"NOEQUALS", 0},
    {"LD_PRELOAD=/x.so", 0},
    {"LD_LIBRARY_PATH=/x", 0},
    {"PYTHONSTARTUP=/x", 0},
    {"BASH_ENV=/x", 0},
    {"ENV=/x", 0},
    {"PERL5OPT=-d", 0},
    {"RUBYOPT=-rx", 0},
    {"JAVA_TOOL_OPTIONS=-x", 0},
    {"HOME=/root", 0},
    {"TMPDIR=/tmp", 0},
    {"XDG_CONFIG_HOME=/x", 0},
    {"NPM_TOKEN=abc", 0},
    {"FOO=ghp_0123456789abcdefghijklmnopqrstuvwxyz", 0},
    {"FOO=-----BEGIN OPENSSH PRIVATE KEY-----", 0},
    {"FOO=sk-abcdefghijklmnopqrstuvwxyz012345", 0},
};

static void extra_validation(void) {
    for (size_t i = 0; i < sizeof extra_cases / sizeof extra_cases[0]; i++) {
        a3s_error err;
        int rc = a3s_env_check_extra(extra_cases[i].entry, &err);
        CHECK((rc == A3S_OK) == (extra_cases[i].ok == 1), "extra %s: rc %d (%s)",
              extra_cases[i].entry, rc, rc ? err.message : "");
    }
    /* a per-call value wins over the host's */
    struct a3s_strvec out = {0};
    const char *host[] = {"LANG=C"};
    const char *extra[] = {"LANG=fr_FR.UTF-8", "FOO=bar"};
    CHECK(a3s_env_build(host, 1, extra, 2, "/s", &out, NULL) == A3S_OK, "build");
    CHECK(!strcmp(get(&out, "LANG"), "fr_FR.UTF-8") && !strcmp(get(&out, "FOO"), "bar"),
          "per-call wins");
    size_t langs = 0;
    for (size_t i = 0; i < out.len; i++)
        langs += !strncmp(out.items[i], "LANG=", 5);
    CHECK(langs == 1, "no duplicate LANG");
    a3s_strvec_free(&out);
    const char *bad[] = {"LD_PRELOAD=/x"};
    struct a3s_strvec refused = {0};
    a3s_error err;
    CHECK(a3s_env_build(NULL, 0, bad, 1, "/s", &refused, &err) == A3S_E_INVALID, "refused");
    CHECK(strstr(err.message, "LD_PRELOAD") != NULL, "message names it: %s", err.message);
    a3s_strvec_free(&refused);
}

int main(void) {
    host_filtering();
    scratch_and_path();
    extra_validation();
    return check_report("test_env");
}
