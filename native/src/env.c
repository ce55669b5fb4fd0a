/* env.c - the environment a sandboxed command starts with.
 *
 * It starts empty. From the host it takes only an allowlist (locale,
 * terminal, toolchain roots ...), then drops anything whose name or value
 * looks like a secret. Explicit per-call variables are validated and may not
 * inject code into interpreters or carry secrets. HOME, TMPDIR and XDG_*
 * point at the private scratch directory.
 */
#include "env.h"

#include <stdlib.h>
#include <string.h>

static const char *const ALLOWED[] = {
    "PATH", "LANG", "LANGUAGE", "TERM", "TZ", "USER", "LOGNAME", "COLORTERM", "NO_COLOR",
    "FORCE_COLOR", "CI", "SOURCE_DATE_EPOCH",
    /* toolchain roots, so version-managed interpreters keep working */
    "CARGO_HOME", "RUSTUP_HOME", "RUSTUP_TOOLCHAIN", "GOPATH", "GOROOT", "GOTOOLCHAIN", "NVM_DIR",
    "NVM_BIN", "NVM_INC", "JAVA_HOME", "PYENV_ROOT", "PYENV_VERSION", "VIRTUAL_ENV",
    "CONDA_PREFIX", "CONDA_DEFAULT_ENV", "GEM_HOME", "GEM_PATH", "RBENV_ROOT", "RBENV_VERSION",
    "SDKMAN_DIR", "DOTNET_ROOT", "BUN_INSTALL", "VOLTA_HOME", "PNPM_HOME", "ASDF_DIR",
    "ASDF_DATA_DIR", "MISE_DATA_DIR", "DENO_INSTALL_ROOT",
};

/* Variables that make an interpreter or the dynamic loader run other code. */
static const char *const INJECTION[] = {
    "BASH_ENV", "ENV", "SHELLOPTS", "BASHOPTS", "PROMPT_COMMAND", "PS4", "CDPATH", "GLOBIGNORE",
    "IFS", "NODE_OPTIONS", "NODE_PATH", "PERL5OPT", "PERL5LIB", "PERLLIB", "RUBYOPT", "RUBYLIB",
    "JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS", "JDK_JAVA_OPTIONS", "CLASSPATH", "GCONV_PATH",
    "HOSTALIASES", "RESOLV_HOST_CONF", "LOCALDOMAIN", "TMPDIR", "HOME", "GIT_SSH",
    "GIT_SSH_COMMAND", "GIT_EXEC_PATH", "GIT_ASKPASS", "SSH_ASKPASS", "EDITOR", "VISUAL", "PAGER",
    "GIT_PAGER", "GIT_EDITOR", "MAKEFLAGS", "GOFLAGS", "RUSTC_WRAPPER", "RUSTFLAGS",
    "CARGO_BUILD_RUSTC_WRAPPER",
};
static const char *const INJECTION_PREFIXES[] = {"LD_", "PYTHON", "DYLD_", "GIT_CONFIG", "XDG_",
                                                 "BASH_FUNC_"};

/* Names that are, or point at, a credential or an escape route. */
static const char *const SECRET_NAMES[] = {
    "SSH_AUTH_SOCK", "SSH_AGENT_PID", "GPG_AGENT_INFO", "DBUS_SESSION_BUS_ADDRESS", "DOCKER_HOST",
    "DOCKER_CONFIG", "KUBECONFIG", "XAUTHORITY", "DISPLAY", "WAYLAND_DISPLAY",
};
static const char *const SECRET_WORDS[] = {
    "TOKEN", "SECRET", "PASSWORD", "PASSWD", "PASSPHRASE", "CREDENTIAL", "PRIVATE", "APIKEY",
    "API_KEY", "ACCESS_KEY", "AUTH", "SESSION", "COOKIE", "PROXY",
};
/* Value prefixes of well-known credential formats. */
static const char *const SECRET_VALUE_PREFIXES[] = {
    "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "glpat-", "xoxb-", "xoxp-", "xoxa-",
    "xoxr-", "xoxs-", "sk-ant-", "npm_", "pypi-AgE", "-----BEGIN", "AGE-SECRET-KEY-",
};

static bool name_is(const char *name, size_t n, const char *want) {
    return strlen(want) == n && memcmp(name, want, n) == 0;
}

static bool in_list(const char *name, size_t n, const char *const *list, size_t count) {
    for (size_t i = 0; i < count; i++)
        if (name_is(name, n, list[i]))
            return true;
    return false;
}

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* Case-insensitive substring test on (name, n). */
static bool contains_word(const char *name, size_t n, const char *word) {
    size_t w = strlen(word);
    for (size_t i = 0; i + w <= n; i++) {
        size_t j = 0;
        while (j < w && a3s_lower((unsigned char)name[i + j]) == a3s_lower((unsigned char)word[j]))
            j++;
        if (j == w)
            return true;
    }
    return false;
}

