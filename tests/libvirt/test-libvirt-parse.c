/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The pure half of pt-libvirt: domain XML and stats records to structs. */
#include <glib/gstdio.h>

#include "pt-libvirt-metadata.h"
#include "pt-libvirt-parse.h"

static const char live_xml[] =
    "<domain type='qemu' id='3'>\n"
    "  <name>vm-a</name>\n"
    "  <uuid>0b5bd1c2-9f3e-4a53-9a3b-0f8a1d1e2c3d</uuid>\n"
    "  <iothreads>3</iothreads>\n"
    "  <iothreadids>\n"
    "    <iothread id='7'/>\n"
    "    <iothread id='2'/>\n"
    "    <iothread id='4'/>\n"
    "  </iothreadids>\n"
    "  <devices>\n"
    "    <disk type='file' device='disk'>\n"
    "      <driver name='qemu' type='raw' iothread='4'/>\n"
    "      <source file='/var/lib/a.raw' index='2'/>\n"
    "      <target dev='vda' bus='virtio'/>\n"
    "    </disk>\n"
    "    <disk type='file' device='cdrom'>\n"
    "      <driver name='qemu' type='raw'/>\n"
    "      <target dev='sda' bus='sata'/>\n"
    "    </disk>\n"
    "    <controller type='scsi'><driver iothread='2'/></controller>\n"
    "  </devices>\n"
    "  <seclabel type='dynamic'><label>x&amp;y</label></seclabel>\n"
    "</domain>\n";

/* The first iothread of disk @i (0 if none); *@second the next one. */
static guint
disk_iothreads(PtLibvirtDomain *d, guint i, guint *second)
{
    GArray *a = g_array_index(d->disks, PtLibvirtDisk, i).iothreads;

    if (second)
        *second = a->len > 1 ? g_array_index(a, guint, 1) : 0;
    return a->len ? g_array_index(a, guint, 0) : 0;
}

static void
test_xml_iothreadids(void)
{
    g_autoptr(PtLibvirtDomain) d = pt_libvirt_domain_new("vm-a", "u");
    g_autoptr(GError) error = NULL;

    g_assert_true(pt_libvirt_domain_xml_parse(d, live_xml, &error));
    g_assert_no_error(error);
    g_assert_cmpuint(d->iothread_ids->len, ==, 3);
    g_assert_cmpuint(g_array_index(d->iothread_ids, guint, 0), ==, 2);
    g_assert_cmpuint(g_array_index(d->iothread_ids, guint, 1), ==, 4);
    g_assert_cmpuint(g_array_index(d->iothread_ids, guint, 2), ==, 7);
    /* The controller's <driver iothread> is no disk's. */
    g_assert_cmpuint(d->disks->len, ==, 2);
    g_assert_cmpstr(g_array_index(d->disks, PtLibvirtDisk, 0).dev, ==, "vda");
    g_assert_cmpuint(disk_iothreads(d, 0, NULL), ==, 4);
    g_assert_cmpstr(g_array_index(d->disks, PtLibvirtDisk, 1).dev, ==, "sda");
    g_assert_cmpuint(g_array_index(d->disks, PtLibvirtDisk, 1).iothreads->len, ==, 0);
}

/* libvirt 10.0+ writes iothread-vq-mapping from <driver><iothreads> (shape
 * of libvirt's tests/qemuxmlconfdata/iothreads-disk.xml); a scsi disk runs
 * in its virtio-scsi controller's iothread, or in all of the controller's
 * <iothreads> (libvirt 11.2+, QEMU 10.0+). */
