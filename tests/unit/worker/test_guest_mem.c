// SPDX-License-Identifier: MIT
/* Guest memory table: region checks, mapping, overflow-safe translation. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <stdbool.h>
#include <signal.h>
#include <stdlib.h>
#include <linux/magic.h>
#include <sys/mman.h>
#include <sys/vfs.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "tests/unit/guest_ram.h"
#include "worker/guest_mem.h"

#define K64 0x10000ull

static struct ram ram;

static int setup(void **state)
{
	return ram_open(&ram, 4 * K64);
}

static int teardown(void **state)
{
	ram_close(&ram);
	return 0;
}

static int add(struct guest_mem *gm, uint64_t gpa, uint64_t size, uint64_t uva,
	       uint64_t off, struct reason *why)
{
	struct gm_desc r = { gpa, size, uva, off, PROT_READ | PROT_WRITE };

	return gm_add_region(gm, &r, ram.fd, why);
}

static void test_translation_covers_exactly_the_region(void **state)
{
	struct guest_mem gm;
	struct reason why;
	uint8_t *p;

	gm_init(&gm);
	assert_int_equal(add(&gm, 0x100000, K64, 0x7f0000000000, K64, &why), 0);
	p = gm_gpa_to_host(&gm, 0x100000, K64);
	assert_non_null(p);
	/* The mapping is at mmap_offset in the fd. */
	ram.map[K64 + 5] = 0xab;
	assert_int_equal(p[5], 0xab);
	assert_ptr_equal(gm_uva_to_host(&gm, 0x7f0000000005, 1), p + 5);
	assert_non_null(gm_gpa_to_host(&gm, 0x100000 + K64 - 1, 1));
	assert_null(gm_gpa_to_host(&gm, 0x100000 + K64 - 1, 2));
	assert_null(gm_gpa_to_host(&gm, 0x100000 + K64, 1));
	assert_null(gm_gpa_to_host(&gm, 0xfffff, 1));
	assert_null(gm_gpa_to_host(&gm, 0x100000, UINT64_MAX));
	assert_null(gm_uva_to_host(&gm, 0x100000, 1));
	gm_clear(&gm);
	assert_null(gm_gpa_to_host(&gm, 0x100000, 1));
}

static void test_zero_size_region_is_refused(void **state)
{
	struct guest_mem gm;
	struct reason why;

	gm_init(&gm);
	assert_int_equal(add(&gm, 0, 0, 0x1000, 0, &why), -EINVAL);
	assert_string_equal(why.msg, "zero size");
}

static void test_address_or_offset_overflow_is_refused(void **state)
{
	struct guest_mem gm;
	struct reason why;

	gm_init(&gm);
	assert_int_equal(add(&gm, UINT64_MAX - 10, K64, 0, 0, &why), -EINVAL);
	assert_non_null(strstr(why.msg, "overflow"));
	assert_int_equal(add(&gm, 0, K64, UINT64_MAX - 10, 0, &why), -EINVAL);
	assert_int_equal(add(&gm, 0, K64, 0, UINT64_MAX - 10, &why), -EINVAL);
	assert_int_equal(gm.nregions, 0);
}

static void test_offset_plus_size_past_fd_end_is_refused(void **state)
{
	struct guest_mem gm;
	struct reason why;

	gm_init(&gm);
	assert_int_equal(add(&gm, 0, 2 * K64, 0x1000000, 3 * K64, &why),
			 -EINVAL);
	assert_non_null(strstr(why.msg, "past the end of the fd"));
}

static void test_gpa_overlap_is_refused(void **state)
{
	struct guest_mem gm;
	struct reason why;

	gm_init(&gm);
	assert_int_equal(add(&gm, 0x10000, K64, 0x1000000, 0, &why), 0);
	assert_int_equal(add(&gm, 0x1ffff, K64, 0x2000000, K64, &why), -EINVAL);
	assert_non_null(strstr(why.msg, "guest-physical range overlaps"));
	assert_int_equal(add(&gm, 0x20000, K64, 0x2000000, K64, &why), 0);
	gm_clear(&gm);
}

