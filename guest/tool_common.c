// SPDX-License-Identifier: MIT
/*
 * What the rdmagate-guest pingpong and perf commands share: the --gid
 * option and the options -p -n -g -e and HOST, opening the device, the
 * buffer/PD/MR/CQ and QP set-up, the RC connection (INIT -> RTR -> RTS)
 * and the TCP exchange of addresses in rdma-core's "LID:QPN:PSN:GID" wire
 * format.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "guest/tools.h"

int gv_tool_parse_gid(const char *arg, struct gv_tool_gid *ret)
{
	char text[INET6_ADDRSTRLEN + 8], *eq, *comma, *end;
	unsigned long idx;

	if (strlen(arg) >= sizeof(text))
		return -EINVAL;
	strcpy(text, arg);
	eq = strchr(text, '=');
	if (!eq)
		return -EINVAL;
	*eq = '\0';
	idx = strtoul(text, &end, 0);
	if (*end || end == text || idx >= VIRTIO_RDMA_GID_TBL_LEN)
		return -EINVAL;
	ret->index = (uint16_t)idx;
	ret->type = VIRTIO_RDMA_GID_TYPE_ROCE_V2;
	comma = strchr(eq + 1, ',');
	if (comma) {
		*comma = '\0';
		if (!strcmp(comma + 1, "v1"))
			ret->type = VIRTIO_RDMA_GID_TYPE_ROCE_V1;
		else if (strcmp(comma + 1, "v2"))
			return -EINVAL;
	}
	return inet_pton(AF_INET6, eq + 1, ret->gid) == 1 ? 0 : -EINVAL;
}

int gv_tool_open(const struct gv_tool_opts *o, struct gv_context **ret_ctx)
{
	struct gv_opts go = { .transport = o->transport,
			      .timeout_ms = o->timeout_ms,
			      .scatter = o->scatter,
			      .data_size = o->data_size };
	struct gv_context *ctx;
	int r = gv_open(o->socket, &go, &ctx);

	if (r) {
		fprintf(stderr,
			"rdmagate-guest: cannot open the %s device at %s: "
			"%s\n",
			gv_transport_names[o->transport], o->socket,
			strerror(-r));
		return r;
	}
	for (unsigned int i = 0; i < o->ngids; i++) {
		r = gv_add_gid(ctx, o->gids[i].index, o->gids[i].gid,
			       o->gids[i].type);
		if (r) {
			fprintf(stderr, "rdmagate-guest: ADD_GID %u: %s\n",
				o->gids[i].index, strerror(-r));
			gv_close(ctx);
			return r;
		}
	}
	*ret_ctx = ctx;
	return 0;
}

int gv_tool_read_full(int fd, void *buf, size_t len)
{
	size_t got = 0;

	while (got < len) {
		ssize_t n = read(fd, (char *)buf + got, len - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -EIO;
		got += (size_t)n;
	}
	return 0;
}

int gv_tool_write_full(int fd, const void *buf, size_t len)
{
	return write(fd, buf, len) == (ssize_t)len ? 0 : -EIO;
}

int gv_tool_connect(const char *host, unsigned int port)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC,
				  .ai_socktype = SOCK_STREAM };
	struct addrinfo *res;
	char service[16];
	int fd = -1;

	snprintf(service, sizeof(service), "%u", port);
	if (getaddrinfo(host, service, &hints, &res)) {
		fprintf(stderr, "cannot resolve %s:%u\n", host, port);
		return -1;
	}
	for (int tries = 0; fd < 0 && tries < 50; tries++) {
		for (struct addrinfo *t = res; t && fd < 0; t = t->ai_next) {
			fd = socket(t->ai_family, t->ai_socktype | SOCK_CLOEXEC,
				    t->ai_protocol);
			if (fd >= 0 && connect(fd, t->ai_addr, t->ai_addrlen))
				fd = safe_close(fd);
		}
		if (fd < 0)
			usleep(100000);
	}
	freeaddrinfo(res);
	if (fd < 0)
		fprintf(stderr, "Couldn't connect to %s:%u\n", host, port);
	return fd;
}

int gv_tool_accept(unsigned int port)
{
	struct addrinfo hints = { .ai_flags = AI_PASSIVE,
				  .ai_family = AF_UNSPEC,
				  .ai_socktype = SOCK_STREAM };
	struct addrinfo *res;
	char service[16];
	int fd = -1, conn, one = 1;

	snprintf(service, sizeof(service), "%u", port);
	if (getaddrinfo(NULL, service, &hints, &res))
		return -1;
	for (struct addrinfo *t = res; t && fd < 0; t = t->ai_next) {
		fd = socket(t->ai_family, t->ai_socktype | SOCK_CLOEXEC,
			    t->ai_protocol);
		if (fd < 0)
			continue;
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (bind(fd, t->ai_addr, t->ai_addrlen) || listen(fd, 1))
			fd = safe_close(fd);
	}
	freeaddrinfo(res);
	if (fd < 0) {
		fprintf(stderr, "Couldn't listen to port %u\n", port);
		return -1;
	}
	conn = accept4(fd, NULL, NULL, SOCK_CLOEXEC);
	close(fd);
	if (conn < 0)
		fprintf(stderr, "accept() failed\n");
	return conn;
}

/* ---- the command line ---- */

