/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * cli-format: tables, sparklines and short numbers for human output.
 */
#include <math.h>
#include <string.h>

#include "cli-format.h"
#include "common/pt-escape.h"

struct CliTable {
    guint n_cols;
    char **names;
    CliAlign *align;
    GPtrArray *cells;           /* char *, row-major, n_cols per row */
};

CliTable *
cli_table_new(const char *first_column, ...)
{
    CliTable *t = g_new0(CliTable, 1);
    g_autoptr(GPtrArray) names = g_ptr_array_new();
    g_autoptr(GArray) align = g_array_new(FALSE, FALSE, sizeof(CliAlign));
    va_list ap;

    va_start(ap, first_column);
    for (const char *c = first_column; c; c = va_arg(ap, const char *)) {
        CliAlign a = c[0] == '>' ? CLI_ALIGN_RIGHT : CLI_ALIGN_LEFT;

        g_ptr_array_add(names, g_strdup(a == CLI_ALIGN_RIGHT ? c + 1 : c));
        g_array_append_val(align, a);
    }
    va_end(ap);
    t->n_cols = names->len;
    g_ptr_array_add(names, NULL);
    t->names = (char **)g_ptr_array_free(g_steal_pointer(&names), FALSE);
    t->align = (CliAlign *)(void *)g_array_free(g_steal_pointer(&align), FALSE);
    t->cells = g_ptr_array_new_with_free_func(g_free);
    return t;
}

void
cli_table_add_column(CliTable *t, const char *name)
{
    CliAlign a = name[0] == '>' ? CLI_ALIGN_RIGHT : CLI_ALIGN_LEFT;

    g_return_if_fail(t->cells->len == 0);
    t->names = g_renew(char *, t->names, t->n_cols + 2);
    t->names[t->n_cols] = g_strdup(a == CLI_ALIGN_RIGHT ? name + 1 : name);
    t->names[t->n_cols + 1] = NULL;
    t->align = g_renew(CliAlign, t->align, t->n_cols + 1);
    t->align[t->n_cols] = a;
    t->n_cols++;
}

void
cli_table_free(CliTable *t)
{
    if (!t)
        return;
    g_strfreev(t->names);
    g_free(t->align);
    g_ptr_array_unref(t->cells);
    g_free(t);
}

void
cli_table_row(CliTable *t)
{
    /* Pad a short previous row so every row has n_cols cells. */
    while (t->cells->len % t->n_cols)
        g_ptr_array_add(t->cells, g_strdup(""));
}

/* Cells carry the daemon's and its peers' text: escaped here, once. */
void
cli_table_cell(CliTable *t, const char *text)
{
    g_ptr_array_add(t->cells, pt_escape_text(text ? text : "-"));
}

void
cli_table_cellf(CliTable *t, const char *fmt, ...)
{
    g_autofree char *text = NULL;
    va_list ap;

    va_start(ap, fmt);
    text = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    g_ptr_array_add(t->cells, pt_escape_text(text));
}

const char *
cli_text(const char *s)
{
    /* Escaped copies live as long as the process: polltunectl prints and
     * exits, and the callers need not free what they print. */
    static GPtrArray *kept;

    if (!s || !pt_escape_needed(s))
        return s;
    if (!kept)
        kept = g_ptr_array_new_with_free_func(g_free);
    g_ptr_array_add(kept, pt_escape_text(s));
    return kept->pdata[kept->len - 1];
}

guint
cli_table_n_rows(const CliTable *t)
{
    return (t->cells->len + t->n_cols - 1) / t->n_cols;
}

gsize
cli_text_width(const char *s)
{
    gsize w = 0;

    for (const char *p = s; *p; p = g_utf8_next_char(p)) {
        gunichar ch = g_utf8_get_char(p);

        if (g_unichar_iszerowidth(ch))
            continue;
        w += g_unichar_iswide(ch) ? 2 : 1;
    }
    return w;
}

static void
append_padded(GString *out, const char *s, gsize width, CliAlign align, gboolean last)
{
    gsize w = cli_text_width(s);
    gsize pad = width > w ? width - w : 0;

    if (align == CLI_ALIGN_RIGHT)
        for (gsize i = 0; i < pad; i++)
            g_string_append_c(out, ' ');
    g_string_append(out, s);
    if (align == CLI_ALIGN_LEFT && !last)
        for (gsize i = 0; i < pad; i++)
            g_string_append_c(out, ' ');
}

char *
cli_table_render(const CliTable *t)
{
    g_autofree gsize *width = g_new0(gsize, t->n_cols);
    guint n_rows = cli_table_n_rows(t);
    GString *out = g_string_new(NULL);

    for (guint c = 0; c < t->n_cols; c++)
        width[c] = cli_text_width(t->names[c]);
    for (guint i = 0; i < t->cells->len; i++)
        width[i % t->n_cols] = MAX(width[i % t->n_cols],
                                   cli_text_width(g_ptr_array_index(t->cells, i)));
    for (guint r = 0; r <= n_rows; r++) {
        for (guint c = 0; c < t->n_cols; c++) {
            guint i = (r - 1) * t->n_cols + c;
            const char *s = r == 0 ? t->names[c]
                          : i < t->cells->len ? g_ptr_array_index(t->cells, i) : "";

            if (c > 0)
                g_string_append(out, "  ");
            append_padded(out, s, width[c], t->align[c], c + 1 == t->n_cols);
        }
        while (out->len > 0 && out->str[out->len - 1] == ' ')
            g_string_truncate(out, out->len - 1);
        g_string_append_c(out, '\n');
    }
    return g_string_free(out, FALSE);
}

