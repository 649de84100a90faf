// SPDX-License-Identifier: MIT
/*
 * The PVRDMA function driven as the vmw_pvrdma driver and provider drive
 * it, through its BARs and a fake guest RAM, on a fake backend: probe,
 * commands, doorbells, completions, events; and the pvrdma CVE record
 * (QEMU's hw/rdma/vmw fixes), each refused cleanly while the device keeps
 * serving its other objects, without leaks over a thousand repetitions.
 */
#include <dirent.h>
#include <errno.h>
#include <malloc.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "common/clock.h"
#include "worker/pvrdma/cmd.h"
#include "worker/pvrdma/pvrdma.h"
#include "tests/unit/log_capture.h"
#include "fake_be.h"
#include "fake_ram.h"

/*
 * Under AddressSanitizer malloc is ASan's (mallinfo2() sees nothing) and
 * freed blocks wait in its quarantine (RSS grows): LeakSanitizer checks
 * leaks at exit instead.
 */
#if defined(__SANITIZE_ADDRESS__)
#define HEAP_CHECKS 0
#else
#define HEAP_CHECKS 1
#endif

/* Guest RAM pages (fake_ram_gpa(n)). */
enum {
	P_DSR = 0,
	P_CMD = 1,
	P_RESP = 2,
	P_ASYNC = 3, /* dir, table, 4 ring pages */
	P_CQN = 9,   /* dir, table, 4 ring pages */
	P_CQ = 15,   /* dir, table, 2 ring pages */
	P_QP = 19,   /* dir, table, 3 ring pages */
	P_QP2 = 24,  /* dir, table, 3 ring pages */
	P_MR = 29,   /* dir, table, 2 pages */
	P_SRQ = 33,  /* dir, table, 2 ring pages */
	P_CQ2 = 37,  /* dir, table, 2 ring pages */
	P_TOTAL = 64,
};

struct t {
	struct fake_ram ram;
	struct pci_fn fn;
	struct pvrdma_cfg cfg;
	struct dev_env env;
	void *priv;
};

static struct t T;

static uint32_t rd(uint64_t off)
{
	uint64_t v = 0;

	assert_int_equal(pvrdma_fn_ops.bar_read(T.priv, 1, off, 4, &v), 0);
	return (uint32_t)v;
}

static void wr(uint64_t off, uint32_t val)
{
	assert_int_equal(pvrdma_fn_ops.bar_write(T.priv, 1, off, 4, val), 0);
}

static void uar(uint64_t off, uint32_t val)
{
	assert_int_equal(pvrdma_fn_ops.bar_write(T.priv, 2, off, 4, val), 0);
}

static void *ram(uint64_t page, uint64_t off)
{
	return fake_ram_ptr(&T.ram, fake_ram_gpa(page) + off, 1);
}

static void write_dsr(void)
{
	struct pvrdma_device_shared_region d;

	memset(&d, 0, sizeof(d));
	d.driver_version = PVRDMA_QPHANDLE_VERSION;
	d.cmd_slot_dma = fake_ram_gpa(P_CMD);
	d.resp_slot_dma = fake_ram_gpa(P_RESP);
	d.async_ring_pages.num_pages = 4;
	d.async_ring_pages.pdir_dma =
		fake_ram_pdir(&T.ram, P_ASYNC, P_ASYNC + 1, P_ASYNC + 2, 4);
	d.cq_ring_pages.num_pages = 4;
	d.cq_ring_pages.pdir_dma =
		fake_ram_pdir(&T.ram, P_CQN, P_CQN + 1, P_CQN + 2, 4);
	d.uar_pfn64 = 0xfe000;
	memcpy(ram(P_DSR, 0), &d, sizeof(d));
}

static void set_dsr(void)
{
	wr(PVRDMA_REG_DSRLOW, (uint32_t)fake_ram_gpa(P_DSR));
	wr(PVRDMA_REG_DSRHIGH, 0);
}

static void probe(void)
{
	write_dsr();
	set_dsr();
	wr(PVRDMA_REG_IMR, 0);
	wr(PVRDMA_REG_CTL, PVRDMA_DEVICE_CTL_ACTIVATE);
	assert_int_equal(rd(PVRDMA_REG_ERR), 0);
}

/* Posts a command as pvrdma_cmd_post() does; returns REG_ERR. */
static uint32_t cmd(union pvrdma_cmd_req *req, union pvrdma_cmd_resp *resp)
{
	uint32_t err;

	req->hdr.response = 0x5eed;
	memset(ram(P_RESP, 0), 0, sizeof(*resp));
	memcpy(ram(P_CMD, 0), req, sizeof(*req));
	wr(PVRDMA_REG_REQUEST, 0);
	err = rd(PVRDMA_REG_ERR);
	if (resp)
		memcpy(resp, ram(P_RESP, 0), sizeof(*resp));
	return err;
}

static uint32_t create_pd(void)
{
	union pvrdma_cmd_req req = { .hdr.cmd = PVRDMA_CMD_CREATE_PD };
	union pvrdma_cmd_resp resp;

	assert_int_equal(cmd(&req, &resp), 0);
	assert_int_equal(resp.hdr.ack, PVRDMA_CMD_RESP(PVRDMA_CMD_CREATE_PD));
	assert_int_equal(resp.hdr.response, 0x5eed);
	return resp.create_pd_resp.pd_handle;
}

static uint32_t create_cq(unsigned int page, uint32_t *ret_err)
{
	union pvrdma_cmd_req req;
	union pvrdma_cmd_resp resp;

	memset(&req, 0, sizeof(req));
	req.hdr.cmd = PVRDMA_CMD_CREATE_CQ;
	req.create_cq.cqe = 64;
	req.create_cq.nchunks = 2;
	req.create_cq.pdir_dma =
		fake_ram_pdir(&T.ram, page, page + 1, page + 2, 2);
	*ret_err = cmd(&req, &resp);
	return resp.create_cq_resp.cq_handle;
}

/* An RC QP of 16 x 2-SGE sends and receives, rings at `page`. */
static void qp_req(union pvrdma_cmd_req *req, unsigned int page, uint32_t pd,
		   uint32_t cq)
{
	memset(req, 0, sizeof(*req));
	req->hdr.cmd = PVRDMA_CMD_CREATE_QP;
	req->create_qp.pdir_dma =
		fake_ram_pdir(&T.ram, page, page + 1, page + 2, 3);
	req->create_qp.pd_handle = pd;
	req->create_qp.send_cq_handle = cq;
	req->create_qp.recv_cq_handle = cq;
	req->create_qp.max_send_wr = 16;
	req->create_qp.max_recv_wr = 16;
	req->create_qp.max_send_sge = 2;
	req->create_qp.max_recv_sge = 2;
	req->create_qp.send_chunks = 1; /* SQ pages, not the state page */
	req->create_qp.total_chunks = 3;
	req->create_qp.qp_type = PVRDMA_QPT_RC;
}

/* An SRQ of 16 x 2-SGE receives on PD pd, ring at P_SRQ. */
static void srq_req(union pvrdma_cmd_req *req, uint32_t pd)
{
	memset(req, 0, sizeof(*req));
	req->hdr.cmd = PVRDMA_CMD_CREATE_SRQ;
	req->create_srq.pd_handle = pd;
	req->create_srq.attrs.max_wr = 16;
	req->create_srq.attrs.max_sge = 2;
	req->create_srq.nchunks = 2;
	req->create_srq.pdir_dma =
		fake_ram_pdir(&T.ram, P_SRQ, P_SRQ + 1, P_SRQ + 2, 2);
}

static uint32_t create_qp(unsigned int page, uint32_t pd, uint32_t cq)
{
	union pvrdma_cmd_req req;
	union pvrdma_cmd_resp resp;

	qp_req(&req, page, pd, cq);
	assert_int_equal(cmd(&req, &resp), 0);
	assert_int_not_equal(resp.create_qp_resp_v2.qp_handle, 0);
	assert_int_equal(resp.create_qp_resp_v2.qpn,
			 0x1000 + resp.create_qp_resp_v2.qp_handle);
	return resp.create_qp_resp_v2.qp_handle;
}

/* Writes send WQE `slot` of the QP at `page` and bumps its prod_tail. */
static void post_send(unsigned int page, uint32_t slot, uint32_t nsge,
		      uint64_t wr_id)
{
	struct pvrdma_sq_wqe_hdr h;
	struct pvrdma_sge sge = { 0x4000, 128, 0x101 };
	struct pvrdma_ring *ring = ram(page + 2, 0);
	uint8_t *w = ram(page + 3, 128 * slot);
	uint32_t i;

	memset(&h, 0, sizeof(h));
	h.wr_id = wr_id;
	h.num_sge = nsge;
	h.opcode = PVRDMA_WR_SEND;
	h.send_flags = PVRDMA_SEND_SIGNALED;
	memcpy(w, &h, sizeof(h));
	for (i = 0; i < nsge && i < 2; i++)
		memcpy(w + sizeof(h) + 16 * i, &sge, sizeof(sge));
	ring->prod_tail = (ring->prod_tail + 1) & 31;
}

static struct pvrdma_cqe *cqe_at(unsigned int page, uint32_t slot)
{
	return ram(page + 3, 64 * slot);
}

static struct pvrdma_ring *cq_ring(unsigned int page)
{
	return ram(page + 2, PVRDMA_RING_STATE_CQ_OFFSET);
}

static int setup(void **state)
{
	(void)state;
	memset(&T, 0, sizeof(T));
	assert_int_equal(fake_ram_init(&T.ram, P_TOTAL), 0);
	fake_fn_init(&T.fn, &T.ram);
	T.cfg.be.gid_tbl_len = 16;
	memcpy(T.cfg.mac, "\x52\x54\x00\x12\x34\x56", 6);
	T.env.cfg = &T.cfg;
	assert_int_equal(pvrdma_fn_ops.create(&T.fn, &T.env, &T.priv), 0);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	pvrdma_fn_ops.destroy(T.priv);
	fake_ram_free(&T.ram);
	return 0;
}

