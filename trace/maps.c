// SPDX-License-Identifier: MIT
/*
 * Reading rdmagate-trace's maps: opening a pinned one with its layout
 * checked, copying its entries out, naming histogram operations.  Used by
 * the tracer (root) and by rdmagatectl, which only reads.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>

#include "trace/maps.h"
#include "worker/virtio_rdma/cmd.h"

_Static_assert(sizeof(struct rt_vm_ent) ==
		       sizeof(struct rt_vm_key) + sizeof(struct rt_counters),
	       "rt_map_dump() lays a key and its value out without a gap");
_Static_assert(sizeof(struct rt_hist_ent) ==
		       sizeof(struct rt_hist_key) + sizeof(struct rt_hist),
	       "rt_map_dump() lays a key and its value out without a gap");

int rt_map_open_pinned(const char *dir, const char *name, size_t ksz,
		       size_t vsz, struct reason *why)
{
	LIBBPF_OPTS(bpf_obj_get_opts, opts, .file_flags = BPF_F_RDONLY);
	struct bpf_map_info info;
	__u32 len = sizeof(info);
	char path[PATH_MAX];
	int fd, ret;

	if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, name) >=
	    sizeof(path))
		return reason_fail(why, -ENAMETOOLONG, "%s/%s: path too long",
				   dir, name);
	fd = bpf_obj_get_opts(path, &opts);
	if (fd < 0) {
		ret = -errno;
		return reason_fail(why, ret, "%s: %s%s", path, strerror(-ret),
				   ret == -EPERM || ret == -EACCES
					   ? " (the maps are root's)"
					   : "");
	}
	memset(&info, 0, sizeof(info));
	if (bpf_obj_get_info_by_fd(fd, &info, &len) < 0) {
		ret = -errno;
		close(fd);
		return reason_fail(why, ret, "%s: %s", path, strerror(-ret));
	}
	if (info.key_size != ksz || info.value_size != vsz) {
		close(fd);
		return reason_fail(why, -EPROTO,
				   "%s: keys of %u and values of %u bytes, "
				   "not %zu and %zu (another tracer version?)",
				   path, info.key_size, info.value_size, ksz,
				   vsz);
	}
	return fd;
}

int rt_map_dump(int fd, size_t ksz, size_t vsz, size_t max, void **ret,
		size_t *ret_n)
{
	char *buf = calloc(max ? max : 1, ksz + vsz), *prev = NULL;
	size_t n = 0;

	if (!buf)
		return -ENOMEM;
	while (n < max) {
		char *e = buf + n * (ksz + vsz);

		if (bpf_map_get_next_key(fd, prev, e) < 0)
			break;
		prev = e;
		if (bpf_map_lookup_elem(fd, e, e + ksz) < 0)
			continue; /* deleted meanwhile: its key is reused */
		n++;
	}
	*ret = buf;
	*ret_n = n;
	return 0;
}

int rt_cmp_vm(const void *a, const void *b)
{
	return strncmp(((const struct rt_vm_ent *)a)->k.vm,
		       ((const struct rt_vm_ent *)b)->k.vm, RT_VM_LEN);
}

int rt_cmp_hist(const void *a, const void *b)
{
	const struct rt_hist_key *x = &((const struct rt_hist_ent *)a)->k;
	const struct rt_hist_key *y = &((const struct rt_hist_ent *)b)->k;
	int c = strncmp(x->vm, y->vm, RT_VM_LEN);

	if (c)
		return c;
	if (x->kind != y->kind)
		return x->kind < y->kind ? -1 : 1;
	return x->op < y->op ? -1 : x->op > y->op;
}

static const char *wc_opcode_name(__u32 op)
{
	static const char *const names[] = {
		"SEND",
		"RDMA_WRITE",
		"RDMA_READ",
		"COMP_SWAP",
		"FETCH_ADD",
		"BIND_MW",
		"LOCAL_INV",
		"TSO",
		"REG_MR",
		"MASKED_COMP_SWAP",
		"MASKED_FETCH_ADD",
	};

	if (op < sizeof(names) / sizeof(names[0]))
		return names[op];
	if (op == 128)
		return "RECV";
	if (op == 129)
		return "RECV_RDMA_WITH_IMM";
	return NULL;
}

const char *rt_hist_op_name(const struct rt_hist_key *k)
{
	const char *name;

	if (k->kind == RT_HIST_WR)
		return wc_opcode_name(k->op);
	if (k->kind != RT_HIST_CTRL)
		return NULL;
	name = rdma_cmd_name(k->op); /* "UNKNOWN" for a code it lacks */
	return strcmp(name, "UNKNOWN") ? name : NULL;
}
