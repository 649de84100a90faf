// SPDX-License-Identifier: MIT
/*
 * The state record's text form and its pure parser (see
 * broker/state_record.h): one table of keys, escaped values, every field
 * checked on the way in and on the way out.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "broker/state_record.h"
#include "common/cleanup.h"
#include "common/msg_frame.h"

#define HEADER	   "rdmagate-broker-state"
#define LINE_MAX_  1024 /* an escaped line */
#define PID_LIMIT  (1u << 22)
#define PORT_LIMIT 255
/* the oldest version still read: no frontend or level lines */
#define STATE_RECORD_OLDEST 2

enum kind {
	V_VM,
	V_DEVICE,
	V_PATH,
	V_CGROUP,
	V_LEVEL,
	V_FRONTEND,
	V_I32,
	V_U32,
	V_U64,
	V_I64
};

struct key {
	const char *name;
	enum kind kind;
	size_t off, size;
	uint64_t min, max;
	int since; /* the version that added it (0: the oldest read) */
};

#define F(f)                                                                   \
	.off = offsetof(struct state_record, f),                               \
	.size = sizeof(((struct state_record *)0)->f)
#define STR(k, f, ty)                                                          \
	{                                                                      \
		.name = k, .kind = ty, F(f)                                    \
	}
#define NUM(k, f, ty, lo, hi)                                                  \
	{                                                                      \
		.name = k, .kind = ty, F(f), .min = lo, .max = hi              \
	}

/* Every key but addr, in the order they are written; each appears once. */
static const struct key keys[] = {
	STR("vm", vm, V_VM),
	NUM("pid", pid, V_I32, 2, PID_LIMIT - 1),
	NUM("starttime", pid_start, V_U64, 0, UINT64_MAX),
	NUM("uid", uid, V_U32, 0, UINT32_MAX - 1),
	NUM("gid", gid, V_U32, 0, UINT32_MAX - 1),
	STR("device", device, V_DEVICE),
	NUM("port", port, V_U32, 1, PORT_LIMIT),
	STR("socket", socket, V_PATH),
	STR("cgroup", cgroup, V_CGROUP),
	NUM("start", start, V_I64, 0, INT64_MAX),
	STR("channel", channel, V_PATH),
	{ .name = "frontend", .kind = V_FRONTEND, F(frontend), .since = 3 },
	{ .name = "level", .kind = V_LEVEL, F(level), .since = 3 },
};
_Static_assert(ARRAY_SIZE(keys) < 32, "seen is a 32-bit mask");

/* ---- values ------------------------------------------------------------- */

static bool ctl_free(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return false;
	return true;
}

/* Absolute, no control character; fits with its NUL (checked by the
 * caller's copy). */
static bool path_ok(const char *s)
{
	return s[0] == '/' && ctl_free(s);
}

static bool str_ok(enum kind kind, const char *s)
{
	switch (kind) {
	case V_VM:
		return bp_vm_name_ok(s);
	case V_DEVICE:
		return msg_name_ok(s, BP_DEVICE_SIZE - 1);
	case V_PATH:
		return path_ok(s);
	case V_CGROUP:
		return !s[0] || path_ok(s);
	case V_LEVEL:
		return bp_mcs_level_check(s, NULL, NULL, NULL) == 0;
	default:
		return false;
	}
}

/* A worker's frontend: a record is never written for QEMU's own pvrdma
 * (nothing to re-adopt). */
static bool frontend_ok(uint32_t f)
{
	return f == BP_FRONTEND_VIRTIO_RDMA || f == BP_FRONTEND_PVRDMA;
}

static bool num_ok(const struct key *k, const struct state_record *r)
{
	const char *p = (const char *)r + k->off;
	uint64_t u = 0;
	int64_t i = 0;

	switch (k->kind) {
	case V_I32:
		i = *(const int32_t *)(const void *)p;
		return i >= 0 && (uint64_t)i >= k->min && (uint64_t)i <= k->max;
	case V_I64:
		i = *(const int64_t *)(const void *)p;
		return i >= 0 && (uint64_t)i >= k->min && (uint64_t)i <= k->max;
	case V_U32:
		u = *(const uint32_t *)(const void *)p;
		break;
	case V_U64:
		u = *(const uint64_t *)(const void *)p;
		break;
	default:
		return false;
	}
	return u >= k->min && u <= k->max;
}

static bool is_num(enum kind kind)
{
	return kind == V_I32 || kind == V_U32 || kind == V_U64 || kind == V_I64;
}

/* Whether a record of version v has key k. */
static bool in_version(const struct key *k, int v)
{
	return k->since <= v;
}

