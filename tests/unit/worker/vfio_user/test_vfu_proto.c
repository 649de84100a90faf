// SPDX-License-Identifier: MIT
/*
 * vfio-user protocol core and PCI function layer, on the transport test
 * function: framing, the size rule of every command, every reply, config
 * space emulation, MSI-X, DMA regions, fd ownership.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/pci_regs.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <unistd.h>
#include <cmocka.h>

#include "tests/unit/log_capture.h"

#include "common/log.h"
#include "tests/unit/guest_ram.h"
#include "worker/vfio_user/test_fn.h"
#include "worker/vfio_user/vfu_proto.h"

#define HDR sizeof(struct vfio_user_header)

struct fix {
	struct vfu_dev *dev;
	struct vfu_result res;
	struct ram ram;
	struct log_capture lc;
	uint16_t id;
};

static int setup_raw(void **state)
{
	struct fix *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	assert_int_equal(ram_open(&f->ram, 1 << 20), 0);
	assert_int_equal(vfu_dev_new(&pci_test_fn_ops, NULL, &f->dev), 0);
	log_capture_start(&f->lc);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fix *f = *state;

	vfu_dev_free(f->dev);
	log_capture_stop(&f->lc);
	ram_close(&f->ram);
	free(f);
	return 0;
}

/* A message with any header fields; len is the bytes handed over. */
static void send_hdr(struct fix *f, const struct vfio_user_header *h,
		     const void *pl, size_t pl_len, size_t len, const int *fds,
		     unsigned int nfds)
{
	uint8_t buf[VFIO_USER_MAX_MSG + 64] = { 0 };
	int fdcopy[VFIO_USER_MAX_FDS];

	memcpy(buf, h, sizeof(*h));
	if (pl_len)
		memcpy(buf + HDR, pl, pl_len);
	if (nfds)
		memcpy(fdcopy, fds, nfds * sizeof(int));
	vfu_handle(f->dev, buf, len, fdcopy, nfds, &f->res);
}

static void send_cmd(struct fix *f, uint16_t cmd, uint32_t flags,
		     const void *pl, size_t len, const int *fds,
		     unsigned int nfds)
{
	struct vfio_user_header h = { .msg_id = ++f->id,
				      .command = cmd,
				      .size = (uint32_t)(HDR + len),
				      .flags = flags };

	send_hdr(f, &h, pl, len, HDR + len, fds, nfds);
}

static void send_msg(struct fix *f, uint16_t cmd, const void *pl, size_t len)
{
	send_cmd(f, cmd, 0, pl, len, NULL, 0);
}

/* The reply to the last request was a success with `len` payload bytes. */
static const uint8_t *expect_ok(struct fix *f, size_t len)
{
	const struct vfio_user_header *h = &f->res.reply.hdr;

	assert_false(f->res.disconnect);
	if (h->flags & VFIO_USER_F_ERROR)
		fail_msg("error reply %u: %s", h->error_no,
			 log_captured(&f->lc));
	assert_int_equal(f->res.reply_len, HDR + len);
	assert_int_equal(h->size, HDR + len);
	assert_int_equal(h->flags, VFIO_USER_F_REPLY);
	assert_int_equal(h->msg_id, f->id);
	return f->res.reply.bytes + HDR;
}

static void expect_err(struct fix *f, uint32_t err)
{
	const struct vfio_user_header *h = &f->res.reply.hdr;

	assert_false(f->res.disconnect);
	assert_int_equal(f->res.reply_len, HDR);
	assert_int_equal(h->flags, VFIO_USER_F_REPLY | VFIO_USER_F_ERROR);
	assert_int_equal(h->error_no, err);
	assert_int_equal(h->msg_id, f->id);
}

static void expect_dropped(struct fix *f)
{
	assert_true(f->res.disconnect);
	assert_int_equal(f->res.reply_len, 0);
}

static void negotiate(struct fix *f)
{
	uint8_t buf[64] = { 0 };

	memcpy(buf + 4, "{}", 3);
	send_msg(f, VFIO_USER_VERSION, buf, 7);
	assert_false(f->res.reply.hdr.flags & VFIO_USER_F_ERROR);
}

static int setup(void **state)
{
	setup_raw(state);
	negotiate(*state);
	log_captured(&((struct fix *)*state)->lc);
	return 0;
}

static bool fd_open(int fd)
{
	return fcntl(fd, F_GETFD) >= 0;
}

/* ---- framing ------------------------------------------------------------ */