static void test_uva_overlap_is_refused(void **state)
{
	struct guest_mem gm;
	struct reason why;

	gm_init(&gm);
	assert_int_equal(add(&gm, 0, K64, 0x1000000, 0, &why), 0);
	assert_int_equal(add(&gm, 0x100000, K64, 0x1000000 + K64 - 1, 0, &why),
			 -EINVAL);
	assert_non_null(strstr(why.msg, "frontend address range overlaps"));
	gm_clear(&gm);
}

static void test_more_than_max_regions_is_refused(void **state)
{
	struct guest_mem gm;
	struct reason why;
	unsigned int i;

	gm_init(&gm);
	for (i = 0; i < GM_MAX_REGIONS; i++)
		assert_int_equal(add(&gm, i * 0x100000ull, 0x1000,
				     i * 0x100000ull, 0, &why),
				 0);
	assert_int_equal(add(&gm, 0x10000000, 0x1000, 0x10000000, 0, &why),
			 -ENOSPC);
	assert_int_equal(gm.nregions, GM_MAX_REGIONS);
	gm_clear(&gm);
}

static void test_fd_that_is_not_a_file_is_refused(void **state)
{
	struct gm_desc r = { 0, 0x1000, 0, 0, PROT_READ | PROT_WRITE };
	struct guest_mem gm;
	struct reason why;
	int p[2];

	assert_int_equal(pipe(p), 0);
	gm_init(&gm);
	assert_int_equal(gm_add_region(&gm, &r, p[0], &why), -EINVAL);
	assert_non_null(strstr(why.msg, "not a memfd"));
	close(p[0]);
	close(p[1]);
}

/*
 * Issue 26 item 3: a file on a disk file system (here the build
 * directory's) is refused as guest memory, with the reason; a memfd is
 * taken (every other test).
 */
static void test_file_on_disk_is_refused(void **state)
{
	struct gm_desc r = { 0, 0x1000, 0, 0, PROT_READ | PROT_WRITE };
	char path[] = "./guest-ram-on-disk.XXXXXX";
	struct guest_mem gm;
	struct reason why;
	int fd = mkstemp(path);
	struct statfs fs;

	(void)state;
	assert_true(fd >= 0);
	unlink(path);
	assert_int_equal(fstatfs(fd, &fs), 0);
	if (fs.f_type == TMPFS_MAGIC || fs.f_type == HUGETLBFS_MAGIC) {
		close(fd);
		print_message("the build directory is shared memory itself\n");
		skip();
	}
	assert_int_equal(ftruncate(fd, 0x1000), 0);
	gm_init(&gm);
	assert_int_equal(gm_add_region(&gm, &r, fd, &why), -EINVAL);
	assert_non_null(strstr(why.msg, "not shared memory"));
	assert_int_equal(gm.nregions, 0);
	close(fd);
}

static void test_iov_split_across_contiguous_regions(void **state)
{
	struct guest_mem gm;
	struct iovec iov[4];
	struct reason why;
	unsigned int n = 0;

	gm_init(&gm);
	assert_int_equal(add(&gm, 0, K64, 0x1000000, 0, &why), 0);
	assert_int_equal(add(&gm, K64, K64, 0x3000000, K64, &why), 0);
	assert_int_equal(gm_gpa_to_iov(&gm, K64 - 16, 48, iov, 4, &n), 0);
	assert_int_equal(n, 2);
	assert_int_equal(iov[0].iov_len, 16);
	assert_int_equal(iov[1].iov_len, 32);
	/* Not enough room for the second piece. */
	n = 3;
	assert_int_equal(gm_gpa_to_iov(&gm, K64 - 16, 48, iov, 4, &n),
			 -ENOBUFS);
	assert_int_equal(n, 3);
	/* Runs past the last region. */
	n = 0;
	assert_int_equal(gm_gpa_to_iov(&gm, 2 * K64 - 8, 16, iov, 4, &n),
			 -EFAULT);
	assert_int_equal(n, 0);
	/* Zero length appends nothing. */
	assert_int_equal(gm_gpa_to_iov(&gm, 5, 0, iov, 4, &n), 0);
	assert_int_equal(n, 0);
	gm_clear(&gm);
}

