/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A minimal synchronous QMP exchange for the probe tests: connect to the
 * test QEMU's monitor, negotiate, run one command, return its "return"
 * value.  Events in between are skipped.  Tests only; the daemon uses the
 * qmp library.
 */
#pragma once

#include <gio/gio.h>
#include <gio/gunixsocketaddress.h>
#include <json-c/json.h>

typedef struct {
    GSocketConnection *conn;
    GDataInputStream *in;
} ProbeTestQmp;

static inline void
probe_test_qmp_close(ProbeTestQmp *m)
{
    g_clear_object(&m->in);
    g_clear_object(&m->conn);
}

/* Read lines until one that is not an event; NULL on EOF. */
static inline json_object *
probe_test_qmp_read(ProbeTestQmp *m, GError **error)
{
    for (;;) {
        g_autofree char *line =
            g_data_input_stream_read_line(m->in, NULL, NULL, error);
        json_object *obj;

        if (!line)
            return NULL;
        obj = json_tokener_parse(line);
        if (obj && !json_object_object_get_ex(obj, "event", NULL))
            return obj;
        json_object_put(obj);
    }
}

/* Run @command_json; the "return" member (new reference) or NULL. */
static inline json_object *
probe_test_qmp_run(ProbeTestQmp *m, const char *command_json, GError **error)
{
    GOutputStream *out = g_io_stream_get_output_stream(G_IO_STREAM(m->conn));
    g_autofree char *line = g_strdup_printf("%s\n", command_json);
    json_object *reply, *ret = NULL;

    if (!g_output_stream_write_all(out, line, strlen(line), NULL, NULL, error))
        return NULL;
    reply = probe_test_qmp_read(m, error);
    if (!reply)
        return NULL;
    if (json_object_object_get_ex(reply, "return", &ret))
        json_object_get(ret);
    else
        g_set_error(error, G_IO_ERROR, G_IO_ERROR_FAILED, "%s: %s",
                    command_json, json_object_to_json_string(reply));
    json_object_put(reply);
    return ret;
}

static inline gboolean
probe_test_qmp_open(ProbeTestQmp *m, const char *path, GError **error)
{
    g_autoptr(GSocketClient) client = g_socket_client_new();
    g_autoptr(GSocketAddress) addr = g_unix_socket_address_new(path);
    json_object *greeting, *ret;

    m->conn = g_socket_client_connect(client, G_SOCKET_CONNECTABLE(addr), NULL,
                                      error);
    if (!m->conn)
        return FALSE;
    m->in = g_data_input_stream_new(
        g_io_stream_get_input_stream(G_IO_STREAM(m->conn)));
    greeting = probe_test_qmp_read(m, error);
    if (!greeting)
        return FALSE;
    json_object_put(greeting);
    ret = probe_test_qmp_run(m, "{\"execute\":\"qmp_capabilities\"}", error);
    if (!ret)
        return FALSE;
    json_object_put(ret);
    return TRUE;
}
