/* SPDX-License-Identifier: MIT */
/*
 * A latency histogram for the device's stats line: log-linear buckets
 * (eight per power of two, so a quantile is within 1/8 of the value it
 * stands for), a fixed size, no allocation, and a quantile read-out.
 * Means hide what a TCG guest's outliers do to them; perftest's
 * t_typical is a median, and this gives the worker's own.  Pure.
 */
#ifndef RDMAGATE_WORKER_PVRDMA_LAT_HIST_H
#define RDMAGATE_WORKER_PVRDMA_LAT_HIST_H

#include <stdint.h>

#define LAT_HIST_SUB_BITS 3		     /* 8 buckets per power of 2 */
#define LAT_HIST_MAX	  ((1ull << 31) - 1) /* larger values count here */
#define LAT_HIST_BUCKETS  ((31 - LAT_HIST_SUB_BITS + 1) << LAT_HIST_SUB_BITS)

struct lat_hist {
	uint64_t n;
	uint32_t b[LAT_HIST_BUCKETS];
};

/* Counts one value (any unit; the stats line uses microseconds). */
void lat_hist_add(struct lat_hist *h, uint64_t v);

/*
 * The value below which pct percent (1..100) of the counted values lie:
 * the middle of the bucket holding that rank, exact below 8.  0 when
 * nothing was counted.
 */
uint64_t lat_hist_quantile(const struct lat_hist *h, unsigned int pct);

#endif
