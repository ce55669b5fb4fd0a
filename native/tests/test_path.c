/* test_path.c - lexical path normalization. */
#include "a3s/a3s.h"
#include "check.h"

struct path_case {
    const char *in;
    const char *out;
};

static const struct path_case cases[] = {
    {"", ""},
    {".", "."},
    {"./", "."},
    {"a/./b", "a/b"},
    {"a//b", "a/b"},
    {"//a", "/a"},
    {"///a//", "/a"},
    {"a/b/..", "a"},
    {"a/..", "."},
    {"../a", "../a"},
    {"../../a/..", "../.."},
    {"a/../../b", "../b"},
    {"/..", "/"},
    {"/../a", "/a"},
    {"/", "/"},
    {"a\\b\\c", "a/b/c"},
    {"C:\\x\\..\\y", "C:/y"},
    {"src/", "src"},
    {"./.env", ".env"},
    {"a/.../b", "a/.../b"},
};

int main(void) {
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char out[64];
        size_t n = 0;
        a3s_error err;
        int rc = a3s_path_normalize(cases[i].in, strlen(cases[i].in), out, sizeof out, &n, &err);
        CHECK(rc == A3S_OK, "%s: %s", cases[i].in, err.message);
        CHECK(n == strlen(cases[i].out) && memcmp(out, cases[i].out, n) == 0,
              "normalize '%s': got '%.*s', want '%s'", cases[i].in, (int)n, out, cases[i].out);
    }
    char small[2];
    size_t n = 0;
    a3s_error err;
    CHECK(a3s_path_normalize("abc", 3, small, sizeof small, &n, &err) == A3S_E_BUFFER,
          "small buffer");
    CHECK(err.detail == 3 && n == 3, "needed size");
    return check_report("test_path");
}
