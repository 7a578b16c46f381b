/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * pt-conf-key-names: a configuration key's name by the field it lands in,
 * for text that names a key (explain's "psi-limit = 0"), so that the name
 * is spelled in common/pt-conf-keys.def alone.  Header only, GLib only,
 * like pt-enum-table.h: policy/ reads it as well as the daemon.
 *
 *   pt_conf_key_name(PT_CONF_KEY_psi_some_limit)   -> "psi-limit"
 */
#pragma once

#include <glib.h>

typedef enum {
#define PT_CONF_KEY(group, key, type, Struct, field, ...) PT_CONF_KEY_##field,
#include "pt-conf-keys.def"
#undef PT_CONF_KEY
    PT_CONF_KEY_MAX,
} PtConfKeyId;

static inline const char *
pt_conf_key_name(PtConfKeyId id)
{
    static const char *const names[PT_CONF_KEY_MAX] = {
#define PT_CONF_KEY(group, key, ...) key,
#include "pt-conf-keys.def"
#undef PT_CONF_KEY
    };

    return id >= 0 && id < PT_CONF_KEY_MAX ? names[id] : NULL;
}
