// SPDX-License-Identifier: MIT
/*
 * rdmagate-guest cm_rping: the server side of rdma-core's rping on a
 * connection that cm_pingpong's CM sets up (tool_cm.c), so that a native
 * rping client (rping -c -V) checks every byte the guest moved.  Per ping
 * the client SENDs its buffer's address; the guest RDMA READs the buffer,
 * checks it holds the text rping writes, answers "go ahead", gets the
 * client's sink and RDMA WRITEs the data there, and says "go ahead"
 * again; the client compares what came back with what it sent.
 *
 * The guest grants no remote access: the peer only ever receives SENDs
 * from it, so the go-ahead messages name no key.
 */
#include <endian.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "guest/tools.h"

/* rping's struct rping_rdma_info: be64 address, be32 rkey, be32 size. */
#define RP_INFO_LEN 16
/* In the buffer: receives land at 0, our SENDs go from RP_SEND_OFF, the
 * ping data sits at RP_DATA_OFF. */
#define RP_SEND_OFF 32
#define RP_DATA_OFF 64
/* Our send wr_ids: one send in flight at a time (the QP has one slot). */
enum { RP_SEND = 101, RP_READ, RP_WRITE };

struct rp {
	const struct gv_tool_data_args *d;
	bool have_info; /* the peer's info arrived, not used yet */
	uint64_t addr;	/* ... its buffer */
	uint32_t rkey, size;
};

static const char *wr_name(uint64_t wr_id)
{
	return wr_id == RP_READ	   ? "RDMA READ"
	       : wr_id == RP_WRITE ? "RDMA WRITE"
	       : wr_id == RP_SEND  ? "SEND"
				   : "receive";
}

/* Takes the next completion; a receive is the peer's info, kept. */
static int rp_step(struct rp *r, uint64_t *ret_wr_id)
{
	const struct gv_tool_data_args *d = r->d;
	struct gv_wc wc;
	uint64_t be64;
	uint32_t be32;
	int e = gv_tool_next_wc(d, "cm_rping", &wc);

	if (e)
		return e;
	*ret_wr_id = wc.wr_id;
	if (wc.wr_id != d->recv_wr_id)
		return 0;
	if (wc.byte_len != RP_INFO_LEN || r->have_info) {
		fprintf(stderr,
			"cm_rping: received %u bytes%s: rping sends %u, one "
			"at a time\n",
			wc.byte_len,
			r->have_info ? " before using the last" : "",
			RP_INFO_LEN);
		return -EPROTO;
	}
	/* one copy out of the buffer the peer writes into */
	memcpy(&be64, d->buf, 8);
	memcpy(&be32, d->buf + 8, 4);
	r->addr = be64toh(be64);
	r->rkey = be32toh(be32);
	memcpy(&be32, d->buf + 12, 4);
	r->size = be32toh(be32);
	r->have_info = true;
	return 0;
}

/* Until the peer's next info (want: recv_wr_id) or our want completed. */
static int rp_wait(struct rp *r, uint64_t want)
{
	bool info = want == r->d->recv_wr_id;
	uint64_t id;
	int e;

	while (!(info && r->have_info)) {
		e = rp_step(r, &id);
		if (e)
			return e;
		if (!info && id == want)
			return 0;
	}
	r->have_info = false;
	return 0;
}

/* One signaled work request from buf + off, waited for. */
static int rp_post(struct rp *r, uint32_t opcode, uint64_t wr_id, uint32_t off,
		   uint32_t len)
{
	struct gv_sge sge = { (uintptr_t)r->d->buf + off, len, r->d->lkey };
	struct gv_send_wr wr = { .wr_id = wr_id,
				 .sg_list = &sge,
				 .num_sge = 1,
				 .opcode = opcode,
				 .send_flags = VIRTIO_RDMA_SEND_SIGNALED };
	int e;

	if (opcode != VIRTIO_RDMA_WR_SEND) {
		wr.wr.rdma.remote_addr = r->addr;
		wr.wr.rdma.rkey = r->rkey;
	}
	e = gv_post_send(r->d->qp, &wr, NULL);
	if (e) {
		fprintf(stderr, "cm_rping: posting %s: %s\n", wr_name(wr_id),
			strerror(-e));
		return e;
	}
	return rp_wait(r, wr_id);
}

