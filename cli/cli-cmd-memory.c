/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * polltunectl memory and forget: the adaptive policy's workload memory of
 * a VM (docs/POLICY.md, "Memory"), from the daemon or, with --db, read
 * from the history database; and its clearing, through the daemon only.
 * Both forms print from the same reply object (docs/CONTROL.md, `memory`).
 */
#include <stdio.h>
#include <string.h>

#include "cli-commands.h"
#include "cli-format.h"
#include "policy-memory.h"
#include "qmp-json.h"
#include "store-memory.h"

/* The reply of `memory` built from the database: the daemon's
 * configuration is not read, so the ttl is the default one. */
static json_object *
memory_offline(CliContext *ctx, const char *vm, const char *iothread, GError **error)
{
    g_autoptr(CliDb) db = cli_context_db_open(ctx, error);
    g_autoptr(GPtrArray) ids = NULL;
    g_autofree char *numbered = NULL;
    const char *matched = NULL;
    g_autoptr(json_object) r = json_object_new_object();
    json_object *arr;
    StoreDb *store;

    if (!db)
        return NULL;
    store = cli_db_store(db);
    if (!(ids = store_memory_iothreads(store, vm, error)))
        return NULL;
    if (!ids->len) {
        g_set_error(error, CLI_ERROR, CLI_ERROR_FAILED, "%s: no workload memory kept under "
                    "that name in %s", vm, ctx->db_path);
        return NULL;
    }
    /* virsh's numbers, as the daemon takes them: N is iothreadN. */
    if (iothread && *iothread && strspn(iothread, "0123456789") == strlen(iothread))
        numbered = g_strconcat("iothread", iothread, NULL);
    json_object_object_add(r, "target", NULL);
    json_object_object_add(r, "vm", json_object_new_string(vm));
    json_object_object_add(r, "ttl_ms", json_object_new_int64(POLICY_MEMORY_TTL_MS));
    arr = json_object_new_array();
    json_object_object_add(r, "iothreads", arr);
    for (guint i = 0; i < ids->len; i++) {
        const char *id = ids->pdata[i];
        g_autoptr(GPtrArray) rows = NULL;
        json_object *io, *entries;

        if (iothread && !g_str_equal(id, iothread) && g_strcmp0(id, numbered))
            continue;
        matched = id;
        if (!(rows = store_memory_load(store, vm, id, error)))
            return NULL;
        io = json_object_new_object();
        entries = json_object_new_array();
        for (guint k = 0; k < rows->len; k++)
            json_object_array_add(entries, store_memory_row_to_json(rows->pdata[k],
                                                                    POLICY_MEMORY_TTL_MS,
                                                                    ctx->now_ms));
        json_object_object_add(io, "iothread", json_object_new_string(id));
        json_object_object_add(io, "entries", entries);
        json_object_array_add(arr, io);
    }
    if (iothread && !matched) {
        g_set_error(error, CLI_ERROR, CLI_ERROR_FAILED, "%s/%s: no workload memory kept for "
                    "that iothread in %s", vm, iothread, ctx->db_path);
        return NULL;
    }
    json_object_object_add(r, "iothread", iothread ? json_object_new_string(matched) : NULL);
    return g_steal_pointer(&r);
}

/* "MAX/GROW/SHRINK" of a triple object, "-" for null. */
static char *
memory_triple_text(json_object *e, const char *key)
{
    json_object *t = NULL;
    gint64 max = 0, grow = 0, shrink = 0;

    if (!json_object_object_get_ex(e, key, &t) || !t)
        return g_strdup("-");
    qmp_json_get_int(t, "poll-max-ns", &max);
    qmp_json_get_int(t, "poll-grow", &grow);
    qmp_json_get_int(t, "poll-shrink", &shrink);
    return g_strdup_printf("%" G_GINT64_FORMAT "/%" G_GINT64_FORMAT "/%" G_GINT64_FORMAT, max,
                           grow, shrink);
}

static char *
memory_num_text(json_object *e, const char *key)
{
    json_object *v = NULL;

    if (!json_object_object_get_ex(e, key, &v) || !v)
        return g_strdup("-");
    return cli_format_fixed(json_object_get_double(v), 3);
}

static char *
memory_time_text(json_object *e, const char *key)
{
    gint64 ms = 0;

    if (!qmp_json_get_int(e, key, &ms))
        return g_strdup("-");
    return cli_format_time_ms(ms, FALSE);
}

