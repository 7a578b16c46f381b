/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * cli-format: what polltunectl's human output is made of.
 *
 * Tables whose columns size themselves to their widest cell (counted in
 * terminal columns, so "µs" and sparkline blocks line up), sparklines, and
 * short forms of numbers, ages and times.  Everything returns text; nothing
 * here writes to a terminal.
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

typedef enum {
    CLI_ALIGN_LEFT,
    CLI_ALIGN_RIGHT,
} CliAlign;

typedef struct CliTable CliTable;

/* Columns are given as "NAME" (left-aligned) or ">NAME" (right-aligned),
 * NULL-terminated. */
CliTable *cli_table_new(const char *first_column, ...) G_GNUC_NULL_TERMINATED;
void cli_table_free(CliTable *t);
/* Appends a column named as in cli_table_new(); only before the first row. */
void cli_table_add_column(CliTable *t, const char *name);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(CliTable, cli_table_free)

/* @s, or @s with its control characters written out (common/pt-escape.h)
 * when it has any: for every string from the daemon or another peer that
 * human output prints.  NULL stays NULL; the result is never freed. */
const char *cli_text(const char *s);

/* Starts a row; cells are then added left to right, escaped as by
 * cli_text(). */
void cli_table_row(CliTable *t);
void cli_table_cell(CliTable *t, const char *text);
void cli_table_cellf(CliTable *t, const char *fmt, ...) G_GNUC_PRINTF(2, 3);
guint cli_table_n_rows(const CliTable *t);

/* The table with a header line, two spaces between columns, no trailing
 * blanks.  The last column is never padded. */
char *cli_table_render(const CliTable *t);

/* Width of UTF-8 @s in terminal columns. */
gsize cli_text_width(const char *s);

/* A sparkline of @n values in at most @width cells (values are averaged
 * into cells).  NAN values are gaps, drawn as spaces. */
char *cli_sparkline(const double *values, gsize n, guint width);

/* "2.41k", "12.3M", "402", "0.97"; "-" for NAN. */
char *cli_format_si(double v);
/* A fixed number of decimals, "-" for NAN. */
char *cli_format_fixed(double v, int decimals);
/* "3s", "2m", "1h5m", "3d4h" */
char *cli_format_duration_ms(gint64 ms);
/* The same for time left, rounded up: an override set --for 2m shows 2m
 * left, not 1m, until the first minute has passed. */
char *cli_format_duration_left_ms(gint64 ms);
/* "2026-12-02 16:38:00" in UTC, or "16:38:00" when @short_form. */
char *cli_format_time_ms(gint64 ms, gboolean short_form);

G_END_DECLS

G_BEGIN_DECLS

/* "LABEL  ▁▂▅█▇  min 1.2k  mean 2.4k  max 3.1k" for a metric's series,
 * LABEL padded to @label_width columns. */
char *cli_sparkline_summary(const char *label, guint label_width, const double *values,
                            gsize n, guint width);

G_END_DECLS
