/* SPDX-License-Identifier: MIT */
/*
 * Reading rdmagate-trace's maps (layouts in trace/rdmagate-trace.h), shared
 * by the tracer's own summary and `rdmagatectl stats --prometheus`, which
 * opens them where the tracer pinned them: entries copied out in one
 * array, histogram operations named.
 */
#ifndef RDMAGATE_TRACE_MAPS_H
#define RDMAGATE_TRACE_MAPS_H

#include <stddef.h>
#include <sys/types.h>
#include <linux/types.h>

#include "common/reason.h"
#include "trace/rdmagate-trace.h"

/* Where the tracer pins its maps unless told otherwise (--pin-dir). */
#define RT_PIN_DIR "/sys/fs/bpf/rdmagate"

/* One entry of map "counters" or "hists", as rt_map_dump() lays it out. */
struct rt_vm_ent {
	struct rt_vm_key k;
	struct rt_counters c;
};

struct rt_hist_ent {
	struct rt_hist_key k;
	struct rt_hist h;
};

/*
 * Opens the map pinned at dir/name read-only and checks that it has the
 * layout this program was built with (keys of ksz, values of vsz bytes).
 * Returns its fd (close-on-exec) or -errno with why: -ENOENT when nothing
 * is pinned there (the tracer is not running), -EACCES or -EPERM for a
 * caller other than root (the pins are 0600, bpf(2) needs CAP_BPF), -EPROTO
 * for another layout.
 */
int rt_map_open_pinned(const char *dir, const char *name, size_t ksz,
		       size_t vsz, struct reason *why);

/*
 * Copies every entry of the map fd, at most max, into a new array of
 * (key, value) pairs of ksz + vsz bytes each (struct rt_vm_ent or struct
 * rt_hist_ent), which the caller frees.  Entries deleted meanwhile are
 * left out.  Returns 0 with *ret and *ret_n set, or -ENOMEM.
 */
int rt_map_dump(int fd, size_t ksz, size_t vsz, size_t max, void **ret,
		size_t *ret_n);

/* qsort() orders: by VM name; by VM name, kind, then op. */
int rt_cmp_vm(const void *a, const void *b);
int rt_cmp_hist(const void *a, const void *b);

/*
 * The name of a histogram's operation: the work completion opcode
 * (RT_HIST_WR) or the virtio-rdma command (RT_HIST_CTRL), NULL for a code
 * without one.
 */
const char *rt_hist_op_name(const struct rt_hist_key *k);

#endif
