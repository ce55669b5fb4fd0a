/* test_glob.c - the matcher against a table of (pattern, subject, expected). */
#include "a3s/a3s.h"
#include "check.h"

#include <stdlib.h>

struct glob_case {
    const char *pattern;
    const char *subject;
    int tool_name;
    int expect;
};

static const struct glob_case cases[] = {
    {"*", "", 0, 1},
    {"*", "a/b/c", 0, 1},
    {"", "", 0, 1},
    {"", "a", 0, 0},
    {"abc", "abc", 0, 1},
    {"abc", "abd", 0, 0},
    {"a*", "abc", 0, 1},
    {"a*", "a/b", 0, 0},
    {"a**", "a/b", 0, 1},
    {"rm -rf**", "rm -rf /tmp/x", 0, 1},
    {"rm -rf *", "rm -rf /", 0, 0},
    {"**/.env", ".env", 0, 1},
    {"**/.env", "a/b/.env", 0, 1},
    {"**/.env", "x.env", 0, 0},
    {"**/.env*", "a/.env.local", 0, 1},
    {"src/**/*.rs", "src/main.rs", 0, 1},
    {"src/**/*.rs", "src/a/b/main.rs", 0, 1},
    {"src/**/*.rs", "src/a/b/main.py", 0, 0},
    {"src/**", "src/", 0, 1},
    {"src/**/", "src/", 0, 1},
    {"src/**/", "src/a/", 0, 1},
    {"src/**/", "src/a", 0, 0},
    {"\\*", "*", 0, 1},
    {"\\*", "a", 0, 0},
    {"a\\b", "a\\b", 0, 1},
    {"a\\", "a\\", 0, 1},
    {"[a]?{b}(c)", "[a]?{b}(c)", 0, 1},
    {"[a]", "a", 0, 0},
    {"cargo:*", "cargoevil", 0, 1},
    {"cargo :*", "cargo test", 0, 1},
    {"cargo :*", "cargo", 0, 0},
    {"a*b:*", "a*bc", 0, 1}, /* no wildcards inside a ':*' prefix */
    {"a*b:*", "axbc", 0, 0},
    {"*.py", "x.py", 0, 1},
    {"*.py", "d/x.py", 0, 0},
    {"***", "a/b", 0, 1},
    {"a*b*c", "abc", 0, 1},
    {"a*b*c", "a/b/c", 0, 0},
    {"a**b**c", "a/b/c", 0, 1},
    {"*a*a*a*a*a*a*a*a*b", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", 0, 0},
    {"MCP__GitHub__*", "mcp__github__create_issue", 1, 1},
    {"mcp__github__*", "MCP__GITHUB__X/Y", 1, 1},
    {"Bash", "bash", 1, 1},
    {"bash", "bash2", 1, 0},
};

/* A pattern of more than 64 tokens exercises the multi-word NFA. */
static void long_patterns(void) {
    char pattern[400], subject[400];
    size_t n = 0;
    for (int i = 0; i < 100; i++) {
        pattern[n++] = 'a';
        pattern[n++] = (i % 10 == 0) ? '*' : 'b';
    }
    memcpy(subject, pattern, n);
    for (size_t i = 0; i < n; i++)
        if (subject[i] == '*')
            subject[i] = 'q';
    a3s_glob *g = NULL;
    a3s_error err;
    CHECK(a3s_glob_compile(pattern, n, 0, &g, &err) == A3S_OK, "%s", err.message);
    CHECK(a3s_glob_match(g, subject, n) == 1, "long pattern, equal-length subject");
    subject[n - 1] = 'x';
    CHECK(a3s_glob_match(g, subject, n) == 0, "long pattern, wrong last byte");
    a3s_glob_free(g);

    /* 2000 alternating '*a' tokens: heap scratch in the matcher */
    size_t big = 4000;
    char *p = malloc(big), *s = malloc(big);
    for (size_t i = 0; i < big; i += 2) {
        p[i] = '*';
        p[i + 1] = 'a';
    }
    memset(s, 'a', big);
    CHECK(a3s_glob_compile(p, big, 0, &g, &err) == A3S_OK, "%s", err.message);
    CHECK(a3s_glob_match(g, s, 2000) == 1, "2000 '*a' over 2000 'a'");
    CHECK(a3s_glob_match(g, s, 1999) == 0, "2000 '*a' over 1999 'a'");
    a3s_glob_free(g);
    free(p);
    free(s);
}

static void embedded_nul(void) {
    a3s_glob *g = NULL;
    CHECK(a3s_glob_compile("a\0b*", 4, 0, &g, NULL) == A3S_OK, "compile with NUL");
    CHECK(a3s_glob_match(g, "a\0bc", 4) == 1, "NUL is an ordinary byte");
    CHECK(a3s_glob_match(g, "a", 1) == 0, "NUL does not terminate the pattern");
    a3s_glob_free(g);
}

static void errors(void) {
    a3s_glob *g = NULL;
    a3s_error err;
    CHECK(a3s_glob_compile("a", 1, 1u << 7, &g, &err) == A3S_E_INVALID, "unknown flag");
    CHECK(strcmp(a3s_status_name(err.code), "invalid") == 0, "status name");
    CHECK(a3s_glob_compile(NULL, 1, 0, &g, &err) == A3S_E_INVALID, "NULL pattern with length");
    CHECK(a3s_glob_compile("a", 1, 0, NULL, &err) == A3S_E_INVALID, "NULL out");
    char *huge = calloc(A3S_GLOB_MAX_PATTERN + 1, 1);
    CHECK(a3s_glob_compile(huge, A3S_GLOB_MAX_PATTERN + 1, 0, &g, &err) == A3S_E_TOO_LARGE,
          "oversized pattern");
    CHECK(err.detail == A3S_GLOB_MAX_PATTERN + 1, "detail carries the size");
    free(huge);
    CHECK(a3s_glob_compile("", 0, 0, &g, NULL) == A3S_OK, "NULL error struct is fine");
    CHECK(a3s_glob_match(g, NULL, 0) == 1, "empty pattern matches a NULL empty subject");
    a3s_glob_free(g);
    a3s_glob_free(NULL);
    CHECK(strcmp(a3s_status_name(12345), "unknown") == 0, "unknown status");
}

int main(void) {
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const struct glob_case *c = &cases[i];
        a3s_glob *g = NULL;
        a3s_error err;
        int rc = a3s_glob_compile(c->pattern, strlen(c->pattern),
                                  c->tool_name ? A3S_GLOB_TOOL_NAME : 0, &g, &err);
        CHECK(rc == A3S_OK, "compile %s: %s", c->pattern, err.message);
        if (rc != A3S_OK)
            continue;
        int m = a3s_glob_match(g, c->subject, strlen(c->subject));
        CHECK(m == c->expect, "pattern %s subject %s: got %d", c->pattern, c->subject, m);
        a3s_glob_free(g);
    }
    long_patterns();
    embedded_nul();
    errors();
    return check_report("test_glob");
}
