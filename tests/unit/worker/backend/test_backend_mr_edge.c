// SPDX-License-Identifier: MIT
/*
 * CVE-2021-3582's class: QEMU's pvrdma CREATE_MR mapped each guest page of
 * an MR with dma_memory_map() and did not check that the whole page was
 * mapped, then mremap()ed past the short mapping.  Here the real memory
 * registration (worker/backend/mr.c) gets MRs whose pages run past the end
 * of a guest memory region (a whole page past it, and the last page of a
 * region that ends inside a page): each is refused (-EFAULT) before any
 * registration, with no mapping left behind; an MR that crosses from one
 * region into an adjacent one is still registered.  Guest RAM is memfds
 * in a real guest memory table; the host verbs calls are wrapped at link
 * time (ibv_reg_mr_iova{,2}, ibv_dereg_mr), so no device is needed.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <cmocka.h>

#define RDMAGATE_PROBES_DEFINE /* the probes' semaphores, as main.c has */
#include "common/log.h"
#include "common/probes.h"
#include "worker/backend/be_impl.h"

#define PG     4096u
#define GPA_A  0x100000ull /* region A: 4 pages */
#define GPA_B  0x104000ull /* region B, right after A: 4 pages */
#define GPA_C  0x200000ull /* region C: 2 pages and 2 KiB */
#define C_SIZE (2 * PG + 2048)

static struct {
	unsigned int regs, deregs;
	void *addr;
	size_t length;
} host;

static struct ibv_mr *fake_reg(struct ibv_pd *pd, void *addr, size_t length,
			       uint64_t iova)
{
	struct ibv_mr *mr = calloc(1, sizeof(*mr));

	(void)iova;
	host.regs++;
	host.addr = addr;
	host.length = length;
	mr->pd = pd;
	mr->addr = addr;
	mr->length = length;
	mr->lkey = mr->rkey = 0x1000 + host.regs;
	return mr;
}

struct ibv_mr *__wrap_ibv_reg_mr_iova2(struct ibv_pd *pd, void *addr,
				       size_t length, uint64_t iova,
				       unsigned int access);
struct ibv_mr *__wrap_ibv_reg_mr_iova2(struct ibv_pd *pd, void *addr,
				       size_t length, uint64_t iova,
				       unsigned int access)
{
	(void)access;
	return fake_reg(pd, addr, length, iova);
}

struct ibv_mr *__wrap_ibv_reg_mr_iova(struct ibv_pd *pd, void *addr,
				      size_t length, uint64_t iova, int access);
struct ibv_mr *__wrap_ibv_reg_mr_iova(struct ibv_pd *pd, void *addr,
				      size_t length, uint64_t iova, int access)
{
	(void)access;
	return fake_reg(pd, addr, length, iova);
}

int __wrap_ibv_dereg_mr(struct ibv_mr *mr);
int __wrap_ibv_dereg_mr(struct ibv_mr *mr)
{
	host.deregs++;
	free(mr);
	return 0;
}

struct fix {
	struct be be;
	struct rdma_hca hca;
	struct ibv_pd hpd;
	struct be_pd pd[2];
	struct be_mr mr[4];
	struct guest_mem gm;
	int fd[3];
};

static void add_region(struct fix *f, int i, uint64_t gpa, uint64_t size)
{
	struct gm_desc r = {
		.gpa = gpa,
		.size = size,
		.uva = 0x7f0000000000ull + gpa,
		.mmap_offset = 0,
		.prot = PROT_READ | PROT_WRITE,
	};
	struct reason why;

	f->fd[i] = memfd_create("guest-ram", MFD_CLOEXEC);
	assert_true(f->fd[i] >= 0);
	/* the file may be longer than the region: only the region is RAM */
	assert_int_equal(ftruncate(f->fd[i], 8 * PG), 0);
	if (gm_add_region(&f->gm, &r, f->fd[i], &why) < 0)
		fail_msg("region at 0x%llx: %s", (unsigned long long)gpa,
			 why.msg);
}

