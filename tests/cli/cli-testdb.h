/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * cli-testdb: history databases with a recognisable shape for polltunectl's
 * tests, written through store/ as the daemon writes them.
 *
 * Three iothreads: db-1/iothread0 (busy, with a daily-ish wave and
 * decisions that raise and lower poll-max-ns), db-1/iothread1 (moderate, at
 * QEMU's default with polling turned off for 30 ticks every 300: off/on
 * pairs) and web-1/iothread0 (light, never polling, with an unavailable
 * exit counter).
 */
#pragma once

#include "store.h"

typedef struct {
    gint64 start_ms;            /* first tick ends at start_ms + tick_ms */
    guint n_ticks;
    gint64 tick_ms;
    guint decision_every;       /* ticks between decisions on db-1/iothread0 */
    gboolean rollups;           /* run maintenance so 1m/1h rollups exist */
} CliTestDbSpec;

/* Creates @path and fills it; asserts on failure. */
void cli_testdb_create(const char *path, const CliTestDbSpec *spec);

/* The history the offline and report tests share: CLI_TESTDB_TICKS 1 s
 * ticks from 2026-11-30 22:00 UTC, a decision every 600, with rollups.
 * Returns the start (ms). */
#define CLI_TESTDB_TICKS 7200
gint64 cli_testdb_create_standard(const char *path);

/*
 * An A/B on one iothread, demo-vm/iot0, in 1 s ticks, on a saturated host
 * (every CPU busy, CPU pressure 99 %): CLI_AB_BUSY_FROM idle ticks at
 * QEMU's default after attach, then half an hour of load (22k to 38k
 * ops/s) during which the policy alternates runs of CLI_AB_RUN ticks
 * at CLI_AB_X, the default, CLI_AB_X and off, then idle ticks at CLI_AB_X
 * to the end.  Under load CLI_AB_X gives 98 % of the default's IOPS for
 * 1.0 % of a core less, and polling off gives 85 % for 1.5 % less than
 * CLI_AB_X; the iothread's CPU is 0.3 % + IOPS / 12000 + polling.
 */
#define CLI_AB_TICKS 3600
#define CLI_AB_BUSY_FROM 600
#define CLI_AB_BUSY_TO 2400
#define CLI_AB_RUN 30
#define CLI_AB_X 16384
#define CLI_AB_HOST_CPUS 2
void cli_testdb_create_ab(const char *path, gint64 start_ms);
/* The setting of tick @i, the load offered in it (ops/s, 0 when idle), and
 * what a setting does: the share of the load served, the latency, and the
 * CPU polling costs (% of one core). */
gint64 cli_ab_setting(guint i);
double cli_ab_load(guint i);
void cli_ab_effect(gint64 max_ns, gboolean busy, double *iops_factor, double *lat_us,
                   double *cpu_poll_pct);

/* The history of scripts/demo.sh, in the same shape: demo-vm/iot0 idle
 * for 10 s, 35 s at queue depth 1, 35 s at queue depth 16, idle for 10 s,
 * with the adaptive policy's probes (polling off, another setting) at
 * each change of load. */
#define CLI_DEMO_TICKS 90
void cli_testdb_create_demo(const char *path, gint64 start_ms);

/* Runs a program and collects its output and exit status (0..255, or -1
 * when it died of a signal). */
typedef struct {
    char *out;
    char *err;
    int status;
} CliRun;

void cli_run_clear(CliRun *r);
/* Runs polltunectl (PT_POLLTUNECTL, else the build tree's) with @argv. */
void cli_run(CliRun *r, const char *const *argv);

/* @ms as the export writes times: 2026-12-01T10:00:00.000Z. */
char *cli_test_iso(gint64 ms);

/* The raw export's query over [?1, ?2), built independently of store/'s
 * export code, and its numeric columns after time, target, name and iothread. */
#define CLI_RAW_QUERY                                                                       \
    "SELECT t.ts, g.name, g.display_name, i.name, t.len_ns, s.poll_max_ns, s.poll_grow,"  \
    " s.poll_shrink, s.cpu_ns, s.ctx_vol, s.ctx_invol, s.runq_wait_ns, s.rd_ops,"        \
    " s.rd_bytes, s.rd_time_ns, s.wr_ops, s.wr_bytes, s.wr_time_ns, s.flush_ops,"         \
    " s.flush_time_ns, s.kvm_exits, s.io_exits, s.mmio_exits, s.halt_exits, s.aio_max_batch,"             \
    " CAST(round((s.rd_ops + s.wr_ops + s.flush_ops) * 1e9 / t.len_ns * 1000) AS INTEGER)" \
    " FROM ticks t"                                                                         \
    " JOIN samples_v s ON s.tick_id = t.id JOIN iothreads i ON i.id = s.iothread_id"       \
    " JOIN targets g ON g.id = i.target_id WHERE t.ts >= ?1 AND t.ts < ?2"               \
    " ORDER BY t.id, s.iothread_id"

/* The decision export's: 7 numbers, then policy, reason and cause. */
#define CLI_DECISIONS_QUERY                                                              \
    "SELECT d.ts, g.name, g.display_name, i.name, old_max_ns, old_grow, old_shrink,"     \
    " new_max_ns, new_grow, new_shrink, applied, policy, reason, cause FROM decisions d" \
    " JOIN iothreads i ON i.id = d.iothread_id JOIN targets g ON g.id = i.target_id"       \
    " WHERE ts >= ?1 AND ts < ?2 ORDER BY ts, d.id"

#define CLI_N_RAW 22
extern const char *const cli_raw_names[CLI_N_RAW];

/*
 * The CSV lines database @db_path holds for @query (time, target, the name
 * it went by, iothread, then numbers with the given decimals, then texts)
 * over [@from, @to).
 */
GPtrArray *cli_expected_csv(const char *db_path, const char *query, gint64 from, gint64 to,
                            const int *decimals, int n_num, int n_text);

/* Reading the report's HTML: the text of the table row whose first cell
 * is @first, tags turned into "|"; cell @col (0: the name) of such a row;
 * a figure as the page writes it ("36.6k", "1.2M", "0.003"). */
char *cli_test_row_text(const char *html, const char *first);
/* The same, from the element with id @section_id on. */
char *cli_test_section_row(const char *html, const char *section_id, const char *first);
char *cli_test_row_cell(const char *row, guint col);
double cli_test_si_number(const char *text);

/* Headless Chromium: its path, or NULL; the DOM it builds from the page
 * at @html_path (with its log in *@err), and a screenshot 1240 pixels
 * wide into @png unless NULL, with a profile in @profile_dir.  Without
 * Chromium the test is skipped, saying why, and NULL returned. */
char *cli_test_chromium_find(void);
char *cli_test_chromium_dom(const char *html_path, const char *png, const char *profile_dir,
                            char **err);