static void test_probe_writes_caps(void **state)
{
	struct pvrdma_device_shared_region *d = ram(P_DSR, 0);

	(void)state;
	assert_int_equal(rd(PVRDMA_REG_VERSION), PVRDMA_DEVICE_VERSION);
	assert_int_equal(rd(PVRDMA_REG_ERR), PVRDMA_ERR_NOT_ACTIVE);
	assert_int_equal(rd(PVRDMA_REG_MACL), 0x12005452);
	probe();
	assert_int_equal(d->caps.gid_types, PVRDMA_GID_TYPE_FLAG_ROCE_V2);
	assert_int_equal(d->caps.mode, PVRDMA_DEVICE_MODE_ROCE);
	assert_int_equal(d->caps.max_qp, FAKE_MAX); /* handles 1..63 */
	assert_int_equal(d->caps.gid_tbl_len, 16);
	assert_int_equal(d->caps.max_uar, PVRDMA_UAR_PAGES);
	assert_int_equal(d->caps.vendor_id, PVRDMA_PCI_VENDOR_ID);
	/* EUI-64 of 52:54:00:12:34:56, big-endian in guest memory */
	assert_memory_equal(&d->caps.node_guid,
			    "\x50\x54\x00\xff\xfe\x12\x34\x56", 8);
}

/*
 * Without a configured GID table length, as many entries as an address
 * vector's u8 gid_index can name (not the backend's 512: an entry above
 * 255 could be bound and never used); a longer configured one is cut so.
 */
static void test_default_gid_table(void **state)
{
	struct pvrdma_device_shared_region *d = ram(P_DSR, 0);

	(void)state;
	pvrdma_fn_ops.destroy(T.priv);
	T.cfg.be.gid_tbl_len = 0;
	assert_int_equal(pvrdma_fn_ops.create(&T.fn, &T.env, &T.priv), 0);
	probe();
	assert_int_equal(d->caps.gid_tbl_len, 256);
	pvrdma_fn_ops.destroy(T.priv);
	T.cfg.be.gid_tbl_len = BE_MAX_GIDS;
	assert_int_equal(pvrdma_fn_ops.create(&T.fn, &T.env, &T.priv), 0);
	probe();
	assert_int_equal(d->caps.gid_tbl_len, 256);
}

/* A probed device with a PD, a CQ at P_CQ and an RC QP at P_QP on it. */
static void probe_pd_cq_qp(uint32_t *ret_cq, uint32_t *ret_qp)
{
	uint32_t err, pd;

	probe();
	pd = create_pd();
	*ret_cq = create_cq(P_CQ, &err);
	assert_int_equal(err, 0);
	*ret_qp = create_qp(P_QP, pd, *ret_cq);
}

static void test_send_completes_into_the_guest_cq(void **state)
{
	uint32_t cq, qp;
	struct pvrdma_cqne *n = ram(P_CQN + 3, 0);
	struct pvrdma_ring *cqn = ram(P_CQN + 2, 8);

	(void)state;
	probe_pd_cq_qp(&cq, &qp);
	post_send(P_QP, 0, 2, 0xabc);
	uar(PVRDMA_UAR_QP_OFFSET, PVRDMA_UAR_QP_SEND | qp);
	assert_int_equal(fake_be_last->sends, 1);
	assert_int_equal(fake_be_last->last_send.cookie, 0xabc);
	assert_int_equal(fake_be_last->last_send.num_sge, 2);
	assert_int_equal(fake_be_last->last_send_sge[1].lkey, 0x101);
	/* the device consumed the WQE */
	assert_int_equal(((struct pvrdma_ring *)ram(P_QP + 2, 0))->cons_head,
			 1);
	/* armed CQ: the completion is a CQE, a notification and vector 2 */
	uar(PVRDMA_UAR_CQ_OFFSET + 0x1000, PVRDMA_UAR_CQ_ARM | cq);
	fake_be_complete(fake_be_last, qp, false, 0xabc, IBV_WC_SUCCESS,
			 IBV_WC_SEND, 256);
	assert_int_equal(cq_ring(P_CQ)->prod_tail, 1);
	assert_int_equal(cqe_at(P_CQ, 0)->wr_id, 0xabc);
	assert_int_equal(cqe_at(P_CQ, 0)->qp, qp);
	assert_int_equal(cqe_at(P_CQ, 0)->opcode, PVRDMA_WC_SEND);
	assert_int_equal(cqe_at(P_CQ, 0)->byte_len, 256);
	assert_int_equal(cqn->prod_tail, 1);
	assert_int_equal(n->info, cq);
	assert_int_equal(T.fn.raised[PVRDMA_INTR_VECTOR_CQ], 1);
	/* not re-armed: the next completion notifies nobody */
	fake_be_complete(fake_be_last, qp, true, 0xdef, IBV_WC_SUCCESS,
			 IBV_WC_RECV, 10);
	assert_int_equal(cq_ring(P_CQ)->prod_tail, 2);
	assert_int_equal(cqe_at(P_CQ, 1)->opcode, PVRDMA_WC_RECV);
	assert_int_equal(cqn->prod_tail, 1);
	/* POLL passes down to the host CQ */
	uar(PVRDMA_UAR_CQ_OFFSET, PVRDMA_UAR_CQ_POLL | cq);
	assert_int_equal(fake_be_last->polls, 1);
}

/* The backend completes a signalled 8-byte SEND of qp. */
static void send_done(uint32_t qp, uint64_t wr_id)
{
	fake_be_complete(fake_be_last, qp, false, wr_id, IBV_WC_SUCCESS,
			 IBV_WC_SEND, 8);
}

/*
 * The request-response split of the device stats line: a round runs from
 * a SEND posted to the host to the next receive's CQE (the device's part);
 * the guest's part from that CQE to the next SEND.  Only lower bounds are
 * checked (each part slept at least that long).
 */
static void test_request_response_split(void **state)
{
	unsigned long long rounds = 0, dev_us = 0, guest_us = 0;
	unsigned long long dev_med = 0, guest_med = 0, dev_90 = 0, guest_90 = 0;
	unsigned long long ack_med = 0, ack_90 = 0;
	struct log_capture lc;
	const char *l;
	uint32_t cq, qp, i;

	(void)state;
	probe_pd_cq_qp(&cq, &qp);
	for (i = 0; i < 2; i++) {
		post_send(P_QP, i, 1, 0x10 + i);
		uar(PVRDMA_UAR_QP_OFFSET, PVRDMA_UAR_QP_SEND | qp);
		usleep(3000);
		/* the send's own completion (the ACK: timed, once) and a
		 * failed receive: no round */
		send_done(qp, 0x10 + i);
		send_done(qp, 0x40 + i);
		usleep(1000);
		fake_be_complete(fake_be_last, qp, true, 0x30,
				 IBV_WC_WR_FLUSH_ERR, IBV_WC_RECV, 0);
		fake_be_complete(fake_be_last, qp, true, 0x20 + i,
				 IBV_WC_SUCCESS, IBV_WC_RECV, 8);
		usleep(2000);
	}
	log_capture_start(&lc);
	pvrdma_fn_ops.destroy(T.priv);
	l = strstr(log_captured(&lc), "request-response: ");
	log_capture_stop(&lc);
	assert_int_equal(pvrdma_fn_ops.create(&T.fn, &T.env, &T.priv), 0);
	assert_non_null(l);
	assert_int_equal(
		sscanf(l,
		       "request-response: %llu rounds, device %llu us, "
		       "guest %llu us per round; median device %llu us, "
		       "guest %llu us; 90th percentile device %llu us, "
		       "guest %llu us; the SEND's own completion after median "
		       "%llu us, 90th percentile %llu us",
		       &rounds, &dev_us, &guest_us, &dev_med, &guest_med,
		       &dev_90, &guest_90, &ack_med, &ack_90),
		9);
	assert_int_equal(rounds, 2);
	assert_true(dev_us >= 4000);
	/* one guest part (the second SEND) over two rounds */
	assert_true(guest_us >= 1000);
	/* the histograms' buckets are within 1/8 of what they count */
	assert_true(dev_med >= 4000 - 4000 / 8 && dev_90 >= dev_med);
	/* the ACK came 3 ms after the SEND, 1 ms before the reply (the
	 * second send completion of a round is not timed) */
	assert_true(ack_med >= 3000 - 3000 / 8 && ack_90 >= ack_med);
	assert_true(ack_med <= dev_90);
	assert_true(guest_med >= 2000 - 2000 / 8 && guest_90 >= guest_med);
}

/*
 * The ARM doorbell is a posted write: a completion that lands after the
 * provider's last poll and before the device sees the arm must still wake
 * the guest, so arming a CQ that holds unread CQEs notifies at once.
 */
static void test_arm_with_unread_cqes_notifies_at_once(void **state)
{
	uint32_t cq, qp;
	struct pvrdma_ring *cqn = ram(P_CQN + 2, 8);

	(void)state;
	probe_pd_cq_qp(&cq, &qp);
	/* the completion lands while the CQ is not armed */
	send_done(qp, 0x77);
	assert_int_equal(cq_ring(P_CQ)->prod_tail, 1);
	assert_int_equal(cqn->prod_tail, 0);
	assert_int_equal(T.fn.raised[PVRDMA_INTR_VECTOR_CQ], 0);
	/* the arm arrives with that CQE unread: wake the guest now */
	uar(PVRDMA_UAR_CQ_OFFSET, PVRDMA_UAR_CQ_ARM | cq);
	assert_int_equal(cqn->prod_tail, 1);
	assert_int_equal(T.fn.raised[PVRDMA_INTR_VECTOR_CQ], 1);
	/* once consumed, an arm waits for the next completion */
	cq_ring(P_CQ)->cons_head = 1;
	uar(PVRDMA_UAR_CQ_OFFSET, PVRDMA_UAR_CQ_ARM_SOL | cq);
	assert_int_equal(cqn->prod_tail, 1);
	assert_int_equal(T.fn.raised[PVRDMA_INTR_VECTOR_CQ], 1);
	send_done(qp, 0x78);
	assert_int_equal(cqn->prod_tail, 2);
	assert_int_equal(T.fn.raised[PVRDMA_INTR_VECTOR_CQ], 2);
}

