/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "pt-test-prom.h"
#include "pt-test-child.h"

#include <errno.h>
#include <fcntl.h>
#include <gio/gio.h>
#include <glib/gstdio.h>
#include <libsoup/soup.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

guint
pt_test_free_port(void)
{
    g_autoptr(GSocket) s = g_socket_new(G_SOCKET_FAMILY_IPV4, G_SOCKET_TYPE_STREAM,
                                        G_SOCKET_PROTOCOL_TCP, NULL);
    g_autoptr(GInetAddress) lo = g_inet_address_new_loopback(G_SOCKET_FAMILY_IPV4);
    g_autoptr(GSocketAddress) any = g_inet_socket_address_new(lo, 0);
    g_autoptr(GSocketAddress) bound = NULL;

    g_assert_true(g_socket_bind(s, any, FALSE, NULL));
    bound = g_socket_get_local_address(s, NULL);
    return g_inet_socket_address_get_port(G_INET_SOCKET_ADDRESS(bound));
}

gboolean
pt_test_have_prometheus(char **why)
{
    g_autofree char *path = g_find_program_in_path("prometheus");

    if (!path)
        *why = g_strdup("prometheus is not installed (Debian package prometheus)");
    return path != NULL;
}

/* GET http://127.0.0.1:PORT@path_query: the status and the body. */
static GBytes *
pt_test_prom_fetch(PtTestProm *p, const char *path_query, guint *status, GError **error)
{
    g_autoptr(SoupSession) s = soup_session_new_with_options("timeout", 20, NULL);
    g_autofree char *url = g_strdup_printf("http://127.0.0.1:%u%s", p->port, path_query);
    g_autoptr(SoupMessage) m = soup_message_new("GET", url);
    GBytes *body;

    if (!m) {
        g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT, "%s: not a URL", url);
        return NULL;
    }
    body = soup_session_send_and_read(s, m, NULL, error);
    *status = soup_message_get_status(m);
    return body;
}

PtTestProm *
pt_test_prom_start(const char *dir, const char *config, GError **error)
{
    g_autoptr(PtTestProm) p = g_new0(PtTestProm, 1);
    g_autofree char *conf_path = g_build_filename(dir, "prometheus.yml", NULL);
    g_autofree char *log = g_build_filename(dir, "prometheus.log", NULL);
    g_autofree char *a_conf = g_strconcat("--config.file=", conf_path, NULL);
    g_autofree char *a_tsdb = g_strconcat("--storage.tsdb.path=", dir, "/tsdb", NULL);
    g_autofree char *a_listen = NULL;
    gint64 deadline;
    int fd;

    p->dir = g_strdup(dir);
    if (!g_file_set_contents(conf_path, config, -1, error))
        return NULL;
    p->port = pt_test_free_port();
    a_listen = g_strdup_printf("--web.listen-address=127.0.0.1:%u", p->port);
    fd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) {
        g_set_error(error, G_IO_ERROR, g_io_error_from_errno(errno), "%s: %s", log,
                    g_strerror(errno));
        return NULL;
    }
    {
        const char *argv[] = { "prometheus", a_conf, a_tsdb, a_listen,
                               "--storage.tsdb.retention.time=1d", NULL };
        gboolean ok = g_spawn_async_with_fds(NULL, (char **)argv, NULL,
                                             G_SPAWN_SEARCH_PATH | G_SPAWN_DO_NOT_REAP_CHILD,
                                             pt_test_child_setup, PT_TEST_CHILD_DATA,
                                             &p->pid, -1, fd, fd, error);

        close(fd);
        if (!ok)
            return NULL;
    }
    /* Ready once it has loaded its configuration and its storage. */
    deadline = g_get_monotonic_time() + 60 * G_USEC_PER_SEC;
    for (;;) {
        guint status = 0;
        g_autoptr(GBytes) b = pt_test_prom_fetch(p, "/-/ready", &status, NULL);
        int wstatus;

        if (b && status == 200)
            break;
        if (waitpid(p->pid, &wstatus, WNOHANG) == p->pid) {
            p->pid = 0;
            g_set_error(error, G_SPAWN_ERROR, G_SPAWN_ERROR_FAILED,
                        "prometheus exited while starting (wait status %d); see %s",
                        wstatus, log);
            return NULL;
        }
        if (g_get_monotonic_time() > deadline) {
            g_set_error(error, G_IO_ERROR, G_IO_ERROR_TIMED_OUT,
                        "prometheus was not ready within 60 s; see %s", log);
            return NULL;
        }
        g_usleep(100 * 1000);
    }
    return g_steal_pointer(&p);
}