int gv_tool_cli_opt(struct gv_tool_cli *c, int opt)
{
	switch (opt) {
	case 'e':
		c->events = true;
		return 1;
	default:
		return 0;
	}
}

int gv_tool_cli_host(struct gv_tool_cli *c, int argc, char **argv)
{
	if (optind == argc - 1)
		c->server = argv[optind];
	else if (optind < argc)
		return -EINVAL;
	if (!c->iters || c->gidx >= VIRTIO_RDMA_GID_TBL_LEN)
		return -EINVAL;
	return 0;
}

/* ---- the addresses (rdma-core's wire format) ---- */

void gv_tool_format_dest(const struct gv_tool_dest *d,
			 char msg[GV_TOOL_MSG_LEN])
{
	char wire[33];

	for (int i = 0; i < 16; i++)
		sprintf(wire + 2 * i, "%02x", d->gid[i]);
	snprintf(msg, GV_TOOL_MSG_LEN, "%04x:%06x:%06x:%s", d->lid, d->qpn,
		 d->psn, wire);
}

int gv_tool_parse_dest(const char *msg, struct gv_tool_dest *ret)
{
	char copy[GV_TOOL_MSG_LEN], wire[33];
	struct gv_tool_dest d;
	/* a wire message fills the buffer; a caller's string may be shorter */
	size_t n = strnlen(msg, GV_TOOL_MSG_LEN - 1);

	memcpy(copy, msg, n);
	copy[n] = '\0';
	/* 32 hex digits: %2x alone would take "fg" as 0x0f */
	if (sscanf(copy, "%x:%x:%x:%32s", &d.lid, &d.qpn, &d.psn, wire) != 4 ||
	    strspn(wire, "0123456789abcdefABCDEF") != 32)
		return -EINVAL;
	for (int i = 0; i < 16; i++) {
		unsigned int b;

		if (sscanf(wire + 2 * i, "%2x", &b) != 1)
			return -EINVAL;
		d.gid[i] = (uint8_t)b;
	}
	*ret = d;
	return 0;
}

static int write_dests(int fd, const struct gv_tool_dest *d, unsigned int n)
{
	char msg[GV_TOOL_MSG_LEN];
	int r = 0;

	for (unsigned int i = 0; !r && i < n; i++) {
		gv_tool_format_dest(&d[i], msg);
		r = gv_tool_write_full(fd, msg, sizeof(msg));
	}
	return r;
}

static int read_dests(int fd, struct gv_tool_dest *d, unsigned int n)
{
	char msg[GV_TOOL_MSG_LEN];
	int r = 0;

	for (unsigned int i = 0; !r && i < n; i++) {
		r = gv_tool_read_full(fd, msg, sizeof(msg));
		if (!r)
			r = gv_tool_parse_dest(msg, &d[i]);
	}
	return r;
}