char *
cli_sparkline(const double *values, gsize n, guint width)
{
    static const char *const blocks[] = { "▁", "▂", "▃", "▄", "▅", "▆", "▇", "█" };
    guint cells = (guint)MIN((gsize)width, n);
    g_autofree double *cell = g_new(double, MAX(cells, 1));
    double lo = INFINITY, hi = -INFINITY;
    GString *out = g_string_new(NULL);

    for (guint i = 0; i < cells; i++) {
        gsize from = i * n / cells, to = (i + 1) * n / cells;
        double sum = 0;
        guint k = 0;

        for (gsize j = from; j < to; j++) {
            if (!isnan(values[j])) {
                sum += values[j];
                k++;
            }
        }
        cell[i] = k ? sum / k : NAN;
        if (k) {
            lo = MIN(lo, cell[i]);
            hi = MAX(hi, cell[i]);
        }
    }
    for (guint i = 0; i < cells; i++) {
        int level;

        if (isnan(cell[i])) {
            g_string_append_c(out, ' ');
            continue;
        }
        /* A flat series sits at the bottom, not in the middle: "nothing
         * changed" should look calm. */
        level = hi > lo ? (int)lround((cell[i] - lo) / (hi - lo) * 7.0) : 0;
        g_string_append(out, blocks[CLAMP(level, 0, 7)]);
    }
    return g_string_free(out, FALSE);
}

char *
cli_format_si(double v)
{
    static const char suffix[] = { 'k', 'M', 'G', 'T' };
    double a = fabs(v);
    int i = -1;

    if (isnan(v))
        return g_strdup("-");
    if (a < 1000) {
        if (a == 0 || a >= 100 || v == floor(v))
            return g_strdup_printf("%.0f", v);
        return g_strdup_printf(a >= 10 ? "%.1f" : "%.2f", v);
    }
    while (a >= 999.95 && i < 3) {
        a /= 1000;
        v /= 1000;
        i++;
    }
    return g_strdup_printf(a >= 100 ? "%.0f%c" : a >= 10 ? "%.1f%c" : "%.2f%c", v, suffix[i]);
}

char *
cli_format_fixed(double v, int decimals)
{
    if (isnan(v))
        return g_strdup("-");
    return g_strdup_printf("%.*f", decimals, v);
}

char *
cli_format_duration_ms(gint64 ms)
{
    gint64 s = ms / 1000;

    if (ms < 0)
        return g_strdup("-");
    if (s < 60)
        return g_strdup_printf("%" G_GINT64_FORMAT "s", s);
    if (s < 3600)
        return g_strdup_printf("%" G_GINT64_FORMAT "m", s / 60);
    if (s < 86400)
        return g_strdup_printf("%" G_GINT64_FORMAT "h%" G_GINT64_FORMAT "m", s / 3600,
                               s / 60 % 60);
    return g_strdup_printf("%" G_GINT64_FORMAT "d%" G_GINT64_FORMAT "h", s / 86400,
                           s / 3600 % 24);
}

char *
cli_format_duration_left_ms(gint64 ms)
{
    /* The unit cli_format_duration_ms() shows last, for this length. */
    gint64 unit = ms < 60000 ? 1000 : ms < 3600000 ? 60000 : ms < 86400000 ? 60000 : 3600000;

    if (ms < 0)
        return g_strdup("-");
    return cli_format_duration_ms((ms + unit - 1) / unit * unit);
}

char *
cli_format_time_ms(gint64 ms, gboolean short_form)
{
    g_autoptr(GDateTime) t = g_date_time_new_from_unix_utc(ms / 1000);

    if (!t)
        return g_strdup("-");
    return g_date_time_format(t, short_form ? "%H:%M:%S" : "%Y-%m-%d %H:%M:%S");
}

char *
cli_sparkline_summary(const char *label, guint label_width, const double *values, gsize n,
                      guint width)
{
    g_autofree char *spark = cli_sparkline(values, n, width);
    double lo = NAN, hi = NAN, sum = 0;
    gsize k = 0;
    GString *out = g_string_new(label);

    for (gsize i = 0; i < n; i++) {
        if (isnan(values[i]))
            continue;
        lo = k ? MIN(lo, values[i]) : values[i];
        hi = k ? MAX(hi, values[i]) : values[i];
        sum += values[i];
        k++;
    }
    for (gsize w = cli_text_width(label); w < label_width; w++)
        g_string_append_c(out, ' ');
    g_string_append_printf(out, "  %s", spark);
    if (k) {
        g_autofree char *a = cli_format_si(lo);
        g_autofree char *m = cli_format_si(sum / k);
        g_autofree char *b = cli_format_si(hi);

        g_string_append_printf(out, "  min %s  mean %s  max %s", a, m, b);
    } else {
        g_string_append(out, "  no data");
    }
    return g_string_free(out, FALSE);
}
