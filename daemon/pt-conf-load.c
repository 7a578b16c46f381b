/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Loading the configuration file (read by pt-conf-read.c, never blocking
 * the daemon on it).  A reload parses in a thread of its own while the
 * main thread waits for it, watching for a stop request: SIGTERM during a
 * reload is then acted on at once, however long the parse would take.
 */
#include "pt-conf.h"

#include <gio/gio.h>

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
