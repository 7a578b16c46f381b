/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * cli-report-evidence: splitting a stored decision reason ("TEXT [key=value
 * ...]") into its text and named fields with units, for the report.
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

typedef struct {
    char *label;                /* "IOPS", "iothread CPU", or the key itself */
    char *value;                /* with its unit: "4200 ops/s" */
} CliEvidenceField;

/* CliEvidenceField, in the order given; @text gets the reason without its
 * evidence (a new string).  A reason without evidence gives no fields. */
GPtrArray *cli_evidence_parse(const char *reason, char **text);

G_END_DECLS
