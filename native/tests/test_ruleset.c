/* test_ruleset.c - rule parsing, canonical forms, evaluation order, errors. */
#include "a3s/a3s.h"
#include "check.h"

#include <stdlib.h>

static int add(a3s_ruleset *rs, int list, const char *rule, a3s_error *err) {
    return a3s_ruleset_add(rs, list, rule, strlen(rule), 0, err);
}

static int decide(const a3s_ruleset *rs, const char *tool, const char *subject) {
    a3s_match m = {.struct_size = sizeof m};
    int rc = a3s_ruleset_check(rs, tool, strlen(tool), subject, strlen(subject), &m, NULL);
    return rc == A3S_OK ? m.list : rc;
}

struct syntax_case {
    const char *rule;
    const char *message_part;
};

static const struct syntax_case bad_rules[] = {
    {"", "empty rule"},
    {"(ls)", "empty tool name"},
    {"bash(ls", "missing ')'"},
    {"bash()", "empty pattern"},
    {"bash(ls) x", "text after"},
    {"bash (ls)", "space before '('"},
    {"b\xc3\xa4sh(ls)", "non-ASCII"},
    {"my tool", "whitespace"},
    {"bash)", "')' without"},
    {"ba\tsh", "whitespace"},
    {"bash\x01", "control character"},
};

static void syntax_errors(void) {
    a3s_ruleset *rs = NULL;
    a3s_ruleset_new(&rs, NULL);
    for (size_t i = 0; i < sizeof bad_rules / sizeof bad_rules[0]; i++) {
        a3s_error err;
        int rc = add(rs, A3S_LIST_DENY, bad_rules[i].rule, &err);
        CHECK(rc == A3S_E_SYNTAX, "rule '%s' should be rejected, rc=%d", bad_rules[i].rule, rc);
        CHECK(strstr(err.message, bad_rules[i].message_part) != NULL, "rule '%s': message '%s'",
              bad_rules[i].rule, err.message);
    }
    CHECK(a3s_ruleset_count(rs) == 0, "rejected rules are not added");
    a3s_error err;
    CHECK(a3s_ruleset_add(rs, 7, "bash", 4, 0, &err) == A3S_E_INVALID, "unknown list");
    a3s_ruleset_free(rs);
}

static void evaluation(void) {
    a3s_ruleset *rs = NULL;
    a3s_error err;
    CHECK(a3s_ruleset_new(&rs, &err) == A3S_OK, "new");
    CHECK(add(rs, A3S_LIST_DENY, "bash(rm -rf**)", &err) == A3S_OK, "%s", err.message);
    CHECK(add(rs, A3S_LIST_ALLOW, "Bash(cargo test**)", &err) == A3S_OK, "%s", err.message);
    CHECK(add(rs, A3S_LIST_ALLOW, "bash(git **)", &err) == A3S_OK, "%s", err.message);
    CHECK(add(rs, A3S_LIST_ASK, "bash(git push**)", &err) == A3S_OK, "%s", err.message);
    CHECK(add(rs, A3S_LIST_ALLOW, "mcp__github", &err) == A3S_OK, "%s", err.message);
    CHECK(add(rs, A3S_LIST_DENY, "mcp__*__delete*", &err) == A3S_OK, "%s", err.message);
    CHECK(add(rs, A3S_LIST_ALLOW, "grep", &err) == A3S_OK, "%s", err.message);

    CHECK(decide(rs, "bash", "rm -rf /tmp/x") == A3S_LIST_DENY, "deny");
    CHECK(decide(rs, "BASH", "cargo test --all") == A3S_LIST_ALLOW, "case-insensitive tool");
    CHECK(decide(rs, "bash", "git push origin") == A3S_LIST_ALLOW, "allow wins over ask");
    CHECK(decide(rs, "bash", "ls") == A3S_LIST_NONE, "no match");
    CHECK(decide(rs, "mcp__github", "{}") == A3S_LIST_ALLOW, "server name itself");
    CHECK(decide(rs, "mcp__github__create_issue", "{}") == A3S_LIST_ALLOW, "server tool");
    CHECK(decide(rs, "mcp__githubx__a", "{}") == A3S_LIST_NONE, "other server");
    CHECK(decide(rs, "mcp__github__delete_repo", "{}") == A3S_LIST_DENY, "tool glob deny");
    CHECK(decide(rs, "search", "grep foo src") == A3S_LIST_ALLOW, "grep rewritten");
    CHECK(decide(rs, "search", "glob foo src") == A3S_LIST_NONE, "grep never allows glob");

    a3s_rule_view v = {.struct_size = sizeof v};
    CHECK(a3s_ruleset_rule(rs, 6, &v, &err) == A3S_OK, "%s", err.message);
    CHECK(v.tool_len == 6 && memcmp(v.tool, "search", 6) == 0, "rewritten tool");
    CHECK(v.pattern_len == 7 && memcmp(v.pattern, "grep **", 7) == 0, "rewritten pattern");
    CHECK(v.flags & A3S_RULE_REWRITTEN, "rewritten flag");
    CHECK(a3s_ruleset_rule(rs, 4, &v, &err) == A3S_OK && (v.flags & A3S_RULE_MCP_SERVER),
          "mcp server flag");
    CHECK(a3s_ruleset_rule(rs, 99, &v, &err) == A3S_E_RANGE, "range");

    size_t idx[8], count = 0;
    CHECK(a3s_ruleset_matches(rs, "bash", 4, "git push x", 10, idx, 8, &count, &err) == A3S_OK,
          "%s", err.message);
    CHECK(count == 2 && idx[0] == 2 && idx[1] == 3, "matches: count %zu", count);
    CHECK(a3s_ruleset_matches(rs, "bash", 4, "git push x", 10, idx, 1, &count, &err) ==
              A3S_E_BUFFER,
          "small buffer");
    CHECK(err.detail == 2 && count == 2, "needed size reported");
    a3s_ruleset_free(rs);
}