/* "Go ahead": our data buffer's address and the size, no key. */
static int rp_go_ahead(struct rp *r, uint32_t size)
{
	uint64_t be64 = htobe64((uintptr_t)r->d->buf + RP_DATA_OFF);
	uint32_t be32 = 0;

	memcpy(r->d->buf + RP_SEND_OFF, &be64, 8);
	memcpy(r->d->buf + RP_SEND_OFF + 8, &be32, 4);
	be32 = htobe32(size);
	memcpy(r->d->buf + RP_SEND_OFF + 12, &be32, 4);
	return rp_post(r, VIRTIO_RDMA_WR_SEND, RP_SEND, RP_SEND_OFF,
		       RP_INFO_LEN);
}

/* What rping's client writes for ping i (its rping_test_client()): the
 * text "rdma-ping-I: ", then letters from 'A' + i % 58 on, cycling
 * through 'A'..'z', and a NUL last. */
static void rp_expected(uint8_t *out, uint32_t size, unsigned int ping)
{
	int cc = snprintf((char *)out, size, "rdma-ping-%u: ", ping);
	uint8_t c = (uint8_t)('A' + ping % 58);

	for (uint32_t i = cc < 0 ? size : (uint32_t)cc; i < size; i++) {
		out[i] = c;
		c = c == 'z' ? 'A' : (uint8_t)(c + 1);
	}
	out[size - 1] = 0;
}

/* The first byte where got and want differ (size if none). */
static uint32_t first_diff(const uint8_t *got, const uint8_t *want,
			   uint32_t size)
{
	uint32_t i = 0;

	while (i < size && got[i] == want[i])
		i++;
	return i;
}

static int rp_ping(struct rp *r, unsigned int ping, uint8_t *want)
{
	uint32_t room = r->d->len - RP_DATA_OFF, size, at;
	uint8_t *data = r->d->buf + RP_DATA_OFF;
	int e = rp_wait(r, r->d->recv_wr_id); /* the source */

	if (e)
		return e;
	size = r->size;
	if (!size || size > room) {
		fprintf(stderr,
			"cm_rping: ping %u of %u bytes: 1 to %u fit (-s)\n",
			ping, size, room);
		return -EMSGSIZE;
	}
	memset(data, 0, size);
	e = rp_post(r, VIRTIO_RDMA_WR_RDMA_READ, RP_READ, RP_DATA_OFF, size);
	if (e)
		return e;
	rp_expected(want, size, ping);
	at = first_diff(data, want, size);
	if (at < size) {
		fprintf(stderr,
			"cm_rping: ping %u: byte %u of the %u read is 0x%02x, "
			"rping wrote 0x%02x\n",
			ping, at, size, data[at], want[at]);
		return -EIO;
	}
	e = rp_go_ahead(r, size);
	if (!e)
		e = rp_wait(r, r->d->recv_wr_id); /* the sink */
	if (e)
		return e;
	if (r->size < size) {
		fprintf(stderr,
			"cm_rping: ping %u: a sink of %u bytes for %u\n", ping,
			r->size, size);
		return -EMSGSIZE;
	}
	e = rp_post(r, VIRTIO_RDMA_WR_RDMA_WRITE, RP_WRITE, RP_DATA_OFF, size);
	if (!e)
		e = rp_go_ahead(r, size);
	if (!e)
		printf("cm_rping: ping %u: %u bytes read, checked, written "
		       "back: %.24s\n",
		       ping, size, (const char *)data);
	return e;
}

int gv_tool_rping_serve(const struct gv_tool_data_args *d)
{
	struct rp r = { .d = d };
	uint8_t *want;
	int e = 0;

	if (d->active) {
		fprintf(stderr, "cm_rping: only the server side: no HOST (the "
				"peer runs rping -c)\n");
		return -EINVAL;
	}
	if (d->len <= RP_DATA_OFF) {
		fprintf(stderr, "cm_rping: -s %u: more than %u needed\n",
			d->len, RP_DATA_OFF);
		return -EINVAL;
	}
	want = malloc(d->len - RP_DATA_OFF);
	if (!want)
		return -ENOMEM;
	for (unsigned int i = 0; i < d->iters && !e; i++)
		e = rp_ping(&r, i, want);
	free(want);
	if (!e)
		printf("cm_rping: %u pings served, every byte read checked\n",
		       d->iters);
	fflush(stdout);
	return e;
}