static void test_iov_wrapping_past_2_pow_64_is_refused(void **state)
{
	struct guest_mem gm;
	struct iovec iov[4];
	struct reason why;
	unsigned int n = 0;

	gm_init(&gm);
	assert_int_equal(add(&gm, 0, K64, 0x1000000, 0, &why), 0);
	assert_int_equal(
		add(&gm, UINT64_MAX - K64 + 1, K64, 0x3000000, K64, &why),
		-EINVAL);
	assert_int_equal(add(&gm, UINT64_MAX - K64, K64, 0x3000000, K64, &why),
			 0);
	/* Last byte of the top region, then would wrap to GPA 0. */
	assert_int_equal(gm_gpa_to_iov(&gm, UINT64_MAX - 1, 4, iov, 4, &n),
			 -EFAULT);
	gm_clear(&gm);
}

static int add_prot(struct guest_mem *gm, uint64_t gpa, int fd, int prot,
		    struct reason *why)
{
	struct gm_desc r = { gpa, K64, 0x5000000 + gpa, gpa, prot };

	return gm_add_region(gm, &r, fd, why);
}

/* A write through p dies of SIGSEGV (in a child): the page is read-only. */
static bool write_faults(uint8_t *p)
{
	int status;
	pid_t pid = fork();

	if (pid == 0) {
		signal(SIGSEGV, SIG_DFL); /* not cmocka's handler */
		*(volatile uint8_t *)p = 1;
		_exit(0);
	}
	assert_true(pid > 0);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	return WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV;
}

/*
 * The VMM's DMA contract: a read-only region is mapped PROT_READ (even
 * from a read-only fd), translates for reading, never for writing.
 */
static void test_read_only_region_is_never_written(void **state)
{
	struct guest_mem gm;
	struct iovec iov[4];
	struct reason why;
	unsigned int n = 0;
	char path[64];
	int rofd;

	gm_init(&gm);
	snprintf(path, sizeof(path), "/proc/self/fd/%d", ram.fd);
	rofd = open(path, O_RDONLY | O_CLOEXEC);
	assert_true(rofd >= 0);
	assert_int_equal(add_prot(&gm, 0, ram.fd, PROT_READ | PROT_WRITE, &why),
			 0);
	/* a read-write mapping of a read-only fd is impossible */
	assert_int_equal(add_prot(&gm, K64, rofd, PROT_READ | PROT_WRITE, &why),
			 -EACCES);
	assert_int_equal(add_prot(&gm, K64, rofd, PROT_READ, &why), 0);
	assert_int_equal(gm.regions[0].prot, PROT_READ | PROT_WRITE);
	assert_int_equal(gm.regions[1].prot, PROT_READ);
	ram.map[K64 + 3] = 0x5a;
	assert_int_equal(*(uint8_t *)gm_gpa_to_host(&gm, K64 + 3, 1), 0x5a);
	assert_null(gm_gpa_to_host_w(&gm, K64 + 3, 1));
	assert_non_null(gm_gpa_to_host_w(&gm, K64 - 1, 1));
	/* the VMM's pages are not writable in the worker at all */
	assert_true(write_faults(gm_gpa_to_host(&gm, K64, 1)));
	assert_false(write_faults(gm_gpa_to_host(&gm, 0, 1)));
	/* across both: readable, not writable */
	assert_int_equal(gm_gpa_to_iov(&gm, K64 - 16, 32, iov, 4, &n), 0);
	assert_int_equal(n, 2);
	n = 0;
	assert_int_equal(gm_gpa_to_iov_w(&gm, K64 - 16, 32, iov, 4, &n),
			 -EACCES);
	assert_int_equal(n, 0);
	assert_int_equal(gm_gpa_to_iov_w(&gm, K64 - 16, 16, iov, 4, &n), 0);
	assert_int_equal(n, 1);
	gm_clear(&gm);
	close(rofd);
}

