// SPDX-License-Identifier: MIT
/* Two-level MR page-table walk into runs of contiguous guest pages. */
#include "mr_pt.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/virtio_rdma.h"

#define PG	VIRTIO_RDMA_PAGE_SIZE
#define PG_MASK ((uint64_t)PG - 1)
#define NENT	VIRTIO_RDMA_PT_ENTRIES
#define MAX_PGS VIRTIO_RDMA_MR_MAX_PAGES
#define WHAT	"REG_USER_MR"

int rdma_mr_pt_check_args(const struct rdma_mr_pt_args *a, struct reason *why)
{
	uint64_t need;

	if (a->length == 0)
		return reason_fail(why, -EINVAL, WHAT ": length 0");
	if (a->start + a->length < a->start)
		return reason_fail(why, -EINVAL,
				   WHAT ": start 0x%llx + length 0x%llx wraps",
				   (unsigned long long)a->start,
				   (unsigned long long)a->length);
	if (a->virt_addr + a->length < a->virt_addr)
		return reason_fail(why, -EINVAL,
				   WHAT
				   ": virt_addr 0x%llx + length 0x%llx wraps",
				   (unsigned long long)a->virt_addr,
				   (unsigned long long)a->length);
	if (a->npages == 0 || a->npages > MAX_PGS)
		return reason_fail(why, -EINVAL,
				   WHAT ": npages %u not in 1..%u", a->npages,
				   MAX_PGS);
	if (a->length > (uint64_t)MAX_PGS * PG)
		return reason_fail(why, -EINVAL,
				   WHAT ": length 0x%llx above 1 GiB",
				   (unsigned long long)a->length);
	/* No wrap: length <= 1 GiB. */
	need = ((a->start & PG_MASK) + a->length + PG - 1) / PG;
	if (need != a->npages)
		return reason_fail(why, -EINVAL,
				   WHAT
				   ": npages %u, but start and length span "
				   "%llu pages",
				   a->npages, (unsigned long long)need);
	if (a->root == 0 || (a->root & PG_MASK))
		return reason_fail(why, -EINVAL,
				   WHAT ": page table root 0x%llx is not a "
					"non-zero 4 KiB-aligned GPA",
				   (unsigned long long)a->root);
	return 0;
}

/* A table entry names a whole 4 KiB page: non-zero, aligned, no wrap. */
static int check_entry(const char *level, uint32_t idx, uint64_t e,
		       struct reason *why)
{
	if (e == 0 || (e & PG_MASK) || e > UINT64_MAX - PG + 1 - PG)
		return reason_fail(why, -EINVAL,
				   WHAT
				   ": %s entry %u is 0x%llx, not a non-zero "
				   "4 KiB-aligned GPA",
				   level, idx, (unsigned long long)e);
	return 0;
}

static int read_table(const struct rdma_mr_pt_ops *ops, void *ctx,
		      const char *level, uint32_t idx, uint64_t gpa,
		      uint64_t *ent, uint32_t n, struct reason *why)
{
	int r = ops->read_gpa(ctx, gpa, ent, (size_t)n * sizeof(*ent));

	if (r)
		return reason_fail(why, r < 0 ? r : -EFAULT,
				   WHAT ": %s page %u at GPA 0x%llx is outside "
					"guest RAM",
				   level, idx, (unsigned long long)gpa);
	return 0;
}

/* Reads level-2 page i (only the entries npages needs) into b. */
static int walk_l2(const struct rdma_mr_pt_ops *ops, void *ctx, uint32_t npages,
		   uint32_t i, uint64_t gpa, struct rdma_mr_run_builder *b,
		   struct reason *why)
{
	uint64_t ent[NENT];
	uint32_t n = npages - i * NENT, j;
	int r;

	if (n > NENT)
		n = NENT;
	r = read_table(ops, ctx, "level-2", i, gpa, ent, n, why);
	if (r)
		return r;
	for (j = 0; j < n; j++) {
		r = check_entry("level-2", i * NENT + j, ent[j], why);
		if (r)
			return r;
		if (rdma_mr_run_add(b, i * NENT + j, ent[j]))
			return reason_fail(why, -ENOMEM,
					   WHAT ": out of memory");
	}
	return 0;
}