static void test_framing(void **state)
{
	struct fix *f = *state;
	struct vfio_user_header h = { .command = VFIO_USER_DEVICE_GET_INFO,
				      .size = HDR + 16 };
	uint8_t pl[16] = { 16 };
	int efd = eventfd(0, EFD_CLOEXEC);

	struct reason why = { "" };

	assert_int_equal(vfu_check_framing(&h, 8, &why), -EINVAL);
	assert_string_equal(why.msg, "truncated header");
	assert_int_equal(
		vfu_check_framing(&(struct vfio_user_header){ .size = HDR },
				  HDR, NULL),
		0);
	/* the size field against the bytes */
	send_hdr(f, &h, pl, sizeof(pl), HDR + 8, &efd, 1);
	expect_dropped(f);
	log_capture_expect(&f->lc, "differs from the bytes");
	assert_false(fd_open(efd));
	h.size = 8;
	send_hdr(f, &h, NULL, 0, HDR, NULL, 0);
	expect_dropped(f);
	h.size = VFIO_USER_MAX_MSG + 1;
	send_hdr(f, &h, NULL, 0, VFIO_USER_MAX_MSG + 1, NULL, 0);
	expect_dropped(f);
	log_capture_expect(&f->lc, "larger than the maximum");
	send_hdr(f, &h, NULL, 0, 3, NULL, 0);
	expect_dropped(f);
	h.size = HDR + 16;
	h.flags = VFIO_USER_F_REPLY;
	send_hdr(f, &h, pl, sizeof(pl), HDR + 16, NULL, 0);
	expect_dropped(f);
	h.flags = VFIO_USER_F_ERROR;
	send_hdr(f, &h, pl, sizeof(pl), HDR + 16, NULL, 0);
	expect_dropped(f);
	h.flags = 0x40;
	send_hdr(f, &h, pl, sizeof(pl), HDR + 16, NULL, 0);
	expect_dropped(f);
	h.flags = 0x2;
	send_hdr(f, &h, pl, sizeof(pl), HDR + 16, NULL, 0);
	expect_dropped(f);
}

/* Every command: one byte short and one byte long are refused. */
static void test_payload_sizes(void **state)
{
	static const struct {
		uint16_t cmd;
		uint32_t min, max;
	} sizes[] = {
		{ VFIO_USER_VERSION, 4, 4 + VFIO_USER_MAX_CAPS_JSON },
		{ VFIO_USER_DMA_MAP, 32, 32 },
		{ VFIO_USER_DMA_UNMAP, 24, 24 },
		{ VFIO_USER_DEVICE_GET_INFO, 16, 16 },
		{ VFIO_USER_DEVICE_GET_REGION_INFO, 32, 32 },
		{ VFIO_USER_DEVICE_GET_IRQ_INFO, 16, 16 },
		{ VFIO_USER_DEVICE_SET_IRQS, 20, 20 + PCI_FN_MAX_VECTORS },
		{ VFIO_USER_REGION_READ, 16, 16 },
		{ VFIO_USER_REGION_WRITE, 17, 16 + VFIO_USER_MAX_XFER },
		{ VFIO_USER_DEVICE_RESET, 0, 0 },
	};
	static uint8_t zeros[VFIO_USER_MAX_MSG];
	struct fix *f = *state;
	size_t i;

	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		if (sizes[i].min) {
			send_msg(f, sizes[i].cmd, zeros, sizes[i].min - 1);
			expect_err(f, EINVAL);
		}
		if (HDR + sizes[i].max + 1 <= VFIO_USER_MAX_MSG) {
			send_msg(f, sizes[i].cmd, zeros, sizes[i].max + 1);
			expect_err(f, EINVAL);
		}
	}
	log_capture_expect(&f->lc, "payload size out of range");
}

static void test_unknown_commands(void **state)
{
	static const uint16_t cmds[] = { 0,  6,	 11, 12, 14,	 15,
					 16, 17, 18, 19, 0x1000, 0xffff };
	struct fix *f = *state;
	int efd = eventfd(0, EFD_CLOEXEC);
	size_t i;

	for (i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		send_cmd(f, cmds[i], 0, "x", 1, &efd, i == 0 ? 1 : 0);
		expect_err(f, ENOTSUP);
	}
	assert_false(fd_open(efd));
	log_capture_expect(&f->lc, "refusing REGION_WRITE_MULTI (15");
	/* NO_REPLY: refused silently */
	send_cmd(f, 99, VFIO_USER_F_NO_REPLY, NULL, 0, NULL, 0);
	assert_false(f->res.disconnect);
	assert_int_equal(f->res.reply_len, 0);
}

/* ---- VERSION ------------------------------------------------------------ */

static void test_version(void **state)
{
	static const char qemu[] =
		"{\"capabilities\":{\"max_msg_fds\":16,\"max_data_xfer_size\":"
		"1048576,\"pgsizes\":4096,\"max_dma_maps\":65535,\"migration\":"
		"{\"pgsize\":4096,\"max_bitmap_size\":268435456},"
		"\"write_multiple\":true}}";
	struct fix *f = *state;
	struct vfio_user_info_dummy;
	uint8_t buf[sizeof(qemu) + 4] = { 0 };
	struct vfio_user_caps caps;
	struct vfio_user_version v;
	const uint8_t *r;
	struct reason why;

	/* nothing else before VERSION */
	send_msg(f, VFIO_USER_DEVICE_RESET, NULL, 0);
	expect_err(f, EINVAL);
	log_capture_expect(&f->lc, "before VERSION");
	memcpy(buf + 4, qemu, sizeof(qemu));
	send_msg(f, VFIO_USER_VERSION, buf, sizeof(buf));
	assert_false(f->res.reply.hdr.flags & VFIO_USER_F_ERROR);
	r = f->res.reply.bytes + HDR;
	memcpy(&v, r, sizeof(v));
	assert_int_equal(v.major, 0);
	assert_int_equal(v.minor, 0);
	assert_int_equal(vfio_user_caps_parse((const char *)r + 4,
					      f->res.reply_len - HDR - 4, &caps,
					      &why),
			 0);
	assert_int_equal(caps.max_msg_fds, VFIO_USER_MAX_FDS);
	assert_int_equal(caps.max_data_xfer_size, VFIO_USER_MAX_XFER);
	assert_int_equal(caps.max_dma_maps, GM_TABLE_REGIONS);
	/* we never offer WRITE_MULTI: QEMU then never sends it */
	assert_false(caps.present & VFIO_USER_CAPS_HAS_MULTI);
	assert_true(f->dev->client_caps.write_multiple);
	assert_int_equal(f->dev->client_caps.max_msg_fds, 16);
	/* once only */
	send_msg(f, VFIO_USER_VERSION, buf, sizeof(buf));
	expect_err(f, EINVAL);
}