/* Every field as the parser wants it; the name of the first bad one. */
static const char *invalid_field(const struct state_record *r)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(keys); i++) {
		const struct key *k = &keys[i];
		const char *s = (const char *)r + k->off;

		if (k->kind == V_FRONTEND ? !frontend_ok(r->frontend)
		    : is_num(k->kind)	  ? !num_ok(k, r)
					  : (strnlen(s, k->size) >= k->size ||
					     !str_ok(k->kind, s)))
			return k->name;
	}
	if (r->n_addrs > STATE_ADDRS_MAX)
		return "addr";
	for (i = 0; i < r->n_addrs; i++)
		if (r->addrs[i].family != AF_INET &&
		    r->addrs[i].family != AF_INET6)
			return "addr";
	return NULL;
}

/* ---- writing --------------------------------------------------------------
 */

static bool plain(unsigned char c)
{
	return c > 0x20 && c < 0x7f && c != '%';
}

struct out {
	char *buf;
	size_t len, n;
	bool full;
};

static void put(struct out *o, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void put(struct out *o, const char *fmt, ...)
{
	va_list ap;
	int m;

	if (o->full)
		return;
	va_start(ap, fmt);
	m = vsnprintf(o->buf + o->n, o->len - o->n, fmt, ap);
	va_end(ap);
	if (m < 0 || (size_t)m >= o->len - o->n)
		o->full = true;
	else
		o->n += (size_t)m;
}

static void put_escaped(struct out *o, const char *key, const char *s)
{
	put(o, "%s ", key);
	for (; *s; s++)
		if (plain((unsigned char)*s))
			put(o, "%c", *s);
		else
			put(o, "%%%02X", (unsigned char)*s);
	put(o, "\n");
}

static void put_key(struct out *o, const struct key *k,
		    const struct state_record *r)
{
	const char *p = (const char *)r + k->off;

	switch (k->kind) {
	case V_I32:
		put(o, "%s %" PRId32 "\n", k->name,
		    *(const int32_t *)(const void *)p);
		break;
	case V_I64:
		put(o, "%s %" PRId64 "\n", k->name,
		    *(const int64_t *)(const void *)p);
		break;
	case V_U32:
		put(o, "%s %" PRIu32 "\n", k->name,
		    *(const uint32_t *)(const void *)p);
		break;
	case V_U64:
		put(o, "%s %" PRIu64 "\n", k->name,
		    *(const uint64_t *)(const void *)p);
		break;
	case V_CGROUP:
		/* "-": none (a value is never empty) */
		put_escaped(o, k->name, p[0] ? p : "-");
		break;
	case V_FRONTEND:
		put_escaped(o, k->name, bp_frontend_name(r->frontend));
		break;
	default:
		put_escaped(o, k->name, p);
	}
}

int state_record_format(const struct state_record *r, char *buf, size_t len)
{
	struct out o = { buf, len, 0, len == 0 };
	char txt[INET6_ADDRSTRLEN];
	unsigned int i;

	if (invalid_field(r))
		return -EINVAL;
	put(&o, "%s %d\n", HEADER, STATE_RECORD_VERSION);
	for (i = 0; i < ARRAY_SIZE(keys); i++)
		put_key(&o, &keys[i], r);
	for (i = 0; i < r->n_addrs; i++) {
		if (!inet_ntop(r->addrs[i].family, r->addrs[i].addr, txt,
			       sizeof(txt)))
			return -EINVAL;
		put(&o, "addr %s\n", txt);
	}
	if (o.full || o.n > STATE_RECORD_MAX)
		return -ENOSPC;
	return (int)o.n;
}

/* ---- reading --------------------------------------------------------------
 */

static int hex(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Unescapes v into out (size bytes); false if an escape is malformed, a
 * byte should have been escaped, or it decodes to NUL or does not fit. */
static bool unescape(const char *v, char *out, size_t size)
{
	size_t n = 0;

	for (; *v; v++) {
		int c = (unsigned char)*v;

		if (c == '%') {
			int hi = hex(v[1]), lo = hi < 0 ? -1 : hex(v[2]);

			if (lo < 0)
				return false;
			c = hi << 4 | lo;
			if (!c || plain((unsigned char)c))
				return false; /* one spelling per value */
			v += 2;
		} else if (!plain((unsigned char)c)) {
			return false;
		}
		if (n + 1 >= size)
			return false;
		out[n++] = (char)c;
	}
	out[n] = '\0';
	return n > 0;
}

/* Strict decimal: digits only, no sign, no leading zero but "0". */
static bool parse_u64(const char *s, uint64_t *ret)
{
	uint64_t v = 0;

	if (!s[0] || (s[0] == '0' && s[1]))
		return false;
	for (; *s; s++) {
		uint64_t d = (uint64_t)(*s - '0');

		if (*s < '0' || *s > '9' || v > (UINT64_MAX - d) / 10)
			return false;
		v = v * 10 + d;
	}
	*ret = v;
	return true;
}

static bool set_num(const struct key *k, const char *v, struct state_record *r)
{
	char *p = (char *)r + k->off;
	uint64_t u;

	if (!parse_u64(v, &u) || u < k->min || u > k->max)
		return false;
	switch (k->kind) {
	case V_I32:
		*(int32_t *)(void *)p = (int32_t)u;
		break;
	case V_I64:
		*(int64_t *)(void *)p = (int64_t)u;
		break;
	case V_U32:
		*(uint32_t *)(void *)p = (uint32_t)u;
		break;
	default:
		*(uint64_t *)(void *)p = u;
	}
	return true;
}

static bool set_addr(const char *v, struct state_record *r)
{
	unsigned int n = r->n_addrs;
	char txt[INET6_ADDRSTRLEN];

	if (n >= STATE_ADDRS_MAX)
		return false;
	memset(r->addrs[n].addr, 0, sizeof(r->addrs[n].addr));
	if (inet_pton(AF_INET, v, r->addrs[n].addr) == 1)
		r->addrs[n].family = AF_INET;
	else if (inet_pton(AF_INET6, v, r->addrs[n].addr) == 1)
		r->addrs[n].family = AF_INET6;
	else
		return false;
	/* the form inet_ntop writes, nothing else */
	if (!inet_ntop(r->addrs[n].family, r->addrs[n].addr, txt,
		       sizeof(txt)) ||
	    strcmp(txt, v))
		return false;
	for (unsigned int i = 0; i < n; i++)
		if (r->addrs[i].family == r->addrs[n].family &&
		    !memcmp(r->addrs[i].addr, r->addrs[n].addr, 16))
			return false; /* listed twice */
	r->n_addrs++;
	return true;
}

/* One "key value" line (NUL-terminated, no newline). */
static int parse_line(char *line, int version, struct state_record *r,
		      uint32_t *seen, struct reason *why)
{
	char val[LINE_MAX_];
	char *sp = strchr(line, ' ');
	size_t i;

	if (!sp)
		return reason_fail(why, -EINVAL, "a line without a value");
	*sp = '\0';
	if (!strcmp(line, "addr")) {
		if (set_addr(sp + 1, r))
			return 0;
		return reason_fail(why, -EINVAL,
				   "addr: not a distinct address in "
				   "inet_ntop's form, or too many");
	}
	for (i = 0; i < ARRAY_SIZE(keys) && strcmp(keys[i].name, line); i++)
		;
	if (i == ARRAY_SIZE(keys) || !in_version(&keys[i], version))
		return reason_fail(why, -EINVAL,
				   "unknown key '%.32s' in a version %d record",
				   line, version);
	if (*seen & (1u << i))
		return reason_fail(why, -EINVAL, "%s: given twice",
				   keys[i].name);
	*seen |= 1u << i;
	if (keys[i].kind == V_FRONTEND) {
		if (bp_frontend_parse(sp + 1, &r->frontend) == 0 &&
		    frontend_ok(r->frontend))
			return 0;
	} else if (is_num(keys[i].kind)) {
		if (set_num(&keys[i], sp + 1, r))
			return 0;
	} else if (unescape(sp + 1, val, sizeof(val)) &&
		   strlen(val) < keys[i].size) {
		char *dst = (char *)r + keys[i].off;

		if (keys[i].kind == V_CGROUP && !strcmp(val, "-"))
			val[0] = '\0';
		if (str_ok(keys[i].kind, val)) {
			memcpy(dst, val, strlen(val) + 1);
			return 0;
		}
	}
	return reason_fail(why, -EINVAL, "%s: not a valid value", keys[i].name);
}

int state_record_parse(const char *buf, size_t len, struct state_record *ret,
		       struct reason *why)
{
	char text[STATE_RECORD_MAX + 1], head[48];
	struct state_record r;
	uint32_t seen = 0;
	char *line, *nl;
	unsigned int lineno = 1;
	int version;
	size_t i;

	if (len > STATE_RECORD_MAX || memchr(buf, '\0', len) || !len ||
	    buf[len - 1] != '\n')
		return reason_fail(
			why, -EINVAL,
			"not text of at most %d bytes ending in a newline",
			STATE_RECORD_MAX);
	memcpy(text, buf, len);
	text[len] = '\0';
	for (version = STATE_RECORD_VERSION; version >= STATE_RECORD_OLDEST;
	     version--) {
		snprintf(head, sizeof(head), "%s %d\n", HEADER, version);
		if (!strncmp(text, head, strlen(head)))
			break;
	}
	if (version < STATE_RECORD_OLDEST)
		return reason_fail(why, -EINVAL,
				   "not a version %d to %d record (first line)",
				   STATE_RECORD_OLDEST, STATE_RECORD_VERSION);
	memset(&r, 0, sizeof(r));
	for (line = text + strlen(head); *line; line = nl + 1) {
		struct reason err;

		lineno++;
		nl = strchr(line, '\n');
		*nl = '\0';
		if (parse_line(line, version, &r, &seen, &err) < 0)
			return reason_fail(why, -EINVAL, "line %u: %s", lineno,
					   err.msg);
	}
	for (i = 0; i < ARRAY_SIZE(keys); i++)
		if (in_version(&keys[i], version) && !(seen & (1u << i)))
			return reason_fail(why, -EINVAL, "no %s line",
					   keys[i].name);
	*ret = r;
	return 0;
}
