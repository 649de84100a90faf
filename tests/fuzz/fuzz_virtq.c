// SPDX-License-Identifier: MIT
/*
 * libFuzzer target for the split-virtqueue walker: the input becomes the
 * ring memory of a guest with two GPA-contiguous regions, a hole and a
 * third region; every available chain is popped, echoed and pushed.
 *
 * Input: byte 0 picks the ring size (1 << (b % 11)), byte 1 the mode: bit
 * 0 INDIRECT_DESC, bit 1 RING_EVENT_IDX (used_event after the avail ring,
 * avail_event after the used ring), bit 2 a vq_notify() after every push,
 * bit 3 the device skips signalling once (vq_unsignalled()); bytes 2-3 the
 * starting avail index; the rest is written to guest RAM from GPA 0
 * (descriptor table, avail ring, used ring follow each other there).  The
 * chains are drained as the devices do: kicks off, pop, kicks back on,
 * again while the re-enable finds more.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <fcntl.h>
#include <unistd.h>

#include "common/log.h"
#include "worker/guest_mem.h"
#include "worker/vhost_user/virtq.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define R_SIZE	 0x8000ull
#define RAM_SIZE (3 * R_SIZE)

static struct guest_mem gm;
static uint8_t *ram;
static int call_fd = -1;
static struct vq_elem elem;
static size_t dirty;

static void add(int fd, uint64_t gpa, uint64_t uva, uint64_t off)
{
	struct gm_desc r = { gpa, R_SIZE, uva, off, PROT_READ | PROT_WRITE };
	struct reason why;

	if (gm_add_region(&gm, &r, fd, &why) < 0)
		abort();
}

static void init(void)
{
	int fd = memfd_create("fuzz-ram", MFD_CLOEXEC);
	int null = open("/dev/null", O_WRONLY | O_CLOEXEC);

	if (fd < 0 || null < 0 || ftruncate(fd, RAM_SIZE) < 0)
		abort();
	log_init("fuzz", LOG_LVL_WARN);
	log_set_fd(null);
	gm_init(&gm);
	add(fd, 0, 0x700000000000ull, 0);		    /* R0 */
	add(fd, R_SIZE, 0x710000000000ull, R_SIZE);	    /* R1 */
	add(fd, 3 * R_SIZE, 0x720000000000ull, 2 * R_SIZE); /* R2, hole */
	ram = gm_gpa_to_host(&gm, 0, R_SIZE);
	call_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (!ram || call_fd < 0)
		abort();
}

static void echo(void)
{
	uint8_t buf[256];
	size_t n =
		iov_to_buf(vq_elem_out(&elem), elem.out_num, buf, sizeof(buf));

	buf_to_iov(vq_elem_in(&elem), elem.in_num, buf, n);
}

/*
 * Pops until the ring is empty or stops, at most `left` chains; true when
 * the walker stopped by itself (empty ring or a violation).
 */
static bool drain(struct vq *vq, unsigned int *left, bool notify_each)
{
	while (*left > 0) {
		int ret = vq_pop(vq, &elem);

		if (ret <= 0)
			return true;
		--*left;
		if (elem.out_num + elem.in_num > VQ_MAX_IOV ||
		    elem.out_len + elem.in_len > VQ_MAX_CHAIN_BYTES)
			abort();
		echo();
		vq_push(vq, &elem, (uint32_t)elem.in_len);
		if (notify_each)
			vq_notify(vq);
	}
	return false;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint16_t num, base;
	uint64_t avail, used, v, ev;
	struct vq vq;
	uint8_t status = 0;
	unsigned int left;

	if (!ram)
		init();
	if (size < 4)
		return 0;
	num = (uint16_t)(1u << (data[0] % 11));
	base = (uint16_t)(data[2] | data[3] << 8);
	ev = data[1] & 2 ? VQ_EVENT_BYTES : 0;
	avail = VQ_DESC_BYTES(num);
	used = (avail + VQ_AVAIL_BYTES(num) + ev + 3) & ~3ull;
	memset(ram, 0, dirty);
	dirty = size - 4 < R_SIZE ? size - 4 : R_SIZE;
	memcpy(ram, data + 4, dirty);
	vq_init(&vq, 0);
	vq.call_fd = call_fd;
	if (vq_setup(&vq, &gm, num, ram, ram + avail, ram + used, base,
		     data[1] & 1, &status) < 0)
		abort();
	vq_set_event_idx(&vq, ev != 0);
	/* More pops than the ring holds: the walker must stop by itself. */
	left = 2u * num + 2;
	vq_disable_notify(&vq);
	while (drain(&vq, &left, data[1] & 4) && vq_enable_notify(&vq))
		vq_disable_notify(&vq);
	if (data[1] & 8)
		vq_unsignalled(&vq);
	vq_notify(&vq);
	vq_notify(&vq); /* nothing new since: the event check says so */
	if (read(call_fd, &v, sizeof(v)) < 0)
		v = 0;
	vq_teardown(&vq);
	return 0;
}