static const char mapped_xml[] =
    "<domain type='kvm' id='5'>\n"
    "  <name>vm-m</name>\n"
    "  <iothreads>5</iothreads>\n"
    "  <devices>\n"
    "    <disk type='file' device='disk'>\n"
    "      <driver name='qemu' type='raw' iothread='1'/>\n"
    "      <target dev='vdb' bus='virtio'/>\n"
    "    </disk>\n"
    "    <disk type='file' device='disk'>\n"
    "      <driver name='qemu' type='raw' queues='4'>\n"
    "        <iothreads>\n"
    "          <iothread id='2'>\n"
    "            <queue id='1'/>\n"
    "            <queue id='3'/>\n"
    "          </iothread>\n"
    "          <iothread id='3'>\n"
    "            <queue id='0'/>\n"
    "            <queue id='2'/>\n"
    "          </iothread>\n"
    "        </iothreads>\n"
    "      </driver>\n"
    "      <target dev='vdc' bus='virtio'/>\n"
    "    </disk>\n"
    "    <disk type='file' device='disk'>\n"
    "      <driver name='qemu' type='raw'>\n"
    "        <iothreads>\n"
    "          <iothread id='4'/>\n"
    "          <iothread id='1'/>\n"
    "        </iothreads>\n"
    "      </driver>\n"
    "      <target dev='vdd' bus='virtio'/>\n"
    "    </disk>\n"
    "    <disk type='block' device='disk'>\n"
    "      <driver name='qemu' type='raw' cache='none' io='native'/>\n"
    "      <target dev='sda' bus='scsi'/>\n"
    "      <address type='drive' controller='0' bus='0' target='0' unit='0'/>\n"
    "    </disk>\n"
    "    <disk type='block' device='disk'>\n"
    "      <driver name='qemu' type='raw'/>\n"
    "      <target dev='sdb' bus='scsi'/>\n"
    "      <address type='drive' controller='1' bus='0' target='0' unit='0'/>\n"
    "    </disk>\n"
    "    <disk type='block' device='disk'>\n"
    "      <driver name='qemu' type='raw'/>\n"
    "      <target dev='sdc' bus='scsi'/>\n"
    "      <address type='drive' controller='2' bus='0' target='0' unit='0'/>\n"
    "    </disk>\n"
    "    <controller type='scsi' index='0' model='virtio-scsi'>\n"
    "      <driver iothread='5'/>\n"
    "      <address type='pci' domain='0x0000' bus='0x00' slot='0x05' function='0x0'/>\n"
    "    </controller>\n"
    "    <controller type='scsi' index='1' model='virtio-scsi'>\n"
    "      <driver queues='3'>\n"
    "        <iothreads>\n"
    "          <iothread id='2'><queue id='1'/></iothread>\n"
    "          <iothread id='3'><queue id='0'/><queue id='2'/></iothread>\n"
    "        </iothreads>\n"
    "      </driver>\n"
    "    </controller>\n"
    "    <controller type='scsi' index='2' model='lsilogic'/>\n"
    "    <controller type='usb' index='0'><driver iothread='9'/></controller>\n"
    "  </devices>\n"
    "</domain>\n";

static void
test_xml_mapping_and_scsi(void)
{
    g_autoptr(PtLibvirtDomain) d = pt_libvirt_domain_new("vm-m", "u");
    g_autoptr(GError) error = NULL;
    guint b;

    g_assert_true(pt_libvirt_domain_xml_parse(d, mapped_xml, &error));
    g_assert_no_error(error);
    g_assert_cmpuint(d->disks->len, ==, 6);
    g_assert_cmpuint(disk_iothreads(d, 0, NULL), ==, 1);
    /* Every iothread of the mapping serves the disk, each once. */
    g_assert_cmpuint(disk_iothreads(d, 1, &b), ==, 2);
    g_assert_cmpuint(b, ==, 3);
    g_assert_cmpuint(disk_iothreads(d, 2, &b), ==, 4);
    g_assert_cmpuint(b, ==, 1);
    /* scsi disks: their controller's, found after the disks were read. */
    g_assert_cmpstr(g_array_index(d->disks, PtLibvirtDisk, 3).dev, ==, "sda");
    g_assert_cmpuint(g_array_index(d->disks, PtLibvirtDisk, 3).iothreads->len, ==, 1);
    g_assert_cmpuint(disk_iothreads(d, 3, NULL), ==, 5);
    g_assert_cmpuint(disk_iothreads(d, 4, &b), ==, 2);
    g_assert_cmpuint(b, ==, 3);
    g_assert_cmpuint(g_array_index(d->disks, PtLibvirtDisk, 5).iothreads->len, ==, 0);
}

/*
 * What backs each disk, from its own <source> (shapes of libvirt's
 * formatdomain documentation): a backing store's or a block copy's
 * mirror's <source> is not the disk's, and a disk without one has none.
 */
