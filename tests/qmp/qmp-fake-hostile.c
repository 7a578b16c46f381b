/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "qmp-fake-hostile.h"

/* Past the client's message limit (1 MiB, qmp/qmp-client.c) a hundredfold:
 * what a peer gone mad sends, and still quick to stream on loopback. */
#define HOSTILE_HUGE_BYTES (100u * 1000 * 1000)
#define HOSTILE_GARBAGE_MS 50
#define HOSTILE_DRIP_MS 1000

static const char *const hostile_names[QMP_FAKE_HOSTILE_MAX] = {
    [QMP_FAKE_HOSTILE_GARBAGE] = "garbage",
    [QMP_FAKE_HOSTILE_HUGE_LINE] = "huge-line",
    [QMP_FAKE_HOSTILE_DRIP] = "drip",
    [QMP_FAKE_HOSTILE_WRONG_SHAPE] = "wrong-shape",
    [QMP_FAKE_HOSTILE_BAD_GREETING] = "bad-greeting",
    [QMP_FAKE_HOSTILE_SILENCE] = "silence",
};

const char *
qmp_fake_hostile_name(QmpFakeHostile kind)
{
    return kind < QMP_FAKE_HOSTILE_MAX ? hostile_names[kind] : "invalid";
}

QmpFakeQemu *
qmp_fake_qemu_new_hostile(const char *path, QmpFakeHostile kind)
{
    /* Binary junk, a greeting that never closes, a broken escape, a
     * misspelt literal and NULs. */
    static const char junk[] = "\x01\x02\xff\xfe{\"QMP\": [[[[{{{\n}}}]]\n\"\\u12\n"
                               "{\"return\": tru}\n\x00\x00\n";
    static const char greeting[] =
        "{\"QMP\": {\"version\": {\"qemu\": {\"micro\": 0, \"minor\": 2, \"major\": 7}, "
        "\"package\": \"\"}, \"capabilities\": [\"oob\"]}}\n";
    QmpFakeQemu *f = qmp_fake_qemu_new_listen(path);

    qmp_fake_qemu_set_replay(f, TRUE);
    switch (kind) {
    case QMP_FAKE_HOSTILE_GARBAGE:
        qmp_fake_ignore_all(f);
        qmp_fake_send_raw_repeat(f, junk, sizeof(junk) - 1, HOSTILE_GARBAGE_MS);
        break;
    case QMP_FAKE_HOSTILE_HUGE_LINE:
        qmp_fake_ignore_all(f);
        qmp_fake_send_huge(f, "{\"QMP\": {\"version\": \"", HOSTILE_HUGE_BYTES, "\"}}\n");
        break;
    case QMP_FAKE_HOSTILE_DRIP:
        qmp_fake_ignore_all(f);
        qmp_fake_drip(f, greeting, HOSTILE_DRIP_MS);
        qmp_fake_close(f);
        break;
    case QMP_FAKE_HOSTILE_WRONG_SHAPE:
        qmp_fake_send_raw(f, greeting);
        qmp_fake_answer_wrongly(f);
        break;
    case QMP_FAKE_HOSTILE_BAD_GREETING:
        qmp_fake_ignore_all(f);
        qmp_fake_send_raw(f, "{\"hello\": {\"version\": 1}}\n");
        break;
    case QMP_FAKE_HOSTILE_SILENCE:
        qmp_fake_ignore_all(f);
        break;
    case QMP_FAKE_HOSTILE_MAX:
        g_assert_not_reached();
    }
    qmp_fake_qemu_start_thread(f);
    return f;
}