static void test_version_refusals(void **state)
{
	struct fix *f = *state;
	uint8_t buf[32] = { 1, 0 }; /* major 1 */

	memcpy(buf + 4, "{}", 3);
	send_msg(f, VFIO_USER_VERSION, buf, 7);
	expect_err(f, ENOTSUP);
	buf[0] = 0;
	send_msg(f, VFIO_USER_VERSION, buf, 6); /* no NUL */
	expect_err(f, EINVAL);
	memcpy(buf + 4, "{\"capabilities\":7}", 19);
	send_msg(f, VFIO_USER_VERSION, buf, 4 + 19);
	expect_err(f, EINVAL);
	assert_false(f->dev->versioned);
	/* no capabilities at all is fine */
	send_msg(f, VFIO_USER_VERSION, buf, 4);
	expect_ok(f, f->res.reply_len - HDR);
	assert_true(f->dev->versioned);
}

/* ---- information -------------------------------------------------------- */

static void test_info(void **state)
{
	struct fix *f = *state;
	struct vfio_user_device_info di = { .argsz = 16 };
	struct vfio_user_region_info ri;
	struct vfio_user_irq_info ii;
	uint32_t i;

	send_msg(f, VFIO_USER_DEVICE_GET_INFO, &di, sizeof(di));
	memcpy(&di, expect_ok(f, sizeof(di)), sizeof(di));
	assert_int_equal(di.flags,
			 VFIO_USER_DEVICE_F_PCI | VFIO_USER_DEVICE_F_RESET);
	assert_int_equal(di.num_regions, 9);
	assert_int_equal(di.num_irqs, 3);
	di.argsz = 8;
	send_msg(f, VFIO_USER_DEVICE_GET_INFO, &di, sizeof(di));
	expect_err(f, EINVAL);
	for (i = 0; i < 9; i++) {
		static const uint64_t size[9] = {
			TFN_BAR0_SIZE, 0, TFN_BAR2_SIZE, 0, 0, 0, 0, 256, 0
		};

		ri = (struct vfio_user_region_info){ .argsz = 64, .index = i };
		send_msg(f, VFIO_USER_DEVICE_GET_REGION_INFO, &ri, sizeof(ri));
		memcpy(&ri, expect_ok(f, sizeof(ri)), sizeof(ri));
		assert_int_equal(ri.index, i);
		assert_int_equal(ri.argsz, sizeof(ri));
		assert_int_equal(ri.size, size[i]);
		assert_int_equal(ri.flags, size[i] ? 3 : 0);
		assert_int_equal(ri.cap_offset, 0);
	}
	ri = (struct vfio_user_region_info){ .argsz = 32, .index = 9 };
	send_msg(f, VFIO_USER_DEVICE_GET_REGION_INFO, &ri, sizeof(ri));
	expect_err(f, EINVAL);
	ri = (struct vfio_user_region_info){ .argsz = 31, .index = 0 };
	send_msg(f, VFIO_USER_DEVICE_GET_REGION_INFO, &ri, sizeof(ri));
	expect_err(f, EINVAL);
	for (i = 0; i < 3; i++) {
		ii = (struct vfio_user_irq_info){ .argsz = 16, .index = i };
		send_msg(f, VFIO_USER_DEVICE_GET_IRQ_INFO, &ii, sizeof(ii));
		memcpy(&ii, expect_ok(f, sizeof(ii)), sizeof(ii));
		assert_int_equal(ii.count,
				 i == VFIO_USER_PCI_MSIX ? TFN_VECTORS : 0);
	}
	/* no ERR and REQ indexes: QEMU then stays quiet about them */
	for (i = VFIO_USER_PCI_ERR; i <= 5; i++) {
		ii = (struct vfio_user_irq_info){ .argsz = 16, .index = i };
		send_msg(f, VFIO_USER_DEVICE_GET_IRQ_INFO, &ii, sizeof(ii));
		expect_err(f, EINVAL);
	}
}

/* ---- region I/O ---------------------------------------------------------- */

static int rw(struct fix *f, uint32_t region, uint64_t off, void *buf,
	      uint32_t count, bool write, uint32_t flags)
{
	uint8_t pl[16 + VFIO_USER_MAX_XFER];
	struct vfio_user_region_rw r = { off, region, count };

	memcpy(pl, &r, sizeof(r));
	if (write)
		memcpy(pl + 16, buf, count);
	send_cmd(f, write ? VFIO_USER_REGION_WRITE : VFIO_USER_REGION_READ,
		 flags, pl, 16 + (write ? count : 0), NULL, 0);
	if (f->res.reply.hdr.flags & VFIO_USER_F_ERROR)
		return -(int)f->res.reply.hdr.error_no;
	if (flags & VFIO_USER_F_NO_REPLY)
		return 0;
	if (write) {
		expect_ok(f, 16);
	} else {
		memcpy(buf, expect_ok(f, 16 + count) + 16, count);
	}
	return 0;
}

