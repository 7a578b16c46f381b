/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * cli-reply: reading a daemon's reply for the human output of the view
 * commands (cli-cmd-view.c, cli-cmd-explain.c).  A member that is absent,
 * null or of another type reads as unknown: NULL, NAN or "-", never an
 * error, since a newer or older daemon may send more or less.
 */
#pragma once

#include <json-c/json.h>

#include "cli-commands.h"

/* @key of the object @o, NULL when @o is no object or @key absent or null. */
json_object *cli_reply_member(json_object *o, const char *key);
/* A number member, NAN when unknown. */
double cli_reply_number(json_object *o, const char *key);
/* A number member as text: SI-prefixed with @decimals < 0, else fixed. */
char *cli_reply_num_text(json_object *o, const char *key, int decimals);
/* An integer member as text, "-" when unknown. */
char *cli_reply_int_text(json_object *o, const char *key);
/* A string member escaped for the terminal (borrowed), "-" when unknown. */
const char *cli_reply_str(json_object *o, const char *key);
/* The length of an array, 0 for anything else. */
gsize cli_reply_array_len(json_object *a);
/* "3m ago" for the milliseconds time @key, "-" when unknown. */
char *cli_reply_age_text(CliContext *ctx, json_object *o, const char *key);
/* An override of a show or explain reply, in one line. */
char *cli_reply_override_text(CliContext *ctx, json_object *ov);
