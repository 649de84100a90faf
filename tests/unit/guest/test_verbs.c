// SPDX-License-Identifier: MIT
/*
 * Unit tests of the guest verbs' pure parts against the worker's pure
 * decoders: what the guest encodes (send/receive elements, MR page tables
 * over scattered guest pages) must decode to what it meant, and CQEs the
 * worker encodes must decode to what the worker meant.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "guest/tools.h"
#include "guest/verbs.h"
#include "guest/verbs_transport.h"
#include "worker/virtio_rdma/mr_pt.h"
#include "worker/virtio_rdma/wqe.h"

/* A context with guest RAM and no device: enough for buffers. */
static struct gv_context *offline_ctx(bool scatter)
{
	struct gv_context *ctx = calloc(1, sizeof(*ctx));
	struct guest_ram *ram;
	int slot;

	assert_non_null(ctx);
	guest_dev_init(&ctx->dev);
	ram = &ctx->dev.ram;
	ctx->ram = ram;
	assert_int_equal(
		guest_ram_add_region(ram, GV_LOW_GPA, 8 << 20, GUEST_PAGE_4K),
		0);
	slot = guest_ram_add_region(ram, GV_DATA_GPA, 16 << 20, GUEST_PAGE_4K);
	assert_int_equal(slot, 1);
	ctx->data_slot = 1;
	ctx->data_fd = ram->blocks[ram->slots[1].block].fd;
	ctx->data_off = ram->slots[1].offset;
	ctx->scatter = scatter;
	/* as in gv_open(): the control page takes GPA 0, which no table
	 * may use (a zero entry means "none") */
	assert_int_equal(guest_ram_alloc_in(ram, 0, 4096, 4096, &ctx->cmd_gpa),
			 0);
	return ctx;
}

/* gv_close() would also stop the device: free by hand. */
static void offline_free(struct gv_context *ctx, void *buf)
{
	if (buf)
		gv_free_buf(ctx, buf);
	assert_null(ctx->bufs);
	guest_dev_release(&ctx->dev);
	free(ctx);
}

static int read_gpa(void *c, uint64_t gpa, void *buf, size_t len)
{
	return guest_ram_read(c, gpa, buf, len);
}

static int check_gpa(void *c, uint64_t gpa, uint64_t len)
{
	uint8_t b;

	/* both ends inside RAM; the test RAM has no holes inside a slot */
	if (guest_ram_read(c, gpa, &b, 1) ||
	    guest_ram_read(c, gpa + len - 1, &b, 1))
		return -EFAULT;
	return 0;
}

/* Builds the table for [va, va + len) of a buffer and walks it. */
static void walk_buf(struct gv_context *ctx, uint8_t *va, size_t len,
		     uint32_t expect_min_runs)
{
	struct guest_ram *ram = &ctx->dev.ram;
	uint32_t npages =
		(uint32_t)((((uintptr_t)va & 4095) + len + 4095) / 4096);
	uint32_t nl2 = (npages + 511) / 512;
	uint64_t *pages = calloc(npages, sizeof(*pages));
	uint64_t l1, l2[8];
	struct rdma_mr_pt_ops ops = { read_gpa, check_gpa };
	struct rdma_mr_pt_args a;
	struct rdma_mr_layout lay;
	struct reason why;
	uint8_t *page0 = (uint8_t *)((uintptr_t)va & ~(uintptr_t)4095);

	assert_non_null(pages);
	assert_true(nl2 <= 8);
	for (uint32_t i = 0; i < npages; i++)
		pages[i] = gv_buf_gpa(ctx, page0 + (size_t)i * 4096);
	assert_int_equal(guest_ram_alloc_in(ram, 0, 4096, 4096, &l1), 0);
	for (uint32_t i = 0; i < nl2; i++)
		assert_int_equal(guest_ram_alloc_in(ram, 0, 4096, 4096, &l2[i]),
				 0);
	assert_int_equal(gv_build_page_table(ram, l1, l2, pages, npages), 0);
	a = (struct rdma_mr_pt_args){ .root = l1,
				      .npages = npages,
				      .start = (uintptr_t)va,
				      .length = len,
				      .virt_addr = (uintptr_t)va };
	if (rdma_mr_pt_walk(&a, &ops, ram, &lay, &why))
		fail_msg("walk: %s", why.msg);
	assert_true(lay.nruns >= expect_min_runs);
	/* every byte offset we try translates to where our VA points */
	for (size_t off = 0; off < len; off += 1237) {
		uint64_t gpa;

		assert_int_equal(
			rdma_mr_iova_to_gpa(&lay, (uintptr_t)va + off, &gpa),
			0);
		assert_int_equal(gpa, gv_buf_gpa(ctx, va + off));
		/* and the byte there is the byte we see */
		va[off] = (uint8_t)(off * 7 + 1);
		assert_int_equal(*(uint8_t *)guest_ram_ptr(ram, gpa, 1),
				 (uint8_t)(off * 7 + 1));
	}
	rdma_mr_layout_release(&lay);
	free(pages);
}