static uint32_t rd32(struct fix *f, uint32_t region, uint64_t off)
{
	uint32_t v = 0;

	assert_int_equal(rw(f, region, off, &v, 4, false, 0), 0);
	return v;
}

static void wr32(struct fix *f, uint32_t region, uint64_t off, uint32_t v)
{
	assert_int_equal(rw(f, region, off, &v, 4, true, 0), 0);
}

static void test_config_space(void **state)
{
	struct fix *f = *state;
	uint8_t cfg[256];
	uint64_t v64 = 0;

	assert_int_equal(rw(f, 7, 0, cfg, 256, false, 0), 0);
	assert_int_equal(cfg[PCI_CAPABILITY_LIST], 0x40);
	assert_int_equal(cfg[0x40], PCI_CAP_ID_MSIX);
	assert_int_equal(cfg[0x41], 0);
	assert_true(cfg[PCI_STATUS] & PCI_STATUS_CAP_LIST);
	/* sizing */
	wr32(f, 7, PCI_BASE_ADDRESS_0, 0xffffffff);
	assert_int_equal(rd32(f, 7, PCI_BASE_ADDRESS_0), 0xfffff000);
	wr32(f, 7, PCI_BASE_ADDRESS_2, 0xffffffff);
	assert_int_equal(rd32(f, 7, PCI_BASE_ADDRESS_2), 0xffffe00c);
	wr32(f, 7, PCI_BASE_ADDRESS_3, 0x12345678);
	assert_int_equal(rd32(f, 7, PCI_BASE_ADDRESS_3), 0x12345678);
	wr32(f, 7, PCI_BASE_ADDRESS_4, 0xffffffff);
	assert_int_equal(rd32(f, 7, PCI_BASE_ADDRESS_4), 0);
	/* a partial write into a BAR */
	assert_int_equal(rw(f, 7, PCI_BASE_ADDRESS_0 + 1, &(uint8_t){ 0x12 }, 1,
			    true, 0),
			 0);
	assert_int_equal(rd32(f, 7, PCI_BASE_ADDRESS_0), 0xffff1000);
	/* command: only the implemented bits */
	wr32(f, 7, PCI_COMMAND, 0xffff);
	assert_int_equal(rd32(f, 7, PCI_COMMAND) & 0xffff, 0x546);
	/* read-only: IDs, header type, capability list */
	wr32(f, 7, 0, 0);
	assert_int_equal(rd32(f, 7, 0), TFN_DEVICE << 16 | TFN_VENDOR);
	wr32(f, 7, 0x40, 0xffffffff);
	assert_int_equal(rd32(f, 7, 0x40), (TFN_VECTORS - 1u) << 16 |
						   0xc000u << 16 |
						   PCI_CAP_ID_MSIX);
	/* bounds */
	assert_int_equal(rw(f, 7, 256, &v64, 1, false, 0), -EINVAL);
	assert_int_equal(rw(f, 7, 252, &v64, 8, false, 0), -EINVAL);
	assert_int_equal(rw(f, 7, ~0ull, &v64, 1, false, 0), -EINVAL);
	assert_int_equal(rw(f, 7, 0, &v64, 0, false, 0), -EINVAL);
	log_capture_expect(&f->lc, "past the end of config space");
}

static void test_bar_io(void **state)
{
	struct fix *f = *state;
	uint64_t v = 0;

	assert_int_equal(rd32(f, 0, TFN_REG_MAGIC), TFN_MAGIC);
	v = 0x0102030405060708ull;
	assert_int_equal(rw(f, 0, TFN_REG_SCRATCH, &v, 8, true, 0), 0);
	v = 0;
	assert_int_equal(rw(f, 0, TFN_REG_SCRATCH + 4, &v, 4, false, 0), 0);
	assert_int_equal(v, 0x01020304);
	/* posted: no reply */
	v = 0x55;
	assert_int_equal(
		rw(f, 0, TFN_REG_SCRATCH, &v, 1, true, VFIO_USER_F_NO_REPLY),
		0);
	assert_int_equal(f->res.reply_len, 0);
	assert_int_equal(rd32(f, 0, TFN_REG_SCRATCH), 0x05060755);
	/* and a posted failure is silent too */
	assert_int_equal(
		rw(f, 0, TFN_BAR0_SIZE, &v, 4, true, VFIO_USER_F_NO_REPLY), 0);
	assert_int_equal(f->res.reply_len, 0);
	log_capture_expect(&f->lc, "past the end of the BAR");
	/* sizes, alignment, bounds, unimplemented regions */
	assert_int_equal(rw(f, 0, 0, &v, 3, false, 0), -EINVAL);
	assert_int_equal(rw(f, 0, 2, &v, 4, false, 0), -EINVAL);
	assert_int_equal(rw(f, 0, TFN_BAR0_SIZE - 4, &v, 8, false, 0), -EINVAL);
	assert_int_equal(rw(f, 0, ~0ull - 7, &v, 8, false, 0), -EINVAL);
	assert_int_equal(rw(f, 1, 0, &v, 4, false, 0), -EINVAL);
	assert_int_equal(rw(f, 3, 0, &v, 4, false, 0), -EINVAL);
	assert_int_equal(rw(f, 6, 0, &v, 4, false, 0), -EINVAL);
	assert_int_equal(rw(f, 8, 0, &v, 4, false, 0), -EINVAL);
	assert_int_equal(rw(f, 9, 0, &v, 4, false, 0), -EINVAL);
	/* count above max_data_xfer_size */
	{
		struct vfio_user_region_rw r = { 0, 0, VFIO_USER_MAX_XFER + 1 };

		send_msg(f, VFIO_USER_REGION_READ, &r, sizeof(r));
		expect_err(f, E2BIG);
	}
	/* a write whose count lies about its data */
	{
		uint8_t pl[24] = { 0 };
		struct vfio_user_region_rw r = { TFN_REG_SCRATCH, 0, 4 };

		memcpy(pl, &r, sizeof(r));
		send_msg(f, VFIO_USER_REGION_WRITE, pl, sizeof(pl));
		expect_err(f, EINVAL);
	}
}