static int check_runs(const struct rdma_mr_pt_ops *ops, void *ctx,
		      const struct rdma_mr_run_builder *b, struct reason *why)
{
	const struct rdma_mr_run *run;
	uint32_t i;
	int r;

	for (i = 0; i < b->n; i++) {
		run = &b->runs[i];
		r = ops->check_gpa(ctx, run->gpa, (uint64_t)run->npages * PG);
		if (r)
			return reason_fail(why, r < 0 ? r : -EFAULT,
					   WHAT
					   ": pages %u..%u at GPA 0x%llx are "
					   "outside guest RAM",
					   run->first_page,
					   run->first_page + run->npages - 1,
					   (unsigned long long)run->gpa);
	}
	return 0;
}

static int walk(const struct rdma_mr_pt_args *a,
		const struct rdma_mr_pt_ops *ops, void *ctx,
		struct rdma_mr_run_builder *b, struct reason *why)
{
	uint64_t l1[NENT];
	uint32_t n_l2 = (a->npages + NENT - 1) / NENT, i;
	int r;

	r = read_table(ops, ctx, "level-1", 0, a->root, l1, n_l2, why);
	if (r)
		return r;
	for (i = 0; i < n_l2; i++) {
		r = check_entry("level-1", i, l1[i], why);
		if (!r)
			r = walk_l2(ops, ctx, a->npages, i, l1[i], b, why);
		if (r)
			return r;
	}
	return check_runs(ops, ctx, b, why);
}

int rdma_mr_pt_walk(const struct rdma_mr_pt_args *args,
		    const struct rdma_mr_pt_ops *ops, void *ctx,
		    struct rdma_mr_layout *ret_layout, struct reason *why)
{
	struct rdma_mr_run_builder b = { 0 };
	int r;

	r = rdma_mr_pt_check_args(args, why);
	if (r)
		return r;
	b.limit = args->npages;
	r = walk(args, ops, ctx, &b, why);
	if (r) {
		free(b.runs);
		return r;
	}
	rdma_mr_layout_finish(&b, args->start, args->length, args->virt_addr,
			      args->npages, ret_layout);
	return 0;
}

int rdma_mr_pt_locate(const struct rdma_mr_layout *l, uint64_t iova,
		      uint64_t len, struct rdma_mr_pt_pos *ret_pos)
{
	uint64_t rel, off;

	if (len == 0)
		len = 1;
	if (iova < l->virt_addr)
		return -ERANGE;
	rel = iova - l->virt_addr;
	if (rel >= l->length || len > l->length - rel)
		return -ERANGE;
	off = rel + (l->start & PG_MASK);
	*ret_pos = (struct rdma_mr_pt_pos){
		.off = off,
		.page = (uint32_t)(off / PG),
		.l1 = (uint32_t)(off / PG / NENT),
		.l2 = (uint32_t)(off / PG % NENT),
		.in_page = (uint32_t)(off & PG_MASK),
	};
	return 0;
}

int rdma_mr_iova_to_gpa(const struct rdma_mr_layout *l, uint64_t iova,
			uint64_t *ret_gpa)
{
	struct rdma_mr_pt_pos pos;
	uint32_t lo = 0, hi = l->nruns, mid;
	const struct rdma_mr_run *run;

	if (rdma_mr_pt_locate(l, iova, 1, &pos))
		return -ERANGE;
	/* Binary search for the run holding pos.page. */
	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		run = &l->runs[mid];
		if (pos.page < run->first_page)
			hi = mid;
		else if (pos.page >= run->first_page + run->npages)
			lo = mid + 1;
		else {
			*ret_gpa = run->gpa +
				   (uint64_t)(pos.page - run->first_page) * PG +
				   pos.in_page;
			return 0;
		}
	}
	return -ERANGE;
}