static int exchange_client(int fd, const struct gv_tool_dest *my,
			   struct gv_tool_dest *rem, unsigned int n)
{
	int r = write_dests(fd, my, n);

	if (!r)
		r = read_dests(fd, rem, n);
	if (r)
		fprintf(stderr, "Couldn't read/write remote address\n");
	return r;
}

/* Like rdma-core's servers: connect before answering. */
static int exchange_server(int fd, const struct gv_tool_dest *my,
			   struct gv_tool_dest *rem, unsigned int n,
			   gv_tool_connect_fn *connect, void *arg)
{
	int r = read_dests(fd, rem, n);

	if (r) {
		fprintf(stderr, "Couldn't read remote address\n");
		return r;
	}
	r = connect(arg, my, rem);
	if (r)
		return r;
	r = write_dests(fd, my, n);
	if (r)
		fprintf(stderr, "Couldn't send/recv local address\n");
	return r;
}

int gv_tool_exchange(const char *server, unsigned int port,
		     const struct gv_tool_dest *my, struct gv_tool_dest *rem,
		     unsigned int n, gv_tool_connect_fn *connect, void *arg)
{
	int fd = server ? gv_tool_connect(server, port) : gv_tool_accept(port);
	int r;

	if (fd < 0)
		return -EIO;
	r = server ? exchange_client(fd, my, rem, n)
		   : exchange_server(fd, my, rem, n, connect, arg);
	if (r) {
		close(fd);
		return r;
	}
	return fd;
}

int gv_tool_finish(int fd, bool client)
{
	char done[sizeof(GV_TOOL_DONE)];
	int r = client ? gv_tool_write_full(fd, GV_TOOL_DONE, sizeof(done))
		       : gv_tool_read_full(fd, done, sizeof(done));

	if (r)
		fprintf(stderr, "Couldn't send/recv \"%s\"\n", GV_TOOL_DONE);
	close(fd);
	return r;
}

/* ---- resources and the queue pair ---- */

int gv_tool_res_init(struct gv_context *ctx, struct gv_tool_res *res,
		     size_t len, uint8_t fill, uint32_t access, uint32_t cqe)
{
	int r;

	res->buf = gv_alloc_buf(ctx, len, 0);
	if (!res->buf)
		return -errno;
	memset(res->buf, fill, len);
	r = gv_alloc_pd(ctx, &res->pd);
	if (!r)
		r = gv_reg_mr(res->pd, res->buf, len, access, &res->mr);
	if (!r)
		r = gv_create_cq(ctx, cqe, &res->cq);
	return r;
}

void gv_tool_res_close(struct gv_tool_res *res)
{
	if (res->cq)
		gv_destroy_cq(res->cq);
	if (res->mr)
		gv_dereg_mr(res->mr);
	if (res->pd)
		gv_dealloc_pd(res->pd);
	res->cq = NULL;
	res->mr = NULL;
	res->pd = NULL;
}

int gv_tool_create_qp(struct gv_pd *pd, const struct gv_qp_init_attr *qa,
		      uint8_t port, uint32_t access_or_qkey,
		      struct gv_qp **ret_qp)
{
	struct virtio_rdma_qp_attr a = { .qp_state = VIRTIO_RDMA_QPS_INIT,
					 .port_num = port };
	uint32_t mask = VIRTIO_RDMA_QP_STATE | VIRTIO_RDMA_QP_PKEY_INDEX |
			VIRTIO_RDMA_QP_PORT;
	struct gv_qp *qp;
	int r = gv_create_qp(pd, qa, &qp);

	if (r)
		return r;
	if (qa->qp_type == VIRTIO_RDMA_QPT_UD) {
		a.qkey = access_or_qkey;
		mask |= VIRTIO_RDMA_QP_QKEY;
	} else {
		a.qp_access_flags = access_or_qkey;
		mask |= VIRTIO_RDMA_QP_ACCESS_FLAGS;
	}
	r = gv_modify_qp(qp, &a, mask);
	if (r) {
		gv_destroy_qp(qp);
		return r;
	}
	*ret_qp = qp;
	return 0;
}

