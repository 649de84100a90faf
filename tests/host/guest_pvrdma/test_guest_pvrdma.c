// SPDX-License-Identifier: MIT
/*
 * host suite: the guest simulator's PVRDMA driver (guest/pvrdma_drv.c)
 * against the real worker's vfio-user frontend, where no verbs device is
 * needed: the firmware half of the probe (BAR sizing and placement on the
 * worker's config space emulation), the PCI ID match refusing a function
 * that is not 15ad:0820, clean disconnects, and no worker at all. The
 * PVRDMA device itself needs verbs: tests/vm/pvrdma-guest.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "guest/pvrdma_drv.h"
#include "guest/verbs.h"
#include "guest/verbs_transport.h"
#include "tests/host/harness.h"
#include "worker/vfio_user/test_fn.h"

/* Zeroed pages of the low slot, the way gv_pt_get() hands them out. */
static int page_get(void *arg, uint64_t *ret_gpa)
{
	struct pvrdma_drv *drv = arg;
	int r = guest_ram_alloc_in(&drv->ram, 0, 4096, 4096, ret_gpa);

	if (!r)
		memset(guest_ram_ptr(&drv->ram, *ret_gpa, 4096), 0, 4096);
	return r;
}

static void page_put(void *arg, uint64_t gpa)
{
	(void)arg;
	(void)gpa;
}

static void drv_release(struct pvrdma_drv *drv)
{
	pvrdma_drv_remove(drv);
}

static uint64_t cfg_bar(const struct pvrdma_drv *drv, unsigned int bar)
{
	uint32_t lo, hi;

	memcpy(&lo, drv->vc.config + 0x10 + 4 * bar, 4);
	memcpy(&hi, drv->vc.config + 0x14 + 4 * bar, 4);
	return (uint64_t)hi << 32 | lo;
}

/*
 * Firmware sizes and places every BAR before the PCI core matches IDs:
 * the test function's 4 KiB BAR0 lands in the 32-bit window, its 64-bit
 * 8 KiB BAR2 above 1 TiB; then the driver is not bound (-ENODEV).
 */
static int firmware_places_bars_then_id_refused(struct worker *w)
{
	__attribute__((cleanup(drv_release))) struct pvrdma_drv drv;
	struct pvrdma_pages pages = { page_get, page_put, &drv };
	struct pvrdma_drv_opts o = { .timeout_ms = H_TIMEOUT_MS };
	uint64_t bar0, bar2;

	pvrdma_drv_init(&drv, &pages);
	CHECK(guest_ram_add_region(&drv.ram, 0, 1 << 20, GUEST_PAGE_4K) == 0);
	worker_log_mark(w);
	CHECK_ERR(pvrdma_drv_probe(&drv, w->sock, &o), -ENODEV);
	bar0 = cfg_bar(&drv, 0);
	bar2 = cfg_bar(&drv, 2);
	printf("# BAR0 %#llx BAR2 %#llx\n", (unsigned long long)bar0,
	       (unsigned long long)bar2);
	CHECK((bar0 & ~0xfull) == 0xe0000000ull);
	CHECK((bar2 & ~0xfull) == 1ull << 40);
	CHECK((bar2 & 0x6) == 0x4); /* still a 64-bit BAR */
	/* nothing was written to a device the driver does not own */
	CHECK(!drv.active && drv.dsr_gpa == 0);
	CHECK(worker_alive(w));
	return 0;
}

/* Through the verbs: gv_open() says ENODEV, twice (the worker takes the
 * reconnect), and leaves nothing behind. */
static int verbs_open_refused_and_worker_serves_on(struct worker *w)
{
	struct gv_opts o = { .transport = GV_TRANSPORT_PVRDMA,
			     .timeout_ms = H_TIMEOUT_MS,
			     .data_size = 1 << 20,
			     .low_size = 1 << 20 };
	struct gv_context *ctx = NULL;
	static const char *const gone[] = { "disconnected", NULL };

	for (int i = 0; i < 2; i++) {
		worker_log_mark(w);
		CHECK_ERR(gv_open(w->sock, &o, &ctx), -ENODEV);
		CHECK(ctx == NULL);
		CHECK(worker_log_waitv(w, H_TIMEOUT_MS, gone));
		CHECK(worker_alive(w));
	}
	return 0;
}

/* No worker: an error, not a crash or a hang. */
static int no_worker_is_an_error(struct worker *w)
{
	struct gv_opts o = { .transport = GV_TRANSPORT_PVRDMA,
			     .timeout_ms = H_TIMEOUT_MS };
	char path[160];
	struct gv_context *ctx = NULL;
	int r;

	snprintf(path, sizeof(path), "%s/nobody.sock", w->dir);
	r = gv_open(path, &o, &ctx);
	printf("# gv_open: %s\n", strerror(-r));
	CHECK(r == -ENOENT || r == -ECONNREFUSED);
	CHECK(ctx == NULL);
	return 0;
}

static const struct h_case cases[] = {
	{ "firmware-places-bars-then-id-refused",
	  firmware_places_bars_then_id_refused },
	{ "verbs-open-refused-and-worker-serves-on",
	  verbs_open_refused_and_worker_serves_on },
	{ "no-worker-is-an-error", no_worker_is_an_error },
};

int main(int argc, char **argv)
{
	h_vfio_user = true;
	return h_run(argc, argv, cases, sizeof(cases) / sizeof(cases[0]));
}
