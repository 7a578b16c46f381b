/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "pt-libvirt-event.h"

#include <libvirt/libvirt.h>
#include <libvirt/virterror.h>
#include <glib-unix.h>

/* One watched fd or one timer that libvirt registered. */
typedef struct {
    int id;
    gboolean is_timer;
    int fd;
    int events;                 /* VIR_EVENT_HANDLE_* for fds */
    int interval;               /* ms for timers, -1 when disabled */
    GSource *source;            /* NULL while disabled */
    virEventHandleCallback fd_cb;
    virEventTimeoutCallback timer_cb;
    void *opaque;
    virFreeCallback ff;
} EvWatch;

static GMutex ev_lock;              /* guards the fields below except users */
static GMainContext *ev_ctx;
static GHashTable *ev_watches;      /* id -> EvWatch*, both kinds */
static int ev_next_id = 1;

static GMutex ev_life_lock;         /* serialises thread start and stop */
static guint ev_users;
static GThread *ev_thread;
static gboolean ev_quit;            /* only touched by the event thread */

static void
ev_silent_error(void *opaque, virErrorPtr err)
{
    /* Errors reach callers as GError; libvirt must not print them. */
}

static GIOCondition
ev_condition(int events)
{
    GIOCondition c = 0;

    if (events & VIR_EVENT_HANDLE_READABLE)
        c |= G_IO_IN;
    if (events & VIR_EVENT_HANDLE_WRITABLE)
        c |= G_IO_OUT;
    if (events & VIR_EVENT_HANDLE_ERROR)
        c |= G_IO_ERR;
    if (events & VIR_EVENT_HANDLE_HANGUP)
        c |= G_IO_HUP;
    return c;
}

static gboolean
ev_fd_dispatch(gint fd, GIOCondition cond, gpointer data)
{
    EvWatch *w = data;
    int events = 0;

    if (cond & (G_IO_IN | G_IO_PRI))
        events |= VIR_EVENT_HANDLE_READABLE;
    if (cond & G_IO_OUT)
        events |= VIR_EVENT_HANDLE_WRITABLE;
    if (cond & G_IO_ERR)
        events |= VIR_EVENT_HANDLE_ERROR;
    if (cond & G_IO_HUP)
        events |= VIR_EVENT_HANDLE_HANGUP;
    /* w is freed only by this thread, after its source is destroyed. */
    w->fd_cb(w->id, fd, events, w->opaque);
    return G_SOURCE_CONTINUE;
}

static gboolean
ev_timer_dispatch(gpointer data)
{
    EvWatch *w = data;

    w->timer_cb(w->id, w->opaque);
    return G_SOURCE_CONTINUE;
}

static gboolean
ev_unref_idle(gpointer data)
{
    g_source_unref(data);
    return G_SOURCE_REMOVE;
}

static void
ev_idle_add(GSourceFunc fn, gpointer data)
{
    GSource *idle = g_idle_source_new();

    g_source_set_priority(idle, G_PRIORITY_DEFAULT);
    g_source_set_callback(idle, fn, data, NULL);
    g_source_attach(idle, ev_ctx);
    g_source_unref(idle);
}

/* Called with ev_lock held. */
static void
ev_source_stop(EvWatch *w)
{
    if (!w->source)
        return;
    g_source_destroy(w->source);
    /* Drop our reference on the event thread: releasing the last reference
     * of a source from another thread while it dispatches is unsafe in
     * older GLib. */
    ev_idle_add(ev_unref_idle, w->source);
    w->source = NULL;
}

/* Called with ev_lock held. */
static void
ev_source_start(EvWatch *w)
{
    if (w->is_timer) {
        if (w->interval < 0)
            return;
        w->source = g_timeout_source_new((guint)w->interval);
        g_source_set_callback(w->source, ev_timer_dispatch, w, NULL);
    } else {
        if (w->events == 0)
            return;
        w->source = g_unix_fd_source_new(w->fd, ev_condition(w->events));
        g_source_set_callback(w->source, G_SOURCE_FUNC(ev_fd_dispatch), w, NULL);
    }
    g_source_attach(w->source, ev_ctx);
}

static int
ev_add(EvWatch *w)
{
    int id;

    g_mutex_lock(&ev_lock);
    id = w->id = ev_next_id++;
    g_hash_table_insert(ev_watches, GINT_TO_POINTER(id), w);
    ev_source_start(w);
    g_mutex_unlock(&ev_lock);
    return id;
}