bool a3s_env_name_is_injection(const char *name, size_t n) {
    if (in_list(name, n, INJECTION, COUNT(INJECTION)))
        return true;
    for (size_t i = 0; i < COUNT(INJECTION_PREFIXES); i++) {
        size_t p = strlen(INJECTION_PREFIXES[i]);
        if (n >= p && memcmp(name, INJECTION_PREFIXES[i], p) == 0)
            return true;
    }
    return false;
}

bool a3s_env_name_is_secret(const char *name, size_t n) {
    if (in_list(name, n, SECRET_NAMES, COUNT(SECRET_NAMES)))
        return true;
    for (size_t i = 0; i < COUNT(SECRET_WORDS); i++)
        if (contains_word(name, n, SECRET_WORDS[i]))
            return true;
    /* ..._KEY, ...KEY (STRIPE_KEY, SIGNINGKEY) but not KEYBOARD or MONKEYS */
    return n >= 3 && contains_word(name + n - 3, 3, "KEY");
}

static bool is_alnum(unsigned char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static bool is_b64url(unsigned char c) { return is_alnum(c) || c == '-' || c == '_'; }

/* "eyJ<b64url>.<b64url>.<b64url>": a JSON Web Token. */
static bool looks_like_jwt(const char *v) {
    if (strncmp(v, "eyJ", 3) != 0)
        return false;
    int dots = 0;
    size_t run = 0;
    for (const char *p = v; *p; p++) {
        if (*p == '.') {
            if (run < 4)
                return false;
            dots++;
            run = 0;
        } else if (is_b64url((unsigned char)*p)) {
            run++;
        } else {
            return false;
        }
    }
    return dots == 2 && run >= 4;
}

/* AKIA/ASIA + 16 upper-case letters or digits: an AWS access key id. */
static bool looks_like_aws_key(const char *v) {
    for (const char *p = v; (p = strstr(p, "A")) != NULL; p++) {
        if (strncmp(p, "AKIA", 4) != 0 && strncmp(p, "ASIA", 4) != 0)
            continue;
        size_t k = 4;
        while (k < 20 && ((p[k] >= 'A' && p[k] <= 'Z') || (p[k] >= '0' && p[k] <= '9')))
            k++;
        if (k == 20)
            return true;
    }
    return false;
}

/* scheme://user:password@host */
static bool has_url_credentials(const char *v) {
    for (const char *p = v; (p = strstr(p, "://")) != NULL; p += 3) {
        const char *q = p + 3;
        bool colon = false;
        for (; *q && *q != '/' && *q != ' '; q++) {
            if (*q == ':')
                colon = true;
            if (*q == '@')
                return colon;
        }
    }
    return false;
}

bool a3s_env_value_is_secret(const char *v) {
    for (size_t i = 0; i < COUNT(SECRET_VALUE_PREFIXES); i++)
        if (strncmp(v, SECRET_VALUE_PREFIXES[i], strlen(SECRET_VALUE_PREFIXES[i])) == 0)
            return true;
    if (strncmp(v, "sk-", 3) == 0) {
        size_t n = 0;
        while (is_b64url((unsigned char)v[3 + n]))
            n++;
        if (n >= 20)
            return true;
    }
    if (strncmp(v, "AIza", 4) == 0 && strlen(v) >= 39)
        return true;
    return looks_like_jwt(v) || looks_like_aws_key(v) || has_url_credentials(v) ||
           strstr(v, "PRIVATE KEY-----") != NULL;
}

static bool allowed(const char *name, size_t n) {
    return in_list(name, n, ALLOWED, COUNT(ALLOWED)) || (n > 3 && memcmp(name, "LC_", 3) == 0);
}

/* PATH without empty or relative entries (both mean "the current directory"). */
static void push_path(struct a3s_strvec *out, const char *value) {
    size_t len = strlen(value);
    char *clean = malloc(len + 6);
    if (!clean) {
        out->failed = true;
        return;
    }
    size_t n = 0;
    const char *p = value;
    while (1) {
        const char *end = strchr(p, ':');
        size_t seg = end ? (size_t)(end - p) : strlen(p);
        if (seg > 0 && p[0] == '/') {
            if (n)
                clean[n++] = ':';
            memcpy(clean + n, p, seg);
            n += seg;
        }
        if (!end)
            break;
        p = end + 1;
    }
    clean[n] = '\0';
    a3s_strvec_push2(out, "PATH=", n ? clean : A3S_DEFAULT_PATH);
    free(clean);
}

int a3s_env_check_extra(const char *entry, a3s_error *err) {
    const char *eq = strchr(entry, '=');
    if (!eq)
        return a3s_fail(err, A3S_E_INVALID, 0, 0, "environment entry '%.64s' has no '='", entry);
    size_t n = (size_t)(eq - entry);
    if (n == 0)
        return a3s_fail(err, A3S_E_INVALID, 0, 0, "environment variable with an empty name");
    if (a3s_env_name_is_injection(entry, n))
        return a3s_fail(err, A3S_E_INVALID, 0, 0,
                        "environment variable %.*s is not allowed: it changes what code "
                        "interpreters and tools load, or where the sandbox keeps its files",
                        (int)n, entry);
    if (a3s_env_name_is_secret(entry, n) || a3s_env_value_is_secret(eq + 1))
        return a3s_fail(err, A3S_E_INVALID, 0, 0,
                        "environment variable %.*s looks like a credential; the sandbox does "
                        "not pass secrets to commands",
                        (int)n, entry);
    return A3S_OK;
}

/* Adds the allowlisted, non-secret entries of host that extra does not set
 * (and, with keep_home, an absolute HOME); true if PATH was among them. */
static bool add_host(struct a3s_strvec *out, const char *const *host, size_t nhost,
                     const char *const *extra, size_t nextra, bool keep_home) {
    bool have_path = false;
    for (size_t i = 0; i < nhost; i++) {
        const char *eq = strchr(host[i], '=');
        if (!eq)
            continue;
        size_t n = (size_t)(eq - host[i]);
        if (keep_home && name_is(host[i], n, "HOME") && eq[1] == '/') {
            a3s_strvec_push(out, host[i]);
            continue;
        }
        if (!allowed(host[i], n) || a3s_env_name_is_secret(host[i], n) ||
            a3s_env_value_is_secret(eq + 1))
            continue;
        bool overridden = false;
        for (size_t j = 0; j < nextra && !overridden; j++)
            overridden = strncmp(extra[j], host[i], n + 1) == 0;
        if (overridden)
            continue;
        if (name_is(host[i], n, "PATH")) {
            have_path = true;
            push_path(out, eq + 1);
        } else {
            a3s_strvec_push(out, host[i]);
        }
    }
    return have_path;
}

int a3s_env_build(const char *const *host, size_t nhost, const char *const *extra, size_t nextra,
                  const char *home, struct a3s_strvec *out, a3s_error *err) {
    for (size_t i = 0; i < nextra; i++) {
        int rc = a3s_env_check_extra(extra[i], err);
        if (rc)
            return rc;
    }
    bool have_path = add_host(out, host, nhost, extra, nextra, false);
    for (size_t i = 0; i < nextra; i++) {
        if (strncmp(extra[i], "PATH=", 5) == 0) {
            have_path = true;
            push_path(out, extra[i] + 5);
        } else {
            a3s_strvec_push(out, extra[i]);
        }
    }
    if (!have_path)
        a3s_strvec_push(out, "PATH=" A3S_DEFAULT_PATH);
    a3s_strvec_push2(out, "HOME=", home);
    a3s_strvec_push2(out, "TMPDIR=", home);
    static const char *const xdg[][2] = {
        {"XDG_CONFIG_HOME=", "/.config"},
        {"XDG_CACHE_HOME=", "/.cache"},
        {"XDG_DATA_HOME=", "/.local/share"},
        {"XDG_STATE_HOME=", "/.local/state"},
    };
    for (size_t i = 0; i < COUNT(xdg); i++) {
        size_t a = strlen(xdg[i][0]), b = strlen(home), c = strlen(xdg[i][1]);
        char *v = malloc(a + b + c + 1);
        if (!v) {
            out->failed = true;
            break;
        }
        memcpy(v, xdg[i][0], a);
        memcpy(v + a, home, b);
        memcpy(v + a + b, xdg[i][1], c + 1);
        a3s_strvec_push(out, v);
        free(v);
    }
    if (out->failed)
        return a3s_fail(err, A3S_E_NOMEM, 0, 0, "out of memory building the environment");
    return A3S_OK;
}

int a3s_env_overlay(struct a3s_strvec *out, const char *const *given, size_t ngiven,
                    a3s_error *err) {
    for (size_t i = 0; i < ngiven; i++) {
        const char *eq = given[i] ? strchr(given[i], '=') : NULL;
        if (!eq || eq == given[i])
            return a3s_fail(err, A3S_E_INVALID, 0, (int64_t)i,
                            "environment entry %zu is not NAME=VALUE with a non-empty NAME", i);
    }
    for (size_t i = 0; i < ngiven; i++) {
        size_t n = (size_t)(strchr(given[i], '=') - given[i]) + 1;
        size_t kept = 0;
        for (size_t j = 0; j < out->len; j++) {
            if (strncmp(out->items[j], given[i], n) == 0)
                free(out->items[j]);
            else
                out->items[kept++] = out->items[j];
        }
        if (out->items)
            out->items[kept] = NULL;
        out->len = kept;
        a3s_strvec_push(out, given[i]);
    }
    if (out->failed)
        return a3s_fail(err, A3S_E_NOMEM, 0, 0, "out of memory building the environment");
    return A3S_OK;
}

int a3s_env_build_host(const char *const *host, size_t nhost, const char *const *given,
                       size_t ngiven, struct a3s_strvec *out, a3s_error *err) {
    if (!add_host(out, host, nhost, NULL, 0, true))
        a3s_strvec_push(out, "PATH=" A3S_DEFAULT_PATH);
    if (out->failed)
        return a3s_fail(err, A3S_E_NOMEM, 0, 0, "out of memory building the environment");
    return a3s_env_overlay(out, given, ngiven, err);
}
