/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Reading the configuration file without ever blocking the daemon on it.
 *
 * The file is opened with O_NONBLOCK and must be a regular file: a FIFO
 * put at its path would otherwise hold open() until a writer came, and a
 * device or a directory is no configuration either.  Its size is bounded
 * (PT_CONF_MAX_BYTES).  A reload parses in a thread of its own while the
 * main thread waits for it, watching for a stop request: SIGTERM during a
 * reload is then acted on at once, however long the parse would take.
 */
#include "pt-conf.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <gio/gio.h>

static const char *
pt_file_type_name(mode_t mode)
{
    if (S_ISFIFO(mode))
        return "a FIFO";
    if (S_ISDIR(mode))
        return "a directory";
    if (S_ISCHR(mode))
        return "a character device";
    if (S_ISBLK(mode))
        return "a block device";
    if (S_ISSOCK(mode))
        return "a socket";
    return "of another kind";
}

/* FALSE with @path and errno's message; closes @fd when one is open. */
static gboolean
pt_conf_read_fail(const char *path, int fd, GError **error)
{
    int e = errno;

    g_set_error(error, G_FILE_ERROR, g_file_error_from_errno(e), "%s: %s", path,
                g_strerror(e));
    if (fd >= 0)
        close(fd);
    return FALSE;
}

gboolean
pt_conf_read_file(const char *path, char **data, gsize *len, GError **error)
{
    g_autofree char *buf = NULL;
    struct stat st;
    gsize got = 0;
    int fd;

    /* O_NONBLOCK: open() of a FIFO returns at once instead of waiting for
     * a writer; on a regular file the flag changes nothing. */
    fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd < 0 || fstat(fd, &st) < 0)
        return pt_conf_read_fail(path, fd, error);
    if (!S_ISREG(st.st_mode)) {
        g_set_error(error, G_FILE_ERROR, G_FILE_ERROR_INVAL,
                    "%s: is %s, not a regular file: refused", path,
                    pt_file_type_name(st.st_mode));
        close(fd);
        return FALSE;
    }
    if (st.st_size > PT_CONF_MAX_BYTES) {
        g_set_error(error, G_FILE_ERROR, G_FILE_ERROR_FAILED,
                    "%s: is %" G_GINT64_FORMAT " bytes, above the limit of %u bytes",
                    path, (gint64)st.st_size, (guint)PT_CONF_MAX_BYTES);
        close(fd);
        return FALSE;
    }
    /* One byte more than the limit, to see a file that grew since fstat. */
    buf = g_malloc(PT_CONF_MAX_BYTES + 2);
    while (got <= PT_CONF_MAX_BYTES) {
        ssize_t n = read(fd, buf + got, PT_CONF_MAX_BYTES + 1 - got);

        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return pt_conf_read_fail(path, fd, error);
        if (n == 0)
            break;
        got += n;
    }
    close(fd);
    if (got > PT_CONF_MAX_BYTES) {
        g_set_error(error, G_FILE_ERROR, G_FILE_ERROR_FAILED,
                    "%s: above the limit of %u bytes", path, (guint)PT_CONF_MAX_BYTES);
        return FALSE;
    }
    buf[got] = '\0';
    *data = g_realloc(g_steal_pointer(&buf), got + 1);
    if (len)
        *len = got;
    return TRUE;
}

PtConf *
pt_conf_load(const char *path, gboolean must_exist, GError **error)
{
    g_autofree char *data = NULL;
    g_autoptr(GError) err = NULL;
    PtConf *c;
    gsize len;

    if (!pt_conf_read_file(path, &data, &len, &err)) {
        if (!must_exist && g_error_matches(err, G_FILE_ERROR, G_FILE_ERROR_NOENT)) {
            c = pt_conf_new_default();
            c->path = g_strdup(path);
            return c;
        }
        g_propagate_error(error, g_steal_pointer(&err));
        return NULL;
    }
    c = pt_conf_load_data(data, len, path, error);
    if (c)
        c->from_file = TRUE;
    return c;
}

/* ---- a load the main thread waits for ---------------------------------- */

/* Shared by the waiting thread and the loading one; the last to let go
 * frees it, so a wait given up leaves the loader to finish alone. */
typedef struct {
    gint refs;
    GMutex lock;
    GCond done_cond;
    gboolean done;
    char *path;
    gboolean must_exist;
    PtConf *conf;
    GError *error;
} PtConfLoadJob;

static void
pt_conf_load_job_unref(PtConfLoadJob *job)
{
    if (!g_atomic_int_dec_and_test(&job->refs))
        return;
    g_mutex_clear(&job->lock);
    g_cond_clear(&job->done_cond);
    g_free(job->path);
    pt_conf_free(job->conf);
    g_clear_error(&job->error);
    g_free(job);
}

static gpointer
pt_conf_load_thread(gpointer data)
{
    PtConfLoadJob *job = data;
    GError *err = NULL;
    PtConf *conf = pt_conf_load(job->path, job->must_exist, &err);

    g_mutex_lock(&job->lock);
    job->conf = conf;
    job->error = err;
    job->done = TRUE;
    g_cond_signal(&job->done_cond);
    g_mutex_unlock(&job->lock);
    pt_conf_load_job_unref(job);
    return NULL;
}

/* How often the wait looks at @stop: a stop is seen within this (and a
 * thread's wake-up), far inside the second SIGTERM is given. */
#define PT_CONF_STOP_POLL_US (10 * G_TIME_SPAN_MILLISECOND)

PtConf *
pt_conf_load_until(const char *path, gboolean must_exist, gboolean (*stop)(void),
                   GError **error)
{
    PtConfLoadJob *job = g_new0(PtConfLoadJob, 1);
    g_autoptr(GError) err = NULL;
    GThread *thread;
    PtConf *conf = NULL;

    job->refs = 2;
    g_mutex_init(&job->lock);
    g_cond_init(&job->done_cond);
    job->path = g_strdup(path);
    job->must_exist = must_exist;
    thread = g_thread_try_new("pt-conf-load", pt_conf_load_thread, job, &err);
    if (!thread) {
        job->refs = 1;
        pt_conf_load_job_unref(job);
        g_set_error(error, G_IO_ERROR, G_IO_ERROR_FAILED, "%s: no thread to read it in: %s",
                    path, err->message);
        return NULL;
    }
    g_mutex_lock(&job->lock);
    while (!job->done && !stop()) {
        gint64 until = g_get_monotonic_time() + PT_CONF_STOP_POLL_US;

        g_cond_wait_until(&job->done_cond, &job->lock, until);
    }
    if (job->done) {
        conf = g_steal_pointer(&job->conf);
        if (!conf)
            g_propagate_error(error, g_steal_pointer(&job->error));
    } else {
        g_set_error(error, G_IO_ERROR, G_IO_ERROR_CANCELLED,
                    "%s: reading it was given up: polltuned is stopping", path);
    }
    g_mutex_unlock(&job->lock);
    /* Not joined when given up: the loader ends by itself, and the
     * daemon's stop does not wait for it. */
    g_thread_unref(thread);
    pt_conf_load_job_unref(job);
    return conf;
}
