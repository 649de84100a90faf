// SPDX-License-Identifier: MIT
/*
 * The Prometheus text exposition (format 0.0.4) of the broker's per-VM
 * counters and rdmagate-trace's latency histograms.  The names, types and
 * units are documented in docs/operations.md ("Metrics"): counters end in
 * _total, latencies are histograms in seconds with the tracer's log2
 * slots as cumulative buckets.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <string.h>

#include "common/cleanup.h"
#include "ctl/prom.h"

/* struct bp_counters' fields, in bp_counter_names' order: their HELP. */
static const char *const counter_help[] = {
	"Frontends (vhost-user or vfio-user) the worker accepted.",
	"Control commands from the guest.",
	"Control commands refused.",
	"Send work requests posted to the host.",
	"Send work requests refused or not posted.",
	"Bytes in posted send work requests.",
	"Receive buffers posted (to a QP or an SRQ).",
	"Receive buffers refused or not posted.",
	"Receive buffers posted to an SRQ.",
	"Completions delivered to the guest.",
	"Completions delivered with a status other than success.",
	"Completions lost for want of a guest CQ buffer (QP to error).",
	"Host completions of a work request that was gone.",
	"QP1 MADs sent for the guest.",
	"QP1 MADs delivered to the guest.",
	"QP1 MADs refused or dropped.",
	"GIDs granted to the guest.",
	"GID requests refused.",
	"Host async events on the guest's objects.",
};
_Static_assert(ARRAY_SIZE(counter_help) == BP_COUNTERS_N,
	       "one HELP per struct bp_counters field");

static const struct {
	enum rt_hist_kind kind;
	const char *name;     /* the metric */
	const char *op_label; /* the label naming the operation */
	const char *help;
} hist_families[] = {
	{ .kind = RT_HIST_WR,
	  .name = "rdmagate_wr_latency_seconds",
	  .op_label = "opcode",
	  .help = "Work request latency from its post to the host to its "
		  "host completion, by the work completion opcode "
		  "(rdmagate-trace)." },
	{ .kind = RT_HIST_CTRL,
	  .name = "rdmagate_ctrl_latency_seconds",
	  .op_label = "command",
	  .help = "Control command latency from its decoding to its reply, "
		  "by virtio-rdma command (rdmagate-trace)." },
};

/* The four forms of a UTF-8 sequence, by its lead byte. */
static const struct {
	unsigned char mask, lead; /* lead byte & mask == lead */
	size_t len;		  /* bytes in the sequence */
	uint32_t min;		  /* below it: an overlong form */
} utf8_forms[] = {
	{ .mask = 0x80, .lead = 0x00, .len = 1, .min = 0 },
	{ .mask = 0xe0, .lead = 0xc0, .len = 2, .min = 0x80 },
	{ .mask = 0xf0, .lead = 0xe0, .len = 3, .min = 0x800 },
	{ .mask = 0xf8, .lead = 0xf0, .len = 4, .min = 0x10000 },
};

