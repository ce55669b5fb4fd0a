/* test_credscan.c - credential discovery and its directory cache. */
#define _GNU_SOURCE
#include "../src/credscan.h"
#include "check.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

static char root[256];

static void touch(const char *rel) {
    char p[512];
    snprintf(p, sizeof p, "%s/%s", root, rel);
    int fd = open(p, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
    if (fd >= 0)
        close(fd);
}

static void mkd(const char *rel) {
    char p[512];
    snprintf(p, sizeof p, "%s/%s", root, rel);
    mkdir(p, 0700);
}

/* Backdates a directory so the cache trusts it (not "racy"). */
static void age(const char *rel) {
    char p[512];
    snprintf(p, sizeof p, "%s/%s", root, rel);
    struct timeval old[2] = {{1000000000, 0}, {1000000000, 0}};
    utimes(p, old);
}

static int found(const struct a3s_strvec *v, char tag, const char *rel) {
    char want[512];
    snprintf(want, sizeof want, "%c%s/%s", tag, root, rel);
    for (size_t i = 0; i < v->len; i++)
        if (!strcmp(v->items[i], want))
            return 1;
    return 0;
}

static void scan(struct a3s_credscan *cs, struct a3s_strvec *out) {
    a3s_strvec_free(out);
    a3s_error err;
    CHECK(a3s_credscan_run(cs, out, &err) == A3S_OK, "scan: %s", err.message);
}

int main(void) {
    snprintf(root, sizeof root, "/tmp/a3s-credscan-XXXXXX");
    if (!mkdtemp(root))
        return 1;
    mkd("a");
    mkd("a/b");
    mkd("node_modules");
    mkd("src");
    mkd(".config");
    mkd(".config/gh");
    touch(".env");
    touch(".ENV.local");
    touch(".envrc");
    touch("a/b/.env.production");
    touch("a/.netrc");
    touch("node_modules/.env"); /* not the user's: skipped */
    touch("src/main.rs");
    touch("src/environment.rs"); /* not a credential */
    mkd(".claude");
    touch(".claude/.credentials.json");
    mkd("sub");
    mkd("sub/.ssh");
    touch("sub/.ssh/id_ed25519");

    struct a3s_credscan *cs = NULL;
    CHECK(a3s_credscan_new(root, &cs, NULL) == A3S_OK, "new");
    struct a3s_strvec out = {0};
    scan(cs, &out);
    CHECK(found(&out, 'f', ".env") && found(&out, 'f', ".ENV.local") && found(&out, 'f', ".envrc"),
          ".env family");
    CHECK(found(&out, 'f', "a/b/.env.production") && found(&out, 'f', "a/.netrc"), "nested");
    CHECK(found(&out, 'f', ".claude/.credentials.json"), "agent credential pair");
    CHECK(found(&out, 'd', "sub/.ssh") && found(&out, 'd', ".config/gh"), "credential dirs");
    CHECK(!found(&out, 'f', "node_modules/.env"), "node_modules skipped");
    CHECK(!found(&out, 'f', "src/environment.rs") && !found(&out, 'f', "src/main.rs"),
          "ordinary files are not credentials");
    size_t first = out.len;

    /* the cache: aged directories are trusted, new files in changed ones are found */
    age("src");
    age("a");
    age("a/b");
    scan(cs, &out);
    CHECK(out.len == first, "same result from the cache (%zu vs %zu)", out.len, first);
    touch("src/.env"); /* changes src's mtime */
    mkd("a/b/c");
    touch("a/b/c/.npmrc");
    scan(cs, &out);
    CHECK(found(&out, 'f', "src/.env"), "a file added to a cached directory is found");
    CHECK(found(&out, 'f', "a/b/c/.npmrc"), "a file in a new subdirectory is found");

    /* racy: a change whose directory mtime did not move (same timestamp) is still found,
     * because a recently modified directory is never trusted */
    touch("a/b/c/.pypirc");
    age("a/b/c"); /* pretend the timestamp did not change ... */
    struct stat st;
    char p[512];
    snprintf(p, sizeof p, "%s/a/b/c", root);
    stat(p, &st);
    scan(cs, &out);
    CHECK(found(&out, 'f', "a/b/c/.pypirc"), "racy directory re-read");

    /* moves: a directory keeps its inode (and its inotify watch) when renamed */
    mkd("m1");
    mkd("m1/inner");
    touch("m1/inner/.env");
    mkd("m2");
    scan(cs, &out);
    CHECK(found(&out, 'f', "m1/inner/.env"), "before the move");
    char from[512], to[512];
    snprintf(from, sizeof from, "%s/m1/inner", root);
    snprintf(to, sizeof to, "%s/m2/inner", root);
    CHECK(rename(from, to) == 0, "rename");
    scan(cs, &out);
    CHECK(found(&out, 'f', "m2/inner/.env") && !found(&out, 'f', "m1/inner/.env"),
          "a moved directory's credentials are found at the new place only");
    touch("m2/inner/.netrc"); /* a change inside the moved (re-watched) directory */
    scan(cs, &out);
    CHECK(found(&out, 'f', "m2/inner/.netrc"), "changes after a move are still seen");
    snprintf(from, sizeof from, "%s/m2/inner/.netrc", root);
    snprintf(to, sizeof to, "%s/m2/inner/plain", root);
    CHECK(rename(from, to) == 0, "rename a file away from a credential name");
    snprintf(from, sizeof from, "%s/m2/inner/x", root);
    touch("m2/inner/x");
    snprintf(to, sizeof to, "%s/m2/inner/.pgpass", root);
    CHECK(rename(from, to) == 0, "rename a file onto a credential name");
    scan(cs, &out);
    CHECK(!found(&out, 'f', "m2/inner/.netrc") && found(&out, 'f', "m2/inner/.pgpass"),
          "renames in and out of credential names");
    for (int i = 0; i < 3; i++)
        scan(cs, &out); /* quiet runs: nothing changes, nothing is lost */
    CHECK(found(&out, 'f', "m2/inner/.env") && found(&out, 'f', "a/b/c/.npmrc"),
          "quiet runs keep every credential");

    /* after quiet runs (which walk nothing), a change deep down is still found, and so is
     * its removal: the first event ends the quiet */
    size_t quiet_len = out.len;
    mkd("a/b/c/d");
    touch("a/b/c/d/.git-credentials");
    scan(cs, &out);
    CHECK(found(&out, 'f', "a/b/c/d/.git-credentials") && out.len == quiet_len + 1,
          "a credential made after quiet runs is found");
    scan(cs, &out); /* quiet again, with the new file */
    CHECK(found(&out, 'f', "a/b/c/d/.git-credentials"), "kept by the next quiet run");
    snprintf(from, sizeof from, "%s/a/b/c/d/.git-credentials", root);
    CHECK(unlink(from) == 0, "unlink");
    scan(cs, &out);
    CHECK(!found(&out, 'f', "a/b/c/d/.git-credentials") && out.len == quiet_len,
          "a removed credential is gone after quiet runs");

    CHECK(a3s_credscan_watches(cs) > 10, "without a budget every directory is watched (%zu)",
          a3s_credscan_watches(cs));
    /* released (a stopped sandbox, issue 26): no watch is held; the next run
     * finds the same and watches again */
    size_t before = out.len;
    a3s_credscan_release(cs);
    CHECK(a3s_credscan_watches(cs) == 0, "released: %zu watches", a3s_credscan_watches(cs));
    scan(cs, &out);
    CHECK(out.len == before && a3s_credscan_watches(cs) > 10,
          "after a release the same is found (%zu of %zu) and watched (%zu)", out.len, before,
          a3s_credscan_watches(cs));
    a3s_credscan_release(cs);
    a3s_strvec_free(&out);
    a3s_credscan_free(cs);

    /* watch later (a one-shot handle): the first run holds no watch and finds the
     * same; a credential file made after it is found by the second, which watches
     * every directory; the third sees a change through them */
    CHECK(a3s_credscan_new(root, &cs, NULL) == A3S_OK, "new");
    a3s_credscan_watch_later(cs);
    scan(cs, &out);
    CHECK(out.len == before && a3s_credscan_watches(cs) == 0,
          "the first run finds the same (%zu of %zu) without a watch (%zu)", out.len, before,
          a3s_credscan_watches(cs));
    a3s_credscan_watch_later(cs); /* after a run: changes nothing */
    touch("a/b/.pgpass");
    scan(cs, &out);
    CHECK(found(&out, 'f', "a/b/.pgpass") && out.len == before + 1,
          "the second run finds the new file (%zu found)", out.len);
    CHECK(a3s_credscan_watches(cs) > 10, "the second run watches (%zu)",
          a3s_credscan_watches(cs));
    snprintf(from, sizeof from, "%s/a/b/.pgpass", root);
    CHECK(unlink(from) == 0, "unlink");
    touch("src/.npmrc");
    scan(cs, &out);
    CHECK(!found(&out, 'f', "a/b/.pgpass") && found(&out, 'f', "src/.npmrc") &&
              out.len == before + 1,
          "the third run sees both changes (%zu found)", out.len);
    snprintf(from, sizeof from, "%s/src/.npmrc", root);
    CHECK(unlink(from) == 0, "unlink");
    a3s_credscan_release(cs);
    a3s_strvec_free(&out);
    a3s_credscan_free(cs);

    /* a watch budget: beyond it, directories are tracked by their metadata,
     * and a credential file in one of them is still found */
    CHECK(a3s_credscan_new(root, &cs, NULL) == A3S_OK, "new");
    a3s_credscan_set_watch_budget(cs, 3);
    mkd("w");
    char rel[64];
    for (int i = 0; i < 40; i++) {
        snprintf(rel, sizeof rel, "w/d%d", i);
        mkd(rel);
    }
    scan(cs, &out);
    CHECK(a3s_credscan_watches(cs) == 3, "watches within the budget (%zu)",
          a3s_credscan_watches(cs));
    touch("w/d37/.env");
    scan(cs, &out);
    CHECK(found(&out, 'f', "w/d37/.env"), "a credential beyond the budget is found");
    for (int i = 0; i < 40; i++) {
        snprintf(rel, sizeof rel, "w/d%d", i);
        age(rel);
    }
    scan(cs, &out);
    touch("w/d12/.netrc"); /* its directory's mtime moves: seen without a watch */
    scan(cs, &out);
    CHECK(found(&out, 'f', "w/d12/.netrc") && found(&out, 'f', "w/d37/.env"),
          "metadata keeps unwatched directories current");
    CHECK(a3s_credscan_watches(cs) <= 3, "still within the budget (%zu)",
          a3s_credscan_watches(cs));
    a3s_strvec_free(&out);
    a3s_credscan_free(cs);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", root);
    int ignored = system(cmd);
    (void)ignored;
    return check_report("test_credscan");
}