static void test_region_without_read_access_refused(void **state)
{
	struct guest_mem gm;
	struct reason why;

	gm_init(&gm);
	assert_int_equal(add_prot(&gm, 0, ram.fd, 0, &why), -EINVAL);
	assert_non_null(strstr(why.msg, "neither read nor write"));
	assert_int_equal(add_prot(&gm, 0, ram.fd, PROT_WRITE, &why), -EINVAL);
	assert_non_null(strstr(why.msg, "write-only"));
	assert_int_equal(add_prot(&gm, 0, ram.fd, PROT_READ | PROT_EXEC, &why),
			 -EINVAL);
	assert_int_equal(gm.nregions, 0);
	/* vhost-user's regions: always read-write */
	assert_int_equal(add(&gm, 0, K64, 0x1000000, 0, &why), 0);
	assert_int_equal(gm.regions[0].prot, PROT_READ | PROT_WRITE);
	gm_clear(&gm);
}

static void test_remove_region_unmaps_only_that_one(void **state)
{
	struct gm_desc r = { K64, K64, 0x3000000, 0, PROT_READ | PROT_WRITE };
	struct guest_mem gm;
	struct reason why;

	gm_init(&gm);
	assert_int_equal(add(&gm, 0, K64, 0x1000000, 0, &why), 0);
	assert_int_equal(add(&gm, K64, K64, 0x3000000, K64, &why), 0);
	assert_int_equal(gm_remove_region(&gm, &r), 0);
	assert_int_equal(gm.nregions, 1);
	assert_null(gm_gpa_to_host(&gm, K64, 1));
	assert_non_null(gm_gpa_to_host(&gm, 0, 1));
	assert_int_equal(gm_remove_region(&gm, &r), -ENOENT);
	gm_clear(&gm);
}

/* Our fd is open iff it refers to the same file as ram.fd. */
static bool same_file(int fd)
{
	struct stat a, b;

	return fstat(fd, &a) == 0 && fstat(ram.fd, &b) == 0 &&
	       a.st_ino == b.st_ino && a.st_dev == b.st_dev;
}

static void test_region_keeps_its_own_cloexec_fd(void **state)
{
	struct gm_desc r = { K64, K64, 0x3000000, 0, PROT_READ | PROT_WRITE };
	struct guest_mem gm;
	struct reason why;
	uint64_t off;
	int fd0, fd1;

	gm_init(&gm);
	assert_int_equal(add(&gm, 0, K64, 0x1000000, 0, &why), 0);
	assert_int_equal(add(&gm, K64, K64, 0x3000000, K64, &why), 0);
	fd0 = gm.regions[0].fd;
	fd1 = gm.regions[1].fd;
	assert_true(fd0 != ram.fd && fd1 != ram.fd && fd0 != fd1);
	assert_true(same_file(fd0) && same_file(fd1));
	assert_true(fcntl(fd0, F_GETFD) & FD_CLOEXEC);
	assert_int_equal(gm.regions[0].page_size, (uint64_t)getpagesize());
	/* gm_find_gpa: the region and the offset in it */
	assert_ptr_equal(gm_find_gpa(&gm, K64 + 5, &off), &gm.regions[1]);
	assert_int_equal(off, 5);
	assert_null(gm_find_gpa(&gm, 2 * K64, &off));
	/* removing a region closes its fd; clearing closes the rest */
	assert_int_equal(gm_remove_region(&gm, &r), 0);
	assert_int_equal(fcntl(fd1, F_GETFD), -1);
	assert_int_equal(errno, EBADF);
	assert_true(same_file(fd0));
	gm_clear(&gm);
	assert_int_equal(fcntl(fd0, F_GETFD), -1);
	/* the caller's fd stays open */
	assert_true(fcntl(ram.fd, F_GETFD) >= 0);
}