static int
ev_handle_add(int fd, int events, virEventHandleCallback cb, void *opaque,
              virFreeCallback ff)
{
    EvWatch *w = g_new0(EvWatch, 1);

    w->fd = fd;
    w->events = events;
    w->fd_cb = cb;
    w->opaque = opaque;
    w->ff = ff;
    return ev_add(w);
}

static int
ev_timeout_add(int interval, virEventTimeoutCallback cb, void *opaque,
               virFreeCallback ff)
{
    EvWatch *w = g_new0(EvWatch, 1);

    w->is_timer = TRUE;
    w->interval = interval;
    w->timer_cb = cb;
    w->opaque = opaque;
    w->ff = ff;
    return ev_add(w);
}

static void
ev_update(int id, gboolean is_timer, int value)
{
    EvWatch *w;

    g_mutex_lock(&ev_lock);
    w = g_hash_table_lookup(ev_watches, GINT_TO_POINTER(id));
    if (w && w->is_timer == is_timer) {
        ev_source_stop(w);
        if (is_timer)
            w->interval = value;
        else
            w->events = value;
        ev_source_start(w);
    }
    g_mutex_unlock(&ev_lock);
}

static void
ev_handle_update(int watch, int events)
{
    ev_update(watch, FALSE, events);
}

static void
ev_timeout_update(int timer, int interval)
{
    ev_update(timer, TRUE, interval);
}

/* libvirt requires the free callback to run later, never inside remove. */
static gboolean
ev_free_idle(gpointer data)
{
    EvWatch *w = data;

    if (w->ff)
        w->ff(w->opaque);
    g_free(w);
    return G_SOURCE_REMOVE;
}

static int
ev_remove(int id, gboolean is_timer)
{
    EvWatch *w;

    g_mutex_lock(&ev_lock);
    w = g_hash_table_lookup(ev_watches, GINT_TO_POINTER(id));
    if (!w || w->is_timer != is_timer) {
        g_mutex_unlock(&ev_lock);
        return -1;
    }
    g_hash_table_remove(ev_watches, GINT_TO_POINTER(id));
    ev_source_stop(w);
    ev_idle_add(ev_free_idle, w);
    g_mutex_unlock(&ev_lock);
    return 0;
}

static int
ev_handle_remove(int watch)
{
    return ev_remove(watch, FALSE);
}

static int
ev_timeout_remove(int timer)
{
    return ev_remove(timer, TRUE);
}

static gpointer
ev_init_once(gpointer unused)
{
    ev_ctx = g_main_context_new();
    ev_watches = g_hash_table_new(g_direct_hash, g_direct_equal);
    virSetErrorFunc(NULL, ev_silent_error);
    virInitialize();
    virEventRegisterImpl(ev_handle_add, ev_handle_update, ev_handle_remove,
                         ev_timeout_add, ev_timeout_update, ev_timeout_remove);
    return NULL;
}

static gpointer
ev_thread_main(gpointer unused)
{
    g_main_context_push_thread_default(ev_ctx);
    while (!ev_quit)
        g_main_context_iteration(ev_ctx, TRUE);
    ev_quit = FALSE;
    g_main_context_pop_thread_default(ev_ctx);
    return NULL;
}

static gboolean
ev_quit_idle(gpointer unused)
{
    ev_quit = TRUE;
    return G_SOURCE_REMOVE;
}

void
pt_libvirt_event_acquire(void)
{
    static GOnce once = G_ONCE_INIT;

    g_once(&once, ev_init_once, NULL);
    g_mutex_lock(&ev_life_lock);
    if (ev_users++ == 0)
        ev_thread = g_thread_new("pt-libvirt-event", ev_thread_main, NULL);
    g_mutex_unlock(&ev_life_lock);
}

void
pt_libvirt_event_release(void)
{
    GSource *idle;

    g_mutex_lock(&ev_life_lock);
    if (ev_users > 0 && --ev_users == 0) {
        /* Low priority: pending unref and free idles run first. */
        idle = g_idle_source_new();
        g_source_set_priority(idle, G_PRIORITY_LOW);
        g_source_set_callback(idle, ev_quit_idle, NULL, NULL);
        g_source_attach(idle, ev_ctx);
        g_source_unref(idle);
        g_thread_join(g_steal_pointer(&ev_thread));
    }
    g_mutex_unlock(&ev_life_lock);
}
