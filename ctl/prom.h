/* SPDX-License-Identifier: MIT */
/*
 * `rdmagatectl stats --prometheus`: the broker's per-VM counters and
 * rdmagate-trace's latency histograms in the Prometheus text exposition
 * format, version 0.0.4 (docs/operations.md, "Metrics").  Pure: it only
 * writes to the stream it is given, so unit tests feed it made-up input.
 */
#ifndef RDMAGATE_CTL_PROM_H
#define RDMAGATE_CTL_PROM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "common/broker_proto.h"
#include "trace/maps.h"

struct prom_input {
	/* one STATS_REPLY per worker, as the broker sent them */
	const struct bp_stats_reply *workers;
	size_t n_workers;
	/* the tracer's histograms (map "hists"), in any order */
	const struct rt_hist_ent *hists;
	size_t n_hists;
	/* NULL when hists is what the tracer's maps hold; else why there are
	 * none (one line, written as a comment) */
	const char *trace_note;
};

/*
 * Writes the exposition of in to f: HELP and TYPE once per metric, every
 * series labelled vm="NAME".  A series whose VM name is not valid UTF-8
 * (which the format requires of a label value) is left out, and a comment
 * says how many were.  Returns 0, or -EIO when writing to f failed.
 */
int prom_write(FILE *f, const struct prom_input *in);

/* Writes s as a label value's text: backslash, double quote and newline
 * escaped (\\, \", \n), every other byte as it is. */
void prom_label_value(FILE *f, const char *s);

/* Whether the n bytes at s are valid UTF-8 (no overlong forms, no
 * surrogates, nothing above U+10FFFF). */
bool prom_utf8_ok(const char *s, size_t n);

#endif
