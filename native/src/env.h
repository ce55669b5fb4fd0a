/* env.h - building the sandboxed command's environment (internal). */
#ifndef A3S_ENV_H
#define A3S_ENV_H

#include "strvec.h"

#define A3S_DEFAULT_PATH "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

/* Builds the environment into out: the allowlisted, non-secret part of
 * `host`, then the validated `extra` entries ("K=V", they win over host
 * values), then HOME/TMPDIR/XDG_* under `home`. An invalid extra entry
 * returns A3S_E_INVALID naming it. */
int a3s_env_build(const char *const *host, size_t nhost, const char *const *extra, size_t nextra,
                  const char *home, struct a3s_strvec *out, a3s_error *err);

/* The environment of a program the host runs on its own behalf (an owned
 * process, such as an MCP server, on the host): the allowlisted, non-secret
 * part of `host` and the host's HOME, then a3s_env_overlay(`given`). */
int a3s_env_build_host(const char *const *host, size_t nhost, const char *const *given,
                       size_t ngiven, struct a3s_strvec *out, a3s_error *err);

/* Adds `given` to out as given: the host's own configuration of one program
 * ("NAME=VALUE" with a non-empty NAME, replacing an entry of that name). It
 * is the host's explicit choice, so it is not checked for secrets or for
 * names that change what interpreters load. A3S_E_INVALID names a malformed
 * entry. */
int a3s_env_overlay(struct a3s_strvec *out, const char *const *given, size_t ngiven,
                    a3s_error *err);

/* Validates one per-call entry: "NAME=VALUE", a non-empty NAME, no
 * interpreter-injection name, nothing that looks like a credential. */
int a3s_env_check_extra(const char *entry, a3s_error *err);

bool a3s_env_name_is_injection(const char *name, size_t n);
bool a3s_env_name_is_secret(const char *name, size_t n);
bool a3s_env_value_is_secret(const char *value);

#endif
