/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "e2e-keep.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Paths are laid out when named, in fixed buffers, so that the abort
 * handler needs no allocation. */
#define E2E_KEEP_MAX 16

static char keep_dir[PATH_MAX];
static char keep_src[E2E_KEEP_MAX][PATH_MAX];
static char keep_dst[E2E_KEEP_MAX][PATH_MAX];
static char keep_what[4096];
static volatile sig_atomic_t keep_n;
static volatile sig_atomic_t keep_done;

void
e2e_keep_begin(const char *test)
{
    const char *over = g_getenv("PT_E2E_KEEP_DIR");
    const char *build = g_getenv("PT_BUILD_ROOT");
    g_autofree char *root = over ? g_strdup(over) :
        g_build_filename(build ? build : ".", "meson-logs", NULL);
    g_autofree char *dir = g_strdup_printf("%s/e2e-failed-%s-%d", root, test, (int)getpid());

    keep_n = 0;
    keep_done = 0;
    g_strlcpy(keep_dir, dir, sizeof(keep_dir));
    g_snprintf(keep_what, sizeof(keep_what), "What the failed run %s (pid %d) had:\n", test,
               (int)getpid());
}

void
e2e_keep_file(const char *path, const char *as)
{
    guint i = (guint)keep_n;
    g_autofree char *line = NULL;

    if (!keep_dir[0] || i >= E2E_KEEP_MAX)
        return;
    g_strlcpy(keep_src[i], path, sizeof(keep_src[i]));
    g_snprintf(keep_dst[i], sizeof(keep_dst[i]), "%s/%s", keep_dir, as);
    line = g_strdup_printf("  %s: %s\n", as, path);
    g_strlcat(keep_what, line, sizeof(keep_what));
    keep_n = (sig_atomic_t)(i + 1);
}

const char *
e2e_keep_dir(void)
{
    return keep_dir;
}

static void
keep_write_all(int fd, const char *buf, size_t len)
{
    while (len > 0) {
        ssize_t n = write(fd, buf, len);

        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return;
        buf += n;
        len -= (size_t)n;
    }
}

/* Async-signal-safe: open, read, write, close, mkdir only. */
static void
keep_copy(void)
{
    char buf[16384];
    int fd;

    if (keep_done || !keep_dir[0])
        return;
    keep_done = 1;
    if (mkdir(keep_dir, 0755) < 0 && errno != EEXIST)
        return;
    for (int i = 0; i < keep_n; i++) {
        int in = open(keep_src[i], O_RDONLY | O_CLOEXEC);
        int out;
        ssize_t n;

        if (in < 0)
            continue;
        out = open(keep_dst[i], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        while (out >= 0 && ((n = read(in, buf, sizeof(buf))) > 0 || (n < 0 && errno == EINTR)))
            if (n > 0)
                keep_write_all(out, buf, (size_t)n);
        if (out >= 0)
            close(out);
        close(in);
    }
    {
        char path[PATH_MAX + 16];
        size_t len = strlen(keep_dir);

        if (len + sizeof("/what.txt") > sizeof(path))
            return;
        memcpy(path, keep_dir, len);
        memcpy(path + len, "/what.txt", sizeof("/what.txt"));
        fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd >= 0) {
            keep_write_all(fd, keep_what, strlen(keep_what));
            close(fd);
        }
    }
}

void
e2e_keep_on_abort(void)
{
    static const char say[] = "# what the failed run had is kept in ";

    if (keep_done || !keep_dir[0])
        return;
    keep_copy();
    keep_write_all(STDERR_FILENO, say, sizeof(say) - 1);
    keep_write_all(STDERR_FILENO, keep_dir, strlen(keep_dir));
    keep_write_all(STDERR_FILENO, "\n", 1);
}

void
e2e_keep_end(void)
{
    if (g_test_failed()) {
        keep_copy();
        g_test_message("what the failed run had is kept in %s", keep_dir);
    }
    keep_dir[0] = 0;
    keep_n = 0;
}