static const char sources_xml[] =
    "<domain type='kvm' id='6'>\n"
    "  <name>vm-s</name>\n"
    "  <devices>\n"
    "    <disk type='file' device='disk'>\n"
    "      <source file='/img/top.qcow2' index='3'/>\n"
    "      <backingStore type='file' index='4'>\n"
    "        <source file='/img/base.qcow2'/>\n"
    "      </backingStore>\n"
    "      <mirror type='block' job='copy' ready='yes'>\n"
    "        <source dev='/dev/nvme0n1'/>\n"
    "      </mirror>\n"
    "      <target dev='vda' bus='virtio'/>\n"
    "    </disk>\n"
    "    <disk type='block' device='disk'>\n"
    "      <source dev='/dev/sdb'/>\n"
    "      <target dev='vdb' bus='virtio'/>\n"
    "    </disk>\n"
    "    <disk type='network' device='disk'>\n"
    "      <source protocol='rbd' name='pool/image'>\n"
    "        <host name='mon1' port='6789'/>\n"
    "      </source>\n"
    "      <target dev='vdc' bus='virtio'/>\n"
    "    </disk>\n"
    "    <disk type='volume' device='disk'>\n"
    "      <source pool='default' volume='data.img'/>\n"
    "      <target dev='vdd' bus='virtio'/>\n"
    "    </disk>\n"
    "    <disk type='file' device='cdrom'>\n"
    "      <target dev='sda' bus='sata'/>\n"
    "    </disk>\n"
    "  </devices>\n"
    "</domain>\n";

static void
test_xml_sources(void)
{
    static const char *const want[][2] = {
        { "vda", "/img/top.qcow2" }, { "vdb", "/dev/sdb" }, { "vdc", "rbd:pool/image" },
        { "vdd", "volume:default/data.img" }, { "sda", NULL },
    };
    g_autoptr(PtLibvirtDomain) d = pt_libvirt_domain_new("vm-s", "u");
    g_autoptr(GError) error = NULL;

    g_assert_true(pt_libvirt_domain_xml_parse(d, sources_xml, &error));
    g_assert_no_error(error);
    g_assert_cmpuint(d->disks->len, ==, G_N_ELEMENTS(want));
    for (guint i = 0; i < G_N_ELEMENTS(want); i++) {
        const PtLibvirtDisk *disk = &g_array_index(d->disks, PtLibvirtDisk, i);

        g_assert_cmpstr(disk->dev, ==, want[i][0]);
        g_assert_cmpstr(disk->source, ==, want[i][1]);
    }
}

static void
test_xml_count_only(void)
{
    g_autoptr(PtLibvirtDomain) d = pt_libvirt_domain_new("vm-b", "u");
    g_autoptr(GError) error = NULL;

    g_assert_true(pt_libvirt_domain_xml_parse(d,
        "<domain><name>vm-b</name><iothreads> 2 </iothreads><devices/></domain>",
        &error));
    g_assert_cmpuint(d->iothread_ids->len, ==, 2);
    g_assert_cmpuint(g_array_index(d->iothread_ids, guint, 0), ==, 1);
    g_assert_cmpuint(g_array_index(d->iothread_ids, guint, 1), ==, 2);
    g_assert_cmpuint(d->disks->len, ==, 0);
}

static void
test_xml_bad(void)
{
    static const char *const bad[] = {
        "<domain><iothreads>two</iothreads></domain>",
        "<domain><iothreadids><iothread/></iothreadids></domain>",
        "<domain><devices><disk><driver iothread='-1'/></disk></devices></domain>",
        "<domain><devices><disk><driver><iothreads><iothread id='x'/></iothreads></driver>"
        "</disk></devices></domain>",
        "<domain><devices><controller type='scsi' index='0'><driver iothread='a'/>"
        "</controller></devices></domain>",
        "<domain><devices><disk><address type='drive' controller='-2'/></disk></devices></domain>",
        "<domain><devices>",
        "not xml at all <",
    };

    for (guint i = 0; i < G_N_ELEMENTS(bad); i++) {
        g_autoptr(PtLibvirtDomain) d = pt_libvirt_domain_new("vm-bad", "u");
        g_autoptr(GError) error = NULL;

        g_assert_false(pt_libvirt_domain_xml_parse(d, bad[i], &error));
        g_assert_nonnull(error);
        g_assert_true(g_str_has_prefix(error->message, "domain vm-bad: XML: "));
    }
}

