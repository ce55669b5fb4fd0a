/* raw_match.c - the C side of the permission-policy benchmark (bench/policy/run.py).
 *
 * Times the native core with no Python in the loop, on exactly the workload
 * run.py builds: the 200 rules and the 20,000 (canonical tool, argument
 * string) pairs that PermissionPolicy would hand to a3s_ruleset_check.
 *
 * Build (run.py does this in a temp dir, one compiler per file, then a link):
 *   cc -O2 -std=c11 -Inative/include native/src/(all).c bench/policy/raw_match.c -lpthread
 * Only error.c, glob.c and ruleset.c are needed; run.py leaves out any other
 * native/src file that does not compile and says so.
 *
 * Usage: raw_match WORKLOAD DECISIONS_OUT CHECK_REPEATS PATTERN_REPEATS [wall|cpu]
 *   (cpu: time with CLOCK_PROCESS_CPUTIME_ID instead of CLOCK_MONOTONIC)
 *
 * WORKLOAD is little-endian binary:
 *   "A3SBENCH"  u32 nrules  { u32 list, u32 len, bytes }
 *   u32 npairs  { u32 tool_len, bytes, u32 subject_len, bytes, u32 kind }
 *   u32 nkinds  { u32 len, bytes }          (kind names, for the breakdown)
 *
 * Measurements, each the best and the median of the repeats:
 *   1. checks/s: a3s_ruleset_check over every pair (one pass = all pairs),
 *      and the best time of each kind's pairs alone (bash, file, mcp ...);
 *   2. matches/s: every rule's canonical argument pattern compiled alone with
 *      a3s_glob_compile and matched (a3s_glob_match) against every subject.
 * DECISIONS_OUT receives one byte per pair (the deciding A3S_LIST_*), so
 * run.py can check that this program decided exactly what Python decided.
 * The result is one JSON object on stdout.
 */
#define _POSIX_C_SOURCE 199309L

#include "a3s/a3s.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct {
    const char *p;
    size_t n;
} str;

static const unsigned char *cur, *end;

static void die(const char *msg) {
    fprintf(stderr, "raw_match: %s\n", msg);
    exit(2);
}

static uint32_t rd32(void) {
    if (end - cur < 4)
        die("truncated workload");
    uint32_t v = (uint32_t)cur[0] | (uint32_t)cur[1] << 8 | (uint32_t)cur[2] << 16 |
                 (uint32_t)cur[3] << 24;
    cur += 4;
    return v;
}

static str rdstr(void) {
    uint32_t n = rd32();
    if ((size_t)(end - cur) < n)
        die("truncated workload");
    str s = {(const char *)cur, n};
    cur += n;
    return s;
}

static clockid_t clock_id = CLOCK_MONOTONIC;