/* Many tool names force the group table to grow. */
static void many_tools(void) {
    a3s_ruleset *rs = NULL;
    a3s_ruleset_new(&rs, NULL);
    char rule[64], tool[32];
    for (int i = 0; i < 500; i++) {
        snprintf(rule, sizeof rule, "tool%d(x%d)", i, i);
        CHECK(add(rs, i % 2 ? A3S_LIST_ALLOW : A3S_LIST_DENY, rule, NULL) == A3S_OK, "%s", rule);
    }
    for (int i = 0; i < 500; i++) {
        snprintf(tool, sizeof tool, "TOOL%d", i);
        snprintf(rule, sizeof rule, "x%d", i);
        CHECK(decide(rs, tool, rule) == (i % 2 ? A3S_LIST_ALLOW : A3S_LIST_DENY), "tool %d", i);
        CHECK(decide(rs, tool, "y") == A3S_LIST_NONE, "tool %d other subject", i);
    }
    a3s_ruleset_free(rs);
}

static void long_tool_name(void) {
    a3s_ruleset *rs = NULL;
    a3s_ruleset_new(&rs, NULL);
    char *name = malloc(1000);
    memset(name, 'T', 1000);
    CHECK(a3s_ruleset_add(rs, A3S_LIST_ASK, name, 1000, 3, NULL) == A3S_OK, "long bare tool");
    a3s_match m = {.struct_size = sizeof m};
    CHECK(a3s_ruleset_check(rs, name, 1000, "", 0, &m, NULL) == A3S_OK && m.list == A3S_LIST_ASK &&
              m.id == 3,
          "long tool name match (heap fold)");
    a3s_match small = {.struct_size = 1};
    CHECK(a3s_ruleset_check(rs, name, 1000, "", 0, &small, NULL) == A3S_E_INVALID,
          "struct_size checked");
    free(name);
    a3s_ruleset_free(rs);
}

static void versions(void) {
    const a3s_version_info *v = a3s_version();
    CHECK(v && v->abi == A3S_ABI_VERSION && a3s_abi_version() == A3S_ABI_VERSION, "abi");
    CHECK(v && strlen(v->string) >= 5, "version string");
    a3s_features_info f = {.struct_size = sizeof f};
    CHECK(a3s_features(&f, NULL) == A3S_OK, "features");
    a3s_features_info bad = {.struct_size = 0};
    CHECK(a3s_features(&bad, NULL) == A3S_E_INVALID, "features struct_size");
}

int main(void) {
    syntax_errors();
    evaluation();
    many_tools();
    long_tool_name();
    versions();
    return check_report("test_ruleset");
}