static void page_table_contiguous_one_run(void **state)
{
	struct gv_context *ctx = offline_ctx(false);
	uint8_t *b = gv_alloc_buf(ctx, 3 << 20, 0);

	assert_non_null(b);
	walk_buf(ctx, b, 3 << 20, 1);	 /* 768 pages: two level-2 pages */
	walk_buf(ctx, b + 100, 5000, 1); /* unaligned start, 2 pages */
	offline_free(ctx, b);
}

static void page_table_scattered_pages_translate(void **state)
{
	struct gv_context *ctx = offline_ctx(true);
	uint8_t *b = gv_alloc_buf(ctx, 40 * 4096, 0);

	assert_non_null(b);
	/* 40 pages placed in reverse order: 40 runs of 1 page */
	assert_int_equal(gv_buf_gpa(ctx, b + 4096) + 4096, gv_buf_gpa(ctx, b));
	walk_buf(ctx, b, 40 * 4096, 40);
	walk_buf(ctx, b + 4095, 4098, 3); /* crosses two page boundaries */
	offline_free(ctx, b);
}

static void page_table_large_scattered_chunks(void **state)
{
	struct gv_context *ctx = offline_ctx(false);
	/* 1100 pages: chunks of 18 pages, 62 chunks reversed */
	uint8_t *b = gv_alloc_buf(ctx, 1100 * 4096, GV_BUF_SCATTER);

	assert_non_null(b);
	walk_buf(ctx, b, 1100 * 4096, 62);
	offline_free(ctx, b);
}

static void page_table_refuses_bad_counts(void **state)
{
	struct gv_context *ctx = offline_ctx(false);
	uint64_t l2 = 4096, page = 8192;

	assert_int_equal(gv_build_page_table(&ctx->dev.ram, 0, &l2, &page, 0),
			 -EINVAL);
	assert_int_equal(gv_build_page_table(&ctx->dev.ram, 0, &l2, &page,
					     VIRTIO_RDMA_MR_MAX_PAGES + 1),
			 -EINVAL);
	offline_free(ctx, NULL);
}

static const struct rdma_sq_limits rc_lim = { VIRTIO_RDMA_QPT_RC, 4, 64 };

static void decode_send(const void *buf, int len,
			const struct rdma_sq_limits *lim,
			struct rdma_send_wr *wr)
{
	struct reason why;
	int r;

	assert_true(len > 0);
	r = rdma_sq_wqe_decode(buf, (size_t)len, lim, wr, &why);
	if (r)
		fail_msg("decode: %s", why.msg);
}

