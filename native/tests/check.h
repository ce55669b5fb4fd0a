/* check.h - a minimal test harness: CHECK records a failure and goes on. */
#ifndef A3S_TEST_CHECK_H
#define A3S_TEST_CHECK_H

#include <stdio.h>
#include <string.h>

static int check_failures;
static int check_count;

#define CHECK(cond, ...)                                                                  \
    do {                                                                                  \
        check_count++;                                                                    \
        if (!(cond)) {                                                                    \
            check_failures++;                                                             \
            fprintf(stderr, "%s:%d: FAILED %s: ", __FILE__, __LINE__, #cond);            \
            fprintf(stderr, __VA_ARGS__);                                                 \
            fputc('\n', stderr);                                                          \
        }                                                                                 \
    } while (0)

/* The plain closing line CI reads: "N passed, N failed". */
static int check_report(const char *suite) {
    printf("%s: %d passed, %d failed\n", suite, check_count - check_failures, check_failures);
    return check_failures ? 1 : 0;
}

#endif