static double now(void) {
    struct timespec ts;
    clock_gettime(clock_id, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static volatile uint64_t sink; /* keeps the compiler from dropping the work */

int main(int argc, char **argv) {
    if (argc != 5 && argc != 6)
        die("usage: raw_match WORKLOAD DECISIONS_OUT CHECK_REPEATS PATTERN_REPEATS [wall|cpu]");
    if (argc == 6 && strcmp(argv[5], "cpu") == 0)
        clock_id = CLOCK_PROCESS_CPUTIME_ID;
    else if (argc == 6 && strcmp(argv[5], "wall") != 0)
        die("the clock is wall or cpu");
    int check_repeats = atoi(argv[3]), pattern_repeats = atoi(argv[4]);
    if (check_repeats < 1 || pattern_repeats < 1)
        die("repeats must be >= 1");

    FILE *f = fopen(argv[1], "rb");
    if (!f)
        die("cannot open the workload");
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *data = malloc((size_t)size + 1);
    if (!data || fread(data, 1, (size_t)size, f) != (size_t)size)
        die("cannot read the workload");
    fclose(f);
    cur = data;
    end = data + size;
    if (size < 8 || memcmp(cur, "A3SBENCH", 8) != 0)
        die("bad magic");
    cur += 8;

    a3s_error err;
    a3s_ruleset *rs;
    if (a3s_ruleset_new(&rs, &err) != A3S_OK)
        die(err.message);
    uint32_t nrules = rd32();
    for (uint32_t i = 0; i < nrules; i++) {
        int list = (int)rd32();
        str rule = rdstr();
        if (a3s_ruleset_add(rs, list, rule.p, rule.n, i, &err) != A3S_OK) {
            fprintf(stderr, "rule %u (%.*s): %s\n", i, (int)rule.n, rule.p, err.message);
            return 2;
        }
    }
    uint32_t npairs = rd32();
    str *tools = malloc(npairs * sizeof *tools), *subjects = malloc(npairs * sizeof *subjects);
    uint32_t *kind = malloc(npairs * sizeof *kind);
    unsigned char *decisions = malloc(npairs ? npairs : 1);
    if (!tools || !subjects || !kind || !decisions)
        die("out of memory");
    size_t subject_bytes = 0;
    for (uint32_t i = 0; i < npairs; i++) {
        tools[i] = rdstr();
        subjects[i] = rdstr();
        kind[i] = rd32();
        subject_bytes += subjects[i].n;
    }
    uint32_t nkinds = rd32();
    if (nkinds > 64)
        die("too many kinds");
    str kind_name[64];
    for (uint32_t k = 0; k < nkinds; k++)
        kind_name[k] = rdstr();
    for (uint32_t i = 0; i < npairs; i++)
        if (kind[i] >= nkinds)
            die("bad kind");

    /* 1. a3s_ruleset_check over every pair. */
    double *t = malloc((size_t)(check_repeats > pattern_repeats ? check_repeats : pattern_repeats) *
                       sizeof *t);
    if (!t)
        die("out of memory");
    for (int r = -1; r < check_repeats; r++) { /* r = -1: warm-up pass, not timed */
        double t0 = now();
        uint64_t acc = 0;
        for (uint32_t i = 0; i < npairs; i++) {
            a3s_match m = {.struct_size = sizeof m};
            if (a3s_ruleset_check(rs, tools[i].p, tools[i].n, subjects[i].p, subjects[i].n, &m,
                                  &err) != A3S_OK)
                die(err.message);
            decisions[i] = (unsigned char)m.list;
            acc += (uint64_t)m.list;
        }
        double dt = now() - t0;
        sink += acc;
        if (r >= 0)
            t[r] = dt;
    }
    double check_best = t[0];
    for (int r = 1; r < check_repeats; r++)
        check_best = t[r] < check_best ? t[r] : check_best;
    double check_median = median(t, check_repeats);

    /* The same, one kind of call at a time (best pass of each). */
    double kind_best[64];
    uint32_t kind_pairs[64] = {0};
    for (uint32_t k = 0; k < nkinds; k++) {
        kind_best[k] = 1e300;
        for (int r = 0; r < check_repeats; r++) {
            double t0 = now();
            uint64_t acc = 0;
            uint32_t cnt = 0;
            for (uint32_t i = 0; i < npairs; i++) {
                if (kind[i] != k)
                    continue;
                a3s_match m = {.struct_size = sizeof m};
                a3s_ruleset_check(rs, tools[i].p, tools[i].n, subjects[i].p, subjects[i].n, &m,
                                  &err);
                acc += (uint64_t)m.list;
                cnt++;
            }
            double dt = now() - t0;
            sink += acc;
            kind_pairs[k] = cnt;
            kind_best[k] = dt < kind_best[k] ? dt : kind_best[k];
        }
    }

    FILE *out = fopen(argv[2], "wb");
    if (!out || fwrite(decisions, 1, npairs, out) != npairs || fclose(out) != 0)
        die("cannot write the decisions");

    /* 2. Every non-"any arguments" rule pattern alone against every subject. */
    size_t nrs = a3s_ruleset_count(rs);
    a3s_glob **globs = calloc(nrs ? nrs : 1, sizeof *globs);
    uint32_t *rule_of = calloc(nrs ? nrs : 1, sizeof *rule_of);
    size_t npat = 0;
    if (!globs || !rule_of)
        die("out of memory");
    for (size_t i = 0; i < nrs; i++) {
        a3s_rule_view v = {.struct_size = sizeof v};
        if (a3s_ruleset_rule(rs, i, &v, &err) != A3S_OK)
            die(err.message);
        if (v.flags & A3S_RULE_ANY_ARGS)
            continue;
        if (a3s_glob_compile(v.pattern, v.pattern_len, 0, &globs[npat], &err) != A3S_OK)
            die(err.message);
        rule_of[npat++] = (uint32_t)i;
    }
    uint64_t *hits = calloc(npat ? npat : 1, sizeof *hits);
    double *pat_time = calloc(npat ? npat : 1, sizeof *pat_time);
    if (!hits || !pat_time)
        die("out of memory");
    for (int r = 0; r < pattern_repeats; r++) { /* no warm-up: each pass is long */
        double t0 = now();
        for (size_t k = 0; k < npat; k++) {
            double tk = now();
            uint64_t h = 0;
            for (uint32_t i = 0; i < npairs; i++)
                h += (uint64_t)a3s_glob_match(globs[k], subjects[i].p, subjects[i].n);
            tk = now() - tk;
            hits[k] = h;
            if (r == 0 || tk < pat_time[k])
                pat_time[k] = tk; /* best pass of this pattern */
        }
        t[r] = now() - t0;
    }
    double pat_best = t[0];
    for (int r = 1; r < pattern_repeats; r++)
        pat_best = t[r] < pat_best ? t[r] : pat_best;
    double pat_median = median(t, pattern_repeats);
    uint64_t total_hits = 0;
    for (size_t k = 0; k < npat; k++)
        total_hits += hits[k];

    double nmatch = (double)npat * (double)npairs;
    printf("{\"rules\": %zu, \"pairs\": %u, \"subject_bytes\": %zu,\n", nrs, npairs,
           subject_bytes);
    printf(" \"check_repeats\": %d, \"check_best_s\": %.9f, \"check_median_s\": %.9f,\n",
           check_repeats, check_best, check_median);
    printf(" \"checks_per_s_best\": %.1f, \"checks_per_s_median\": %.1f,\n", npairs / check_best,
           npairs / check_median);
    printf(" \"per_kind\": [");
    for (uint32_t k = 0; k < nkinds; k++)
        printf("%s{\"kind\": \"%.*s\", \"pairs\": %u, \"best_s\": %.9f}", k ? ", " : "",
               (int)kind_name[k].n, kind_name[k].p, kind_pairs[k], kind_best[k]);
    printf("],\n");
    printf(" \"patterns\": %zu, \"pattern_repeats\": %d, \"pattern_best_s\": %.9f,"
           " \"pattern_median_s\": %.9f,\n",
           npat, pattern_repeats, pat_best, pat_median);
    printf(" \"matches_per_s_best\": %.1f, \"matches_per_s_median\": %.1f,"
           " \"pattern_hits\": %llu,\n",
           nmatch / pat_best, nmatch / pat_median, (unsigned long long)total_hits);
    printf(" \"per_pattern\": [");
    for (size_t k = 0; k < npat; k++)
        printf("%s\n  {\"rule\": %u, \"hits\": %llu, \"ns_per_match\": %.2f}", k ? "," : "",
               rule_of[k], (unsigned long long)hits[k], pat_time[k] * 1e9 / npairs);
    printf("]}\n");

    for (size_t k = 0; k < npat; k++)
        a3s_glob_free(globs[k]);
    a3s_ruleset_free(rs);
    free(globs);
    free(rule_of);
    free(hits);
    free(pat_time);
    free(t);
    free(tools);
    free(subjects);
    free(kind);
    free(decisions);
    free(data);
    return 0;
}