/* ---- MSI-X ----------------------------------------------------------------
 */

static int set_irqs(struct fix *f, uint32_t flags, uint32_t start,
		    uint32_t count, int *fds, unsigned int nfds)
{
	struct vfio_user_irq_set s = { 20, flags, VFIO_USER_PCI_MSIX, start,
				       count };

	send_cmd(f, VFIO_USER_DEVICE_SET_IRQS, 0, &s, sizeof(s), fds, nfds);
	return -(int)f->res.reply.hdr.error_no;
}

static uint64_t drain(int efd)
{
	uint64_t n = 0;

	if (read(efd, &n, sizeof(n)) != sizeof(n))
		return 0;
	return n;
}

static void enable_msix(struct fix *f, uint16_t ctrl)
{
	uint8_t b[2] = { (uint8_t)ctrl, (uint8_t)(ctrl >> 8) };

	wr32(f, 7, PCI_COMMAND, PCI_COMMAND_MASTER | PCI_COMMAND_MEMORY);
	assert_int_equal(rw(f, 7, 0x42, b, 2, true, 0), 0);
}

static void test_msix(void **state)
{
	const uint32_t ev = VFIO_USER_IRQ_SET_DATA_EVENTFD |
			    VFIO_USER_IRQ_SET_ACTION_TRIGGER;
	struct fix *f = *state;
	struct pci_fn *fn = &f->dev->fn;
	int efd[2];
	uint64_t pba;

	efd[0] = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	efd[1] = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	assert_int_equal(set_irqs(f, ev, 64, 2, efd, 2), 0);
	/* kept by the server: still open here and there */
	assert_true(fd_open(efd[0]));
	/* MSI-X off: dropped */
	assert_int_equal(pci_fn_raise(fn, 64), 0);
	assert_int_equal(drain(efd[0]), 0);
	assert_int_equal(fn->stats.dropped, 1);
	enable_msix(f, PCI_MSIX_FLAGS_ENABLE);
	assert_int_equal(pci_fn_raise(fn, 64), 0);
	assert_int_equal(drain(efd[0]), 1);
	assert_int_equal(pci_fn_raise(fn, TFN_VECTORS), -EINVAL);
	/* vector mask bit: pending in the PBA's second word */
	wr32(f, 2, TFN_MSIX_TABLE + 65 * 16 + 12, 0xffffffff);
	assert_int_equal(rd32(f, 2, TFN_MSIX_TABLE + 65 * 16 + 12), 1);
	assert_int_equal(pci_fn_raise(fn, 65), 0);
	assert_int_equal(drain(efd[1]), 0);
	assert_int_equal(rw(f, 2, TFN_MSIX_PBA + 8, &pba, 8, false, 0), 0);
	assert_int_equal(pba, 2);
	wr32(f, 2, TFN_MSIX_TABLE + 65 * 16 + 12, 0);
	assert_int_equal(drain(efd[1]), 1);
	assert_int_equal(rw(f, 2, TFN_MSIX_PBA + 8, &pba, 8, false, 0), 0);
	assert_int_equal(pba, 0);
	/* function mask */
	enable_msix(f, PCI_MSIX_FLAGS_ENABLE | PCI_MSIX_FLAGS_MASKALL);
	assert_int_equal(pci_fn_raise(fn, 64), 0);
	assert_int_equal(drain(efd[0]), 0);
	enable_msix(f, PCI_MSIX_FLAGS_ENABLE);
	assert_int_equal(drain(efd[0]), 1);
	/* straddling the table end */
	assert_int_equal(rw(f, 2, TFN_MSIX_TABLE + TFN_VECTORS * 16 - 4, &pba,
			    8, false, 0),
			 -EINVAL);
	/* removing the fds (QEMU's fd -1), then DATA_NONE disables all */
	assert_int_equal(set_irqs(f, ev, 64, 1, NULL, 0), 0);
	assert_int_equal(fn->irq_fds[64], -1);
	assert_int_equal(set_irqs(f,
				  VFIO_USER_IRQ_SET_DATA_NONE |
					  VFIO_USER_IRQ_SET_ACTION_TRIGGER,
				  0, 0, NULL, 0),
			 0);
	assert_int_equal(fn->irq_fds[65], -1);
	close(efd[0]);
	close(efd[1]);
}

