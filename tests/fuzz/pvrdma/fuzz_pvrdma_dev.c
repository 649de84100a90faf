// SPDX-License-Identifier: MIT
/*
 * libFuzzer target: the whole PVRDMA function, as a hostile guest drives
 * it, on the unit tests' fake backend and fake guest RAM. The harness
 * probes the device as vmw_pvrdma does (DSR, ACTIVATE), pre-builds page
 * directories for a few rings, then runs the input as a program of
 * operations: guest RAM writes, register and doorbell accesses, commands,
 * host completions and events, resets. ASan/UBSan catch memory errors,
 * LeakSanitizer leaks when the function is destroyed.
 *
 * Input: records of [op u8] then the op's bytes (see run()).
 */
#include <stdint.h>
#include <string.h>

#include "common/log.h"
#include "worker/pvrdma/pvrdma.h"
#include "../../unit/worker/pvrdma/fake_be.h"
#include "../../unit/worker/pvrdma/fake_ram.h"

#define PAGES 48

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct h {
	struct fake_ram ram;
	struct pci_fn fn;
	struct pvrdma_cfg cfg;
	struct dev_env env;
	void *priv;
};

static void reg(struct h *h, uint32_t off, uint32_t val)
{
	pvrdma_fn_ops.bar_write(h->priv, 1, off, 4, val);
}

/* The DSR at page 0, slots at 1 and 2, event rings at 3.. and 9.. */
static void probe(struct h *h)
{
	struct pvrdma_device_shared_region d;

	memset(&d, 0, sizeof(d));
	d.driver_version = PVRDMA_QPHANDLE_VERSION;
	d.cmd_slot_dma = fake_ram_gpa(1);
	d.resp_slot_dma = fake_ram_gpa(2);
	d.async_ring_pages.num_pages = 4;
	d.async_ring_pages.pdir_dma = fake_ram_pdir(&h->ram, 3, 4, 5, 4);
	d.cq_ring_pages.num_pages = 4;
	d.cq_ring_pages.pdir_dma = fake_ram_pdir(&h->ram, 9, 10, 11, 4);
	memcpy(fake_ram_ptr(&h->ram, fake_ram_gpa(0), sizeof(d)), &d,
	       sizeof(d));
	reg(h, PVRDMA_REG_DSRLOW, (uint32_t)fake_ram_gpa(0));
	reg(h, PVRDMA_REG_DSRHIGH, 0);
	reg(h, PVRDMA_REG_IMR, 0);
	reg(h, PVRDMA_REG_CTL, PVRDMA_DEVICE_CTL_ACTIVATE);
	/* directories of 4 pages each at 15.., 21.., 27.., 33.. for rings */
	fake_ram_pdir(&h->ram, 15, 16, 17, 4);
	fake_ram_pdir(&h->ram, 21, 22, 23, 4);
	fake_ram_pdir(&h->ram, 27, 28, 29, 4);
	fake_ram_pdir(&h->ram, 33, 34, 35, 4);
}

static size_t take(const uint8_t **p, size_t *n, void *out, size_t len)
{
	size_t k = *n < len ? *n : len;

	memset(out, 0, len);
	memcpy(out, *p, k);
	*p += k;
	*n -= k;
	return k;
}

static void run(struct h *h, const uint8_t *p, size_t n)
{
	union pvrdma_cmd_req req;
	uint8_t op, b[4];
	uint32_t v;
	uint16_t off;
	uint64_t val;
	uint8_t *dst;
	unsigned int steps;

	for (steps = 0; n && steps < 256; steps++) {
		take(&p, &n, &op, 1);
		switch (op % 8) {
		case 0: /* guest RAM write: page, offset/8, len, bytes */
			take(&p, &n, b, 3);
			dst = fake_ram_ptr(&h->ram,
					   fake_ram_gpa(b[0] % PAGES) +
						   (uint64_t)b[1] * 16,
					   b[2]);
			if (dst)
				take(&p, &n, dst, b[2]);
			break;
		case 1: /* command: its bytes into the slot, then REQUEST */
			memset(&req, 0, sizeof(req));
			take(&p, &n, &req, sizeof(req));
			req.hdr.cmd %= PVRDMA_CMD_MAX + 1;
			memcpy(fake_ram_ptr(&h->ram, fake_ram_gpa(1),
					    sizeof(req)),
			       &req, sizeof(req));
			reg(h, PVRDMA_REG_REQUEST, 0);
			break;
		case 2: /* doorbell: a message, or a store then a look */
			take(&p, &n, &off, 2);
			take(&p, &n, &v, 4);
			if (!h->cfg.uar) {
				pvrdma_fn_ops.bar_write(h->priv, 2, off & ~3u,
							4, v);
				break;
			}
			/* any word of the first 64 pages, any value */
			__atomic_store_n(&h->cfg.uar[off], v, __ATOMIC_RELEASE);
			pvrdma_fn_ops.poll(h->priv);
			break;
		case 3: /* register write */
			take(&p, &n, b, 1);
			take(&p, &n, &v, 4);
			reg(h, (b[0] % 16) * 4, v);
			break;
		case 4: /* register / UAR read of any size */
			take(&p, &n, b, 2);
			pvrdma_fn_ops.bar_read(h->priv, b[0] % 3, b[1] * 4,
					       1u << (b[0] >> 6), &val);
			break;
		case 5: /* a host completion on QP b[0] */
			take(&p, &n, b, 3);
			if (fake_be_last && b[0] < FAKE_MAX &&
			    fake_be_last->qp[b[0]].live)
				fake_be_complete(fake_be_last, b[0], b[1] & 1,
						 b[2], b[1] >> 1,
						 (b[1] & 1) ? IBV_WC_RECV
							    : IBV_WC_SEND,
						 b[2]);
			break;
		case 6: /* a host event */
			take(&p, &n, b, 3);
			if (fake_be_last && b[2] < FAKE_MAX)
				fake_be_event(fake_be_last, b[0] % 20, b[1] % 5,
					      b[2]);
			break;
		default: /* bus mastering, reset */
			take(&p, &n, b, 1);
			if (b[0] & 1) {
				h->fn.bus_master = !h->fn.bus_master;
				pvrdma_fn_ops.bus_master(h->priv,
							 h->fn.bus_master);
			}
			if (b[0] & 2)
				pvrdma_fn_ops.reset(h->priv);
			if (b[0] & 4)
				probe(h);
		}
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* the UAR BAR as shared memory (docs/pvrdma.md), for odd inputs */
	static uint32_t uar[PVRDMA_BAR2_UAR_SIZE / sizeof(uint32_t)];
	struct h h;

	/* refusals are the point here: keep them out of the output */
	log_set_level(LOG_LVL_ERR);
	memset(&h, 0, sizeof(h));
	if (fake_ram_init(&h.ram, PAGES) < 0)
		return 0;
	fake_fn_init(&h.fn, &h.ram);
	h.cfg.be.gid_tbl_len = 16;
	h.cfg.uar_fd = -1;
	if (size && (data[0] & 1)) {
		/* the words a doorbell step can store to (off: 16 bits) */
		memset(uar, 0, (UINT16_MAX + 1) * sizeof(uar[0]));
		h.cfg.uar = uar;
		h.cfg.doorbell_poll_ms = 10;
	}
	h.env.cfg = &h.cfg;
	if (pvrdma_fn_ops.create(&h.fn, &h.env, &h.priv) == 0) {
		probe(&h);
		run(&h, data, size);
		pvrdma_fn_ops.destroy(h.priv);
	}
	fake_ram_free(&h.ram);
	return 0;
}