bool gv_tool_has_interface_id(const uint8_t gid[16])
{
	return memcmp(gid + 8, "\0\0\0\0\0\0\0\0", 8) != 0;
}

static int rc_to_rtr(struct gv_qp *qp, const struct gv_tool_path *path,
		     const struct gv_tool_dest *rem)
{
	struct virtio_rdma_qp_attr a = { .qp_state = VIRTIO_RDMA_QPS_RTR };

	a.path_mtu = path->mtu;
	a.dest_qp_num = rem->qpn;
	a.rq_psn = rem->psn;
	a.max_dest_rd_atomic = path->rd_atomic;
	a.min_rnr_timer = 12;
	a.ah_attr.sl = path->sl;
	a.ah_attr.port_num = path->port;
	if (path->grh || gv_tool_has_interface_id(rem->gid)) {
		a.ah_attr.ah_flags = VIRTIO_RDMA_AH_GRH;
		a.ah_attr.grh.hop_limit = 1;
		memcpy(a.ah_attr.grh.dgid, rem->gid, 16);
		a.ah_attr.grh.sgid_index = path->sgid_index;
	}
	return gv_modify_qp(qp, &a,
			    VIRTIO_RDMA_QP_STATE | VIRTIO_RDMA_QP_AV |
				    VIRTIO_RDMA_QP_PATH_MTU |
				    VIRTIO_RDMA_QP_DEST_QPN |
				    VIRTIO_RDMA_QP_RQ_PSN |
				    VIRTIO_RDMA_QP_MAX_DEST_RD_ATOMIC |
				    VIRTIO_RDMA_QP_MIN_RNR_TIMER);
}

static int rc_to_rts(struct gv_qp *qp, const struct gv_tool_path *path,
		     const struct gv_tool_dest *my)
{
	struct virtio_rdma_qp_attr a = { .qp_state = VIRTIO_RDMA_QPS_RTS };

	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.sq_psn = my->psn;
	a.max_rd_atomic = path->rd_atomic;
	return gv_modify_qp(qp, &a,
			    VIRTIO_RDMA_QP_STATE | VIRTIO_RDMA_QP_TIMEOUT |
				    VIRTIO_RDMA_QP_RETRY_CNT |
				    VIRTIO_RDMA_QP_RNR_RETRY |
				    VIRTIO_RDMA_QP_SQ_PSN |
				    VIRTIO_RDMA_QP_MAX_QP_RD_ATOMIC);
}

int gv_tool_rc_connect(struct gv_qp *qp, const struct gv_tool_path *path,
		       const struct gv_tool_dest *my,
		       const struct gv_tool_dest *rem)
{
	int r = rc_to_rtr(qp, path, rem);

	if (r) {
		fprintf(stderr, "Failed to modify QP to RTR: %s\n",
			strerror(-r));
		return r;
	}
	r = rc_to_rts(qp, path, my);
	if (r)
		fprintf(stderr, "Failed to modify QP to RTS: %s\n",
			strerror(-r));
	return r;
}

int gv_tool_next_wc(const struct gv_tool_data_args *d, const char *who,
		    struct gv_wc *wc)
{
	int n = gv_wait_wc(d->cq, d->timeout_ms, wc);

	if (n <= 0) {
		fprintf(stderr, "%s: no completion: %s\n", who,
			n ? strerror(-n) : "timed out");
		return n ? n : -ETIMEDOUT;
	}
	if (wc->status != VIRTIO_RDMA_WC_SUCCESS) {
		fprintf(stderr, "%s: wr_id %llu completed with %s (%u)\n", who,
			(unsigned long long)wc->wr_id,
			gv_wc_status_str(wc->status), wc->status);
		return -EIO;
	}
	return 0;
}