static void test_set_irqs_refusals_close_fds(void **state)
{
	const uint32_t ev = VFIO_USER_IRQ_SET_DATA_EVENTFD |
			    VFIO_USER_IRQ_SET_ACTION_TRIGGER;
	struct fix *f = *state;
	int fds[3], i;

	for (i = 0; i < 3; i++)
		fds[i] = eventfd(0, EFD_CLOEXEC);
	assert_int_equal(set_irqs(f, ev, 0, 2, fds, 3), -EINVAL);
	for (i = 0; i < 3; i++)
		assert_false(fd_open(fds[i]));
	fds[0] = eventfd(0, EFD_CLOEXEC);
	assert_int_equal(set_irqs(f, ev, TFN_VECTORS, 1, fds, 1), -EINVAL);
	assert_false(fd_open(fds[0]));
	fds[0] = eventfd(0, EFD_CLOEXEC);
	assert_int_equal(set_irqs(f, ev, 0xffffffff, 2, fds, 1), -EINVAL);
	assert_false(fd_open(fds[0]));
	/* refused for its argsz before the PCI layer sees it */
	{
		struct vfio_user_irq_set s = { 24, ev, 2, 0, 1 };
		uint8_t pl[24] = { 0 };

		fds[0] = eventfd(0, EFD_CLOEXEC);
		memcpy(pl, &s, sizeof(s));
		send_cmd(f, VFIO_USER_DEVICE_SET_IRQS, 0, pl, 20, fds, 1);
		expect_err(f, EINVAL);
		assert_false(fd_open(fds[0]));
	}
	/* masking through SET_IRQS, INTx, two data types */
	assert_int_equal(set_irqs(f,
				  VFIO_USER_IRQ_SET_DATA_NONE |
					  VFIO_USER_IRQ_SET_ACTION_UNMASK,
				  0, 1, NULL, 0),
			 -EINVAL);
	assert_int_equal(
		set_irqs(f, ev | VFIO_USER_IRQ_SET_DATA_BOOL, 0, 1, NULL, 0),
		-EINVAL);
	log_capture_expect(&f->lc, "not exactly one data type");
}

/*
 * Irq fds: eventfds only (the worker writes them from its one thread and
 * must never wait).  A memfd or file (a FUSE file ignores O_NONBLOCK), a
 * pipe, a socket, a timerfd (the eventfd's anonymous inode, but no write
 * method) and a device are refused and closed; a blocking eventfd is
 * taken and made non-blocking.
 */
static void test_set_irqs_eventfds_only(void **state)
{
	const uint32_t ev = VFIO_USER_IRQ_SET_DATA_EVENTFD |
			    VFIO_USER_IRQ_SET_ACTION_TRIGGER;
	static const char *const kinds[] = { "regular file", "pipe", "socket",
					     "not an eventfd", "device" };
	struct fix *f = *state;
	int p[2], sv[2], fds[5], efd, i;

	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv),
			 0);
	fds[0] = memfd_create("irq", MFD_CLOEXEC);
	fds[1] = p[1];
	fds[2] = sv[0];
	fds[3] = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
	fds[4] = open("/dev/null", O_RDONLY | O_CLOEXEC);
	close(p[0]);
	close(sv[1]);
	for (i = 0; i < 5; i++) {
		assert_true(fds[i] >= 0);
		assert_int_equal(set_irqs(f, ev, 0, 1, &fds[i], 1), -EINVAL);
		assert_false(fd_open(fds[i]));
		assert_int_equal(f->dev->fn.irq_fds[0], -1);
		log_capture_expect(&f->lc, kinds[i]);
	}
	/* one bad fd in a run refuses the run: none is taken */
	fds[0] = eventfd(0, EFD_CLOEXEC);
	fds[1] = memfd_create("irq", MFD_CLOEXEC);
	assert_int_equal(set_irqs(f, ev, 0, 2, fds, 2), -EINVAL);
	assert_false(fd_open(fds[0]) || fd_open(fds[1]));
	assert_int_equal(f->dev->fn.irq_fds[0], -1);
	efd = eventfd(0, EFD_CLOEXEC);
	fds[0] = fcntl(efd, F_DUPFD_CLOEXEC, 0);
	assert_int_equal(set_irqs(f, ev, 0, 1, fds, 1), 0);
	assert_true(fcntl(efd, F_GETFL) & O_NONBLOCK);
	close(efd);
}

/* ---- DMA -------------------------------------------------------------------
 */

static int dma_map(struct fix *f, uint64_t addr, uint64_t size, uint64_t offset,
		   const int *fds, unsigned int nfds)
{
	struct vfio_user_dma_map m = { 32, 3, offset, addr, size };

	send_cmd(f, VFIO_USER_DMA_MAP, 0, &m, sizeof(m), fds, nfds);
	return -(int)f->res.reply.hdr.error_no;
}

static int dma_map_flags(struct fix *f, uint64_t addr, uint64_t size,
			 uint32_t flags)
{
	/* every region at file offset addr - 1 MiB: distinct pages */
	struct vfio_user_dma_map m = { 32, flags, addr - 0x100000, addr, size };
	int fd = fcntl(f->ram.fd, F_DUPFD_CLOEXEC, 0);

	send_cmd(f, VFIO_USER_DMA_MAP, 0, &m, sizeof(m), &fd, 1);
	return -(int)f->res.reply.hdr.error_no;
}

