/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * qmp-decode: turn the "return" value of a command into qmp-commands.h
 * structs.  Exposed for the fuzzer and tests; callers use qmp-commands.h.
 * Each decoder accepts any json_object, NULL included, and fails with
 * QMP_ERROR_UNEXPECTED naming what is missing or of the wrong type.
 */
#pragma once

#include "qmp-commands.h"
#include <json-c/json.h>

gpointer qmp_decode_iothreads(json_object *ret, GError **error);
gpointer qmp_decode_blockstats(json_object *ret, GError **error);
gpointer qmp_decode_block(json_object *ret, GError **error);
gpointer qmp_decode_stats(json_object *ret, GError **error);
gpointer qmp_decode_stats_schemas(json_object *ret, GError **error);
gpointer qmp_decode_status(json_object *ret, GError **error);
gpointer qmp_decode_name(json_object *ret, GError **error);
gpointer qmp_decode_version(json_object *ret, GError **error);
gpointer qmp_decode_qom_int(json_object *ret, GError **error);
gpointer qmp_decode_qom_link(json_object *ret, GError **error);
/* qom-get of iothread-vq-mapping: a GStrv of the iothread ids, each once. */
gpointer qmp_decode_qom_vq_mapping(json_object *ret, GError **error);
gpointer qmp_decode_empty(json_object *ret, GError **error);