static void
memory_row(CliTable *t, const char *iothread, json_object *e)
{
    g_autofree char *winner = memory_triple_text(e, "winner");
    g_autofree char *score = memory_num_text(e, "score");
    g_autofree char *anchor = memory_triple_text(e, "anchor");
    g_autofree char *anchor_score = memory_num_text(e, "anchor_score");
    g_autofree char *learned = memory_time_text(e, "learned_ms");
    g_autofree char *confirmed = memory_time_text(e, "confirmed_ms");
    json_object *expired = NULL;
    gint64 n = 0;

    cli_table_row(t);
    cli_table_cell(t, iothread);
    cli_table_cell(t, qmp_json_get_string(e, "signature"));
    cli_table_cell(t, winner);
    cli_table_cell(t, score);
    cli_table_cell(t, anchor);
    cli_table_cell(t, anchor_score);
    cli_table_cell(t, learned);
    json_object_object_get_ex(e, "expired", &expired);
    cli_table_cellf(t, "%s%s", confirmed, json_object_get_boolean(expired) ? " (expired)" : "");
    qmp_json_get_int(e, "n_confirmed", &n);
    cli_table_cellf(t, "%" G_GINT64_FORMAT, n);
    qmp_json_get_int(e, "n_explorations", &n);
    cli_table_cellf(t, "%" G_GINT64_FORMAT, n);
    qmp_json_get_int(e, "n_default_wins", &n);
    cli_table_cellf(t, "%" G_GINT64_FORMAT, n);
}

/* The table of a `memory` reply, or one line when it holds no entry. */
static void
memory_print(json_object *r)
{
    g_autoptr(CliTable) t = cli_table_new("IOTHREAD", "SIGNATURE", ">WINNER", ">SCORE",
                                          ">ANCHOR", ">ANCHOR-SCORE", "LEARNED", "CONFIRMED",
                                          ">CONFIRMS", ">EXPLORED", ">ANCHOR-WINS", NULL);
    const char *vm = qmp_json_get_string(r, "vm");
    const char *iothread = qmp_json_get_string(r, "iothread");
    g_autofree char *ttl = NULL;
    g_autofree char *text = NULL;
    json_object *ios = NULL;
    gint64 ttl_ms = 0;

    if (json_object_object_get_ex(r, "iothreads", &ios) &&
        json_object_is_type(ios, json_type_array))
        for (gsize i = 0; i < json_object_array_length(ios); i++) {
            json_object *io = json_object_array_get_idx(ios, i);
            json_object *entries = NULL;

            if (!json_object_object_get_ex(io, "entries", &entries) ||
                !json_object_is_type(entries, json_type_array))
                continue;
            for (gsize k = 0; k < json_object_array_length(entries); k++)
                memory_row(t, qmp_json_get_string(io, "iothread"),
                           json_object_array_get_idx(entries, k));
        }
    if (!cli_table_n_rows(t)) {
        printf("%s%s%s: no workload memory\n", cli_text(vm ? vm : "?"), iothread ? "/" : "",
               iothread ? cli_text(iothread) : "");
        return;
    }
    qmp_json_get_int(r, "ttl_ms", &ttl_ms);
    ttl = cli_format_duration_ms(ttl_ms);
    text = cli_table_render(t);
    printf("%s: %u entr%s; a winner not confirmed for %s is explored again\n%s",
           cli_text(vm ? vm : "?"), cli_table_n_rows(t), cli_table_n_rows(t) == 1 ? "y" : "ies",
           ttl, text);
}

gboolean
cli_cmd_memory(CliContext *ctx, char **args, guint n, GError **error)
{
    g_autoptr(json_object) r = NULL;
    g_autofree char *vm = NULL, *iothread = NULL;

    (void)n;
    if (ctx->db_path) {
        if (!cli_target_split(args[0], &vm, &iothread, error) ||
            !(r = memory_offline(ctx, vm, iothread, error)))
            return FALSE;
    } else {
        g_autoptr(json_object) req = json_object_new_object();

        if (!cli_target_add(req, args[0], error) ||
            !(r = cli_context_call(ctx, "memory", req, error)))
            return FALSE;
    }
    if (ctx->json)
        cli_print_json(r);
    else
        memory_print(r);
    return TRUE;
}

gboolean
cli_cmd_forget(CliContext *ctx, char **args, guint n, GError **error)
{
    g_autoptr(json_object) req = json_object_new_object();
    g_autoptr(json_object) r = NULL;
    const char *iothread;
    gint64 forgotten = 0;

    (void)n;
    if (!cli_target_add(req, args[0], error) ||
        !(r = cli_context_call(ctx, "forget", req, error)))
        return FALSE;
    if (ctx->json) {
        cli_print_json(r);
        return TRUE;
    }
    qmp_json_get_int(r, "forgotten", &forgotten);
    iothread = qmp_json_get_string(r, "iothread");
    printf("%s%s%s: %" G_GINT64_FORMAT " workload memory entr%s forgotten\n",
           cli_text(qmp_json_get_string(r, "vm") ?: args[0]), iothread ? "/" : "",
           iothread ? cli_text(iothread) : "", forgotten, forgotten == 1 ? "y" : "ies");
    return TRUE;
}