static void
test_stats_params(void)
{
    virTypedParameterPtr p = NULL;
    int n = 0, max = 0;
    g_autoptr(PtLibvirtDomainStats) s = NULL;
    const PtLibvirtIothreadStats *t;
    const PtLibvirtDiskStats *disk;

    virTypedParamsAddUInt(&p, &n, &max, "iothread.count", 2);
    virTypedParamsAddULLong(&p, &n, &max, "iothread.2.poll-max-ns", 32768);
    virTypedParamsAddUInt(&p, &n, &max, "iothread.2.poll-grow", 0);
    virTypedParamsAddUInt(&p, &n, &max, "iothread.2.poll-shrink", 0);
    virTypedParamsAddULLong(&p, &n, &max, "iothread.1.poll-max-ns", 50000);
    virTypedParamsAddUInt(&p, &n, &max, "iothread.1.poll-grow", 2);
    virTypedParamsAddUInt(&p, &n, &max, "iothread.1.poll-shrink", 4);
    virTypedParamsAddUInt(&p, &n, &max, "block.count", 1);
    virTypedParamsAddString(&p, &n, &max, "block.0.name", "vda");
    virTypedParamsAddString(&p, &n, &max, "block.0.path", "/x.raw");
    virTypedParamsAddULLong(&p, &n, &max, "block.0.rd.reqs", 11);
    virTypedParamsAddULLong(&p, &n, &max, "block.0.rd.bytes", 5632);
    virTypedParamsAddULLong(&p, &n, &max, "block.0.rd.times", 6011055);
    virTypedParamsAddULLong(&p, &n, &max, "block.0.wr.reqs", 3);
    virTypedParamsAddULLong(&p, &n, &max, "block.0.wr.bytes", 1536);
    virTypedParamsAddULLong(&p, &n, &max, "block.0.wr.times", 900);
    virTypedParamsAddULLong(&p, &n, &max, "block.0.fl.reqs", 1);
    virTypedParamsAddULLong(&p, &n, &max, "block.0.fl.times", 70);
    virTypedParamsAddULLong(&p, &n, &max, "block.0.capacity", 16777216);
    virTypedParamsAddULLong(&p, &n, &max, "vm.exits.sum", 123456);
    virTypedParamsAddLLong(&p, &n, &max, "vm.halt_poll_success_ns.sum", 99);
    virTypedParamsAddString(&p, &n, &max, "vm.name", "ignored");

    s = pt_libvirt_stats_from_params("vm-a", "u", p, n);
    virTypedParamsFree(p, n);

    g_assert_cmpstr(s->name, ==, "vm-a");
    g_assert_cmpuint(s->iothreads->len, ==, 2);
    t = &g_array_index(s->iothreads, PtLibvirtIothreadStats, 0);
    g_assert_cmpuint(t->id, ==, 1);
    g_assert_cmpuint(t->poll_max_ns, ==, 50000);
    g_assert_cmpuint(t->poll_grow, ==, 2);
    g_assert_cmpuint(t->poll_shrink, ==, 4);
    t = &g_array_index(s->iothreads, PtLibvirtIothreadStats, 1);
    g_assert_cmpuint(t->id, ==, 2);
    g_assert_cmpuint(t->poll_max_ns, ==, 32768);

    g_assert_cmpuint(s->disks->len, ==, 1);
    disk = &g_array_index(s->disks, PtLibvirtDiskStats, 0);
    g_assert_cmpstr(disk->name, ==, "vda");
    g_assert_cmpint(disk->v.v[METRIC_RD_OPS], ==, 11);
    g_assert_cmpint(disk->v.v[METRIC_RD_BYTES], ==, 5632);
    g_assert_cmpint(disk->v.v[METRIC_RD_TIME_NS], ==, 6011055);
    g_assert_cmpint(disk->v.v[METRIC_WR_OPS], ==, 3);
    g_assert_cmpint(disk->v.v[METRIC_WR_BYTES], ==, 1536);
    g_assert_cmpint(disk->v.v[METRIC_WR_TIME_NS], ==, 900);
    g_assert_cmpint(disk->v.v[METRIC_FLUSH_OPS], ==, 1);
    g_assert_cmpint(disk->v.v[METRIC_FLUSH_TIME_NS], ==, 70);

    g_assert_cmpuint(g_hash_table_size(s->vm), ==, 2);
    g_assert_cmpuint(*(guint64 *)g_hash_table_lookup(s->vm, "exits.sum"), ==, 123456);
    g_assert_cmpuint(*(guint64 *)g_hash_table_lookup(s->vm, "halt_poll_success_ns.sum"), ==, 99);
}