static void send_with_two_sges_decodes(void **state)
{
	struct gv_sge sg[2] = { { 0x1000, 100, 7 }, { 0x9000, 28, 8 } };
	struct gv_send_wr wr = { .wr_id = 0xabcdef,
				 .sg_list = sg,
				 .num_sge = 2,
				 .opcode = VIRTIO_RDMA_WR_SEND_WITH_IMM,
				 .send_flags = VIRTIO_RDMA_SEND_SIGNALED,
				 .imm_data = 0x11223344 };
	uint8_t buf[256];
	struct rdma_send_wr d;
	int len =
		gv_encode_send(&wr, VIRTIO_RDMA_QPT_RC, 4, 0, buf, sizeof(buf));

	assert_int_equal(len, 88 + 32);
	decode_send(buf, len, &rc_lim, &d);
	assert_int_equal(d.wr_id, 0xabcdef);
	assert_int_equal(d.opcode, VIRTIO_RDMA_WR_SEND_WITH_IMM);
	assert_int_equal(d.imm_data, 0x11223344);
	assert_int_equal(d.num_sge, 2);
	assert_int_equal(d.total_len, 128);
	assert_int_equal(d.sge[1].addr, 0x9000);
	assert_int_equal(d.sge[1].lkey, 8);
}

static void rdma_and_atomics_decode(void **state)
{
	struct gv_sge sg = { 0x2000, 8, 5 };
	struct gv_send_wr wr = { .sg_list = &sg, .num_sge = 1 };
	uint8_t buf[256];
	struct rdma_send_wr d;
	int len;

	wr.opcode = VIRTIO_RDMA_WR_RDMA_READ;
	wr.wr.rdma.remote_addr = 0x7f0000001000;
	wr.wr.rdma.rkey = 0x1234;
	len = gv_encode_send(&wr, VIRTIO_RDMA_QPT_RC, 4, 0, buf, sizeof(buf));
	decode_send(buf, len, &rc_lim, &d);
	assert_int_equal(d.wr.rdma.remote_addr, 0x7f0000001000);
	assert_int_equal(d.wr.rdma.rkey, 0x1234);

	memset(&wr.wr, 0, sizeof(wr.wr));
	wr.opcode = VIRTIO_RDMA_WR_ATOMIC_CMP_AND_SWP;
	wr.wr.atomic.remote_addr = 0x7f0000002008;
	wr.wr.atomic.compare_add = 17;
	wr.wr.atomic.swap = 99;
	wr.wr.atomic.rkey = 0x55;
	len = gv_encode_send(&wr, VIRTIO_RDMA_QPT_RC, 4, 0, buf, sizeof(buf));
	decode_send(buf, len, &rc_lim, &d);
	assert_int_equal(d.wr.atomic.remote_addr, 0x7f0000002008);
	assert_int_equal(d.wr.atomic.compare_add, 17);
	assert_int_equal(d.wr.atomic.swap, 99);
	assert_int_equal(d.wr.atomic.rkey, 0x55);
}

static void ud_send_carries_the_av(void **state)
{
	struct gv_context ctx = { .ops = &gv_virtio_rdma_ops };
	struct gv_pd pd = { &ctx, 3 };
	struct gv_ah_attr aa = { .sgid_index = 1,
				 .hop_limit = 64,
				 .traffic_class = 0x20,
				 .flow_label = 0x12345,
				 .sl = 5 };
	struct rdma_sq_limits lim = { VIRTIO_RDMA_QPT_UD, 4, 0 };
	struct gv_sge sg = { 0x3000, 64, 9 };
	struct gv_send_wr wr = { .sg_list = &sg,
				 .num_sge = 1,
				 .opcode = VIRTIO_RDMA_WR_SEND };
	struct rdma_send_wr d;
	struct gv_ah *ah;
	uint8_t buf[256];
	int len;

	memset(aa.dgid, 0xab, 16);
	assert_int_equal(gv_create_ah(&pd, &aa, &ah), 0);
	wr.wr.ud.ah = ah;
	wr.wr.ud.remote_qpn = 0x123456;
	wr.wr.ud.remote_qkey = 0x11111111;
	len = gv_encode_send(&wr, VIRTIO_RDMA_QPT_UD, 4, 0, buf, sizeof(buf));
	decode_send(buf, len, &lim, &d);
	assert_int_equal(d.wr.ud.remote_qpn, 0x123456);
	assert_int_equal(d.wr.ud.remote_qkey, 0x11111111);
	assert_int_equal(d.wr.ud.av.port, 1);
	assert_int_equal(d.wr.ud.av.pdn, 3);
	assert_int_equal(d.wr.ud.av.gid_index, 1);
	assert_int_equal(d.wr.ud.av.hop_limit, 64);
	assert_int_equal(VIRTIO_RDMA_AV_SL(d.wr.ud.av.sl_tclass_flowlabel), 5);
	assert_int_equal(VIRTIO_RDMA_AV_TCLASS(d.wr.ud.av.sl_tclass_flowlabel),
			 0x20);
	assert_int_equal(
		VIRTIO_RDMA_AV_FLOW_LABEL(d.wr.ud.av.sl_tclass_flowlabel),
		0x12345);
	assert_memory_equal(d.wr.ud.av.dgid, aa.dgid, 16);
	aa.sl = 16;
	assert_int_equal(gv_create_ah(&pd, &aa, &ah), -EINVAL);
	gv_destroy_ah(wr.wr.ud.ah);
}