static void test_all_commands_answer(void **state)
{
	union pvrdma_cmd_req req;
	union pvrdma_cmd_resp resp;
	uint32_t err, pd, cq, qp;

	(void)state;
	probe();
	memset(&req, 0, sizeof(req));
	req.hdr.cmd = PVRDMA_CMD_QUERY_PORT;
	req.query_port.port_num = 1;
	assert_int_equal(cmd(&req, &resp), 0);
	assert_int_equal(resp.query_port_resp.attrs.state, PVRDMA_PORT_ACTIVE);
	assert_int_equal(resp.query_port_resp.attrs.gid_tbl_len, 16);
	memset(&req, 0, sizeof(req));
	req.hdr.cmd = PVRDMA_CMD_QUERY_PKEY;
	req.query_pkey.port_num = 1;
	assert_int_equal(cmd(&req, &resp), 0);
	assert_int_equal(resp.query_pkey_resp.pkey, 0xffff);
	/* a user context on UAR page 3 (BAR2 at 0xfe000000) */
	memset(&req, 0, sizeof(req));
	req.hdr.cmd = PVRDMA_CMD_CREATE_UC;
	req.create_uc.pfn64 = (0xfe000000ull >> 12) + 3;
	assert_int_equal(cmd(&req, &resp), 0);
	assert_int_not_equal(resp.create_uc_resp.ctx_handle, 0);
	pd = create_pd();
	cq = create_cq(P_CQ, &err);
	qp = create_qp(P_QP, pd, cq);
	memset(&req, 0, sizeof(req));
	req.hdr.cmd = PVRDMA_CMD_MODIFY_QP;
	req.modify_qp.qp_handle = qp;
	req.modify_qp.attr_mask = PVRDMA_QP_STATE;
	req.modify_qp.attrs.qp_state = PVRDMA_QPS_INIT;
	assert_int_equal(cmd(&req, &resp), 0);
	memset(&req, 0, sizeof(req));
	req.hdr.cmd = PVRDMA_CMD_QUERY_QP;
	req.query_qp.qp_handle = qp;
	assert_int_equal(cmd(&req, &resp), 0);
	assert_int_equal(resp.query_qp_resp.attrs.qp_state, PVRDMA_QPS_RTS);
	assert_int_equal(resp.query_qp_resp.attrs.dest_qp_num, 0x77);
	/* MRs: DMA and a user MR of two pages */
	memset(&req, 0, sizeof(req));
	req.hdr.cmd = PVRDMA_CMD_CREATE_MR;
	req.create_mr.pd_handle = pd;
	req.create_mr.flags = PVRDMA_MR_FLAG_DMA;
	req.create_mr.access_flags = PVRDMA_ACCESS_LOCAL_WRITE;
	assert_int_equal(cmd(&req, &resp), 0);
	assert_int_not_equal(resp.create_mr_resp.lkey, 0);
	req.create_mr.flags = 0;
	req.create_mr.start = 0x7000100;
	req.create_mr.length = 4096;
	req.create_mr.nchunks = 2;
	req.create_mr.pdir_dma =
		fake_ram_pdir(&T.ram, P_MR, P_MR + 1, P_MR + 2, 2);
	assert_int_equal(cmd(&req, &resp), 0);
	memset(&req, 0, sizeof(req));
	req.hdr.cmd = PVRDMA_CMD_DESTROY_MR;
	req.destroy_mr.mr_handle = resp.create_mr_resp.mr_handle;
	assert_int_equal(cmd(&req, NULL), 0);
	/* GIDs */
	memset(&req, 0, sizeof(req));
	req.hdr.cmd = PVRDMA_CMD_CREATE_BIND;
	req.create_bind.index = 2;
	req.create_bind.gid_type = PVRDMA_GID_TYPE_FLAG_ROCE_V2;
	assert_int_equal(cmd(&req, NULL), 0);
	fake_be_last->gid_add_result = -EADDRNOTAVAIL;
	req.create_bind.index = 3;
	assert_int_equal(cmd(&req, NULL), EADDRNOTAVAIL);
	memset(&req, 0, sizeof(req));
	req.hdr.cmd = PVRDMA_CMD_DESTROY_BIND;
	req.destroy_bind.index = 2;
	assert_int_equal(cmd(&req, NULL), 0);
	/* SRQ */
	srq_req(&req, pd);
	assert_int_equal(cmd(&req, &resp), 0);
	memset(&req.create_srq, 0, sizeof(req.create_srq));
	req.hdr.cmd = PVRDMA_CMD_QUERY_SRQ;
	req.query_srq.srq_handle = resp.create_srq_resp.srqn;
	assert_int_equal(cmd(&req, &resp), 0);
	assert_int_equal(resp.query_srq_resp.attrs.max_wr, 16);
	/* destroying what is in use is refused, then works in order */
	memset(&req, 0, sizeof(req));
	req.hdr.cmd = PVRDMA_CMD_DESTROY_CQ;
	req.destroy_cq.cq_handle = cq;
	assert_int_equal(cmd(&req, NULL), EBUSY);
	memset(&req, 0, sizeof(req));
	req.hdr.cmd = PVRDMA_CMD_DESTROY_QP;
	req.destroy_qp.qp_handle = qp;
	assert_int_equal(cmd(&req, &resp), 0);
	memset(&req, 0, sizeof(req));
	req.hdr.cmd = PVRDMA_CMD_DESTROY_CQ;
	req.destroy_cq.cq_handle = cq;
	assert_int_equal(cmd(&req, NULL), 0);
	/* unknown command: an error and still an answer */
	memset(&req, 0, sizeof(req));
	req.hdr.cmd = 99;
	assert_int_equal(cmd(&req, &resp), ENOSYS);
	assert_int_equal(resp.hdr.err, ENOSYS);
	assert_int_equal(resp.hdr.ack, PVRDMA_CMD_RESP(99));
}

/*
 * max_inline_data: the device offers none (INLINE sends are refused), the
 * driver passes the application's wish on.  Up to a page (what a WQE slot
 * could ever hold) the QP is made without inline data and the answer says
 * 0; 0xffffffff is refused like every other size out of range.
 */
static void test_create_qp_inline_clamped_or_refused(void **state)
{
	union pvrdma_cmd_req req;
	union pvrdma_cmd_resp resp;
	uint32_t err, pd, cq;

	(void)state;
	probe();
	pd = create_pd();
	cq = create_cq(P_CQ, &err);
	qp_req(&req, P_QP, pd, cq);
	req.create_qp.max_inline_data = 0xffffffff;
	assert_int_equal(cmd(&req, &resp), EINVAL);
	assert_int_equal(fake_be_live(fake_be_last), 2); /* PD and CQ */
	qp_req(&req, P_QP, pd, cq);
	req.create_qp.max_inline_data = 236; /* perftest's default */
	assert_int_equal(cmd(&req, &resp), 0);
	assert_int_equal(resp.create_qp_resp_v2.max_inline_data, 0);
}

/* CVE-2022-1050: commands with no DSR, or before activation. */
static void test_cve_2022_1050_commands_before_dsr(void **state)
{
	union pvrdma_cmd_req req = { .hdr.cmd = PVRDMA_CMD_CREATE_PD };

	(void)state;
	assert_int_equal(cmd(&req, NULL) != 0, 1);
	wr(PVRDMA_REG_CTL, PVRDMA_DEVICE_CTL_ACTIVATE);
	assert_int_not_equal(rd(PVRDMA_REG_ERR), 0);
	uar(0, PVRDMA_UAR_QP_SEND | 1); /* doorbells too: ignored */
	write_dsr();
	set_dsr();
	assert_int_equal(cmd(&req, NULL), EPERM); /* not active yet */
	assert_int_equal(fake_be_live(fake_be_last), 0);
	wr(PVRDMA_REG_IMR, 0);
	wr(PVRDMA_REG_CTL, PVRDMA_DEVICE_CTL_ACTIVATE);
	assert_int_equal(rd(PVRDMA_REG_ERR), 0);
	create_pd();
}

/* An uninitialised DSR, then slots and rings outside guest memory. */
static void test_bogus_dsr_refused(void **state)
{
	struct pvrdma_device_shared_region *d = ram(P_DSR, 0);

	(void)state;
	memset(d, 0, sizeof(*d)); /* uninitialised */
	set_dsr();
	wr(PVRDMA_REG_CTL, PVRDMA_DEVICE_CTL_ACTIVATE);
	assert_int_not_equal(rd(PVRDMA_REG_ERR), 0);
	/* CVE-2021-3607 / CVE-2023-1544: ring page counts */
	write_dsr();
	d->async_ring_pages.num_pages = 0;
	set_dsr();
	wr(PVRDMA_REG_CTL, PVRDMA_DEVICE_CTL_ACTIVATE);
	assert_int_not_equal(rd(PVRDMA_REG_ERR), 0);
	write_dsr();
	d->cq_ring_pages.num_pages = 0x40000000;
	set_dsr();
	wr(PVRDMA_REG_CTL, PVRDMA_DEVICE_CTL_ACTIVATE);
	assert_int_not_equal(rd(PVRDMA_REG_ERR), 0);
	/* a slot whose page is past guest RAM (no CVE of its own: QEMU's
	 * load_dsr mapped the slots unchecked; CVE-2021-3582, an MR page
	 * past a region's end, is unit test backend-mr-edge) */
	write_dsr();
	d->resp_slot_dma = fake_ram_gpa(P_TOTAL);
	set_dsr();
	wr(PVRDMA_REG_CTL, PVRDMA_DEVICE_CTL_ACTIVATE);
	assert_int_not_equal(rd(PVRDMA_REG_ERR), 0);
	/* a ring table entry past guest RAM */
	write_dsr();
	fake_ram_put64(&T.ram, fake_ram_gpa(P_CQN + 1) + 8, 0x7ff000000000ull);
	set_dsr();
	wr(PVRDMA_REG_CTL, PVRDMA_DEVICE_CTL_ACTIVATE);
	assert_int_not_equal(rd(PVRDMA_REG_ERR), 0);
	/* the DSR itself past guest RAM */
	wr(PVRDMA_REG_DSRLOW, 0);
	wr(PVRDMA_REG_DSRHIGH, 0x100);
	wr(PVRDMA_REG_CTL, PVRDMA_DEVICE_CTL_ACTIVATE);
	assert_int_not_equal(rd(PVRDMA_REG_ERR), 0);
	/* and a good one still works */
	probe();
	create_pd();
	/* no DSR swap under live objects */
	set_dsr();
	assert_int_equal(rd(PVRDMA_REG_ERR), EBUSY);
	create_pd();
}

