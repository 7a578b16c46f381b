/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * `export` over the control socket.
 *
 * An export can be millions of rows, so it runs on a worker thread with a
 * database connection of its own (WAL lets it read while the daemon
 * writes).  The worker owns the client's socket for the duration and writes
 * each 48 KiB of CSV or JSON Lines as one EXPORT_DATA event, blocking only
 * itself when the client reads slowly, so memory stays at one chunk and the
 * daemon's tick never waits.  The final reply carries the counts; then the
 * connection goes back to the main loop.
 */
#include "pt-control-private.h"
#include "pt-log.h"

#include <errno.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#define PT_EXPORT_CHUNK (48 * 1024)
#define PT_EXPORT_STALL_MS 30000

/* ---- a GOutputStream that frames chunks as events ---------------------- */

#define PT_TYPE_CHUNK_STREAM (pt_chunk_stream_get_type())
G_DECLARE_FINAL_TYPE(PtChunkStream, pt_chunk_stream, PT, CHUNK_STREAM, GOutputStream)

struct _PtChunkStream {
    GOutputStream parent;
    int fd;
    GString *buf;
    guint64 bytes;
    guint64 rows;               /* newline count: one per row, +1 for a CSV header */
};

G_DEFINE_TYPE(PtChunkStream, pt_chunk_stream, G_TYPE_OUTPUT_STREAM)

static gboolean
pt_send_all(int fd, const char *p, gsize len, GError **error)
{
    while (len > 0) {
        ssize_t n = send(fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT);

        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            struct pollfd pfd = { .fd = fd, .events = POLLOUT };

            if (poll(&pfd, 1, PT_EXPORT_STALL_MS) == 0) {
                g_set_error(error, G_IO_ERROR, G_IO_ERROR_TIMED_OUT,
                            "export: the client read nothing for %d s", PT_EXPORT_STALL_MS / 1000);
                return FALSE;
            }
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            g_set_error(error, G_IO_ERROR, g_io_error_from_errno(errno),
                        "export: %s", g_strerror(errno));
            return FALSE;
        }
        p += n;
        len -= n;
    }
    return TRUE;
}

static gboolean
pt_chunk_stream_emit(PtChunkStream *s, GError **error)
{
    g_autoptr(json_object) ev = NULL;
    json_object *data;
    g_autofree char *line = NULL;

    if (!s->buf->len)
        return TRUE;
    ev = json_object_new_object();
    data = json_object_new_object();
    json_object_object_add(data, "chunk", json_object_new_string_len(s->buf->str, s->buf->len));
    json_object_object_add(ev, "event", json_object_new_string("EXPORT_DATA"));
    json_object_object_add(ev, "data", data);
    line = g_strconcat(json_object_to_json_string_ext(ev, JSON_C_TO_STRING_PLAIN |
                                                      JSON_C_TO_STRING_NOSLASHESCAPE), "\n", NULL);
    g_string_truncate(s->buf, 0);
    return pt_send_all(s->fd, line, strlen(line), error);
}

static gssize
pt_chunk_stream_write(GOutputStream *os, const void *buffer, gsize count,
                      GCancellable *cancellable, GError **error)
{
    PtChunkStream *s = PT_CHUNK_STREAM(os);

    g_string_append_len(s->buf, buffer, count);
    s->bytes += count;
    for (gsize i = 0; i < count; i++)
        if (((const char *)buffer)[i] == '\n')
            s->rows++;
    if (s->buf->len >= PT_EXPORT_CHUNK && !pt_chunk_stream_emit(s, error))
        return -1;
    return count;
}

static gboolean
pt_chunk_stream_flush(GOutputStream *os, GCancellable *cancellable, GError **error)
{
    return pt_chunk_stream_emit(PT_CHUNK_STREAM(os), error);
}

static void
pt_chunk_stream_finalize(GObject *obj)
{
    g_string_free(PT_CHUNK_STREAM(obj)->buf, TRUE);
    G_OBJECT_CLASS(pt_chunk_stream_parent_class)->finalize(obj);
}

static void
pt_chunk_stream_init(PtChunkStream *s)
{
    s->buf = g_string_sized_new(PT_EXPORT_CHUNK + 4096);
}

static void
pt_chunk_stream_class_init(PtChunkStreamClass *klass)
{
    GOutputStreamClass *os = G_OUTPUT_STREAM_CLASS(klass);

    os->write_fn = pt_chunk_stream_write;
    os->flush = pt_chunk_stream_flush;
    G_OBJECT_CLASS(klass)->finalize = pt_chunk_stream_finalize;
}

/* ---- the job ----------------------------------------------------------- */

struct PtExportJob {
    PtConn *conn;
    int fd;
    char *db_path;
    StoreFilter filter;
    char *target, *iothread;
    StoreExportWhat what;
    StoreFormat format;
    json_object *id;
    GError *error;
};

static void pt_export_job_free(PtExportJob *job);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(PtExportJob, pt_export_job_free)

