/* SPDX-License-Identifier: MIT */
/*
 * Test double of the worker's verbs backend (worker/backend/backend.h) and
 * of the vfio-user services a PCI function calls (pci_fn_raise/mem/
 * bus_master), for the PVRDMA device's unit tests: objects are counted,
 * posts recorded, completions injected by the test.
 */
#ifndef RDMAGATE_TESTS_UNIT_PVRDMA_FAKE_BE_H
#define RDMAGATE_TESTS_UNIT_PVRDMA_FAKE_BE_H

#include <stdbool.h>
#include <stdint.h>

#include "worker/backend/backend.h"
#include "worker/guest_mem.h"
#include "fake_ram.h"

#define FAKE_MAX 64

struct fake_obj {
	bool live;
	void *ctx;
	uint32_t pd; /* PD of an MR/QP/SRQ */
	uint32_t qpn;
	uint32_t scq, rcq; /* a QP's CQs */
};

struct be {
	const struct be_frontend_ops *ops;
	void *fe;
	struct ibv_device_attr attr;
	struct fake_obj pd[FAKE_MAX], mr[FAKE_MAX], cq[FAKE_MAX];
	struct fake_obj qp[FAKE_MAX], srq[FAKE_MAX];
	bool gid[BE_MAX_GIDS];
	unsigned int sends, recvs, srq_recvs, resets, cq_errors, polls;
	struct be_send_wr last_send;
	struct be_sge last_send_sge[BE_MAX_SGE];
	struct be_recv_wr last_recv;
	unsigned int last_mr_access; /* of the last MR registered */
	int gid_add_result;	     /* 0, BE_PENDING or -errno */
	enum be_post post_result;
	enum ibv_wc_status post_status;
	/* be_mem_revoke() calls, and the last one's range */
	unsigned int revokes;
	uint64_t revoke_gpa, revoke_size;
};

/* The backend the device made last (the tests' handle on it). */
extern struct be *fake_be_last;

/* Live objects of every kind (0 after a clean teardown). */
unsigned int fake_be_live(const struct be *be);

/* Hands a completion of QP handle qp to the device (as the host would). */
void fake_be_complete(struct be *be, uint32_t qp, bool recv, uint64_t cookie,
		      enum ibv_wc_status status, enum ibv_wc_opcode op,
		      uint32_t byte_len);

/* Hands a host async event on QP/CQ/SRQ `handle` (or the port) over. */
void fake_be_event(struct be *be, enum ibv_event_type type, enum be_obj obj,
		   uint32_t handle);

/* The vfio-user services, faked. */
struct pci_fn {
	struct guest_mem gm;
	bool bus_master;
	unsigned int raised[3];
};

/* A function whose one DMA region is ram, with bus mastering on. */
void fake_fn_init(struct pci_fn *fn, struct fake_ram *ram);

#endif