/* Needs free huge pages (vm.nr_hugepages); skipped without them. */
static void test_hugetlb_memfd_region_maps_at_unaligned_offset(void **state)
{
	struct gm_desc r;
	struct guest_mem gm;
	struct reason why;
	size_t huge = 2u << 20;
	uint8_t *view, *p;
	int fd;

	fd = memfd_create("huge", MFD_CLOEXEC | MFD_HUGETLB);
	if (fd < 0 || ftruncate(fd, (off_t)(2 * huge)) < 0) {
		print_message("no hugetlb memfd here (%s); skipping\n",
			      strerror(errno));
		if (fd >= 0)
			close(fd);
		skip();
	}
	view = mmap(NULL, 2 * huge, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (view == MAP_FAILED) {
		print_message("no free huge pages (%s); skipping\n",
			      strerror(errno));
		close(fd);
		skip();
	}
	view[huge + 0x1234] = 0x5a;
	/* A region that starts mid-way into the second huge page. */
	r = (struct gm_desc){ 0x40000000, huge - 0x1000, 0x7f0000000000,
			      huge + 0x1000, PROT_READ | PROT_WRITE };
	gm_init(&gm);
	assert_int_equal(gm_add_region(&gm, &r, fd, &why), 0);
	p = gm_gpa_to_host(&gm, 0x40000234, 1);
	assert_non_null(p);
	assert_int_equal(*p, 0x5a);
	gm_clear(&gm);
	munmap(view, 2 * huge);
	close(fd);
}

/* Whether the mapping starting at p has VmFlag `flag` (/proc/self/smaps). */
static bool vm_flag(const void *p, const char *flag)
{
	char line[512], start[32];
	bool in = false, found = false;
	FILE *f = fopen("/proc/self/smaps", "re");

	assert_non_null(f);
	snprintf(start, sizeof(start), "%lx-", (unsigned long)(uintptr_t)p);
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, start, strlen(start))) {
			in = true;
		} else if (in && !strncmp(line, "VmFlags:", 8)) {
			found = strstr(line, flag) != NULL;
			break;
		}
	}
	fclose(f);
	assert_true(in);
	return found;
}

static void test_region_mapping_is_excluded_from_core_dumps(void **state)
{
	struct guest_mem gm;
	struct reason why;

	gm_init(&gm);
	assert_int_equal(add(&gm, 0, K64, 0x7f0000000000, 0, &why), 0);
	/* "dd": do not include area into core dump */
	assert_true(vm_flag(gm.regions[0].map_base, " dd"));
	gm_clear(&gm);
}

/* A memfd of `size` bytes, not sealed: the frontend may shrink it. */
static int own_memfd(size_t size)
{
	int fd = memfd_create("shrink", MFD_CLOEXEC);

	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, (off_t)size), 0);
	return fd;
}

/*
 * A frontend shrinks the file under our mapping: the accesses to the lost
 * pages complete (zeros) instead of killing the process, and are counted.
 */
static void test_shrunk_file_is_survived_and_counted(void **state)
{
	struct gm_desc r = { 0, 4 * 4096, 0x7f0000000000, 0,
			     PROT_READ | PROT_WRITE };
	struct guest_mem gm;
	volatile uint8_t *p;
	struct reason why;
	int fd = own_memfd(4 * 4096);

	assert_int_equal(gm_sigbus_install(), 0);
	(void)gm_sigbus_lost();
	gm_init(&gm);
	assert_int_equal(gm_add_region(&gm, &r, fd, &why), 0);
	p = gm_gpa_to_host(&gm, 0, 4 * 4096);
	p[0] = 7;
	p[3 * 4096] = 9;
	assert_int_equal(ftruncate(fd, 4096), 0);
	assert_int_equal(p[0], 7);	  /* still in the file */
	assert_int_equal(p[3 * 4096], 0); /* lost: a zero page */
	p[2 * 4096 + 5] = 1;		  /* lost: written, not fatal */
	assert_int_equal(p[2 * 4096 + 5], 1);
	assert_int_equal(gm_sigbus_lost(), 2);
	assert_int_equal(gm_sigbus_lost(), 0);
	gm_clear(&gm);
	close(fd);
}