static void
test_pid_file(void)
{
    g_autoptr(GError) error = NULL;
    g_autofree char *dir = g_dir_make_tmp("pt-pid-XXXXXX", &error);
    g_autofree char *good = g_build_filename(dir, "vm-a.pid", NULL);
    g_autofree char *bad = g_build_filename(dir, "vm-b.pid", NULL);

    g_assert_no_error(error);
    g_assert_true(g_file_set_contents(good, "4242\n", -1, NULL));
    g_assert_true(g_file_set_contents(bad, "42x", -1, NULL));
    g_assert_cmpint(pt_libvirt_pid_read(dir, "vm-a"), ==, 4242);
    g_assert_cmpint(pt_libvirt_pid_read(dir, "vm-b"), ==, 0);
    g_assert_cmpint(pt_libvirt_pid_read(dir, "vm-c"), ==, 0);
    g_assert_cmpint(pt_libvirt_pid_read(dir, "../vm-a"), ==, 0);
    g_unlink(good);
    g_unlink(bad);
    g_rmdir(dir);
}

/* polltune's metadata element: its text, trimmed; anything else named. */
static void
test_policy_metadata(void)
{
    static const struct {
        const char *xml;
        const char *want;       /* NULL: refused */
        const char *cause;      /* in the message when refused */
    } cases[] = {
        { "<polltune:policy xmlns:polltune=\"" PT_LIBVIRT_POLICY_NS "\">adaptive:latency"
          "</polltune:policy>", "adaptive:latency", NULL },
        { "<policy xmlns=\"" PT_LIBVIRT_POLICY_NS "\">\n  static:70000/2/2\n</policy>\n",
          "static:70000/2/2", NULL },
        { "<pt:policy xmlns:pt=\"" PT_LIBVIRT_POLICY_NS "\"><!-- set by nova -->off"
          "</pt:policy>", "off", NULL },
        { "<polltune:policy xmlns:polltune=\"x\">   </polltune:policy>", NULL, "empty" },
        { "<polltune:mode xmlns:polltune=\"x\">off</polltune:mode>", NULL, "not a <policy>" },
        { "<polltune:policy xmlns:polltune=\"x\"><a>off</a></polltune:policy>", NULL,
          "holds text only" },
        { "<polltune:policy xmlns:polltune=\"x\">off", NULL, "not a policy element" },
        { "garbage", NULL, "not a policy element" },
        { "", NULL, "empty" },
    };

    for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autoptr(GError) err = NULL;
        g_autofree char *got = pt_libvirt_policy_metadata_parse(cases[i].xml, &err);

        if (cases[i].want) {
            g_assert_no_error(err);
            g_assert_cmpstr(got, ==, cases[i].want);
        } else {
            g_assert_null(got);
            g_assert_nonnull(err);
            if (!strstr(err->message, cases[i].cause))
                g_error("case %u: \"%s\" does not say \"%s\"", i, err->message,
                        cases[i].cause);
        }
    }
    {
        /* Past the size limit: refused before parsing. */
        g_autoptr(GError) err = NULL;
        g_autofree char *big = g_strnfill(5000, 'x');
        g_autofree char *xml = g_strdup_printf("<policy>%s</policy>", big);

        g_assert_null(pt_libvirt_policy_metadata_parse(xml, &err));
        g_assert_nonnull(strstr(err->message, "more than"));
    }
}

int
main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    /* virTypedParamsAdd* use libvirt's per-thread error state. */
    g_assert_cmpint(virInitialize(), ==, 0);
    g_test_add_func("/daemon/libvirt-parse/xml-iothreadids", test_xml_iothreadids);
    g_test_add_func("/daemon/libvirt-parse/xml-count-only", test_xml_count_only);
    g_test_add_func("/daemon/libvirt-parse/xml-bad", test_xml_bad);
    g_test_add_func("/daemon/libvirt-parse/xml-mapping-and-scsi", test_xml_mapping_and_scsi);
    g_test_add_func("/daemon/libvirt-parse/xml-sources", test_xml_sources);
    g_test_add_func("/daemon/libvirt-parse/stats-params", test_stats_params);
    g_test_add_func("/daemon/libvirt-parse/pid-file", test_pid_file);
    g_test_add_func("/daemon/libvirt-parse/policy-metadata", test_policy_metadata);
    return g_test_run();
}