void
pt_test_prom_free(PtTestProm *p)
{
    if (!p)
        return;
    if (p->pid > 0) {
        gint64 deadline = g_get_monotonic_time() + 10 * G_USEC_PER_SEC;
        int status;

        kill(p->pid, SIGTERM);
        while (waitpid(p->pid, &status, WNOHANG) != p->pid) {
            if (g_get_monotonic_time() > deadline) {
                kill(p->pid, SIGKILL);
                waitpid(p->pid, &status, 0);
                break;
            }
            g_usleep(50 * 1000);
        }
        g_spawn_close_pid(p->pid);
    }
    g_free(p->dir);
    g_free(p);
}

json_object *
pt_test_prom_get(PtTestProm *p, const char *path_query, GError **error)
{
    guint status = 0;
    g_autoptr(GBytes) body = pt_test_prom_fetch(p, path_query, &status, error);
    g_autofree char *text = NULL;
    json_object *j;

    if (!body)
        return NULL;
    text = g_strndup(g_bytes_get_data(body, NULL), g_bytes_get_size(body));
    j = json_tokener_parse(text);
    if (!j)
        g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
                    "%s: HTTP %u, not JSON: %.200s", path_query, status, text);
    return j;
}

json_object *
pt_test_prom_query(PtTestProm *p, const char *promql, GError **error)
{
    g_autofree char *q = g_uri_escape_string(promql, NULL, FALSE);
    g_autofree char *path = g_strconcat("/api/v1/query?query=", q, NULL);
    json_object *root = pt_test_prom_get(p, path, error);
    json_object *status, *data, *result;

    if (!root)
        return NULL;
    if (!json_object_object_get_ex(root, "status", &status) ||
        g_strcmp0(json_object_get_string(status), "success") != 0 ||
        !json_object_object_get_ex(root, "data", &data) ||
        !json_object_object_get_ex(data, "result", &result)) {
        json_object *e = NULL;

        json_object_object_get_ex(root, "error", &e);
        g_set_error(error, G_IO_ERROR, G_IO_ERROR_FAILED, "%s",
                    e ? json_object_get_string(e) : json_object_to_json_string(root));
        json_object_put(root);
        return NULL;
    }
    json_object_get(result);
    json_object_put(root);
    return result;
}

PtTestPromHost *
pt_test_prom_host_start(const char *dir, const char *vm, const char *const *qemu_args,
                        const char *targets_extra, const char *policy, GError **error)
{
    g_autoptr(PtTestPromHost) h = g_new0(PtTestPromHost, 1);
    g_autoptr(GPtrArray) args = g_ptr_array_new_with_free_func(g_free);
    g_autofree char *conf = NULL;

    h->dir = g_strdup(dir);
    if (g_mkdir_with_parents(dir, 0700) != 0) {
        g_set_error(error, G_IO_ERROR, g_io_error_from_errno(errno), "%s: %s", dir,
                    g_strerror(errno));
        return NULL;
    }
    /* QEMU's -name is the name the daemon shows it by. */
    g_ptr_array_add(args, g_strdup("-name"));
    g_ptr_array_add(args, g_strdup(vm));
    for (const char *const *a = qemu_args; a && *a; a++)
        g_ptr_array_add(args, g_strdup(*a));
    g_ptr_array_add(args, g_strdup("-qmp"));
    g_ptr_array_add(args, g_strdup_printf("unix:%s/%s.qmp,server=on,wait=off", dir, vm));
    g_ptr_array_add(args, NULL);
    h->qemu = pt_test_qemu_start((const char *const *)args->pdata, error);
    if (!h->qemu)
        return NULL;
    h->port = pt_test_free_port();
    conf = g_strdup_printf("interval = 250ms\nmetrics-listen = 127.0.0.1:%u\n"
                           "[targets]\n%sqmp-globs = %s/*.qmp\n"
                           "[policy]\ndefault = %s\nmin-dwell = 0\n", h->port,
                           targets_extra ? targets_extra : "libvirt = false\n", dir, policy);
    h->d = pt_test_daemon_start(conf, error);
    if (!h->d)
        return NULL;
    if (pt_test_wait_target(h->d, vm, 0, TRUE, 30000) < 0) {
        g_set_error(error, G_IO_ERROR, G_IO_ERROR_TIMED_OUT,
                    "%s: polltuned did not attach %s within 30 s", dir, vm);
        return NULL;
    }
    return g_steal_pointer(&h);
}

void
pt_test_prom_host_free(PtTestPromHost *h)
{
    if (!h)
        return;
    pt_test_daemon_free(h->d);
    pt_test_qemu_free(h->qemu);
    g_free(h->dir);
    g_free(h);
}