/* CVE-2018-20191: reads of the UAR BAR. */
static void test_cve_2018_20191_uar_read(void **state)
{
	uint64_t v = 0;

	(void)state;
	assert_int_equal(pvrdma_fn_ops.bar_read(T.priv, 2, 0, 4, &v), 0);
	assert_int_equal(v, 0xffffffffu);
	assert_int_equal(pvrdma_fn_ops.bar_read(T.priv, 2, 0x1008, 8, &v), 0);
	/* registers are 32-bit */
	assert_int_equal(pvrdma_fn_ops.bar_read(T.priv, 1, 0, 8, &v), -EINVAL);
	assert_int_equal(pvrdma_fn_ops.bar_write(T.priv, 1, 0x10, 2, 0),
			 -EINVAL);
}

/* CVE-2018-20124: num_sge beyond the QP's max. */
static void test_cve_2018_20124_num_sge(void **state)
{
	uint32_t err, pd, cq, qp;

	(void)state;
	probe();
	pd = create_pd();
	cq = create_cq(P_CQ, &err);
	qp = create_qp(P_QP, pd, cq);
	post_send(P_QP, 0, 0x10000, 0x1);
	post_send(P_QP, 1, 1, 0x2);
	uar(0, PVRDMA_UAR_QP_SEND | qp);
	/* the bad one was not posted but completed in error; the next was */
	assert_int_equal(fake_be_last->sends, 1);
	assert_int_equal(fake_be_last->last_send.cookie, 0x2);
	assert_int_equal(cqe_at(P_CQ, 0)->wr_id, 0x1);
	assert_int_equal(cqe_at(P_CQ, 0)->status, PVRDMA_WC_LOC_QP_OP_ERR);
	assert_int_equal(((struct pvrdma_ring *)ram(P_QP + 2, 0))->cons_head,
			 2);
}

/* CVE-2018-20216: ring indices that would loop or index out of bounds. */
static void test_cve_2018_20216_ring_indices(void **state)
{
	struct pvrdma_ring *ring = ram(P_QP + 2, 0);
	struct pvrdma_eqe *e = ram(P_ASYNC + 3, 0);
	uint32_t err, pd, cq, qp, qp2;

	(void)state;
	probe();
	pd = create_pd();
	cq = create_cq(P_CQ, &err);
	qp = create_qp(P_QP, pd, cq);
	qp2 = create_qp(P_QP2, pd, cq);
	ring->prod_tail = (int32_t)0xffffffff;
	uar(0, PVRDMA_UAR_QP_SEND | qp);
	ring->prod_tail = 100; /* past 2 * 16 */
	uar(0, PVRDMA_UAR_QP_SEND | qp);
	ring->prod_tail = 1;
	ring->cons_head = -5;
	uar(0, PVRDMA_UAR_QP_SEND | qp);
	assert_int_equal(fake_be_last->sends, 0);
	/* one QP_FATAL event for the broken QP */
	assert_int_equal(((struct pvrdma_ring *)ram(P_ASYNC + 2, 8))->prod_tail,
			 1);
	assert_int_equal(e->type, PVRDMA_EVENT_QP_FATAL);
	assert_int_equal(e->info, qp);
	assert_int_equal(T.fn.raised[PVRDMA_INTR_VECTOR_ASYNC], 1);
	/* the other QP still works */
	post_send(P_QP2, 0, 1, 0x77);
	uar(0, PVRDMA_UAR_QP_SEND | qp2);
	assert_int_equal(fake_be_last->sends, 1);
	/* a hostile CQ ring: the completion is lost, CQ_ERR reported */
	cq_ring(P_CQ)->prod_tail = 0x7fffffff;
	fake_be_complete(fake_be_last, qp2, false, 0x77, IBV_WC_SUCCESS,
			 IBV_WC_SEND, 1);
	assert_int_equal(fake_be_last->cq_errors, 1);
	assert_int_equal(e[1].type, PVRDMA_EVENT_CQ_ERR);
}

/* A full CQ is an overflow (CQ_ERR), not an overwrite. */
static void test_cq_overflow(void **state)
{
	uint32_t err, pd, cq, qp, i;

	(void)state;
	probe();
	pd = create_pd();
	cq = create_cq(P_CQ, &err);
	qp = create_qp(P_QP, pd, cq);
	for (i = 0; i < 64; i++)
		fake_be_complete(fake_be_last, qp, true, i, IBV_WC_SUCCESS,
				 IBV_WC_RECV, 1);
	assert_int_equal(cq_ring(P_CQ)->prod_tail, 64);
	assert_int_equal(fake_be_last->cq_errors, 0);
	fake_be_complete(fake_be_last, qp, true, 64, IBV_WC_SUCCESS,
			 IBV_WC_RECV, 1);
	assert_int_equal(fake_be_last->cq_errors, 1);
	assert_int_equal(cqe_at(P_CQ, 0)->wr_id, 0);
}

/* Receives on a QP and an SRQ, UD sends, host events on objects. */
static void test_recv_srq_ud_and_events(void **state)
{
	union pvrdma_cmd_req req;
	union pvrdma_cmd_resp resp;
	struct pvrdma_rq_wqe_hdr rh = { 0x55, 1, 0 };
	struct pvrdma_sge sge = { 0x8000, 64, 0x101 };
	struct pvrdma_ring *eq = ram(P_ASYNC + 2, 8);
	struct pvrdma_eqe *e = ram(P_ASYNC + 3, 0);
	struct pvrdma_sq_wqe_hdr sh;
	uint32_t err, pd, cq, qp, ud, srq;
	uint8_t *w;

	(void)state;
	probe();
	pd = create_pd();
	cq = create_cq(P_CQ, &err);
	qp = create_qp(P_QP, pd, cq);
	/* a receive: RQ WQEs from page 1 + send_chunks (2) of the QP */
	w = ram(P_QP + 4, 0);
	memcpy(w, &rh, sizeof(rh));
	memcpy(w + sizeof(rh), &sge, sizeof(sge));
	((struct pvrdma_ring *)ram(P_QP + 2, 8))->prod_tail = 1;
	uar(0, PVRDMA_UAR_QP_RECV | qp);
	assert_int_equal(fake_be_last->recvs, 1);
	assert_int_equal(fake_be_last->last_recv.cookie, 0x55);
	assert_int_equal(((struct pvrdma_ring *)ram(P_QP + 2, 8))->cons_head,
			 1);
	/* an SRQ and its doorbell */
	srq_req(&req, pd);
	assert_int_equal(cmd(&req, &resp), 0);
	srq = resp.create_srq_resp.srqn;
	rh.wr_id = 0x66;
	w = ram(P_SRQ + 3, 0);
	memcpy(w, &rh, sizeof(rh));
	memcpy(w + sizeof(rh), &sge, sizeof(sge));
	((struct pvrdma_ring *)ram(P_SRQ + 2, 8))->prod_tail = 1;
	uar(PVRDMA_UAR_SRQ_OFFSET, PVRDMA_UAR_SRQ_RECV | srq);
	assert_int_equal(fake_be_last->srq_recvs, 1);
	assert_int_equal(fake_be_last->last_recv.cookie, 0x66);
	/* a UD QP on the SRQ: its send carries the address vector */
	qp_req(&req, P_QP2, pd, cq);
	req.create_qp.qp_type = PVRDMA_QPT_UD;
	req.create_qp.is_srq = 1;
	req.create_qp.srq_handle = srq;
	req.create_qp.max_recv_wr = 0;
	req.create_qp.max_recv_sge = 0;
	req.create_qp.total_chunks = 2;
	assert_int_equal(cmd(&req, &resp), 0);
	ud = resp.create_qp_resp_v2.qp_handle;
	memset(&sh, 0, sizeof(sh));
	sh.wr_id = 0x88;
	sh.opcode = PVRDMA_WR_SEND;
	sh.wr.ud.remote_qpn = 0x1234;
	sh.wr.ud.remote_qkey = 0x11111111;
	sh.wr.ud.av.port_pd = 1u << 24 | pd;
	sh.wr.ud.av.gid_index = 1;
	memcpy(ram(P_QP2 + 3, 0), &sh, sizeof(sh));
	((struct pvrdma_ring *)ram(P_QP2 + 2, 0))->prod_tail = 1;
	uar(0, PVRDMA_UAR_QP_SEND | ud);
	assert_int_equal(fake_be_last->sends, 1);
	assert_int_equal(fake_be_last->last_send.ud.remote_qpn, 0x1234);
	assert_int_equal(fake_be_last->last_send.ud.av.sgid_index, 1);
	/* a receive doorbell on an SRQ QP does nothing */
	uar(0, PVRDMA_UAR_QP_RECV | ud);
	assert_int_equal(fake_be_last->recvs, 1);
	/* host events: in the driver's numbering, counted per QP */
	fake_be_event(fake_be_last, IBV_EVENT_COMM_EST, BE_OBJ_QP, qp);
	fake_be_event(fake_be_last, IBV_EVENT_SRQ_LIMIT_REACHED, BE_OBJ_SRQ,
		      srq);
	fake_be_event(fake_be_last, IBV_EVENT_PORT_ERR, BE_OBJ_PORT, 1);
	assert_int_equal(eq->prod_tail, 3);
	assert_int_equal(e[0].type, PVRDMA_EVENT_COMM_EST);
	assert_int_equal(e[0].info, qp);
	assert_int_equal(e[1].type, PVRDMA_EVENT_SRQ_LIMIT_REACHED);
	assert_int_equal(e[2].type, PVRDMA_EVENT_PORT_ERR);
	memset(&req, 0, sizeof(req));
	req.hdr.cmd = PVRDMA_CMD_DESTROY_QP;
	req.destroy_qp.qp_handle = qp;
	assert_int_equal(cmd(&req, &resp), 0);
	assert_int_equal(resp.destroy_qp_resp.events_reported, 1);
	/* doorbells of a destroyed QP are ignored */
	uar(0, PVRDMA_UAR_QP_RECV | qp);
	assert_int_equal(fake_be_last->recvs, 1);
}

