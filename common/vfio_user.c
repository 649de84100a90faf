// SPDX-License-Identifier: MIT
/* Names of vfio-user commands, for both ends' log lines. */
#include "vfio_user.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#define N(x) [VFIO_USER_##x] = #x
static const char *const command_names[VFIO_USER_MAX_COMMAND] = {
	N(VERSION),
	N(DMA_MAP),
	N(DMA_UNMAP),
	N(DEVICE_GET_INFO),
	N(DEVICE_GET_REGION_INFO),
	N(DEVICE_GET_REGION_IO_FDS),
	N(DEVICE_GET_IRQ_INFO),
	N(DEVICE_SET_IRQS),
	N(REGION_READ),
	N(REGION_WRITE),
	N(DMA_READ),
	N(DMA_WRITE),
	N(DEVICE_RESET),
	N(DIRTY_PAGES),
	N(REGION_WRITE_MULTI),
	N(DEVICE_FEATURE),
	N(MIG_DATA_READ),
	N(MIG_DATA_WRITE),
};
#undef N

const char *vfio_user_command_name(uint32_t command)
{
	if (command < VFIO_USER_MAX_COMMAND && command_names[command])
		return command_names[command];
	return "UNKNOWN";
}

/* ---- VERSION capabilities (JSON) ---------------------------------------- */

#define JSON_MAX_DEPTH 8

struct json {
	const char *p, *end;
	const char *why;
	unsigned int depth;
};

enum member {
	M_OTHER,
	M_CAPS,
	M_MAX_FDS,
	M_MAX_XFER,
	M_PGSIZES,
	M_MAX_DMA,
	M_MIGR,
	M_MULTI
};

static void ws(struct json *j)
{
	while (j->p < j->end && (*j->p == ' ' || *j->p == '\t' ||
				 *j->p == '\n' || *j->p == '\r'))
		j->p++;
}

static bool fail(struct json *j, const char *why)
{
	if (!j->why)
		j->why = why;
	return false;
}

static bool lit(struct json *j, const char *word)
{
	size_t n = strlen(word);

	if ((size_t)(j->end - j->p) < n || memcmp(j->p, word, n) != 0)
		return fail(j, "malformed JSON literal");
	j->p += n;
	return true;
}

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static bool hex4(struct json *j)
{
	int i;

	for (i = 0; i < 4; i++, j->p++)
		if (j->p >= j->end || !isxdigit((unsigned char)*j->p))
			return fail(j, "malformed \\u escape");
	return true;
}

/* A string; its raw body (escapes undecoded) in [*s, *s + *n). */
static bool string(struct json *j, const char **s, size_t *n)
{
	if (j->p >= j->end || *j->p != '"')
		return fail(j, "expected a string");
	*s = ++j->p;
	while (j->p < j->end && *j->p != '"') {
		unsigned char c = (unsigned char)*j->p++;

		if (c < 0x20)
			return fail(j, "control character in a string");
		if (c != '\\')
			continue;
		if (j->p >= j->end)
			break;
		c = (unsigned char)*j->p++;
		if (c == 'u') {
			if (!hex4(j))
				return false;
		} else if (!strchr("\"\\/bfnrt", c) || !c) {
			return fail(j, "bad escape in a string");
		}
	}
	if (j->p >= j->end)
		return fail(j, "unterminated string");
	*n = (size_t)(j->p - *s);
	j->p++;
	return true;
}

/* A number; *ret_u set and *ret_is_u true if it is an unsigned integer. */
static bool number(struct json *j, uint64_t *ret_u, bool *ret_is_u)
{
	const char *start = j->p;
	bool neg = false, frac = false;
	uint64_t u = 0;
	bool overflow = false;

	if (j->p < j->end && *j->p == '-') {
		neg = true;
		j->p++;
	}
	if (j->p >= j->end || !is_digit(*j->p))
		return fail(j, "malformed number");
	if (*j->p == '0' && j->p + 1 < j->end && is_digit(j->p[1]))
		return fail(j, "number with a leading zero");
	for (; j->p < j->end && is_digit(*j->p); j->p++)
		if (__builtin_mul_overflow(u, 10, &u) ||
		    __builtin_add_overflow(u, (uint64_t)(*j->p - '0'), &u))
			overflow = true;
	if (j->p < j->end && *j->p == '.') {
		frac = true;
		if (++j->p >= j->end || !is_digit(*j->p))
			return fail(j, "malformed fraction");
		while (j->p < j->end && is_digit(*j->p))
			j->p++;
	}
	if (j->p < j->end && (*j->p == 'e' || *j->p == 'E')) {
		frac = true;
		j->p++;
		if (j->p < j->end && (*j->p == '+' || *j->p == '-'))
			j->p++;
		if (j->p >= j->end || !is_digit(*j->p))
			return fail(j, "malformed exponent");
		while (j->p < j->end && is_digit(*j->p))
			j->p++;
	}
	*ret_is_u = !neg && !frac && !overflow && j->p > start;
	*ret_u = u;
	return true;
}