static int dma_unmap(struct fix *f, uint64_t addr, uint64_t size,
		     uint32_t flags)
{
	struct vfio_user_dma_unmap u = { 24, flags, addr, size };

	send_msg(f, VFIO_USER_DMA_UNMAP, &u, sizeof(u));
	return -(int)f->res.reply.hdr.error_no;
}

static void test_dma(void **state)
{
	struct fix *f = *state;
	const struct guest_mem *gm = pci_fn_mem(&f->dev->fn);
	int dup = fcntl(f->ram.fd, F_DUPFD_CLOEXEC, 0);
	int fds[2] = { fcntl(f->ram.fd, F_DUPFD_CLOEXEC, 0), dup };

	assert_int_equal(dma_map(f, 0x100000, 0x10000, 0, NULL, 0), -EINVAL);
	log_capture_expect(&f->lc, "must be shared");
	assert_int_equal(dma_map(f, 0x100000, 0x10000, 0, fds, 2), -EINVAL);
	assert_false(fd_open(fds[0]) || fd_open(fds[1]));
	dup = fcntl(f->ram.fd, F_DUPFD_CLOEXEC, 0);
	assert_int_equal(dma_map(f, 0x100800, 0x10000, 0, &dup, 1), -EINVAL);
	dup = fcntl(f->ram.fd, F_DUPFD_CLOEXEC, 0);
	assert_int_equal(dma_map(f, 0x100000, 0x10000, 0, &dup, 1), 0);
	/* the server keeps its own copy: ours is closed, it still maps */
	assert_false(fd_open(dup));
	assert_int_equal(gm->nregions, 1);
	f->ram.map[0x20] = 0x5a;
	assert_int_equal(*(uint8_t *)gm_gpa_to_host(gm, 0x100020, 1), 0x5a);
	dup = fcntl(f->ram.fd, F_DUPFD_CLOEXEC, 0);
	assert_int_equal(dma_map(f, 0x108000, 0x10000, 0, &dup, 1), -EINVAL);
	dup = fcntl(f->ram.fd, F_DUPFD_CLOEXEC, 0);
	assert_int_equal(dma_map(f, 0x200000, 0x10000, 0x10000, &dup, 1), 0);
	assert_int_equal(rd32(f, 0, TFN_REG_MAPS), 2);
	/* unmap: exact, cut, missing, all */
	assert_int_equal(dma_unmap(f, 0x100000, 0x1000, 0), -EINVAL);
	assert_int_equal(dma_unmap(f, 0x300000, 0x1000, 0), -ENOENT);
	assert_int_equal(dma_unmap(f, 0x200000, 0x10000, 0), 0);
	expect_ok(f, 24);
	assert_int_equal(gm->nregions, 1);
	assert_int_equal(dma_unmap(f, 0, 0, VFIO_USER_DMA_UNMAP_F_ALL), 0);
	assert_int_equal(gm->nregions, 0);
	assert_int_equal(rd32(f, 0, TFN_REG_MAPS), 0);
}

/* Copies len bytes from src to dst with the test function's engine. */
static int32_t dma_copy(struct fix *f, uint64_t src, uint64_t dst, uint32_t len)
{
	wr32(f, 0, TFN_REG_DMA_SRC, (uint32_t)src);
	wr32(f, 0, TFN_REG_DMA_SRC + 4, (uint32_t)(src >> 32));
	wr32(f, 0, TFN_REG_DMA_DST, (uint32_t)dst);
	wr32(f, 0, TFN_REG_DMA_DST + 4, (uint32_t)(dst >> 32));
	wr32(f, 0, TFN_REG_DMA_LEN, len);
	wr32(f, 0, TFN_REG_DMA_GO, 1);
	return -(int32_t)rd32(f, 0, TFN_REG_STATUS);
}

/*
 * The VMM's DMA contract: DMA_MAP's READ/WRITE flags are kept, a
 * read-only region is never written (the device's write fails), a region
 * with neither flag is refused; clearing bus mastering reaches the device.
 */