static long rss_pages(void)
{
	long size = 0, rss = 0;
	FILE *f = fopen("/proc/self/statm", "r");

	assert_non_null(f);
	assert_int_equal(fscanf(f, "%ld %ld", &size, &rss), 2);
	fclose(f);
	return rss;
}

static int fd_count(void)
{
	DIR *d = opendir("/proc/self/fd");
	int n = 0;

	assert_non_null(d);
	while (readdir(d))
		n++;
	closedir(d);
	return n;
}

/* One round of every refused-create family and a create/destroy cycle. */
static void hostile_round(uint32_t pd, uint32_t cq)
{
	union pvrdma_cmd_req req;
	union pvrdma_cmd_resp resp;
	uint32_t err, h;

	/* CVE-2018-20125: huge ring page counts */
	memset(&req, 0, sizeof(req));
	req.hdr.cmd = PVRDMA_CMD_CREATE_CQ;
	req.create_cq.cqe = 64;
	req.create_cq.nchunks = 0x7fffffff;
	req.create_cq.pdir_dma = fake_ram_gpa(P_CQ2);
	assert_int_equal(cmd(&req, NULL), EINVAL);
	qp_req(&req, P_QP2, pd, cq);
	req.create_qp.total_chunks = 0xffff;
	assert_int_not_equal(cmd(&req, NULL), 0);
	/* CVE-2018-20126 / 2021-3608: errors after the ring is half set up
	 * (a table entry outside guest RAM); CVE-2018-20123 (a failed
	 * realize) is unit test pvrdma-create-nomem */
	qp_req(&req, P_QP2, pd, cq);
	fake_ram_put64(&T.ram, fake_ram_gpa(P_QP2 + 1) + 16, 0x10);
	assert_int_equal(cmd(&req, NULL), EINVAL);
	qp_req(&req, P_QP2, pd, 55); /* no such CQ */
	assert_int_equal(cmd(&req, NULL), EINVAL);
	/* rings mapped, then the backend refuses (no such PD) */
	qp_req(&req, P_QP2, 55, cq);
	assert_int_equal(cmd(&req, NULL), EINVAL);
	srq_req(&req, 55);
	assert_int_equal(cmd(&req, NULL), EINVAL);
	memset(&req, 0, sizeof(req));
	req.hdr.cmd = PVRDMA_CMD_CREATE_MR;
	req.create_mr.pd_handle = pd;
	req.create_mr.length = 4096ull * PVRDMA_PAGE_DIR_MAX_PAGES;
	req.create_mr.nchunks = PVRDMA_PAGE_DIR_MAX_PAGES;
	req.create_mr.pdir_dma = fake_ram_gpa(P_MR); /* tables are garbage */
	assert_int_not_equal(cmd(&req, NULL), 0);
	/* and a good create/destroy cycle */
	h = create_cq(P_CQ2, &err);
	assert_int_equal(err, 0);
	memset(&req, 0, sizeof(req));
	req.hdr.cmd = PVRDMA_CMD_DESTROY_CQ;
	req.destroy_cq.cq_handle = h;
	assert_int_equal(cmd(&req, &resp), 0);
}

static void test_thousand_refusals_leak_nothing(void **state)
{
	uint32_t err, pd, cq, qp, i;
	size_t heap0;
	long rss0;
	int fds0;

	(void)state;
	probe();
	pd = create_pd();
	cq = create_cq(P_CQ, &err);
	qp = create_qp(P_QP, pd, cq);
	for (i = 0; i < 20; i++) /* warm up the allocator */
		hostile_round(pd, cq);
	rss0 = rss_pages();
	fds0 = fd_count();
	heap0 = mallinfo2().uordblks;
	for (i = 0; i < 1000; i++)
		hostile_round(pd, cq);
	assert_int_equal(fd_count(), fds0);
	/* a leak of even one byte per round shows in the heap */
	if (HEAP_CHECKS && mallinfo2().uordblks > heap0 + 512)
		fail_msg("heap grew by %zu bytes over 1000 rounds",
			 mallinfo2().uordblks - heap0);
	if (HEAP_CHECKS)
		assert_true(rss_pages() - rss0 < 64);
	assert_int_equal(fake_be_live(fake_be_last), 3);
	/* the first objects still serve */
	post_send(P_QP, 0, 1, 0x99);
	uar(0, PVRDMA_UAR_QP_SEND | qp);
	assert_int_equal(fake_be_last->sends, 1);
}

/*
 * perftest's bandwidth and send tests register with relaxed ordering
 * (0x100000), which vmw_pvrdma passes on as it is: accepted and given to
 * the host, other optional bits dropped, unknown required bits refused.
 * The refusal is logged although CREATE_BIND was refused before it (the
 * log's rate limit counts each command apart).
 */
static void test_mr_optional_access_and_refusal_log(void **state)
{
	union pvrdma_cmd_req req;
	union pvrdma_cmd_resp resp;
	struct log_capture lc;
	uint32_t pd, i;

	(void)state;
	probe();
	pd = create_pd();
	memset(&req, 0, sizeof(req));
	req.hdr.cmd = PVRDMA_CMD_CREATE_BIND;
	req.create_bind.gid_type = PVRDMA_GID_TYPE_FLAG_ROCE_V2;
	fake_be_last->gid_add_result = -EADDRNOTAVAIL;
	for (i = 0; i < 4; i++) {
		req.create_bind.index = i;
		assert_int_equal(cmd(&req, NULL), EADDRNOTAVAIL);
	}
	memset(&req, 0, sizeof(req));
	req.hdr.cmd = PVRDMA_CMD_CREATE_MR;
	req.create_mr.pd_handle = pd;
	req.create_mr.start = 0x7000100;
	req.create_mr.length = 4096;
	req.create_mr.nchunks = 2;
	req.create_mr.pdir_dma =
		fake_ram_pdir(&T.ram, P_MR, P_MR + 1, P_MR + 2, 2);
	req.create_mr.access_flags =
		PVRDMA_ACCESS_LOCAL_WRITE | PVRDMA_ACCESS_REMOTE_WRITE |
		PVRDMA_ACCESS_RELAXED_ORDERING | (1u << 25);
	assert_int_equal(cmd(&req, &resp), 0);
	assert_int_not_equal(resp.create_mr_resp.lkey, 0);
	assert_int_equal(fake_be_last->last_mr_access,
			 IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
				 IBV_ACCESS_RELAXED_ORDERING);
	log_capture_start(&lc);
	req.create_mr.access_flags = PVRDMA_ACCESS_MW_BIND;
	assert_int_equal(cmd(&req, &resp), EOPNOTSUPP);
	log_capture_expect(&lc, "command CREATE_MR refused");
	log_capture_stop(&lc);
}

static void bad_ctl(void)
{
	wr(PVRDMA_REG_CTL, 0x77);
}

static void activate_without_dsr(void)
{
	wr(PVRDMA_REG_CTL, PVRDMA_DEVICE_CTL_ACTIVATE);
}

static void dsr_not_in_ram(void)
{
	wr(PVRDMA_REG_DSRLOW, 0x10);
	wr(PVRDMA_REG_DSRHIGH, 0xffff);
}

static void dsr_uninitialised(void)
{
	wr(PVRDMA_REG_DSRLOW, (uint32_t)fake_ram_gpa(P_TOTAL - 1));
	wr(PVRDMA_REG_DSRHIGH, 0);
}

static void dsr_change_while_active(void)
{
	wr(PVRDMA_REG_DSRHIGH, 0);
}

static void cq_bad_pdir(void)
{
	union pvrdma_cmd_req req;

	memset(&req, 0, sizeof(req));
	req.hdr.cmd = PVRDMA_CMD_CREATE_CQ;
	req.create_cq.cqe = 64;
	req.create_cq.nchunks = 2;
	req.create_cq.pdir_dma = 0xdead000;
	assert_int_not_equal(cmd(&req, NULL), 0);
}

static void mr_past_its_pages(void)
{
	union pvrdma_cmd_req req;

	memset(&req, 0, sizeof(req));
	req.hdr.cmd = PVRDMA_CMD_CREATE_MR;
	req.create_mr.pd_handle = 1;
	req.create_mr.start = 0x7000100;
	req.create_mr.length = 64 * 4096; /* more than its 2 pages */
	req.create_mr.nchunks = 2;
	req.create_mr.pdir_dma =
		fake_ram_pdir(&T.ram, P_MR, P_MR + 1, P_MR + 2, 2);
	req.create_mr.access_flags = PVRDMA_ACCESS_LOCAL_WRITE;
	assert_int_not_equal(cmd(&req, NULL), 0);
}

static void unknown_command(void)
{
	union pvrdma_cmd_req req;

	memset(&req, 0, sizeof(req));
	req.hdr.cmd = 99;
	assert_int_equal(cmd(&req, NULL), ENOSYS);
}

static uint64_t frozen_ms(void)
{
	return 1000;
}

/* Lines logged by `n` calls of `fn` in one instant, from a fresh limit. */
static uint32_t lines_of(void (*fn)(void), uint32_t n)
{
	struct log_capture lc;
	const char *l, *p;
	uint32_t i, lines = 0;

	log_set_clock(frozen_ms);
	log_capture_start(&lc);
	for (i = 0; i < n; i++)
		fn();
	l = log_captured(&lc);
	for (p = l; (p = strchr(p, '\n')); p++)
		lines++;
	log_capture_stop(&lc);
	log_set_clock(NULL);
	if (lines > LOG_PEER_BURST)
		print_message("%s", l);
	return lines;
}

/*
 * Every line a guest can cause goes through the VM's one peer limit
 * (common/log.h): each way of causing one, repeated in one instant, writes
 * at most LOG_PEER_BURST lines.
 */
static void test_guest_lines_rate_limited(void **state)
{
	const uint32_t n = 4 * LOG_PEER_BURST;

	(void)state;
	assert_in_range(lines_of(bad_ctl, n), 1, LOG_PEER_BURST);
	assert_in_range(lines_of(activate_without_dsr, n), 1, LOG_PEER_BURST);
	assert_in_range(lines_of(dsr_not_in_ram, n), 1, LOG_PEER_BURST);
	assert_in_range(lines_of(dsr_uninitialised, n), 1, LOG_PEER_BURST);
	probe();
	create_pd();
	assert_in_range(lines_of(dsr_change_while_active, n), 1,
			LOG_PEER_BURST);
	assert_in_range(lines_of(cq_bad_pdir, n), 1, LOG_PEER_BURST);
	assert_in_range(lines_of(mr_past_its_pages, n), 1, LOG_PEER_BURST);
	/* log_refusal()'s 1st, 2nd, 4th... is under the limit too */
	assert_in_range(lines_of(unknown_command, 1 << 12), 1, LOG_PEER_BURST);
}

