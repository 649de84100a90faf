// SPDX-License-Identifier: MIT
/* Numeric command-line options from a table (common/opt_num.h). */
#include "common/opt_num.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* The quoted text is cut there: a message stays one short line. */
#define TEXT_SHOWN 64

static int refuse(const struct opt_num *row, const char *text, int err,
		  struct reason *why)
{
	return reason_fail(why, err, "--%s: '%.*s%s' is %s (%lld..%lld%s%s)",
			   row->name, TEXT_SHOWN, text,
			   strlen(text) > TEXT_SHOWN ? "..." : "",
			   err == -EINVAL ? "not a number" : "out of range",
			   (long long)row->min, (long long)row->max,
			   row->unit ? " " : "", row->unit ? row->unit : "");
}

/* Decimal digits only, after an optional '-': 0, or -EINVAL. */
static int digits(const char *s)
{
	if (*s == '-')
		s++;
	if (!*s)
		return -EINVAL;
	for (; *s; s++)
		if (*s < '0' || *s > '9')
			return -EINVAL;
	return 0;
}

static void store(const struct opt_num *row, void *base, int64_t v)
{
	char *f = (char *)base + row->off;

	switch (row->type) {
	case OPT_NUM_UCHAR:
		*(unsigned char *)f = (unsigned char)v;
		break;
	case OPT_NUM_USHORT:
		*(unsigned short *)f = (unsigned short)v;
		break;
	case OPT_NUM_UINT:
		*(unsigned int *)f = (unsigned int)v;
		break;
	case OPT_NUM_ULONG:
		*(unsigned long *)f = (unsigned long)v;
		break;
	case OPT_NUM_ULLONG:
		*(unsigned long long *)f = (unsigned long long)v;
		break;
	case OPT_NUM_INT:
		*(int *)f = (int)v;
		break;
	case OPT_NUM_LONG:
		*(long *)f = (long)v;
		break;
	case OPT_NUM_LLONG:
		*(long long *)f = (long long)v;
		break;
	}
}

int opt_num_parse(const struct opt_num *row, const char *text, void *base,
		  struct reason *why)
{
	int64_t scale = row->scale ? row->scale : 1;
	long long v;

	if (digits(text) < 0)
		return refuse(row, text, -EINVAL, why);
	errno = 0;
	v = strtoll(text, NULL, 10);
	if (errno || v < row->min || v > row->max || v > INT64_MAX / scale ||
	    v < INT64_MIN / scale)
		return refuse(row, text, -ERANGE, why);
	store(row, base, v * scale);
	return 0;
}

int opt_num_set(const struct opt_num *tab, size_t n, const char *name,
		const char *text, void *base, struct reason *why)
{
	size_t i;
	int ret;

	for (i = 0; i < n; i++) {
		if (strcmp(tab[i].name, name))
			continue;
		ret = opt_num_parse(&tab[i], text, base, why);
		return ret < 0 ? ret : (int)i;
	}
	return reason_fail(why, -ENOENT, "--%s: not a numeric option", name);
}

int opt_num_getopt(const struct opt_num *tab, size_t n, int c,
		   const struct option *lo, int li, const char *text,
		   void *base, struct reason *why)
{
	size_t i;
	int ret;

	if (c == OPT_NUM_VAL)
		return opt_num_set(tab, n, lo[li].name, text, base, why);
	for (i = 0; i < n; i++) {
		if (!tab[i].key || tab[i].key != c)
			continue;
		ret = opt_num_parse(&tab[i], text, base, why);
		return ret < 0 ? ret : (int)i;
	}
	return -ENOENT;
}

int opt_num_longopts(struct option *lo, size_t lo_len,
		     const struct option *fixed, const struct opt_num *tab,
		     size_t n)
{
	size_t k = 0, i;

	while (fixed[k].name)
		k++;
	if (lo_len < k + n + 1)
		return -ENOSPC;
	memmove(lo, fixed, k * sizeof(*lo));
	for (i = 0; i < n; i++)
		lo[k + i] = (struct option){ .name = tab[i].name,
					     .has_arg = required_argument,
					     .val = tab[i].key ? tab[i].key
							       : OPT_NUM_VAL };
	lo[k + n] = (struct option){ 0 };
	return 0;
}