static bool value(struct json *j, struct vfio_user_caps *c, enum member m);

static enum member member_of(enum member parent, const char *s, size_t n)
{
	static const struct {
		enum member parent;
		const char *name;
		enum member m;
	} names[] = {
		{ M_OTHER, VFIO_USER_CAP, M_CAPS },
		{ M_CAPS, VFIO_USER_CAP_MAX_FDS, M_MAX_FDS },
		{ M_CAPS, VFIO_USER_CAP_MAX_XFER, M_MAX_XFER },
		{ M_CAPS, VFIO_USER_CAP_PGSIZES, M_PGSIZES },
		{ M_CAPS, VFIO_USER_CAP_MAX_DMA, M_MAX_DMA },
		{ M_CAPS, VFIO_USER_CAP_MIGR, M_MIGR },
		{ M_CAPS, VFIO_USER_CAP_MULTI, M_MULTI },
	};
	size_t i;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (names[i].parent == parent && strlen(names[i].name) == n &&
		    memcmp(names[i].name, s, n) == 0)
			return names[i].m;
	return M_OTHER;
}

/* An object; `self` says which one (top level: M_OTHER at depth 1). */
static bool object(struct json *j, struct vfio_user_caps *c, enum member self)
{
	bool top = j->depth == 1;
	const char *k;
	size_t n;

	j->p++; /* '{' */
	ws(j);
	if (j->p < j->end && *j->p == '}') {
		j->p++;
		return true;
	}
	for (;;) {
		enum member m;

		ws(j);
		if (!string(j, &k, &n))
			return false;
		ws(j);
		if (j->p >= j->end || *j->p++ != ':')
			return fail(j, "expected ':'");
		m = top || self == M_CAPS
			    ? member_of(top ? M_OTHER : M_CAPS, k, n)
			    : M_OTHER;
		if (!value(j, c, m))
			return false;
		ws(j);
		if (j->p < j->end && *j->p == ',') {
			j->p++;
			continue;
		}
		if (j->p < j->end && *j->p == '}') {
			j->p++;
			return true;
		}
		return fail(j, "expected ',' or '}'");
	}
}

static bool array(struct json *j, struct vfio_user_caps *c)
{
	j->p++; /* '[' */
	ws(j);
	if (j->p < j->end && *j->p == ']') {
		j->p++;
		return true;
	}
	for (;;) {
		if (!value(j, c, M_OTHER))
			return false;
		ws(j);
		if (j->p < j->end && *j->p == ',') {
			j->p++;
			continue;
		}
		if (j->p < j->end && *j->p == ']') {
			j->p++;
			return true;
		}
		return fail(j, "expected ',' or ']'");
	}
}

static bool store_uint(struct json *j, struct vfio_user_caps *c, enum member m,
		       uint64_t u)
{
	static const uint32_t bit[] = {
		[M_MAX_FDS] = VFIO_USER_CAPS_HAS_MAX_FDS,
		[M_MAX_XFER] = VFIO_USER_CAPS_HAS_MAX_XFER,
		[M_PGSIZES] = VFIO_USER_CAPS_HAS_PGSIZES,
		[M_MAX_DMA] = VFIO_USER_CAPS_HAS_MAX_DMA,
	};
	uint64_t *const dst[] = {
		[M_MAX_FDS] = &c->max_msg_fds,
		[M_MAX_XFER] = &c->max_data_xfer_size,
		[M_PGSIZES] = &c->pgsizes,
		[M_MAX_DMA] = &c->max_dma_maps,
	};

	*dst[m] = u;
	c->present |= bit[m];
	return true;
}

static bool value(struct json *j, struct vfio_user_caps *c, enum member m)
{
	const char *s;
	uint64_t u;
	size_t n;
	bool is_u, ok;

	ws(j);
	if (j->p >= j->end)
		return fail(j, "expected a value");
	if ((m == M_CAPS || m == M_MIGR) && *j->p != '{')
		return fail(j, "capabilities/migration is not an object");
	if (m == M_MULTI && *j->p != 't' && *j->p != 'f')
		return fail(j, "write_multiple is not a bool");
	switch (*j->p) {
	case '{':
	case '[':
		if (++j->depth > JSON_MAX_DEPTH)
			return fail(j, "JSON nested too deep");
		ok = *j->p == '{' ? object(j, c, m) : array(j, c);
		j->depth--;
		if (ok && m == M_MIGR)
			c->present |= VFIO_USER_CAPS_HAS_MIGR;
		return ok;
	case '"':
		if (m != M_OTHER)
			return fail(j, "a capability has the wrong type");
		return string(j, &s, &n);
	case 't':
	case 'f':
		if (m == M_MULTI) {
			c->write_multiple = *j->p == 't';
			c->present |= VFIO_USER_CAPS_HAS_MULTI;
		}
		return lit(j, *j->p == 't' ? "true" : "false");
	case 'n':
		if (m != M_OTHER)
			return fail(j, "a capability has the wrong type");
		return lit(j, "null");
	default:
		if (!number(j, &u, &is_u))
			return false;
		if (m == M_OTHER)
			return true;
		if (!is_u)
			return fail(j,
				    "a capability is not an unsigned integer");
		return store_uint(j, c, m, u);
	}
}

