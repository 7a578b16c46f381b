/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "pt-log.h"
#include "common/pt-escape.h"

#include <stdio.h>
#include <sys/stat.h>
#include <syslog.h>
#include <systemd/sd-journal.h>

static gboolean pt_log_journal;
static gboolean pt_log_verbose;
static gboolean pt_log_syslog;

void
pt_log_use_syslog(void)
{
    openlog("polltuned", LOG_PID | LOG_NDELAY, LOG_DAEMON);
    pt_log_journal = FALSE;
    pt_log_syslog = TRUE;
}

void
pt_log_init(gboolean verbose)
{
    const char *js = g_getenv("JOURNAL_STREAM");
    struct stat st;

    pt_log_verbose = verbose;
    /* JOURNAL_STREAM is "dev:ino" of the journal stream systemd gave us;
     * only trust it while stderr still is that stream. */
    if (js && fstat(STDERR_FILENO, &st) == 0) {
        g_autofree char *mine = g_strdup_printf("%lu:%lu", (unsigned long)st.st_dev,
                                                (unsigned long)st.st_ino);

        pt_log_journal = g_str_equal(js, mine);
    }
}

void
pt_log(int priority, const char *vm_raw, const char *iothread_raw, const char *fmt, ...)
{
    g_autofree char *raw = NULL;
    g_autofree char *msg = NULL;
    g_autofree char *vm = NULL;
    g_autofree char *iothread = NULL;
    va_list ap;

    if (priority == LOG_DEBUG && !pt_log_verbose)
        return;
    va_start(ap, fmt);
    raw = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    /* Names and messages carry peers' text (QMP error descriptions, VM
     * names): one line per message, and nothing a terminal would obey. */
    msg = pt_escape_text(raw);
    vm = vm_raw ? pt_escape_text(vm_raw) : NULL;
    iothread = iothread_raw ? pt_escape_text(iothread_raw) : NULL;

    if (pt_log_journal) {
        sd_journal_send("MESSAGE=%s%s%s%s%s", vm ? vm : "", iothread ? "/" : "",
                        iothread ? iothread : "", vm ? ": " : "", msg,
                        "PRIORITY=%d", priority,
                        "POLLTUNE_VM=%s", vm ? vm : "",
                        "POLLTUNE_IOTHREAD=%s", iothread ? iothread : "",
                        NULL);
        return;
    }
    if (pt_log_syslog) {
        syslog(priority, "%s%s%s%s%s", vm ? vm : "", iothread ? "/" : "",
               iothread ? iothread : "", vm ? ": " : "", msg);
        return;
    }
    {
        static const char *const level[] = { "emerg", "alert", "crit", "error",
                                              "warning", "notice", "info", "debug" };
        g_autoptr(GDateTime) now = g_date_time_new_now_utc();
        g_autofree char *ts = g_date_time_format(now, "%H:%M:%S.%f");

        ts[12] = 0;     /* milliseconds */
        fprintf(stderr, "%s polltuned %s: %s%s%s%s%s\n", ts, level[priority & 7],
                vm ? vm : "", iothread ? "/" : "", iothread ? iothread : "",
                vm ? ": " : "", msg);
    }
}