static void test_dma_read_only(void **state)
{
	struct fix *f = *state;
	const struct guest_mem *gm = pci_fn_mem(&f->dev->fn);

	assert_int_equal(dma_map_flags(f, 0x100000, 0x10000, 0), -EINVAL);
	log_capture_expect(&f->lc, "neither read nor write");
	assert_int_equal(
		dma_map_flags(f, 0x100000, 0x10000, VFIO_USER_DMA_F_WRITE),
		-EINVAL);
	log_capture_expect(&f->lc, "write-only");
	assert_int_equal(gm->nregions, 0);
	/* ROM at 0x100000 (file offset 0), RAM at 0x110000 (0x10000) */
	assert_int_equal(
		dma_map_flags(f, 0x100000, 0x10000, VFIO_USER_DMA_F_READ), 0);
	assert_int_equal(
		dma_map_flags(f, 0x110000, 0x10000,
			      VFIO_USER_DMA_F_READ | VFIO_USER_DMA_F_WRITE),
		0);
	assert_int_equal(gm->regions[0].prot, PROT_READ);
	assert_int_equal(gm->regions[1].prot, PROT_READ | PROT_WRITE);
	wr32(f, 7, PCI_COMMAND, PCI_COMMAND_MASTER | PCI_COMMAND_MEMORY);
	/* reading ROM is fine; writing it is refused, nothing written */
	memcpy(f->ram.map + 0x100, "rom!", 4);
	assert_int_equal(dma_copy(f, 0x100100, 0x110200, 4), 0);
	assert_memory_equal(f->ram.map + 0x10200, "rom!", 4);
	memcpy(f->ram.map + 0x10300, "ram!", 4);
	assert_int_equal(dma_copy(f, 0x110300, 0x100400, 4), -EACCES);
	assert_int_equal(f->ram.map[0x400], 0);
	/* bus mastering off: the device is told (once), no more DMA */
	assert_int_equal(rd32(f, 0, TFN_REG_MASTER_OFF), 0);
	wr32(f, 7, PCI_COMMAND, PCI_COMMAND_MEMORY);
	assert_int_equal(rd32(f, 0, TFN_REG_MASTER_OFF), 1);
	wr32(f, 7, PCI_COMMAND, PCI_COMMAND_MEMORY);
	assert_int_equal(rd32(f, 0, TFN_REG_MASTER_OFF), 1);
	assert_int_equal(dma_copy(f, 0x100100, 0x110200, 4), -EPERM);
}

/* ---- reset ----------------------------------------------------------------
 */

static void test_reset(void **state)
{
	struct fix *f = *state;
	int efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	int dup = fcntl(f->ram.fd, F_DUPFD_CLOEXEC, 0);

	assert_int_equal(dma_map(f, 0, 0x10000, 0, &dup, 1), 0);
	assert_int_equal(set_irqs(f,
				  VFIO_USER_IRQ_SET_DATA_EVENTFD |
					  VFIO_USER_IRQ_SET_ACTION_TRIGGER,
				  0, 1, &efd, 1),
			 0);
	enable_msix(f, PCI_MSIX_FLAGS_ENABLE);
	wr32(f, 0, TFN_REG_SCRATCH, 9);
	send_msg(f, VFIO_USER_DEVICE_RESET, NULL, 0);
	expect_ok(f, 0);
	assert_int_equal(f->dev->fn.irq_fds[0], -1);
	assert_int_equal(rd32(f, 7, PCI_COMMAND) & 0xffff, 0);
	assert_int_equal(rd32(f, 0, TFN_REG_SCRATCH), 0);
	assert_int_equal(rd32(f, 0, TFN_REG_RESETS), 1);
	assert_int_equal(rd32(f, 0, TFN_REG_MAPS), 1);
	close(efd);
}

/* ---- the device description ------------------------------------------------
 */

static void test_ops_check(void **state)
{
	struct pci_fn_ops o;
	struct reason why;

	assert_int_equal(pci_fn_ops_check(&pci_test_fn_ops, &why), 0);
#define BAD(field, value, needle)                                              \
	do {                                                                   \
		o = pci_test_fn_ops;                                           \
		o.field = value;                                               \
		assert_int_equal(pci_fn_ops_check(&o, &why), -EINVAL);         \
		assert_non_null(strstr(why.msg, needle));                      \
	} while (0)
	BAD(bars[0].size, 100, "power of 2");
	BAD(bars[0].size, 8, "power of 2");
	BAD(bars[0].size, 1ull << 31, "power of 2");
	BAD(bars[1].flags, PCI_FN_BAR_PREFETCH, "size 0");
	BAD(bars[0].flags, 0x80, "unknown BAR flags");
	BAD(bars[3].size, 4096, "64-bit");
	BAD(msix.vectors, 0, "vectors");
	BAD(msix.vectors, 2049, "vectors");
	BAD(msix.bar, 1, "not implemented");
	BAD(msix.bar, 6, "not implemented");
	BAD(msix.table_offset, 4, "aligned");
	BAD(msix.pba_offset, TFN_BAR2_SIZE, "outside");
	BAD(msix.table_offset, TFN_BAR2_SIZE - 16, "outside");
	BAD(msix.pba_offset, 0x100, "overlap");
	BAD(bar_read, NULL, "callback");
#undef BAD
	o = pci_test_fn_ops;
	o.bars[5] = (struct pci_fn_bar){ 4096, PCI_FN_BAR_MEM64 };
	assert_int_equal(pci_fn_ops_check(&o, &why), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_framing, setup, teardown),
		cmocka_unit_test_setup_teardown(test_payload_sizes, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_unknown_commands, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_version, setup_raw,
						teardown),
		cmocka_unit_test_setup_teardown(test_version_refusals,
						setup_raw, teardown),
		cmocka_unit_test_setup_teardown(test_info, setup, teardown),
		cmocka_unit_test_setup_teardown(test_config_space, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_bar_io, setup, teardown),
		cmocka_unit_test_setup_teardown(test_msix, setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_set_irqs_refusals_close_fds, setup, teardown),
		cmocka_unit_test_setup_teardown(test_set_irqs_eventfds_only,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_dma, setup, teardown),
		cmocka_unit_test_setup_teardown(test_dma_read_only, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_reset, setup, teardown),
		cmocka_unit_test(test_ops_check),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
