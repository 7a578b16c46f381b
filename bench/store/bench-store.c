/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * bench-store: the history store's figures, each against its reference in
 * the same run.
 *
 *   bench-store insert [--iothreads N] [--ticks N] [--reps N] [--dir D]
 *     sample rows/s through store_tick_write (one transaction per tick)
 *     vs the sqlite3 CLI loading the same rows from a prepared SQL file;
 *     checks both databases hold the same samples.
 *   bench-store export [--rows N] [--reps N] [--dir D]
 *     raw rows to CSV through store_export vs `sqlite3 -csv` running the
 *     equivalent SELECT into a file; checks both files are identical.
 *
 * The references name the samples' columns and the export's rates from the
 * metric table (metric-table.h), as the store does, so that a metric added
 * there is in both sides without a change here.
 *   bench-store size [--iothreads N] [--ticks N] [--dir D]
 *     bytes per raw sample row for a mix of busy and idle iothreads, and
 *     the resulting size per iothread per day.
 *
 * Rows come from the tests' tick generator: one iothread in five is busy
 * (about 12,000 IOPS, a third of a core), the others idle (a few
 * context switches, an occasional write).
 */
#include <fcntl.h>
#include <gio/gunixoutputstream.h>
#include <glib/gstdio.h>
#include <stdio.h>
#include <sys/resource.h>
#include <unistd.h>

#include "store-testutil.h"

#define T0 G_GINT64_CONSTANT(1764590400000)

static int opt_iothreads = 100;
static int opt_ticks = 3000;
static int opt_reps = 3;
static gint64 opt_rows = 10000000;
static char *opt_dir = NULL;
static gboolean opt_ours_only = FALSE;

static const GOptionEntry entries[] = {
    { "iothreads", 0, 0, G_OPTION_ARG_INT, &opt_iothreads, "iothreads per tick", "N" },
    { "ticks", 0, 0, G_OPTION_ARG_INT, &opt_ticks, "ticks to write", "N" },
    { "reps", 0, 0, G_OPTION_ARG_INT, &opt_reps, "repetitions (median reported)", "N" },
    { "rows", 0, 0, G_OPTION_ARG_INT64, &opt_rows, "raw rows to export", "N" },
    { "ours-only", 0, 0, G_OPTION_ARG_NONE, &opt_ours_only, "skip the reference (profiling)",
      NULL },
    { "dir", 0, 0, G_OPTION_ARG_FILENAME, &opt_dir, "work folder (default: a temporary one)",
      "D" },
    { NULL },
};

static double
now_s(void)
{
    return g_get_monotonic_time() / 1e6;
}