/* RESET drops everything; a new DSR and ACTIVATE bring it back. */
static void test_reset_and_again(void **state)
{
	uint32_t err, pd, cq, i;

	(void)state;
	for (i = 0; i < 1000; i++) {
		probe();
		pd = create_pd();
		cq = create_cq(P_CQ, &err);
		create_qp(P_QP, pd, cq);
		wr(PVRDMA_REG_CTL, PVRDMA_DEVICE_CTL_RESET);
		assert_int_equal(rd(PVRDMA_REG_ERR), PVRDMA_ERR_NOT_ACTIVE);
		assert_int_equal(fake_be_live(fake_be_last), 0);
	}
	/* a function-level reset too */
	probe();
	create_pd();
	pvrdma_fn_ops.reset(T.priv);
	assert_int_equal(rd(PVRDMA_REG_IMR), 0xffffffffu);
	assert_int_equal(fake_be_live(fake_be_last), 0);
}

/* Without bus mastering the device touches no guest memory. */
static void test_no_dma_without_bus_master(void **state)
{
	(void)state;
	write_dsr();
	T.fn.bus_master = false;
	set_dsr();
	wr(PVRDMA_REG_CTL, PVRDMA_DEVICE_CTL_ACTIVATE);
	assert_int_not_equal(rd(PVRDMA_REG_ERR), 0);
	assert_int_equal(((struct pvrdma_device_shared_region *)ram(P_DSR, 0))
				 ->caps.max_qp,
			 0);
	T.fn.bus_master = true;
	probe();
}

/* ---- doorbells in shared memory (BAR2 mapped by the client) ---- */

/* Recreates the device with BAR2 offered as shared memory (cfg.uar). */
static uint32_t *shm_device(void)
{
	static uint32_t *uar_mem;
	int fd = -1;

	pvrdma_fn_ops.destroy(T.priv);
	free(uar_mem);
	uar_mem = calloc(1, PVRDMA_BAR2_UAR_SIZE);
	assert_non_null(uar_mem);
	T.cfg.uar = uar_mem;
	T.cfg.uar_fd = 42; /* what GET_REGION_INFO sends; never used here */
	T.cfg.doorbell_poll_ms = 10;
	assert_int_equal(pvrdma_fn_ops.create(&T.fn, &T.env, &T.priv), 0);
	assert_int_equal(pvrdma_fn_ops.bar_shm(T.priv, 2, &fd), 0);
	assert_int_equal(fd, 42);
	assert_int_equal(pvrdma_fn_ops.bar_shm(T.priv, 1, &fd), -ENOENT);
	return uar_mem;
}

/* A store into the shared BAR2, as the guest's is: no message. */
static void uar_store(uint32_t *mem, uint32_t page, uint32_t off, uint32_t val)
{
	__atomic_store_n(&mem[(page * PVRDMA_PAGE_SIZE + off) / 4], val,
			 __ATOMIC_RELEASE);
}

/*
 * Past the device's notification delay (NOTIFY_DEFER_NS, 100 us), one
 * look: a held-back notification is sent then, unless the guest read.
 */
static void after_defer(void)
{
	usleep(1000);
	pvrdma_fn_ops.poll(T.priv);
}

static uint32_t create_uc(uint32_t page)
{
	union pvrdma_cmd_req req = { .hdr.cmd = PVRDMA_CMD_CREATE_UC };
	union pvrdma_cmd_resp resp;

	req.create_uc.pfn64 = 0xfe000 + page;
	assert_int_equal(cmd(&req, &resp), 0);
	return resp.create_uc_resp.ctx_handle;
}

/*
 * Two QPs rung on two pages, the second page's word stored twice (only
 * the last value survives): one look takes both pages' doorbells and
 * drains every rung ring; a look with no new store finds nothing.
 */
static void test_shm_doorbells_drain_every_rung_qp(void **state)
{
	uint32_t *mem, cq, qp, qp2, pd;
	union pvrdma_cmd_req req;
	union pvrdma_cmd_resp resp;

	(void)state;
	mem = shm_device();
	probe_pd_cq_qp(&cq, &qp);
	assert_int_not_equal(create_uc(5), 0);
	pd = create_pd();
	qp_req(&req, P_QP2, pd, cq);
	assert_int_equal(cmd(&req, &resp), 0);
	qp2 = resp.create_qp_resp_v2.qp_handle;
	post_send(P_QP, 0, 1, 0x1);
	post_send(P_QP2, 0, 1, 0x2);
	post_send(P_QP2, 1, 1, 0x3);
	uar_store(mem, 0, PVRDMA_UAR_QP_OFFSET, PVRDMA_UAR_QP_SEND | qp);
	uar_store(mem, 5, PVRDMA_UAR_QP_OFFSET, PVRDMA_UAR_QP_SEND | qp2);
	uar_store(mem, 5, PVRDMA_UAR_QP_OFFSET, PVRDMA_UAR_QP_SEND | qp2);
	assert_int_equal(fake_be_last->sends, 0);
	assert_int_equal(pvrdma_fn_ops.poll(T.priv), 2);
	assert_int_equal(fake_be_last->sends, 3);
	assert_int_equal(((struct pvrdma_ring *)ram(P_QP2 + 2, 0))->cons_head,
			 2);
	assert_int_equal(mem[0], 0);
	assert_int_equal(mem[5 * PVRDMA_PAGE_SIZE / 4], 0);
	assert_int_equal(pvrdma_fn_ops.poll(T.priv), 0);
	assert_int_equal(fake_be_last->sends, 3);
	/* a page no live context owns is not looked at */
	post_send(P_QP, 1, 1, 0x4);
	uar_store(mem, 9, PVRDMA_UAR_QP_OFFSET, PVRDMA_UAR_QP_SEND | qp);
	assert_int_equal(pvrdma_fn_ops.poll(T.priv), 0);
	assert_int_equal(fake_be_last->sends, 3);
}

/*
 * The provider re-arms and then polls: the POLL store replaces the ARM
 * before the device looks.  The completion must still notify; another one
 * while the guest has read nothing does not; once it has read, again.
 */
static void test_shm_lost_arm_still_notifies(void **state)
{
	struct pvrdma_ring *cqn = ram(P_CQN + 2, 8);
	uint32_t *mem, cq, qp;

	(void)state;
	mem = shm_device();
	probe_pd_cq_qp(&cq, &qp);
	uar_store(mem, 0, PVRDMA_UAR_CQ_OFFSET, PVRDMA_UAR_CQ_ARM | cq);
	uar_store(mem, 0, PVRDMA_UAR_CQ_OFFSET, PVRDMA_UAR_CQ_POLL | cq);
	/* taken (the host CQ polled), but a POLL alone is no work to spin on */
	assert_int_equal(pvrdma_fn_ops.poll(T.priv), 0);
	assert_int_equal(fake_be_last->polls, 1);
	send_done(qp, 0x10);
	/* held back first: the loop wakes when it is due, without spinning */
	assert_int_equal(cqn->prod_tail, 0);
	assert_false(pvrdma_fn_ops.wants_poll(T.priv));
	assert_true(pvrdma_fn_ops.poll_timeout_ns(T.priv) <= 100 * 1000);
	after_defer();
	assert_int_equal(cqn->prod_tail, 1);
	assert_int_equal(T.fn.raised[PVRDMA_INTR_VECTOR_CQ], 1);
	assert_false(pvrdma_fn_ops.wants_poll(T.priv));
	send_done(qp, 0x11);
	after_defer();
	assert_int_equal(cq_ring(P_CQ)->prod_tail, 2);
	assert_int_equal(cqn->prod_tail, 1);
	cq_ring(P_CQ)->cons_head = 2;
	send_done(qp, 0x12);
	after_defer();
	assert_int_equal(cqn->prod_tail, 2);
	assert_int_equal(T.fn.raised[PVRDMA_INTR_VECTOR_CQ], 2);
}

/*
 * Looks until the CQ notification ring holds want entries (1 s at most),
 * the first look at once; returns the time from t0 to the look that saw it.
 */
static uint64_t notified_after(uint32_t want, uint64_t t0)
{
	struct pvrdma_ring *cqn = ram(P_CQN + 2, 8);
	uint64_t now;

	for (;;) {
		pvrdma_fn_ops.poll(T.priv);
		now = mono_ns();
		if (cqn->prod_tail == (int32_t)want || now - t0 > 1000000000ull)
			break;
		usleep(100);
	}
	assert_int_equal(cqn->prod_tail, want);
	return now - t0;
}

/* Two empty polls of cq, each store taken before the next: it is polled. */
static void polls_twice(uint32_t *mem, uint32_t cq)
{
	int i;

	for (i = 0; i < 2; i++) {
		uar_store(mem, 0, PVRDMA_UAR_CQ_OFFSET,
			  PVRDMA_UAR_CQ_POLL | cq);
		assert_int_equal(pvrdma_fn_ops.poll(T.priv), 0);
	}
}

/* A device with shared doorbells, a QP and its CQ, the CQ polled. */
static void polled_cq(uint32_t *cq, uint32_t *qp)
{
	uint32_t *mem = shm_device();

	probe_pd_cq_qp(cq, qp);
	polls_twice(mem, *cq);
}

/*
 * A CQ whose guest read four CQEs in a row before their notification was
 * due counts as polled: the next notification waits four times the longest
 * the guest took to read one (here each read is seen after at least 1 ms,
 * so at least 4 ms), not 100 us (in a nested guest an interrupt costs more
 * than the polling).  One that is needed after all makes the wait short
 * again; so does an ARM.  Two CQ POLL stores since the last CQE count as
 * polling too.
 */
