/* SPDX-License-Identifier: MIT */
/*
 * Numeric command-line options from one table per program: each row names
 * the option, the field it fills and the range a user may write, and one
 * parser checks the text and words every refusal the same way
 * (docs/hacking.md, "Command lines").
 */
#ifndef RDMAGATE_COMMON_OPT_NUM_H
#define RDMAGATE_COMMON_OPT_NUM_H

#include <getopt.h>
#include <stddef.h>
#include <stdint.h>

#include "common/reason.h"

/* The C type of the field a row fills (OPT_NUM_TYPE() picks it). */
enum opt_num_type {
	OPT_NUM_UCHAR,
	OPT_NUM_USHORT,
	OPT_NUM_UINT,
	OPT_NUM_ULONG,
	OPT_NUM_ULLONG,
	OPT_NUM_INT,
	OPT_NUM_LONG,
	OPT_NUM_LLONG,
};

struct opt_num {
	const char *name; /* the long option, without "--" */
	int key;	  /* its short option, or 0 */
	size_t off;	  /* offsetof() its field in the program's struct */
	enum opt_num_type type; /* the field's type */
	int64_t min, max;	/* what the user may write, both allowed */
	uint32_t scale;		/* the field holds value * scale (0: 1) */
	const char *unit;	/* said after the range ("seconds"), or NULL */
};

/* The type of field f of struct T, from the compiler, never by hand. */
// clang-format off
#define OPT_NUM_TYPE(T, f)						       \
	_Generic(((T *)0)->f,						       \
		unsigned char: OPT_NUM_UCHAR,				       \
		unsigned short: OPT_NUM_USHORT,				       \
		unsigned int: OPT_NUM_UINT,				       \
		unsigned long: OPT_NUM_ULONG,				       \
		unsigned long long: OPT_NUM_ULLONG,			       \
		int: OPT_NUM_INT,					       \
		long: OPT_NUM_LONG,					       \
		long long: OPT_NUM_LLONG)
// clang-format on

/*
 * A row: option name n fills field f of struct T, from lo to hi; then
 * optionally .key =, .scale = and .unit =.
 */
#define OPT_NUM_ROW(T, f, n, lo, hi, ...)                                      \
	{                                                                      \
		.name = (n), .off = offsetof(T, f),                            \
		.type = OPT_NUM_TYPE(T, f), .min = (lo), .max = (hi),          \
		__VA_ARGS__                                                    \
	}

/* getopt_long()'s val of a row without a short option. */
#define OPT_NUM_VAL 0x4e00

/*
 * Parses `text` as row's decimal number and stores it (times its scale)
 * in its field of `base`.  Returns 0, or -EINVAL (not a number: empty, a
 * '+', a space, trailing text) or -ERANGE (outside min..max, or too large
 * for any integer) with *why:
 *   --NAME: 'TEXT' is not a number (MIN..MAX[ UNIT])
 *   --NAME: 'TEXT' is out of range (MIN..MAX[ UNIT])
 * The field is untouched on failure.
 */
int opt_num_parse(const struct opt_num *row, const char *text, void *base,
		  struct reason *why);

/*
 * The same for the row named `name` (the long option without "--") of
 * the n rows of `tab`: returns the row's index, or -errno with *why
 * (-ENOENT: no such row).
 */
int opt_num_set(const struct opt_num *tab, size_t n, const char *name,
		const char *text, void *base, struct reason *why);

/*
 * The same for what getopt_long() returned over options made by
 * opt_num_longopts(): c, a row's short option, or OPT_NUM_VAL with lo[li]
 * the long option.  Returns the row's index, -ENOENT (without a reason)
 * when c is no row's, or -errno with *why.
 */
int opt_num_getopt(const struct opt_num *tab, size_t n, int c,
		   const struct option *lo, int li, const char *text,
		   void *base, struct reason *why);

/*
 * Fills `lo` for getopt_long(): the entries of `fixed` (up to its NULL
 * entry), one entry per row of `tab` (required_argument, val: the row's
 * short option, else OPT_NUM_VAL), and the NULL entry.  `lo` has room
 * for `lo_len` entries; returns -ENOSPC if that is less than needed
 * (fixed's entries + n + 1).  `fixed` may be an earlier call's `lo`.
 */
int opt_num_longopts(struct option *lo, size_t lo_len,
		     const struct option *fixed, const struct opt_num *tab,
		     size_t n);

#endif
