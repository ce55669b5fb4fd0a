/* exec_check.c - the host's side of the exec check: the options of
 * a3s_exec_options that carry it, and the init's record of what it stopped,
 * turned into the result (init/exectrace.c runs the check; exec_match.c
 * decides each exec). Kept apart from exec_match.c, which the static init
 * links without the process runner.
 */
#if defined(__linux__) /* the sandbox that runs the check is Linux's */

#include "exec_match.h"
#include "process_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the options and the init's record ------------------------------------- */

static int check_list(const char *const *v, size_t n, int list, a3s_error *err) {
    if (!v && n)
        return a3s_fail(err, A3S_E_INVALID, 0, 0, "exec check: a NULL array with a count");
    for (size_t i = 0; i < n; i++) {
        if (!v[i])
            return a3s_fail(err, A3S_E_INVALID, 0, (int64_t)i, "exec check: entry %zu is NULL", i);
        size_t len = strlen(v[i]);
        if (len > A3S_RULE_MAX_LENGTH)
            return a3s_fail(err, A3S_E_TOO_LARGE, 0, (int64_t)len,
                            "exec check: an entry of %zu bytes exceeds the limit of %d", len,
                            A3S_RULE_MAX_LENGTH);
        if (list == A3S_LIST_NONE)
            continue;
        a3s_exec_rules *r = a3s_exec_rules_new();
        if (!r)
            return a3s_fail(err, A3S_E_NOMEM, 0, 0, "out of memory checking an exec rule");
        int rc = a3s_exec_rules_add(r, list, v[i], err);
        a3s_exec_rules_free(r);
        if (rc != A3S_OK)
            return rc;
    }
    return A3S_OK;
}

int a3s_exec_options_check(const a3s_exec_options *o, a3s_error *err) {
    int rc = check_list(o->exec_deny, o->exec_deny_count, A3S_LIST_DENY, err);
    if (rc == A3S_OK)
        rc = check_list(o->exec_ask, o->exec_ask_count, A3S_LIST_ASK, err);
    if (rc == A3S_OK)
        rc = check_list(o->exec_approved, o->exec_approved_count, A3S_LIST_NONE, err);
    return rc;
}

bool a3s_exec_options_trace(const a3s_exec_options *o) {
    return o && (o->exec_deny_count || o->exec_ask_count);
}

static int hex_value(char c) {
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

char *a3s_exec_stop_unhex(const char *status) {
    const char *x = status ? strchr(status, 'X') : NULL;
    if (!x)
        return NULL;
    size_t n = 0;
    while (hex_value(x[1 + n]) >= 0)
        n++;
    char *text = malloc(n / 2 + 1);
    if (!text)
        return NULL;
    for (size_t i = 0; i + 1 < n; i += 2)
        text[i / 2] = (char)(hex_value(x[1 + i]) << 4 | hex_value(x[2 + i]));
    text[n / 2] = '\0';
    return text;
}

void a3s_exec_stop_apply(a3s_process_result *r, const char *record) {
    const char *tab1 = record ? strchr(record, '\t') : NULL;
    const char *tab2 = tab1 ? strchr(tab1 + 1, '\t') : NULL;
    if (!r)
        return;
    a3s_process_result_add_flags(r, A3S_RESULT_EXEC_STOPPED);
    if (!tab2) { /* a record cut short: the fact stands, the details are unknown */
        a3s_process_result_set_exec_stop(r, A3S_LIST_DENY, NULL, NULL);
        return;
    }
    int list = (size_t)(tab1 - record) == 4 && !strncmp(record, "deny", 4) ? A3S_LIST_DENY
                                                                            : A3S_LIST_ASK;
    size_t pl = (size_t)(tab2 - tab1 - 1);
    char *rule = malloc(pl + 7);
    if (rule)
        snprintf(rule, pl + 7, "bash(%.*s)", (int)pl, tab1 + 1);
    a3s_process_result_set_exec_stop(r, list, rule, tab2 + 1);
    free(rule);
}

#else
typedef int a3s_exec_check_unused;
#endif