/* The length of the valid sequence at p (n bytes left), or 0. */
static size_t utf8_seq(const unsigned char *p, size_t n)
{
	size_t f, k;
	uint32_t cp;

	for (f = 0; f < ARRAY_SIZE(utf8_forms); f++)
		if ((p[0] & utf8_forms[f].mask) == utf8_forms[f].lead)
			break;
	if (f == ARRAY_SIZE(utf8_forms) || n < utf8_forms[f].len)
		return 0;
	cp = p[0] & (unsigned char)~utf8_forms[f].mask;
	for (k = 1; k < utf8_forms[f].len; k++) {
		if ((p[k] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (p[k] & 0x3f);
	}
	if (cp < utf8_forms[f].min || cp > 0x10ffff ||
	    (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return utf8_forms[f].len;
}

bool prom_utf8_ok(const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0, len;

	while (i < n) {
		len = utf8_seq(p + i, n - i);
		if (!len)
			return false;
		i += len;
	}
	return true;
}

void prom_label_value(FILE *f, const char *s)
{
	for (; *s; s++) {
		if (*s == '\\')
			fputs("\\\\", f);
		else if (*s == '"')
			fputs("\\\"", f);
		else if (*s == '\n')
			fputs("\\n", f);
		else
			fputc(*s, f);
	}
}

/* A comment line: bytes outside printable ASCII become '?'. */
static void comment(FILE *f, const char *text)
{
	const unsigned char *p = (const unsigned char *)text;

	fputs("# ", f);
	for (; *p; p++)
		fputc(*p >= 0x20 && *p < 0x7f ? *p : '?', f);
	fputc('\n', f);
}

static void head(FILE *f, const char *name, const char *type, const char *help)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* A VM name field of size bytes, NUL-terminated into buf (size + 1
 * bytes); false when it is not valid UTF-8. */
static bool vm_name(char *buf, const char *field, size_t size)
{
	size_t n = strnlen(field, size);

	memcpy(buf, field, n);
	buf[n] = '\0';
	return prom_utf8_ok(buf, n);
}

#define NAME_SIZE ((BP_VM_SIZE > RT_VM_LEN ? BP_VM_SIZE : RT_VM_LEN) + 1)

/* whole.frac with frac's digits (trailing zeros dropped) */
static void decimal(FILE *f, uint64_t v, uint64_t scale, int digits)
{
	uint64_t frac = v % scale;

	fprintf(f, "%" PRIu64, v / scale);
	if (!frac)
		return;
	while (frac % 10 == 0) {
		frac /= 10;
		digits--;
	}
	fprintf(f, ".%0*" PRIu64, digits, frac);
}

static void workers(FILE *f, const struct prom_input *in)
{
	char vm[NAME_SIZE];
	size_t i, k;

	head(f, "rdmagate_workers", "gauge", "Workers the broker runs.");
	fprintf(f, "rdmagate_workers %zu\n", in->n_workers);
	head(f, "rdmagate_worker_fresh", "gauge",
	     "1 when the worker answered this request; 0 when its counters "
	     "are the last it sent.");
	for (i = 0; i < in->n_workers; i++)
		if (vm_name(vm, in->workers[i].vm, BP_VM_SIZE)) {
			fputs("rdmagate_worker_fresh{vm=\"", f);
			prom_label_value(f, vm);
			fprintf(f, "\"} %d\n",
				!!(in->workers[i].flags & BP_STATS_FRESH));
		}
	for (k = 0; k < BP_COUNTERS_N; k++) {
		fprintf(f, "# HELP rdmagate_worker_%s_total %s\n",
			bp_counter_names[k], counter_help[k]);
		fprintf(f, "# TYPE rdmagate_worker_%s_total counter\n",
			bp_counter_names[k]);
		for (i = 0; i < in->n_workers; i++) {
			uint64_t v[BP_COUNTERS_N];

			if (!vm_name(vm, in->workers[i].vm, BP_VM_SIZE))
				continue;
			memcpy(v, &in->workers[i].c, sizeof(v));
			fprintf(f, "rdmagate_worker_%s_total{vm=\"",
				bp_counter_names[k]);
			prom_label_value(f, vm);
			fprintf(f, "\"} %" PRIu64 "\n", v[k]);
		}
	}
}

/* {vm="VM",OP_LABEL="OP" (without the closing brace) */
static void hist_labels(FILE *f, const char *metric, const char *suffix,
			const char *vm, const char *op_label, const char *op)
{
	fprintf(f, "%s_%s{vm=\"", metric, suffix);
	prom_label_value(f, vm);
	fprintf(f, "\",%s=\"", op_label);
	prom_label_value(f, op);
	fputc('"', f);
}

/*
 * One histogram series.  Slot i of the tracer holds the latencies whose
 * floor(log2(microseconds)) is i (0 and 1 us in slot 0), so every one is
 * below 2^(i+1) us: that is bucket i's upper bound, and the last slot
 * (unbounded) counts in +Inf only.  _count is the slots' sum, so that it
 * equals +Inf even while the tracer adds a sample under our reading.
 */
static void hist_series(FILE *f, int fam, const char *vm, const char *op,
			const struct rt_hist *h)
{
	const char *m = hist_families[fam].name;
	const char *l = hist_families[fam].op_label;
	uint64_t cum = 0;
	int i;

	for (i = 0; i < RT_MAX_SLOTS - 1; i++) {
		cum += h->slots[i];
		hist_labels(f, m, "bucket", vm, l, op);
		fputs(",le=\"", f);
		decimal(f, UINT64_C(1) << (i + 1), 1000000, 6);
		fprintf(f, "\"} %" PRIu64 "\n", cum);
	}
	cum += h->slots[RT_MAX_SLOTS - 1];
	hist_labels(f, m, "bucket", vm, l, op);
	fprintf(f, ",le=\"+Inf\"} %" PRIu64 "\n", cum);
	hist_labels(f, m, "sum", vm, l, op);
	fputs("} ", f);
	decimal(f, h->sum_ns, 1000000000, 9);
	fputc('\n', f);
	hist_labels(f, m, "count", vm, l, op);
	fprintf(f, "} %" PRIu64 "\n", cum);
}

static void hist_family(FILE *f, const struct prom_input *in, int fam)
{
	char vm[NAME_SIZE], num[16];
	const char *op;
	size_t i;

	head(f, hist_families[fam].name, "histogram", hist_families[fam].help);
	for (i = 0; i < in->n_hists; i++) {
		const struct rt_hist_ent *e = &in->hists[i];

		if (e->k.kind != hist_families[fam].kind ||
		    !vm_name(vm, e->k.vm, RT_VM_LEN))
			continue;
		/* a code without a name is its number: labels stay unique */
		op = rt_hist_op_name(&e->k);
		if (!op) {
			snprintf(num, sizeof(num), "%" PRIu32,
				 (uint32_t)e->k.op);
			op = num;
		}
		hist_series(f, fam, vm, op, &e->h);
	}
}

/* Series left out for a VM name that is not UTF-8: one comment. */
static void bad_names(FILE *f, const struct prom_input *in)
{
	char vm[NAME_SIZE];
	size_t i, n = 0;

	for (i = 0; i < in->n_workers; i++)
		n += !vm_name(vm, in->workers[i].vm, BP_VM_SIZE);
	for (i = 0; in->trace_note == NULL && i < in->n_hists; i++)
		n += !vm_name(vm, in->hists[i].k.vm, RT_VM_LEN);
	if (n)
		fprintf(f,
			"# %zu worker(s) or histogram(s) left out: their VM "
			"name is not valid UTF-8\n",
			n);
}

int prom_write(FILE *f, const struct prom_input *in)
{
	size_t fam;

	bad_names(f, in);
	if (in->trace_note)
		comment(f, in->trace_note);
	workers(f, in);
	head(f, "rdmagate_trace_up", "gauge",
	     "1 when rdmagate-trace's maps were read (the latency histograms), "
	     "0 when not.");
	fprintf(f, "rdmagate_trace_up %d\n", !in->trace_note);
	for (fam = 0; !in->trace_note && fam < ARRAY_SIZE(hist_families); fam++)
		hist_family(f, in, (int)fam);
	return ferror(f) ? -EIO : 0;
}