int vfio_user_caps_parse(const char *json, size_t len,
			 struct vfio_user_caps *ret, struct reason *why)
{
	struct vfio_user_caps c = { 0 };
	struct json j = { .p = json, .depth = 1 };

	if (len == 0 || json[len - 1] != '\0' || strlen(json) != len - 1)
		return reason_fail(
			why, -EINVAL,
			"capabilities not one NUL-terminated string");
	j.end = json + len - 1;
	ws(&j);
	if (j.p >= j.end || *j.p != '{')
		return reason_fail(why, -EINVAL,
				   "capabilities not a JSON object");
	if (!object(&j, &c, M_OTHER))
		return reason_fail(why, -EINVAL, "%s", j.why ? j.why : "");
	ws(&j);
	if (j.p != j.end)
		return reason_fail(why, -EINVAL,
				   "garbage after the JSON object");
	*ret = c;
	return 0;
}

int vfio_user_caps_format(const struct vfio_user_caps *c, char *buf,
			  size_t size)
{
	static const struct {
		uint32_t bit;
		const char *name;
		size_t off;
	} nums[] = {
		{ VFIO_USER_CAPS_HAS_MAX_FDS, VFIO_USER_CAP_MAX_FDS,
		  offsetof(struct vfio_user_caps, max_msg_fds) },
		{ VFIO_USER_CAPS_HAS_MAX_XFER, VFIO_USER_CAP_MAX_XFER,
		  offsetof(struct vfio_user_caps, max_data_xfer_size) },
		{ VFIO_USER_CAPS_HAS_PGSIZES, VFIO_USER_CAP_PGSIZES,
		  offsetof(struct vfio_user_caps, pgsizes) },
		{ VFIO_USER_CAPS_HAS_MAX_DMA, VFIO_USER_CAP_MAX_DMA,
		  offsetof(struct vfio_user_caps, max_dma_maps) },
	};
	size_t i, n = 0;
	const char *sep = "";
	int r;

#define EMIT(...)                                                              \
	do {                                                                   \
		r = snprintf(buf + n, size - n, __VA_ARGS__);                  \
		if (r < 0 || (size_t)r >= size - n)                            \
			return -ENOSPC;                                        \
		n += (size_t)r;                                                \
	} while (0)
	if (size == 0)
		return -ENOSPC;
	EMIT("{\"%s\":{", VFIO_USER_CAP);
	for (i = 0; i < sizeof(nums) / sizeof(nums[0]); i++) {
		uint64_t v;

		if (!(c->present & nums[i].bit))
			continue;
		memcpy(&v, (const char *)c + nums[i].off, sizeof(v));
		EMIT("%s\"%s\":%" PRIu64, sep, nums[i].name, v);
		sep = ",";
	}
	if (c->present & VFIO_USER_CAPS_HAS_MULTI)
		EMIT("%s\"%s\":%s", sep, VFIO_USER_CAP_MULTI,
		     c->write_multiple ? "true" : "false");
	EMIT("}}");
#undef EMIT
	return (int)n + 1;
}

bool vfio_user_caps_equal(const struct vfio_user_caps *a,
			  const struct vfio_user_caps *b)
{
	uint32_t p = a->present;

	return p == b->present &&
	       (!(p & VFIO_USER_CAPS_HAS_MAX_FDS) ||
		a->max_msg_fds == b->max_msg_fds) &&
	       (!(p & VFIO_USER_CAPS_HAS_MAX_XFER) ||
		a->max_data_xfer_size == b->max_data_xfer_size) &&
	       (!(p & VFIO_USER_CAPS_HAS_PGSIZES) ||
		a->pgsizes == b->pgsizes) &&
	       (!(p & VFIO_USER_CAPS_HAS_MAX_DMA) ||
		a->max_dma_maps == b->max_dma_maps) &&
	       (!(p & VFIO_USER_CAPS_HAS_MULTI) ||
		a->write_multiple == b->write_multiple);
}
