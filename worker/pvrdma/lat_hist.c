// SPDX-License-Identifier: MIT
#include "worker/pvrdma/lat_hist.h"

#define SUB (1u << LAT_HIST_SUB_BITS)

/* Below SUB a bucket per value; above, SUB per power of two. */
static unsigned int bucket_of(uint64_t v)
{
	unsigned int p;

	if (v > LAT_HIST_MAX)
		v = LAT_HIST_MAX;
	if (v < SUB)
		return (unsigned int)v;
	p = 63u - (unsigned int)__builtin_clzll(v); /* >= LAT_HIST_SUB_BITS */
	return ((p - LAT_HIST_SUB_BITS + 1) << LAT_HIST_SUB_BITS) +
	       (unsigned int)((v >> (p - LAT_HIST_SUB_BITS)) & (SUB - 1));
}

/* The middle of bucket i's values. */
static uint64_t bucket_mid(unsigned int i)
{
	unsigned int p, sub;
	uint64_t lo, width;

	if (i < SUB)
		return i;
	p = (i >> LAT_HIST_SUB_BITS) + LAT_HIST_SUB_BITS - 1;
	sub = i & (SUB - 1);
	width = 1ull << (p - LAT_HIST_SUB_BITS);
	lo = (uint64_t)(SUB + sub) << (p - LAT_HIST_SUB_BITS);
	return lo + (width - 1) / 2;
}

void lat_hist_add(struct lat_hist *h, uint64_t v)
{
	h->b[bucket_of(v)]++;
	h->n++;
}

uint64_t lat_hist_quantile(const struct lat_hist *h, unsigned int pct)
{
	uint64_t rank, seen = 0;
	unsigned int i;

	if (!h->n)
		return 0;
	if (pct < 1)
		pct = 1;
	if (pct > 100)
		pct = 100;
	/* the rank-th smallest value, rank = ceil(n * pct / 100) */
	rank = (h->n * pct + 99) / 100;
	for (i = 0; i < LAT_HIST_BUCKETS; i++) {
		seen += h->b[i];
		if (seen >= rank)
			return bucket_mid(i);
	}
	return bucket_mid(LAT_HIST_BUCKETS - 1);
}