static int setup(void **state)
{
	struct fix *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	gm_init(&f->gm);
	add_region(f, 0, GPA_A, 4 * PG);
	add_region(f, 1, GPA_B, 4 * PG);
	add_region(f, 2, GPA_C, C_SIZE);
	f->hca.port = 1;
	f->be.hca = &f->hca;
	f->be.attr.max_mr = 3;
	f->be.attr.max_pd = 1;
	f->be.attr.max_mr_size = 1ull << 30;
	f->be.pd = f->pd;
	f->be.mr = f->mr;
	f->be.st = &f->be.own_st;
	f->pd[1].used = true;
	f->pd[1].pd = &f->hpd;
	be_set_mem(&f->be, &f->gm);
	memset(&host, 0, sizeof(host));
	log_init("test", LOG_LVL_ERR);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fix *f = *state;
	uint32_t i;

	for (i = 1; i <= 3; i++)
		if (f->mr[i].used)
			be_mr_free(&f->be, i);
	assert_int_equal(host.regs, host.deregs);
	gm_clear(&f->gm);
	for (i = 0; i < 3; i++)
		close(f->fd[i]);
	free(f);
	return 0;
}

/* Registers an MR of `n` pages: runs of (gpa, npages), `length` bytes. */
static int reg(struct fix *f, const struct rdma_mr_run *runs, uint32_t nruns,
	       uint64_t length)
{
	struct rdma_mr_run r[4];
	struct rdma_mr_layout lay = {
		.start = runs[0].gpa,
		.length = length,
		.virt_addr = 0x7000000000ull,
		.nruns = nruns,
		.runs = r,
	};
	struct be_mr_info info;
	uint32_t i;

	memcpy(r, runs, nruns * sizeof(*r));
	for (i = 0; i < nruns; i++)
		lay.npages += runs[i].npages;
	return be_mr_reg(&f->be, 1, &lay, IBV_ACCESS_LOCAL_WRITE, &info);
}

/* Lines of /proc/self/maps: a refused MR leaves no mapping behind. */
static int maps_lines(void)
{
	FILE *m = fopen("/proc/self/maps", "r");
	int n = 0, c;

	assert_non_null(m);
	while ((c = fgetc(m)) != EOF)
		n += c == '\n';
	fclose(m);
	return n;
}

static void test_run_past_the_last_region_refused(void **state)
{
	struct fix *f = *state;
	/* B's last page and the page after it, which is no RAM */
	const struct rdma_mr_run one = { GPA_B + 3 * PG, 0, 2 };
	/* two runs, the last one's second page past C's end */
	const struct rdma_mr_run two[2] = { { GPA_A, 0, 1 },
					    { GPA_C + 2 * PG + PG, 1, 1 } };
	int maps0 = maps_lines();

	assert_int_equal(reg(f, &one, 1, 2 * PG), -EFAULT);
	assert_int_equal(reg(f, two, 2, 2 * PG), -EFAULT);
	assert_int_equal(host.regs, 0);
	assert_int_equal(f->be.mappings, 0);
	assert_int_equal(maps_lines(), maps0);
}

/* C ends 2 KiB into its third page: that page is only half RAM. */
static void test_page_cut_by_the_region_end_refused(void **state)
{
	struct fix *f = *state;
	const struct rdma_mr_run all = { GPA_C, 0, 3 };
	const struct rdma_mr_run last = { GPA_C + 2 * PG, 0, 1 };
	const struct rdma_mr_run two = { GPA_C, 0, 2 };
	int maps0 = maps_lines();

	/* even when the bytes asked for end inside the region */
	assert_int_equal(reg(f, &all, 1, 2 * PG + 1024), -EFAULT);
	assert_int_equal(reg(f, &last, 1, 1024), -EFAULT);
	assert_int_equal(host.regs, 0);
	assert_int_equal(maps_lines(), maps0);
	/* C's first two pages are fine */
	assert_int_equal(reg(f, &two, 1, 2 * PG), 0);
	assert_int_equal(host.regs, 1);
}

static void test_run_into_an_adjacent_region_registered(void **state)
{
	struct fix *f = *state;
	/* A's last page and B's first: guest RAM all along */
	const struct rdma_mr_run run = { GPA_A + 3 * PG, 0, 2 };

	assert_int_equal(reg(f, &run, 1, 2 * PG), 0);
	assert_int_equal(host.regs, 1);
	assert_int_equal(host.length, 2 * PG);
	assert_true(f->be.mappings > 0); /* remapped: two regions */
}

#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_run_past_the_last_region_refused),
		T(test_page_cut_by_the_region_end_refused),
		T(test_run_into_an_adjacent_region_registered),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