/*
 * The backend guards its own MR mappings of guest files with
 * gm_guard_add(): more of them than one table slot per region (the first
 * version held 256), holes reused, and a lost page under the last one
 * added survived like a region's.
 */
static void test_many_guards_and_a_shrink_under_the_last(void **state)
{
	enum { N = 1000 };
	static uint8_t anchors[N];
	volatile uint8_t *q;
	int fd = own_memfd(2 * 4096);
	unsigned int i;

	assert_int_equal(gm_sigbus_install(), 0);
	(void)gm_sigbus_lost();
	for (i = 0; i < N; i++) /* stand-ins: never touched */
		assert_int_equal(gm_guard_add(&anchors[i], 1, 4096), 0);
	for (i = 0; i < N; i += 2) /* holes */
		gm_guard_del(&anchors[i]);
	q = mmap(NULL, 2 * 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	assert_true(q != MAP_FAILED);
	assert_int_equal(gm_guard_add((void *)q, 2 * 4096, 4096), 0);
	assert_int_equal(ftruncate(fd, 0), 0);
	q[4096] = 3; /* lost: zero page, counted, not fatal */
	assert_int_equal(q[4096], 3);
	assert_int_equal(gm_sigbus_lost(), 1);
	gm_guard_del((void *)q);
	for (i = 1; i < N; i += 2)
		gm_guard_del(&anchors[i]);
	munmap((void *)q, 2 * 4096);
	close(fd);
}

/* A SIGBUS outside registered guest memory is still the end. */
static void test_sigbus_elsewhere_still_kills(void **state)
{
	int status, fd = own_memfd(2 * 4096);
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		volatile uint8_t *q =
			mmap(NULL, 2 * 4096, PROT_READ | PROT_WRITE, MAP_SHARED,
			     fd, 0);

		if (q == MAP_FAILED || gm_sigbus_install() < 0 ||
		    ftruncate(fd, 0) < 0)
			_exit(2);
		(void)q[4096];
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFSIGNALED(status));
	close(fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_translation_covers_exactly_the_region),
		cmocka_unit_test(test_zero_size_region_is_refused),
		cmocka_unit_test(test_address_or_offset_overflow_is_refused),
		cmocka_unit_test(test_offset_plus_size_past_fd_end_is_refused),
		cmocka_unit_test(test_gpa_overlap_is_refused),
		cmocka_unit_test(test_uva_overlap_is_refused),
		cmocka_unit_test(test_more_than_max_regions_is_refused),
		cmocka_unit_test(test_file_on_disk_is_refused),
		cmocka_unit_test(test_fd_that_is_not_a_file_is_refused),
		cmocka_unit_test(test_iov_split_across_contiguous_regions),
		cmocka_unit_test(test_iov_wrapping_past_2_pow_64_is_refused),
		cmocka_unit_test(test_remove_region_unmaps_only_that_one),
		cmocka_unit_test(test_region_keeps_its_own_cloexec_fd),
		cmocka_unit_test(
			test_hugetlb_memfd_region_maps_at_unaligned_offset),
		cmocka_unit_test(
			test_region_mapping_is_excluded_from_core_dumps),
		cmocka_unit_test(test_shrunk_file_is_survived_and_counted),
		cmocka_unit_test(test_many_guards_and_a_shrink_under_the_last),
		cmocka_unit_test(test_sigbus_elsewhere_still_kills),
		cmocka_unit_test(test_read_only_region_is_never_written),
		cmocka_unit_test(test_region_without_read_access_refused),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