static void test_shm_polled_cq_waits_longer(void **state)
{
	struct pvrdma_ring *cqn = ram(P_CQN + 2, 8);
	uint32_t *mem, cq, qp, i;
	uint64_t t0;

	(void)state;
	mem = shm_device();
	probe_pd_cq_qp(&cq, &qp);
	for (i = 0; i < 4; i++) {
		send_done(qp, 0x60 + i);
		cq_ring(P_CQ)->cons_head = i + 1;
		after_defer();
	}
	assert_int_equal(cqn->prod_tail, 0);
	/* polled: held back four times the guest's 1 ms, then sent */
	t0 = mono_ns();
	send_done(qp, 0x64);
	assert_true(notified_after(1, t0) >= 4000 * 1000);
	assert_int_equal(T.fn.raised[PVRDMA_INTR_VECTOR_CQ], 1);
	/* that one was needed: the next is due after 100 us again */
	cq_ring(P_CQ)->cons_head = 5;
	send_done(qp, 0x65);
	after_defer();
	assert_int_equal(cqn->prod_tail, 2);
	/* polled again, then an ARM the device sees: exact, at once */
	for (i = 0; i < 4; i++) {
		send_done(qp, 0x66 + i);
		cq_ring(P_CQ)->cons_head = 7 + i;
		after_defer();
	}
	uar_store(mem, 0, PVRDMA_UAR_CQ_OFFSET, PVRDMA_UAR_CQ_ARM | cq);
	assert_int_equal(pvrdma_fn_ops.poll(T.priv), 1);
	send_done(qp, 0x6a);
	assert_int_equal(cqn->prod_tail, 3);
	/* and the ARM ended the polled spell: 100 us again */
	cq_ring(P_CQ)->cons_head = 12;
	send_done(qp, 0x6b);
	after_defer();
	assert_int_equal(cqn->prod_tail, 4);
	/* two empty polls (each store taken before the next): polled, long */
	polls_twice(mem, cq);
	cq_ring(P_CQ)->cons_head = 13;
	t0 = mono_ns();
	send_done(qp, 0x6c);
	assert_true(notified_after(5, t0) >= 4000 * 1000);
}

/*
 * The wait is learned from the guest: one that reads its CQEs at once
 * (KVM-fast) is held back for the minimum, 200 us, not for the 4 ms a
 * guest that has not been seen reading yet gets.  Only checked when the
 * test itself ran fast enough to make the reads fast (< 100 us each).
 */
static void test_shm_polled_cq_wait_is_learned(void **state)
{
	struct pvrdma_ring *cqn = ram(P_CQN + 2, 8);
	uint64_t t0, slowest = 0;
	uint32_t cq, qp, i;

	(void)state;
	shm_device();
	probe_pd_cq_qp(&cq, &qp);
	for (i = 0; i < 8; i++) {
		t0 = mono_ns();
		send_done(qp, 0x70 + i);
		cq_ring(P_CQ)->cons_head = i + 1;
		pvrdma_fn_ops.poll(T.priv);
		if (mono_ns() - t0 > slowest)
			slowest = mono_ns() - t0;
	}
	assert_int_equal(cqn->prod_tail, 0);
	t0 = mono_ns();
	send_done(qp, 0x78);
	/* not before the minimum, whatever was learned */
	assert_true(notified_after(1, t0) >= 200 * 1000);
	if (slowest < 100 * 1000) {
		/* every read took < 100 us: due within 400 us, not 4 ms */
		cq_ring(P_CQ)->cons_head = 9;
		for (i = 0; i < 4; i++) {
			uint64_t t1 = mono_ns();

			send_done(qp, 0x79 + i);
			cq_ring(P_CQ)->cons_head = 10 + i;
			pvrdma_fn_ops.poll(T.priv);
			if (mono_ns() - t1 > 100 * 1000)
				return; /* preempted: nothing to judge */
		}
		send_done(qp, 0x7d);
		usleep(2000);
		pvrdma_fn_ops.poll(T.priv);
		assert_int_equal(cqn->prod_tail, 2);
	}
}

/*
 * A CQ made polled by its CQ POLL stores stays polled when the guest reads
 * a held-back CQE in time (a saved notification confirms polling, it never
 * ends it): the next CQE waits the long wait too, not 100 us.
 */
static void test_shm_saved_keeps_polled(void **state)
{
	uint32_t cq, qp;
	uint64_t t0;

	(void)state;
	polled_cq(&cq, &qp);
	send_done(qp, 0x7f);
	cq_ring(P_CQ)->cons_head = 1;
	after_defer(); /* read, seen after >= 1 ms: a saved notification */
	t0 = mono_ns();
	send_done(qp, 0x80);
	assert_true(notified_after(1, t0) >= 4000 * 1000);
}

/*
 * The idle look that re-notifies unread CQs leaves a held-back
 * notification alone: a polled CQ's CQE is not notified at the first idle
 * look after it (a CQ never notified counts as unread for that look).
 */
static void test_shm_idle_look_keeps_held_back(void **state)
{
	struct pvrdma_ring *cqn = ram(P_CQN + 2, 8);
	uint32_t cq, qp;
	uint64_t t0;

	(void)state;
	polled_cq(&cq, &qp);
	t0 = mono_ns();
	send_done(qp, 0x7e);
	pvrdma_fn_ops.poll(T.priv); /* idle: no store since */
	/* polled, nothing learned yet: 4 ms (when the machine keeps up) */
	if (mono_ns() - t0 < 4000 * 1000)
		assert_int_equal(cqn->prod_tail, 0);
	assert_true(notified_after(1, t0) >= 4000 * 1000);
}

/*
 * A guest that busy-polls reads the CQE before the notification is due:
 * none is sent (no interrupt per CQE); one that does not gets it.  A CQ
 * seen armed is notified at once.
 */
static void test_shm_busy_poller_gets_no_interrupt(void **state)
{
	struct pvrdma_ring *cqn = ram(P_CQN + 2, 8);
	uint32_t *mem, cq, qp;

	(void)state;
	mem = shm_device();
	probe_pd_cq_qp(&cq, &qp);
	send_done(qp, 0x50);
	cq_ring(P_CQ)->cons_head = 1; /* the guest's poll took it */
	after_defer();
	assert_int_equal(cqn->prod_tail, 0);
	assert_int_equal(T.fn.raised[PVRDMA_INTR_VECTOR_CQ], 0);
	assert_false(pvrdma_fn_ops.wants_poll(T.priv));
	/* an ARM the device saw: at once, exact */
	uar_store(mem, 0, PVRDMA_UAR_CQ_OFFSET, PVRDMA_UAR_CQ_ARM | cq);
	assert_int_equal(pvrdma_fn_ops.poll(T.priv), 1);
	send_done(qp, 0x51);
	assert_int_equal(cqn->prod_tail, 1);
	assert_int_equal(T.fn.raised[PVRDMA_INTR_VECTOR_CQ], 1);
}

/*
 * CQEs left unread after their notification: an idle look re-notifies,
 * but not before RENOTIFY_NS (100 ms), so that a slow reader is not
 * flooded.
 */
static void test_shm_unread_cq_is_notified_again(void **state)
{
	struct pvrdma_ring *cqn = ram(P_CQN + 2, 8);
	uint32_t cq, qp;

	(void)state;
	(void)shm_device();
	probe_pd_cq_qp(&cq, &qp);
	send_done(qp, 0x20);
	after_defer();
	assert_int_equal(cqn->prod_tail, 1);
	assert_int_equal(pvrdma_fn_ops.poll(T.priv), 0);
	assert_int_equal(cqn->prod_tail, 1);
	usleep(120 * 1000);
	assert_int_equal(pvrdma_fn_ops.poll(T.priv), 0);
	assert_int_equal(cqn->prod_tail, 2);
	assert_int_equal(T.fn.raised[PVRDMA_INTR_VECTOR_CQ], 2);
	/* read: nothing more to tell */
	cq_ring(P_CQ)->cons_head = 1;
	usleep(120 * 1000);
	assert_int_equal(pvrdma_fn_ops.poll(T.priv), 0);
	assert_int_equal(cqn->prod_tail, 2);
}

/*
 * A client that does not map BAR2 sends UAR writes as messages: the
 * device then sees every ARM, an unarmed CQ stays quiet, and the loop
 * need not wake it to look for stores.
 */
static void test_shm_unmapped_client_is_exact(void **state)
{
	struct pvrdma_ring *cqn = ram(P_CQN + 2, 8);
	uint32_t cq, qp;

	(void)state;
	(void)shm_device();
	probe_pd_cq_qp(&cq, &qp);
	uar(PVRDMA_UAR_CQ_OFFSET, PVRDMA_UAR_CQ_POLL | cq);
	assert_int_equal(pvrdma_fn_ops.poll_timeout_ns(T.priv), -1);
	send_done(qp, 0x30);
	assert_int_equal(cq_ring(P_CQ)->prod_tail, 1);
	assert_int_equal(cqn->prod_tail, 0);
	assert_int_equal(T.fn.raised[PVRDMA_INTR_VECTOR_CQ], 0);
}

/*
 * The loop's timeout after activity: 50 us for 100 ms, then 10 ms until a
 * second has passed, then the configured idle interval; a held-back
 * notification shortens it to its due time, and once that has passed the
 * loop does not sleep.
 */
static void test_shm_idle_timeout(void **state)
{
	const int64_t ms = 1000 * 1000;
	int64_t t;
	uint32_t cq, qp;

	(void)state;
	(void)shm_device();
	T.cfg.doorbell_poll_ms = 50;
	/* not active yet: nothing to look for */
	assert_int_equal(pvrdma_fn_ops.poll_timeout_ns(T.priv), -1);
	probe_pd_cq_qp(&cq, &qp);
	assert_int_equal(pvrdma_fn_ops.poll_timeout_ns(T.priv), 50 * ms);
	send_done(qp, 0x40);
	t = pvrdma_fn_ops.poll_timeout_ns(T.priv);
	assert_true(t >= 0 && t <= 50 * 1000);
	usleep(150 * 1000);
	/* the notification is overdue: look now */
	assert_int_equal(pvrdma_fn_ops.poll_timeout_ns(T.priv), 0);
	(void)pvrdma_fn_ops.poll(T.priv);
	assert_int_equal(pvrdma_fn_ops.poll_timeout_ns(T.priv), 10 * ms);
	assert_int_equal(T.fn.raised[PVRDMA_INTR_VECTOR_CQ], 1);
}