static void inline_send_copies_payload(void **state)
{
	char a[] = "hello, ", b[] = "inline world";
	struct gv_sge sg[2] = { { (uintptr_t)a, 7, 0 },
				{ (uintptr_t)b, 12, 0 } };
	struct gv_send_wr wr = { .sg_list = sg,
				 .num_sge = 2,
				 .opcode = VIRTIO_RDMA_WR_SEND,
				 .send_flags = VIRTIO_RDMA_SEND_INLINE };
	uint8_t buf[256];
	struct rdma_send_wr d;
	int len = gv_encode_send(&wr, VIRTIO_RDMA_QPT_RC, 4, 64, buf,
				 sizeof(buf));

	assert_int_equal(len, 88 + 19);
	decode_send(buf, len, &rc_lim, &d);
	assert_int_equal(d.inline_len, 19);
	assert_memory_equal(d.inline_data, "hello, inline world", 19);
	/* over max_inline */
	assert_int_equal(gv_encode_send(&wr, VIRTIO_RDMA_QPT_RC, 4, 18, buf,
					sizeof(buf)),
			 -E2BIG);
}

static void too_many_sges_refused(void **state)
{
	struct gv_sge sg[5] = { { 0 } };
	struct gv_send_wr wr = { .sg_list = sg, .num_sge = 5 };
	struct gv_recv_wr rw = { .sg_list = sg, .num_sge = 5 };
	uint8_t buf[512];

	assert_int_equal(
		gv_encode_send(&wr, VIRTIO_RDMA_QPT_RC, 4, 0, buf, sizeof(buf)),
		-E2BIG);
	assert_int_equal(gv_encode_recv(&rw, 4, buf, sizeof(buf)), -E2BIG);
	/* room for the header only */
	wr.num_sge = 1;
	assert_int_equal(gv_encode_send(&wr, VIRTIO_RDMA_QPT_RC, 4, 0, buf, 90),
			 -E2BIG);
}

static void recv_element_decodes(void **state)
{
	struct gv_sge sg[3] = { { 0x10, 1, 1 },
				{ 0x20, 2, 2 },
				{ 0x30, 3, 3 } };
	struct gv_recv_wr wr = { .wr_id = 77, .sg_list = sg, .num_sge = 3 };
	struct rdma_recv_wr d;
	struct reason why;
	uint8_t buf[128];
	int len = gv_encode_recv(&wr, 4, buf, sizeof(buf));

	assert_int_equal(len, 16 + 48);
	assert_int_equal(rdma_rq_wqe_decode(buf, (size_t)len, 4, &d, &why), 0);
	assert_int_equal(d.wr_id, 77);
	assert_int_equal(d.num_sge, 3);
	assert_int_equal(d.total_len, 6);
	assert_int_equal(d.sge[2].addr, 0x30);
}