static void
pt_export_job_free(PtExportJob *job)
{
    json_object_put(job->id);
    g_clear_error(&job->error);
    g_free(job->db_path);
    g_free(job->target);
    g_free(job->iothread);
    g_free(job);
}

static gboolean
pt_export_done(gpointer data)
{
    PtExportJob *job = data;
    PtConn *conn = job->conn;

    conn->exporting = FALSE;
    if (conn->orphaned) {
        /* The connection closed meanwhile; the socket is ours to close. */
        close(job->fd);
        qmp_stream_free(conn->stream);
        g_string_free(conn->out, TRUE);
        g_free(conn->groups);
        g_free(conn);
    } else if (job->error) {
        pt_info(NULL, NULL, "control: export for uid %u ended: %s", (unsigned)conn->uid,
                job->error->message);
        pt_conn_resume(conn);
    } else {
        pt_conn_resume(conn);
    }
    pt_export_job_free(job);
    return G_SOURCE_REMOVE;
}

static gpointer
pt_export_thread(gpointer data)
{
    PtExportJob *job = data;
    g_autoptr(StoreDb) db = NULL;
    g_autoptr(PtChunkStream) out = g_object_new(PT_TYPE_CHUNK_STREAM, NULL);
    GError *err = NULL;

    out->fd = job->fd;
    /* The daemon owns the file: the export reads it in place, and neither
     * migrates nor writes it. */
    db = store_db_open_readonly(job->db_path, &err);
    if (db && store_export(db, &job->filter, job->what, job->format,
                           G_OUTPUT_STREAM(out), NULL, &err) &&
        g_output_stream_flush(G_OUTPUT_STREAM(out), NULL, &err)) {
        g_autoptr(json_object) ret = json_object_new_object();
        g_autofree char *line = NULL;
        guint64 rows = out->rows;

        if (job->format == STORE_FORMAT_CSV && rows)
            rows--;             /* the header */
        json_object_object_add(ret, "rows", json_object_new_int64(rows));
        json_object_object_add(ret, "bytes", json_object_new_int64(out->bytes));
        line = qmp_message_build_return(ret, job->id);
        pt_send_all(job->fd, line, strlen(line), &err);
    } else if (err) {
        g_autofree char *line = qmp_message_build_error("GenericError", err->message, job->id);
        GError *ignored = NULL;

        pt_send_all(job->fd, line, strlen(line), &ignored);
        g_clear_error(&ignored);
    }
    job->error = err;
    g_idle_add(pt_export_done, job);
    return NULL;
}

void
pt_control_export_start(PtConn *conn)
{
    PtExportJob *job = g_steal_pointer(&conn->pending_export);

    conn->exporting = TRUE;
    g_clear_handle_id(&conn->in_watch, g_source_remove);
    job->fd = conn->fd;
    g_thread_unref(g_thread_new("pt-export", pt_export_thread, job));
}

gboolean
pt_cmd_export(PtConn *conn, json_object *args, json_object **ret, GError **error)
{
    const PtConf *conf = pt_daemon_get_conf(conn->ctl->d);
    g_autoptr(PtExportJob) job = NULL;
    const char *format;
    gboolean decisions;

    if (g_str_equal(conf->database, ":memory:")) {
        g_set_error(error, PT_CONTROL_ERROR, PT_CONTROL_ERROR_GENERIC,
                    "export: the database is in memory");
        return FALSE;
    }
    job = g_new0(PtExportJob, 1);
    if (!pt_filter_from_args(args, &job->filter, error) ||
        !pt_arg_str(args, "format", FALSE, &format, error))
        return FALSE;
    /* The store keeps a target under its identity: a name an attached
     * target goes by (QEMU's -name) asks for that. */
    if (job->filter.target &&
        !(job->target = pt_target_identity(conn->ctl->d, job->filter.target, error)))
        return FALSE;
    job->format = format ? store_format_from_string(format) : STORE_FORMAT_CSV;
    if (job->format == STORE_FORMAT_INVALID) {
        g_set_error(error, PT_CONTROL_ERROR, PT_CONTROL_ERROR_INVALID_PARAMETER,
                    "format: must be csv or jsonl");
        return FALSE;
    }
    if (!pt_arg_bool(args, "decisions", &decisions, error))
        return FALSE;
    if (decisions)
        job->what = STORE_EXPORT_DECISIONS;
    /* The filter's strings must outlive the request. */
    job->iothread = g_strdup(job->filter.iothread);
    job->filter.target = job->target;
    job->filter.iothread = job->iothread;
    job->db_path = g_strdup(conf->database);
    job->id = conn->cur_id ? json_object_get(conn->cur_id) : NULL;
    job->conn = conn;
    *ret = NULL;
    conn->pending_export = g_steal_pointer(&job);
    if (conn->out->len == 0)
        pt_control_export_start(conn);
    return TRUE;
}