/*
 * Issue 26 item 11: after a refused command ERR holds its error; the
 * driver's link-up writes UNQUIESCE and reads ERR as that operation's
 * outcome ("failed to activate device during link up" otherwise).
 */
static void test_unquiesce_clears_an_earlier_error(void **state)
{
	union pvrdma_cmd_req req = { .hdr.cmd = PVRDMA_CMD_DESTROY_PD };

	(void)state;
	wr(PVRDMA_REG_CTL, PVRDMA_DEVICE_CTL_UNQUIESCE);
	assert_int_equal(rd(PVRDMA_REG_ERR), PVRDMA_ERR_NOT_ACTIVE);
	probe();
	req.destroy_pd.pd_handle = 0x777; /* no such PD */
	assert_int_not_equal(cmd(&req, NULL), 0);
	wr(PVRDMA_REG_CTL, PVRDMA_DEVICE_CTL_UNQUIESCE);
	assert_int_equal(rd(PVRDMA_REG_ERR), 0);
}

/* ---- the VMM's DMA contract (issue 26 items 1 and 2) ---- */

/* Pages from here on are a second DMA region the VMM mapped read-only. */
#define P_ROM 48

static void rom_tail(void)
{
	struct gm_region *ram0 = &T.fn.gm.regions[0],
			 *rom = &T.fn.gm.regions[1];

	*rom = *ram0;
	ram0->size = P_ROM * PVRDMA_PAGE_SIZE;
	rom->gpa = fake_ram_gpa(P_ROM);
	rom->size = (P_TOTAL - P_ROM) * PVRDMA_PAGE_SIZE;
	rom->host = ram(P_ROM, 0);
	rom->prot = PROT_READ;
	T.fn.gm.nregions = 2;
}

static bool rom_untouched(void)
{
	static const uint8_t zero[PVRDMA_PAGE_SIZE];
	unsigned int i;

	for (i = P_ROM; i < P_TOTAL; i++)
		if (memcmp(ram(i, 0), zero, sizeof(zero)))
			return false;
	return true;
}

/* A response slot in ROM: the DSR is refused, nothing written there. */
static void test_dma_response_slot_in_rom_refused(void **state)
{
	struct pvrdma_device_shared_region *d = ram(P_DSR, 0);

	(void)state;
	rom_tail();
	write_dsr();
	d->resp_slot_dma = fake_ram_gpa(P_ROM);
	set_dsr();
	assert_int_equal(rd(PVRDMA_REG_ERR), EFAULT);
	wr(PVRDMA_REG_CTL, PVRDMA_DEVICE_CTL_ACTIVATE);
	assert_int_not_equal(rd(PVRDMA_REG_ERR), 0);
	/* nor the async ring, which the device produces into */
	write_dsr();
	d->async_ring_pages.pdir_dma =
		fake_ram_pdir(&T.ram, P_ASYNC, P_ASYNC + 1, P_ROM, 4);
	set_dsr();
	assert_int_equal(rd(PVRDMA_REG_ERR), EFAULT);
	assert_true(rom_untouched());
	probe();
	assert_true(rom_untouched());
}

/*
 * Rings: a CQ (the device produces CQEs) may not have a page in ROM; a
 * QP's SQ and RQ pages may (the device only reads them), its state page
 * (the device stores cons_head there) may not.
 */
static void test_dma_rings_in_rom(void **state)
{
	union pvrdma_cmd_req req;
	union pvrdma_cmd_resp resp;
	uint32_t err, pd, cq, live;

	(void)state;
	rom_tail();
	probe();
	pd = create_pd();
	live = fake_be_live(fake_be_last);
	memset(&req, 0, sizeof(req));
	req.hdr.cmd = PVRDMA_CMD_CREATE_CQ;
	req.create_cq.cqe = 64;
	req.create_cq.nchunks = 2;
	req.create_cq.pdir_dma =
		fake_ram_pdir(&T.ram, P_CQ, P_CQ + 1, P_ROM, 2);
	assert_int_equal(cmd(&req, &resp), EFAULT);
	assert_int_equal(resp.hdr.err, EFAULT);
	assert_int_equal(fake_be_live(fake_be_last), live);
	cq = create_cq(P_CQ, &err);
	assert_int_equal(err, 0);
	/* state page in ROM */
	qp_req(&req, P_QP, pd, cq);
	req.create_qp.pdir_dma =
		fake_ram_pdir(&T.ram, P_QP, P_QP + 1, P_ROM, 3);
	assert_int_equal(cmd(&req, &resp), EFAULT);
	assert_int_equal(fake_be_live(fake_be_last), live + 1);
	/* state page in RAM, SQ and RQ pages in ROM: accepted */
	qp_req(&req, P_QP, pd, cq);
	fake_ram_put64(&T.ram, fake_ram_gpa(P_QP + 1), fake_ram_gpa(P_QP + 2));
	fake_ram_put64(&T.ram, fake_ram_gpa(P_QP + 1) + 8, fake_ram_gpa(P_ROM));
	fake_ram_put64(&T.ram, fake_ram_gpa(P_QP + 1) + 16,
		       fake_ram_gpa(P_ROM + 1));
	assert_int_equal(cmd(&req, &resp), 0);
	assert_int_equal(fake_be_live(fake_be_last), live + 2);
	assert_true(rom_untouched());
}

/*
 * DMA_UNMAP revokes the backend's registrations over the range before it
 * goes; clearing bus mastering revokes all of them.
 */
static void test_dma_unmap_and_bus_master_off_revoke(void **state)
{
	(void)state;
	probe();
	create_pd();
	pvrdma_fn_ops.dma_unmap(T.priv, fake_ram_gpa(P_ROM), 0x10000);
	assert_int_equal(fake_be_last->revokes, 1);
	assert_int_equal(fake_be_last->revoke_gpa, fake_ram_gpa(P_ROM));
	assert_int_equal(fake_be_last->revoke_size, 0x10000);
	T.fn.bus_master = true;
	pvrdma_fn_ops.bus_master(T.priv, true);
	assert_int_equal(fake_be_last->revokes, 1);
	T.fn.bus_master = false;
	pvrdma_fn_ops.bus_master(T.priv, false);
	assert_int_equal(fake_be_last->revokes, 2);
	assert_int_equal(fake_be_last->revoke_gpa, 0);
	assert_int_equal(fake_be_last->revoke_size, UINT64_MAX);
	/* and the device's own DMA stops: no answer is written */
	memset(ram(P_RESP, 0), 0xee, 8);
	wr(PVRDMA_REG_REQUEST, 0);
	assert_int_equal(*(uint8_t *)ram(P_RESP, 0), 0xee);
	T.fn.bus_master = true;
}

#ifdef PVRDMA_TEST_CMD_HOLE
/*
 * Built with dev_cmd_hole.c: DESTROY_SRQ decodes but has no handler.  It
 * is refused as an unknown command is (ENOSYS, answered), not called
 * through a NULL pointer, and the device keeps serving.
 */
static void test_command_without_handler_refused(void **state)
{
	union pvrdma_cmd_req req;
	union pvrdma_cmd_resp resp;

	(void)state;
	probe();
	memset(&req, 0, sizeof(req));
	req.hdr.cmd = PVRDMA_CMD_DESTROY_SRQ;
	req.destroy_srq.srq_handle = 1;
	assert_int_equal(cmd(&req, &resp), ENOSYS);
	assert_int_equal(resp.hdr.err, ENOSYS);
	assert_int_equal(resp.hdr.response, 0x5eed);
	assert_int_equal(resp.hdr.ack, PVRDMA_CMD_RESP(PVRDMA_CMD_DESTROY_SRQ));
	create_pd();
}
#endif

#define DEV_TEST(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

int main(void)
{
#ifdef PVRDMA_TEST_CMD_HOLE
	const struct CMUnitTest tests[] = {
		DEV_TEST(test_command_without_handler_refused),
	};
#else
	const struct CMUnitTest tests[] = {
		DEV_TEST(test_probe_writes_caps),
		DEV_TEST(test_default_gid_table),
		DEV_TEST(test_send_completes_into_the_guest_cq),
		DEV_TEST(test_arm_with_unread_cqes_notifies_at_once),
		DEV_TEST(test_all_commands_answer),
		DEV_TEST(test_create_qp_inline_clamped_or_refused),
		DEV_TEST(test_cve_2022_1050_commands_before_dsr),
		DEV_TEST(test_bogus_dsr_refused),
		DEV_TEST(test_cve_2018_20191_uar_read),
		DEV_TEST(test_cve_2018_20124_num_sge),
		DEV_TEST(test_cve_2018_20216_ring_indices),
		DEV_TEST(test_cq_overflow),
		DEV_TEST(test_recv_srq_ud_and_events),
		DEV_TEST(test_thousand_refusals_leak_nothing),
		DEV_TEST(test_mr_optional_access_and_refusal_log),
		DEV_TEST(test_guest_lines_rate_limited),
		DEV_TEST(test_reset_and_again),
		DEV_TEST(test_no_dma_without_bus_master),
		DEV_TEST(test_unquiesce_clears_an_earlier_error),
		DEV_TEST(test_request_response_split),
		DEV_TEST(test_shm_doorbells_drain_every_rung_qp),
		DEV_TEST(test_shm_lost_arm_still_notifies),
		DEV_TEST(test_shm_busy_poller_gets_no_interrupt),
		DEV_TEST(test_shm_polled_cq_waits_longer),
		DEV_TEST(test_shm_polled_cq_wait_is_learned),
		DEV_TEST(test_shm_idle_look_keeps_held_back),
		DEV_TEST(test_shm_saved_keeps_polled),
		DEV_TEST(test_shm_unread_cq_is_notified_again),
		DEV_TEST(test_shm_unmapped_client_is_exact),
		DEV_TEST(test_shm_idle_timeout),
		DEV_TEST(test_dma_response_slot_in_rom_refused),
		DEV_TEST(test_dma_rings_in_rom),
		DEV_TEST(test_dma_unmap_and_bus_master_off_revoke),
	};
#endif
	return cmocka_run_group_tests(tests, NULL, NULL);
}