static void cqe_round_trip(void **state)
{
	struct rdma_completion c = { .wr_id = 0x1122334455667788ull,
				     .status = VIRTIO_RDMA_WC_REM_ACCESS_ERR,
				     .opcode = VIRTIO_RDMA_WC_RECV,
				     .vendor_err = 3,
				     .byte_len = 4096,
				     .imm_data = 0xdeadbeef,
				     .qp_num = 0x11,
				     .src_qp = 0x22,
				     .wc_flags = VIRTIO_RDMA_WC_GRH |
						 VIRTIO_RDMA_WC_WITH_IMM,
				     .sl = 4,
				     .port_num = 1 };
	struct virtio_rdma_cqe raw;
	struct gv_wc w;

	assert_int_equal(rdma_cqe_encode(&c, &raw, sizeof(raw)), 48);
	gv_decode_cqe(&raw, &w);
	assert_int_equal(w.wr_id, c.wr_id);
	assert_int_equal(w.status, c.status);
	assert_int_equal(w.opcode, c.opcode);
	assert_int_equal(w.vendor_err, 3);
	assert_int_equal(w.byte_len, 4096);
	assert_int_equal(w.imm_data, 0xdeadbeef);
	assert_int_equal(w.qp_num, 0x11);
	assert_int_equal(w.src_qp, 0x22);
	assert_int_equal(w.wc_flags, c.wc_flags);
	assert_int_equal(w.sl, 4);
	assert_int_equal(w.port_num, 1);
	assert_string_equal(gv_wc_status_str(w.status), "remote access error");
	assert_string_equal(gv_wc_status_str(99), "unknown");
}

static void gid_option_parses(void **state)
{
	struct gv_tool_gid g;
	static const uint8_t v4[16] = { [10] = 0xff, [11] = 0xff, [12] = 10,
					[13] = 99,   [14] = 0,	  [15] = 1 };

	assert_int_equal(gv_tool_parse_gid("1=::ffff:10.99.0.1", &g), 0);
	assert_int_equal(g.index, 1);
	assert_int_equal(g.type, VIRTIO_RDMA_GID_TYPE_ROCE_V2);
	assert_memory_equal(g.gid, v4, 16);
	assert_int_equal(gv_tool_parse_gid("7=fe80::1,v1", &g), 0);
	assert_int_equal(g.type, VIRTIO_RDMA_GID_TYPE_ROCE_V1);
	assert_int_equal(gv_tool_parse_gid("512=fe80::1", &g), -EINVAL);
	assert_int_equal(gv_tool_parse_gid("x=fe80::1", &g), -EINVAL);
	assert_int_equal(gv_tool_parse_gid("1=fe80::1,v3", &g), -EINVAL);
	assert_int_equal(gv_tool_parse_gid("1=10.99.0.1", &g), -EINVAL);
	assert_int_equal(gv_tool_parse_gid("fe80::1", &g), -EINVAL);
}

static void mtu_conversions(void **state)
{
	assert_int_equal(gv_mtu_to_enum(1024), VIRTIO_RDMA_MTU_1024);
	assert_int_equal(gv_mtu_to_enum(1000), 0);
	assert_int_equal(gv_mtu_to_bytes(VIRTIO_RDMA_MTU_4096), 4096);
	assert_int_equal(gv_mtu_to_bytes(VIRTIO_RDMA_MTU_256), 256);
	assert_int_equal(gv_mtu_to_bytes(6), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(page_table_contiguous_one_run),
		cmocka_unit_test(page_table_scattered_pages_translate),
		cmocka_unit_test(page_table_large_scattered_chunks),
		cmocka_unit_test(page_table_refuses_bad_counts),
		cmocka_unit_test(send_with_two_sges_decodes),
		cmocka_unit_test(rdma_and_atomics_decode),
		cmocka_unit_test(ud_send_carries_the_av),
		cmocka_unit_test(inline_send_copies_payload),
		cmocka_unit_test(too_many_sges_refused),
		cmocka_unit_test(recv_element_decodes),
		cmocka_unit_test(cqe_round_trip),
		cmocka_unit_test(gid_option_parses),
		cmocka_unit_test(mtu_conversions),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
