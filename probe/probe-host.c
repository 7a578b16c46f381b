/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "probe-host.h"

#include <limits.h>
#include <string.h>

/* /proc/stat is about 150 bytes per CPU plus the interrupt line. */
#define HOST_FILE_MAX (4 * 1024 * 1024)

static gboolean
psi_line(const char *p, double *avg10, guint64 *total)
{
    double ignored;

    if (strncmp(p, "avg10=", 6) != 0)
        return FALSE;
    p += 6;
    if (!probe_parse_udouble(&p, avg10))
        return FALSE;
    if (strncmp(p, " avg60=", 7) != 0)
        return FALSE;
    p += 7;
    if (!probe_parse_udouble(&p, &ignored))
        return FALSE;
    if (strncmp(p, " avg300=", 8) != 0)
        return FALSE;
    p += 8;
    if (!probe_parse_udouble(&p, &ignored))
        return FALSE;
    if (strncmp(p, " total=", 7) != 0)
        return FALSE;
    p += 7;
    return probe_parse_u64(&p, total) && (*p == '\n' || *p == '\0');
}

gboolean
probe_psi_parse(const char *text, const char *path, ProbePsi *out,
                GError **error)
{
    ProbePsi psi = { 0 };
    gboolean have_some = FALSE;

    for (const char *line = text; line && *line;) {
        if (g_str_has_prefix(line, "some ")) {
            if (!psi_line(line + 5, &psi.some_avg10, &psi.some_total_us)) {
                probe_set_parse_error(error, path, "malformed 'some' line");
                return FALSE;
            }
            have_some = TRUE;
        } else if (g_str_has_prefix(line, "full ")) {
            if (!psi_line(line + 5, &psi.full_avg10, &psi.full_total_us)) {
                probe_set_parse_error(error, path, "malformed 'full' line");
                return FALSE;
            }
            psi.have_full = TRUE;
        }
        line = strchr(line, '\n');
        if (line)
            line++;
    }
    if (!have_some) {
        probe_set_parse_error(error, path, "no 'some' line");
        return FALSE;
    }
    *out = psi;
    return TRUE;
}

gboolean
probe_psi_reread(ProbeFile *f, ProbeBuf *buf, ProbePsi *out, GError **error)
{
    return probe_file_reread(f, buf, HOST_FILE_MAX, error) &&
           probe_psi_parse(buf->data, f->path, out, error);
}

static gboolean
sum_fields(const guint64 *f, const guint *idx, guint n, guint64 *sum)
{
    *sum = 0;
    for (guint i = 0; i < n; i++)
        if (!g_uint64_checked_add(sum, *sum, f[idx[i]]))
            return FALSE;
    return TRUE;
}

gboolean
probe_cpu_stat_parse(const char *text, const char *path, ProbeCpuStat *out,
                     GError **error)
{
    /* user nice system idle iowait irq softirq steal [guest guest_nice] */
    guint64 f[8];
    const char *p;
    ProbeCpuStat st = { 0 };

    if (!g_str_has_prefix(text, "cpu ")) {
        probe_set_parse_error(error, path, "does not start with a 'cpu' line");
        return FALSE;
    }
    p = text + 4;
    for (guint i = 0; i < G_N_ELEMENTS(f); i++) {
        if (!probe_parse_u64(&p, &f[i])) {
            g_set_error(error, PROBE_ERROR, PROBE_ERROR_PARSE,
                        "%s: 'cpu' line field %u is missing or not a number",
                        path, i + 1);
            return FALSE;
        }
    }
    /* guest time is already inside user time; leave it out. */
    if (!sum_fields(f, (const guint[]){ 0, 1, 2, 5, 6, 7 }, 6, &st.busy_ticks) ||
        !sum_fields(f, (const guint[]){ 3, 4 }, 2, &st.total_ticks) ||
        !g_uint64_checked_add(&st.total_ticks, st.total_ticks, st.busy_ticks)) {
        probe_set_parse_error(error, path, "'cpu' line totals overflow");
        return FALSE;
    }
    for (const char *line = strchr(p, '\n'); line; line = strchr(line, '\n')) {
        line++;
        if (g_str_has_prefix(line, "cpu") && g_ascii_isdigit(line[3]))
            st.n_cpus++;
    }
    if (st.n_cpus == 0) {
        probe_set_parse_error(error, path, "no per-CPU 'cpuN' lines");
        return FALSE;
    }
    *out = st;
    return TRUE;
}

gboolean
probe_cpu_stat_reread(ProbeFile *f, ProbeBuf *buf, ProbeCpuStat *out,
                      GError **error)
{
    return probe_file_reread(f, buf, HOST_FILE_MAX, error) &&
           probe_cpu_stat_parse(buf->data, f->path, out, error);
}

/* A UUID is 36 bytes; the room beyond is for a newline and nothing else. */
#define PROBE_BOOT_ID_MAX 64

char *
probe_boot_id_read(const char *proc_root, GError **error)
{
    g_autofree char *path = g_strdup_printf("%s/sys/kernel/random/boot_id", proc_root);
    ProbeBuf buf = { 0 };
    char *id = NULL;

    if (probe_file_read(path, &buf, PROBE_BOOT_ID_MAX, error)) {
        g_strstrip(buf.data);
        if (*buf.data && strspn(buf.data, "0123456789abcdef-") == strlen(buf.data))
            id = g_strdup(buf.data);
        else
            probe_set_parse_error(error, path, "not a UUID");
    }
    probe_buf_clear(&buf);
    return id;
}