/* CPU seconds (user + system) of this process or of its reaped children. */
static double
cpu_s(int who)
{
    struct rusage ru;

    getrusage(who, &ru);
    return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec +
           (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

static int
cmp_double(gconstpointer a, gconstpointer b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return x < y ? -1 : x > y;
}

static double
median(GArray *v)
{
    g_array_sort(v, cmp_double);
    return g_array_index(v, double, v->len / 2);
}

static void
die(const char *what, GError *error)
{
    g_printerr("bench-store: %s: %s\n", what, error ? error->message : "failed");
    exit(1);
}

static void
remove_db(const char *path)
{
    g_autofree char *wal = g_strconcat(path, "-wal", NULL);
    g_autofree char *shm = g_strconcat(path, "-shm", NULL);

    g_unlink(path);
    g_unlink(wal);
    g_unlink(shm);
}

/* Runs argv with stdin/stdout redirected to files (NULL: inherit); returns
 * its wall time in seconds, and its CPU time in @cpu. */
static double
run_timed(const char *const *argv, const char *in, const char *out, double *cpu)
{
    double cpu0 = cpu_s(RUSAGE_CHILDREN), wall;

    g_autoptr(GSubprocessLauncher) l = g_subprocess_launcher_new(G_SUBPROCESS_FLAGS_NONE);
    g_autoptr(GSubprocess) p = NULL;
    g_autoptr(GError) error = NULL;
    double start;

    if (in)
        g_subprocess_launcher_set_stdin_file_path(l, in);
    if (out)
        g_subprocess_launcher_set_stdout_file_path(l, out);
    start = now_s();
    p = g_subprocess_launcher_spawnv(l, argv, &error);
    if (!p || !g_subprocess_wait_check(p, NULL, &error))
        die(argv[0], error);
    wall = now_s() - start;
    if (cpu)
        *cpu = cpu_s(RUSAGE_CHILDREN) - cpu0;
    return wall;
}

/* Writes @n_ticks ticks of @n_iothreads; returns seconds, per-tick us in @lat. */
static double
write_ticks(StoreDb *db, int n_iothreads, gint64 n_ticks, gint64 first, GArray *lat)
{
    g_autoptr(TestTick) t = test_tick_new(n_iothreads);
    g_autoptr(GError) error = NULL;
    double start = now_s();

    for (gint64 k = 0; k < n_ticks; k++) {
        StoreStats stats;

        test_tick_fill(t, T0 + (first + k) * 1000, first + k);
        if (!store_tick_write(db, &t->tick, &error))
            die("write tick", error);
        if (lat) {
            store_db_get_stats(db, &stats);
            g_array_append_val(lat, (double){ (double)stats.last_write_us });
        }
    }
    return now_s() - start;
}

static const char *
sql_int(char *buf, gint64 v)
{
    if (v == METRIC_ABSENT)
        return "NULL";
    g_snprintf(buf, 32, "%" G_GINT64_FORMAT, v);
    return buf;
}

/* "key, poll_max_ns, ...": the samples table's columns, one per metric of
 * the table in its order, so that a metric added there is in the reference
 * too. */
static char *
sample_columns(void)
{
    GString *cols = g_string_new("key");

    for (int id = 0; id < METRIC_MAX; id++)
        g_string_append_printf(cols, ", %s", metric_def(id)->name);
    return g_string_free(cols, FALSE);
}

/* The same rows as write_ticks, as the SQL a script would feed sqlite3:
 * names resolved to ids up front, one transaction per tick.  Every INSERT
 * names its columns: a column the schema gains later is left NULL, as the
 * store leaves it for rows it does not know. */
static void
write_sql_file(const char *path, int n_iothreads, gint64 n_ticks)
{
    g_autoptr(TestTick) t = test_tick_new(n_iothreads);
    g_autofree char *cols = sample_columns();
    FILE *f = fopen(path, "w");
    char b[8][32];

    if (!f)
        die(path, NULL);
    fputs("PRAGMA synchronous = NORMAL;\n", f);
    for (int i = 0; i < n_iothreads; i++) {
        if (i % 4 == 0)
            fprintf(f, "INSERT INTO targets (id, kind, name, uuid, first_seen, last_seen)"
                    " VALUES (%d, 1, '%s', NULL, %" G_GINT64_FORMAT ", %" G_GINT64_FORMAT
                    ");\n", i / 4 + 1, t->names[2 * i], T0, T0);
        fprintf(f, "INSERT INTO iothreads (id, target_id, name, first_seen, last_seen)"
                " VALUES (%d, %d, '%s', %" G_GINT64_FORMAT ", %" G_GINT64_FORMAT ");\n",
                i + 1, i / 4 + 1, t->names[2 * i + 1], T0, T0);
    }
    for (gint64 k = 0; k < n_ticks; k++) {
        test_tick_fill(t, T0 + k * 1000, k);
        fprintf(f, "BEGIN;\nINSERT INTO ticks (id, ts, len_ns, psi_cpu_some_us, psi_io_some_us,"
                " psi_io_full_us, psi_mem_some_us, psi_mem_full_us, cpu_busy_us, cpu_total_us)"
                " VALUES (%" G_GINT64_FORMAT ", %" G_GINT64_FORMAT ", %" G_GINT64_FORMAT
                ", %s, %s, %s, %s, %s, %s, %s);\n", k + 1, t->tick.ts_ms, t->tick.len_ns,
                sql_int(b[0], t->tick.psi.cpu_some_us), sql_int(b[1], t->tick.psi.io_some_us),
                sql_int(b[2], t->tick.psi.io_full_us), sql_int(b[3], t->tick.psi.mem_some_us),
                sql_int(b[4], t->tick.psi.mem_full_us), sql_int(b[5], t->tick.cpu.busy_us),
                sql_int(b[6], t->tick.cpu.total_us));
        for (int i = 0; i < n_iothreads; i++) {
            const StoreSample *s = &t->samples[i];

            fprintf(f, "INSERT INTO samples (%s) VALUES (%" G_GINT64_FORMAT, cols,
                    ((k + 1) << 20) | (i + 1));
            for (int id = 0; id < METRIC_MAX; id++)
                fprintf(f, ", %s", sql_int(b[0], s->m.v[id]));
            fputs(");\n", f);
        }
        fputs("COMMIT;\n", f);
    }
    fclose(f);
}

/* What the database at @path holds, as one line: the number of ticks, and
 * of sample rows with their keys' sum and every metric column's count and
 * sum.  Two databases that give the same line hold the same samples. */
static char *
samples_digest(const char *path)
{
    GString *q = g_string_new("SELECT (SELECT count(*) FROM ticks) || ' ' || count(*) || ' ' ||"
                              " sum(key)");
    g_autofree char *sql = NULL;
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    char *digest;

    for (int id = 0; id < METRIC_MAX; id++)
        g_string_append_printf(q, " || ' ' || count(%s) || ':' || ifnull(sum(%s), '')",
                               metric_def(id)->name, metric_def(id)->name);
    g_string_append(q, " FROM samples");
    sql = g_string_free(q, FALSE);
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK ||
        sqlite3_step(st) != SQLITE_ROW) {
        g_printerr("bench-store: %s: %s\n", path, sqlite3_errmsg(db));
        exit(1);
    }
    digest = g_strdup((const char *)sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    sqlite3_close(db);
    return digest;
}

static StoreDb *
open_or_die(const char *path)
{
    g_autoptr(GError) error = NULL;
    StoreDb *db = store_db_open(path, NULL, &error);

    if (!db)
        die(path, error);
    return db;
}

static void
bench_insert(const char *dir)
{
    g_autofree char *ours = g_build_filename(dir, "insert-ours.db", NULL);
    g_autofree char *ref = g_build_filename(dir, "insert-cli.db", NULL);
    g_autofree char *sql = g_build_filename(dir, "insert.sql", NULL);
    g_autoptr(GArray) t_ours = g_array_new(FALSE, FALSE, sizeof(double));
    g_autoptr(GArray) t_ref = g_array_new(FALSE, FALSE, sizeof(double));
    g_autoptr(GArray) t_path = g_array_new(FALSE, FALSE, sizeof(double));
    g_autoptr(GArray) c_ours = g_array_new(FALSE, FALSE, sizeof(double));
    g_autoptr(GArray) c_ref = g_array_new(FALSE, FALSE, sizeof(double));
    g_autoptr(GArray) lat = g_array_new(FALSE, FALSE, sizeof(double));
    const char *argv[] = { "sqlite3", ref, NULL };
    double rows = (double)opt_iothreads * opt_ticks, m_ours, m_ref, m_path;

    if (!opt_ours_only)
        write_sql_file(sql, opt_iothreads, opt_ticks);
    for (int rep = 0; rep < opt_reps; rep++) {
        StoreDb *db;
        double secs, start, cpu;

        remove_db(ours);
        db = open_or_die(ours);
        g_array_set_size(lat, 0);
        cpu = cpu_s(RUSAGE_SELF);
        start = now_s();
        secs = write_ticks(db, opt_iothreads, opt_ticks, 0, lat);
        g_array_append_val(t_path, secs);
        /* closing checkpoints the WAL into the file, as the CLI does */
        store_db_close(db);
        secs = now_s() - start;
        g_array_append_val(t_ours, secs);
        cpu = cpu_s(RUSAGE_SELF) - cpu;
        g_array_append_val(c_ours, cpu);

        if (opt_ours_only)
            continue;
        remove_db(ref);
        store_db_close(open_or_die(ref));   /* the same schema, empty */
        secs = run_timed(argv, sql, "/dev/null", &cpu);
        g_array_append_val(t_ref, secs);
        g_array_append_val(c_ref, cpu);
    }
    m_ours = median(t_ours);
    m_path = median(t_path);
    if (opt_ours_only) {
        printf("insert: %.0f rows/s ticks only, %.0f rows/s with close\n", rows / m_path,
               rows / m_ours);
        return;
    }
    m_ref = median(t_ref);
    g_array_sort(lat, cmp_double);
    {
        g_autofree char *a = samples_digest(ours);
        g_autofree char *b = samples_digest(ref);

        if (!g_str_equal(a, b)) {
            g_printerr("bench-store: insert: the two databases differ:\n  ours: %s\n  CLI:  %s\n",
                       a, b);
            exit(1);
        }
    }
    printf("insert: %d iothreads x %d ticks = %.0f rows, one transaction per tick, "
           "same samples in both, median of %d\n", opt_iothreads, opt_ticks, rows, opt_reps);
    printf("  store_tick_write, ticks only:  %9.0f rows/s  (%.3f s)\n", rows / m_path, m_path);
    printf("  store_tick_write + close:      %9.0f rows/s  (%.3f s)\n", rows / m_ours, m_ours);
    printf("  sqlite3 CLI < prepared .sql:   %9.0f rows/s  (%.3f s)\n", rows / m_ref, m_ref);
    printf("  ratio ours (with close) / CLI: %9.2f   goal >= 300000 rows/s: %s\n",
           m_ref / m_ours, rows / m_ours >= 300000 ? "met" : "NOT met");
    printf("  per CPU second (user+sys): ours %.0f rows/s, CLI %.0f rows/s, ratio %.2f\n",
           rows / median(c_ours), rows / median(c_ref), median(c_ref) / median(c_ours));
    printf("  tick write latency (last rep): p50 %.0f us, p99 %.0f us, max %.0f us\n",
           g_array_index(lat, double, lat->len / 2),
           g_array_index(lat, double, lat->len * 99 / 100),
           g_array_index(lat, double, lat->len - 1));
    remove_db(ours);
    remove_db(ref);
    g_unlink(sql);
}

/* "(s.rd_ops + s.wr_ops + s.flush_ops)": a rate's terms summed. */
static char *
terms_sql(const MetricId *terms, const char *join)
{
    GString *q = g_string_new("(");

    for (int i = 0; i < METRIC_RATE_TERMS && terms[i] != METRIC_INVALID; i++)
        g_string_append_printf(q, "%ss.%s", i ? join : "", metric_def(terms[i])->name);
    g_string_append_c(q, ')');
    return g_string_free(q, FALSE);
}

/*
 * One rate of raw exports as a SELECT column, from its MetricRateDef: the
 * terms' sum times the scale over the tick or the operations, rounded to
 * the export's decimals, empty when a term is NULL or the rate undefined
 * (metric_rate_value()).  SQL does the same floating-point operations in
 * the same order as the C, so the figures agree to the last digit.
 */
static void
export_rate_sql(GString *q, MetricRate rate)
{
    const MetricRateDef *d = metric_rate_def(rate);
    /* The tick's operations: the terms IOPS counts (metric_values_ops()). */
    g_autofree char *ops = terms_sql(metric_rate_def(METRIC_RATE_IOPS)->terms, " + ");
    g_autofree char *ops_known = terms_sql(metric_rate_def(METRIC_RATE_IOPS)->terms,
                                           " IS NOT NULL AND ");
    g_autofree char *num = terms_sql(d->terms, " + ");
    g_autofree char *num_known = terms_sql(d->terms, " IS NOT NULL AND ");
    g_autofree char *value = NULL;
    gboolean per_op = d->per == METRIC_PER_OP_SKIP_IDLE;
    char scale[G_ASCII_DTOSTR_BUF_SIZE];

    /* every digit, and a real even when the scale is whole */
    g_ascii_formatd(scale, sizeof(scale), "%.17e", d->scale);
    switch (d->per) {
    case METRIC_PER_SECOND:
        value = g_strdup_printf("%s * %s * 1e9 / t.len_ns", num, scale);
        break;
    case METRIC_PER_TICK_NS:
        value = g_strdup_printf("%s * %s / t.len_ns", num, scale);
        break;
    case METRIC_PER_OP_SKIP_IDLE:
        value = g_strdup_printf("%s * %s / %s", num, scale, ops);
        break;
    }
    g_string_append_printf(q, ", CASE WHEN t.len_ns > 0 AND %s IS NOT NULL", num_known);
    if (per_op || d->needs_ops)
        g_string_append_printf(q, " AND %s IS NOT NULL", ops_known);
    if (d->per == METRIC_PER_OP_SKIP_IDLE)
        g_string_append_printf(q, " AND %s > 0", ops);
    if (d->export_decimals > 0)
        g_string_append_printf(q, " THEN printf('%%.%df', round((%s) * 1e%d) / 1e%d) END",
                               d->export_decimals, value, d->export_decimals,
                               d->export_decimals);
    else
        g_string_append_printf(q, " THEN CAST(round(%s) AS INTEGER) END", value);
    g_string_append_printf(q, " AS %s", d->json_key);
}

/*
 * The SELECT a user of the sqlite3 CLI would write for store_export's raw
 * CSV: the tick's length, every metric of the table under its name, then
 * the rates the table exports beside them, names joined in and the time
 * formatted as ISO 8601 with milliseconds.  Derived from the metric table
 * as the export is, so that a new metric or rate is in both.
 */
static char *
export_select_new(void)
{
    GString *q = g_string_new("SELECT strftime('%Y-%m-%dT%H:%M:%fZ', t.ts / 1000.0, 'unixepoch')"
                              " AS time, g.name AS target, g.display_name AS name,"
                              " i.name AS iothread, t.len_ns AS tick_ns");

    for (int id = 0; id < METRIC_MAX; id++)
        g_string_append_printf(q, ", s.%s", metric_def(id)->name);
    for (int r = 0; r < METRIC_RATE_MAX; r++)
        if (metric_rate_def(r)->raw_export)
            export_rate_sql(q, r);
    g_string_append(q, " FROM ticks t JOIN samples s ON s.key >= t.id << 20 AND"
                       " s.key < (t.id + 1) << 20 JOIN iothreads i ON i.id = s.key & 1048575"
                       " JOIN targets g ON g.id = i.target_id ORDER BY t.id, s.key");
    return g_string_free(q, FALSE);
}

static double
export_ours(const char *db_path, const char *out_path, double *cpu)
{
    double cpu0 = cpu_s(RUSAGE_SELF), wall;
    g_autoptr(GError) error = NULL;
    g_autoptr(GOutputStream) out = NULL;
    double start = now_s();
    StoreDb *db = open_or_die(db_path);
    int fd = open(out_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    StoreFilter f;

    if (fd < 0)
        die(out_path, NULL);
    out = g_unix_output_stream_new(fd, TRUE);
    store_filter_init(&f);
    if (!store_export(db, &f, STORE_EXPORT_SAMPLES, STORE_FORMAT_CSV, out, NULL, &error) ||
        !g_output_stream_close(out, NULL, &error))
        die("export", error);
    store_db_close(db);
    wall = now_s() - start;
    *cpu = cpu_s(RUSAGE_SELF) - cpu0;
    return wall;
}

static void
bench_export(const char *dir)
{
    g_autofree char *db_path = g_build_filename(dir, "export.db", NULL);
    g_autofree char *a = g_build_filename(dir, "export-ours.csv", NULL);
    g_autofree char *b = g_build_filename(dir, "export-cli.csv", NULL);
    g_autoptr(GArray) t_ours = g_array_new(FALSE, FALSE, sizeof(double));
    g_autoptr(GArray) t_ref = g_array_new(FALSE, FALSE, sizeof(double));
    g_autoptr(GArray) c_ours = g_array_new(FALSE, FALSE, sizeof(double));
    g_autoptr(GArray) c_ref = g_array_new(FALSE, FALSE, sizeof(double));
    g_autofree char *select = export_select_new();
    const char *argv[] = { "sqlite3", "-csv", "-header", "-newline", "\r\n", db_path, select,
                           NULL };
    const char *cmp_argv[] = { "cmp", a, b, NULL };
    int n_iothreads = 200;
    gint64 n_ticks = opt_rows / n_iothreads;
    double rows = (double)n_iothreads * n_ticks, m_ours, m_ref;
    GStatBuf st;

    if (!g_file_test(db_path, G_FILE_TEST_EXISTS) ||
        test_sql_int(db_path, "SELECT count(*) FROM samples") != (gint64)rows) {
        StoreDb *db;

        remove_db(db_path);
        db = open_or_die(db_path);
        printf("building %.0f rows ...\n", rows);
        write_ticks(db, n_iothreads, n_ticks, 0, NULL);
        store_db_close(db);
    }
    for (int rep = 0; rep < opt_reps; rep++) {
        double cpu, secs = export_ours(db_path, a, &cpu);

        g_array_append_val(t_ours, secs);
        g_array_append_val(c_ours, cpu);
        /* the launcher writes over the file without truncating it */
        g_unlink(b);
        secs = run_timed(argv, NULL, b, &cpu);
        g_array_append_val(t_ref, secs);
        g_array_append_val(c_ref, cpu);
    }
    run_timed(cmp_argv, NULL, NULL, NULL);  /* fails the run if they differ */
    g_stat(a, &st);
    m_ours = median(t_ours);
    m_ref = median(t_ref);
    printf("export: %.0f raw rows to CSV (%.0f MB), files identical, median of %d\n", rows,
           st.st_size / 1e6, opt_reps);
    printf("  store_export:        %10.0f rows/s  (%.3f s)\n", rows / m_ours, m_ours);
    printf("  sqlite3 -csv SELECT: %10.0f rows/s  (%.3f s)\n", rows / m_ref, m_ref);
    printf("  ratio (CLI time / ours): %.2f   goal >= 1.0: %s\n", m_ref / m_ours,
           m_ref / m_ours >= 1.0 ? "met" : "NOT met");
    printf("  per CPU second (user+sys): ours %.0f rows/s, CLI %.0f rows/s, ratio %.2f\n",
           rows / median(c_ours), rows / median(c_ref), median(c_ref) / median(c_ours));
    g_unlink(a);
    g_unlink(b);
}

static gint64
table_bytes(const char *path, const char *names)
{
    g_autofree char *sql = g_strdup_printf("SELECT sum(pgsize) FROM dbstat WHERE name IN (%s)",
                                           names);

    return test_sql_int(path, sql);
}

static void
bench_size(const char *dir)
{
    g_autofree char *path = g_build_filename(dir, "size.db", NULL);
    g_autoptr(GError) error = NULL;
    double rows = (double)opt_iothreads * opt_ticks;
    double raw, tick_share, roll, per_day_raw, per_day_1m, per_day_1h;
    gint64 roll_rows;
    gboolean more = TRUE;
    StoreDb *db;

    remove_db(path);
    db = open_or_die(path);
    write_ticks(db, opt_iothreads, opt_ticks, 0, NULL);
    while (more)
        if (!store_maintain_step(db, T0 + (gint64)opt_ticks * 1000, 50, &more, &error))
            die("maintain", error);
    {
        StoreStats st;

        store_db_get_stats(db, &st);
        printf("maintenance: longest unit %.1f ms (goal: under 50 ms)\n",
               st.max_maintain_unit_us / 1000.0);
    }
    store_db_close(db);

    raw = table_bytes(path, "'samples'") / rows;
    tick_share = table_bytes(path, "'ticks', 'ticks_ts'") / rows;
    roll_rows = test_sql_int(path, "SELECT count(*) FROM rollup_1m");
    roll = (double)table_bytes(path, "'rollup_1m'") / roll_rows;
    per_day_raw = 86400 * (raw + tick_share);
    per_day_1m = 1440 * roll;
    per_day_1h = 24 * roll;
    printf("size: %d iothreads (1 in 5 busy) x %d ticks = %.0f raw rows\n", opt_iothreads,
           opt_ticks, rows);
    printf("  samples table:            %6.1f bytes/row\n", raw);
    printf("  + tick row share:         %6.1f bytes/row\n", tick_share);
    printf("  raw total:                %6.1f bytes/row   goal <= 64: %s\n", raw + tick_share,
           raw + tick_share <= 64 ? "met" : "NOT met");
    printf("  rollup row (1m or 1h):    %6.1f bytes/row (%" G_GINT64_FORMAT " rows)\n", roll,
           roll_rows);
    printf("  per iothread per day at 1 s ticks: raw %.2f MB, 1m %.3f MB, 1h %.4f MB\n",
           per_day_raw / 1e6, per_day_1m / 1e6, per_day_1h / 1e6);
    printf("  steady state per iothread with default retention (48 h, 30 d, 2 y): %.1f MB\n",
           (2 * per_day_raw + 30 * per_day_1m + 730 * per_day_1h) / 1e6);
    remove_db(path);
}

int
main(int argc, char **argv)
{
    g_autoptr(GOptionContext) ctx = g_option_context_new("insert|export|size");
    g_autoptr(GError) error = NULL;
    g_autofree char *tmp = NULL;
    const char *dir;

    g_option_context_add_main_entries(ctx, entries, NULL);
    if (!g_option_context_parse(ctx, &argc, &argv, &error) || argc != 2)
        die("usage", error);
    if (!g_find_program_in_path("sqlite3")) {
        g_printerr("bench-store: the sqlite3 CLI (the reference) is not installed\n");
        return 77;
    }
    dir = opt_dir ? opt_dir : (tmp = test_dir_new());
    if (g_str_equal(argv[1], "insert"))
        bench_insert(dir);
    else if (g_str_equal(argv[1], "export"))
        bench_export(dir);
    else if (g_str_equal(argv[1], "size"))
        bench_size(dir);
    else
        die(argv[1], NULL);
    if (tmp)
        test_dir_remove(tmp);
    return 0;
}
