/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * bench-store: the history store's figures, each against its reference in
 * the same run.
 *
 *   bench-store insert [--iothreads N] [--ticks N] [--reps N] [--dir D]
 *     sample rows/s through store_tick_write (one transaction per tick)
 *     vs the sqlite3 CLI loading the same rows from a prepared SQL file.
 *   bench-store export [--rows N] [--reps N] [--dir D]
 *     raw rows to CSV through store_export vs `sqlite3 -csv` running the
 *     equivalent SELECT into a file; checks both files are identical.
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

static void
sql_io(FILE *f, const StoreIo *io)
{
    const gint64 v[] = { io->rd_ops, io->rd_bytes, io->rd_time_ns, io->wr_ops,
                         io->wr_bytes, io->wr_time_ns, io->flush_ops, io->flush_time_ns };

    for (gsize i = 0; i < G_N_ELEMENTS(v); i++) {
        if (v[i] == STORE_NULL)
            fputs(",NULL", f);
        else
            fprintf(f, ",%" G_GINT64_FORMAT, v[i]);
    }
}

static const char *
sql_int(char *buf, gint64 v)
{
    if (v == STORE_NULL)
        return "NULL";
    g_snprintf(buf, 32, "%" G_GINT64_FORMAT, v);
    return buf;
}

/* The same rows as write_ticks, as the SQL a script would feed sqlite3:
 * names resolved to ids up front, one transaction per tick. */
static void
write_sql_file(const char *path, int n_iothreads, gint64 n_ticks)
{
    g_autoptr(TestTick) t = test_tick_new(n_iothreads);
    FILE *f = fopen(path, "w");
    char b[6][32];

    if (!f)
        die(path, NULL);
    fputs("PRAGMA synchronous = NORMAL;\n", f);
    for (int i = 0; i < n_iothreads; i++) {
        if (i % 4 == 0)
            fprintf(f, "INSERT INTO targets VALUES (%d, 1, '%s', NULL, %" G_GINT64_FORMAT
                    ", %" G_GINT64_FORMAT ");\n", i / 4 + 1, t->names[2 * i], T0, T0);
        fprintf(f, "INSERT INTO iothreads VALUES (%d, %d, '%s', %" G_GINT64_FORMAT ", %"
                G_GINT64_FORMAT ");\n", i + 1, i / 4 + 1, t->names[2 * i + 1], T0, T0);
    }
    for (gint64 k = 0; k < n_ticks; k++) {
        test_tick_fill(t, T0 + k * 1000, k);
        fprintf(f, "BEGIN;\nINSERT INTO ticks VALUES (%" G_GINT64_FORMAT ", %" G_GINT64_FORMAT
                ", %" G_GINT64_FORMAT ", %s, %s, %s, %s, %s);\n", k + 1, t->tick.ts_ms,
                t->tick.len_ns, sql_int(b[0], t->tick.psi.cpu_some_us),
                sql_int(b[1], t->tick.psi.io_some_us), sql_int(b[2], t->tick.psi.io_full_us),
                sql_int(b[3], t->tick.psi.mem_some_us), sql_int(b[4], t->tick.psi.mem_full_us));
        for (int i = 0; i < n_iothreads; i++) {
            const StoreSample *s = &t->samples[i];

            fprintf(f, "INSERT INTO samples VALUES (%" G_GINT64_FORMAT ", %s, %s, %s",
                    ((k + 1) << 20) | (i + 1), sql_int(b[0], s->poll_max_ns),
                    sql_int(b[1], s->poll_grow), sql_int(b[2], s->poll_shrink));
            fprintf(f, ", %s, %s, %s, %s", sql_int(b[0], s->cpu_ns), sql_int(b[1], s->ctx_vol),
                    sql_int(b[2], s->ctx_invol), sql_int(b[3], s->runq_wait_ns));
            sql_io(f, &s->io);
            fprintf(f, ", %s, %s, %s, %s);\n", sql_int(b[0], s->kvm_exits),
                    sql_int(b[1], s->io_exits), sql_int(b[2], s->mmio_exits),
                    sql_int(b[3], s->halt_exits));
        }
        fputs("COMMIT;\n", f);
    }
    fclose(f);
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
    printf("insert: %d iothreads x %d ticks = %.0f rows, one transaction per tick, "
           "median of %d\n", opt_iothreads, opt_ticks, rows, opt_reps);
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

static const char export_select[] =
    "SELECT strftime('%Y-%m-%dT%H:%M:%fZ', t.ts / 1000.0, 'unixepoch') AS time,"
    " g.name AS target, i.name AS iothread, t.len_ns AS tick_ns, s.poll_max_ns, s.poll_grow,"
    " s.poll_shrink, s.cpu_ns, s.ctx_vol, s.ctx_invol, s.runq_wait_ns, s.rd_ops, s.rd_bytes,"
    " s.rd_time_ns, s.wr_ops, s.wr_bytes, s.wr_time_ns, s.flush_ops, s.flush_time_ns,"
    " s.kvm_exits, s.io_exits, s.mmio_exits, s.halt_exits"
    " FROM ticks t JOIN samples s ON s.key >= t.id << 20 AND s.key < (t.id + 1) << 20"
    " JOIN iothreads i ON i.id = s.key & 1048575 JOIN targets g ON g.id = i.target_id"
    " ORDER BY t.id, s.key";

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
    const char *argv[] = { "sqlite3", "-csv", "-header", "-newline", "\r\n", db_path,
                           export_select, NULL };
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
