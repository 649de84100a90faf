/* SPDX-License-Identifier: MIT */
/*
 * What the rdmagate-guest commands built on the verbs-like API share: the
 * global options (socket, GIDs to add, scattering), the set-up and the
 * TCP exchange of guest/tool_common.c, and the entry points of the
 * pingpong and perf commands.
 */
#ifndef RDMAGATE_GUEST_TOOLS_H
#define RDMAGATE_GUEST_TOOLS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "guest/verbs.h"

#define GV_TOOL_MAX_GIDS 8

struct gv_tool_gid {
	uint16_t index;
	uint32_t type; /* enum virtio_rdma_gid_type */
	uint8_t gid[16];
};

struct gv_tool_opts {
	enum gv_transport transport; /* --transport */
	const char *socket;
	int timeout_ms;
	bool scatter;
	uint64_t data_size; /* guest RAM for buffers; 0: default */
	unsigned int ngids;
	struct gv_tool_gid gids[GV_TOOL_MAX_GIDS];
};

/* Parses "INDEX=GID[,v1|,v2]" (RoCE v2 by default). 0 or -EINVAL. */
int gv_tool_parse_gid(const char *arg, struct gv_tool_gid *ret);

/* gv_open() plus ADD_GID of every --gid; prints why on failure. */
int gv_tool_open(const struct gv_tool_opts *o, struct gv_context **ret_ctx);

/*
 * TCP helpers of the out-of-band exchange: gv_tool_connect() retries for
 * 5 s while the server starts; gv_tool_accept() takes one connection on
 * `port` (all addresses). Return a CLOEXEC socket or -1 (said why).
 * The read/write helpers move exactly len bytes: 0 or -EIO.
 */
int gv_tool_connect(const char *host, unsigned int port);
int gv_tool_accept(unsigned int port);
int gv_tool_read_full(int fd, void *buf, size_t len);
int gv_tool_write_full(int fd, const void *buf, size_t len);

/* ---- the command line ---- */

/* The options and the argument that the pingpongs and perf share. */
struct gv_tool_cli {
	const char *server; /* HOST: we are the client; NULL: the server */
	unsigned int port;  /* -p */
	unsigned int iters; /* -n */
	int gidx;	    /* -g */
	bool events;	    /* -e */
};

/*
 * getopt's option c: 1 if it is -e (set), 0 if not.  The numbers (-p,
 * -n, -g) are guest_cli_nums' (guest/opts.h).
 */
int gv_tool_cli_opt(struct gv_tool_cli *c, int opt);
/* After getopt: the optional HOST; checks -n and -g. 0 or -EINVAL. */
int gv_tool_cli_host(struct gv_tool_cli *c, int argc, char **argv);

/* ---- the address exchange (rdma-core's pingpong wire format) ---- */

struct gv_tool_dest {
	uint32_t lid, qpn, psn;
	uint8_t gid[16];
};

/* "LLLL:QQQQQQ:PPPPPP:" + 32 hex digits of GID, and the NUL. */
#define GV_TOOL_MSG_LEN                                                        \
	sizeof("0000:000000:000000:00000000000000000000000000000000")
#define GV_TOOL_DONE "done"

void gv_tool_format_dest(const struct gv_tool_dest *d,
			 char msg[GV_TOOL_MSG_LEN]);
/*
 * Parses GV_TOOL_MSG_LEN received bytes (NUL-terminated or not): 0, or
 * -EINVAL with *ret untouched.
 */
int gv_tool_parse_dest(const char *msg, struct gv_tool_dest *ret);

/* The server's step between reading the peer's addresses and answering. */
typedef int gv_tool_connect_fn(void *arg, const struct gv_tool_dest *my,
			       const struct gv_tool_dest *rem);

/*
 * n addresses each way: with `server` (a host name) we are the client,
 * connect and send ours first; without, we accept on `port`, read the
 * peer's, call connect(arg, my, rem), then answer. Returns the socket
 * (the caller ends with gv_tool_finish() or closes it) or -errno, said why.
 */
int gv_tool_exchange(const char *server, unsigned int port,
		     const struct gv_tool_dest *my, struct gv_tool_dest *rem,
		     unsigned int n, gv_tool_connect_fn *connect, void *arg);
/* The client sends "done", the server waits for it; closes fd. 0/-EIO. */
int gv_tool_finish(int fd, bool client);

/* ---- set-up ---- */

/* A buffer in guest RAM filled with `fill`, a PD, an MR on it, a CQ. */
struct gv_tool_res {
	uint8_t *buf;
	struct gv_pd *pd;
	struct gv_mr *mr;
	struct gv_cq *cq;
};

/* 0 or -errno; gv_tool_res_close() frees what was made either way. */
int gv_tool_res_init(struct gv_context *ctx, struct gv_tool_res *res,
		     size_t len, uint8_t fill, uint32_t access, uint32_t cqe);
/* Destroys the CQ, MR and PD (after the QPs, SRQs and AHs). */
void gv_tool_res_close(struct gv_tool_res *res);

/* gv_create_qp() and INIT with the access flags (RC) or the Q_Key (UD). */
int gv_tool_create_qp(struct gv_pd *pd, const struct gv_qp_init_attr *qa,
		      uint8_t port, uint32_t access_or_qkey,
		      struct gv_qp **ret_qp);

/* A GID whose interface id is not zero: rdma-core adds a GRH for it. */
bool gv_tool_has_interface_id(const uint8_t gid[16]);

struct gv_tool_path {
	uint32_t mtu; /* enum virtio_rdma_mtu */
	uint8_t port, sl, sgid_index;
	uint8_t rd_atomic; /* max_rd_atomic and max_dest_rd_atomic */
	bool grh;	   /* a GRH even if rem's interface id is zero */
};

/* RC INIT -> RTR (towards rem) -> RTS (with my PSN); says why it failed. */
int gv_tool_rc_connect(struct gv_qp *qp, const struct gv_tool_path *path,
		       const struct gv_tool_dest *my,
		       const struct gv_tool_dest *rem);

/* ---- how rc_pingpong meets its peer ---- */

/* What a meeting gets from rc_pingpong (its device, QP and options). */
struct gv_tool_meet_args {
	struct gv_context *ctx;
	struct gv_pd *pd;
	struct gv_qp *qp;   /* RC, or UD (ud_pingpong's meetings), in INIT */
	const char *server; /* HOST: we are the active side; NULL: passive */
	unsigned int port;  /* -p */
	int gidx;	    /* -g */
	uint32_t mtu;	    /* -m (enum virtio_rdma_mtu) */
	uint8_t ib_port, sl;
	const struct gv_tool_dest *my; /* our QPN, PSN, GID */
	struct gv_tool_dest *rem;      /* filled by meet() */
};

/* What a data phase other than the pingpong's gets (see below). */
struct gv_tool_data_args {
	struct gv_pd *pd;
	struct gv_qp *qp;   /* RC or UD, in RTS */
	struct gv_cq *cq;   /* its send and receive CQ */
	uint8_t *buf;	    /* the MR's buffer (local access only) */
	uint32_t len, lkey; /* UD: len bytes after the 40-byte GRH area */
	const struct gv_tool_dest *my, *rem; /* from meet() */
	uint8_t sgid_index;		     /* -g */
	uint32_t qkey;			     /* UD: the QP's Q_Key */
	uint64_t recv_wr_id; /* of the receives posted on all of buf */
	unsigned int iters;  /* -n */
	bool active;	     /* we named the peer (HOST) */
	int timeout_ms;	     /* per completion */
};

/* The next completion of d's CQ within its timeout, successful: 0, or
 * -errno said why (who: the command's name). */
int gv_tool_next_wc(const struct gv_tool_data_args *d, const char *who,
		    struct gv_wc *wc);

/*
 * Instead of rdma-core's TCP exchange (cm_pingpong in tool_cm.c): meet()
 * finds the peer and leaves the QP in RTS (0 or -errno, said why);
 * data(), if set, replaces the pingpong's exchanges (0 or -errno, said
 * why: cm_rping's, tool_rping.c); part(arg, ok) runs once after the
 * exchanges whenever meet() succeeded (ok: they all completed) and may
 * fail the run.
 */
struct gv_tool_meet {
	int (*meet)(void *arg, const struct gv_tool_meet_args *a);
	int (*data)(const struct gv_tool_data_args *d);
	int (*part)(void *arg, bool ok);
	uint32_t ud_qkey; /* ud_pingpong's meetings: the QP's Q_Key */
	void *arg;
	const char *note; /* a line for the usage text */
};

/* argv[0] is the command name. Exit statuses: 0, 1 (failure), 2 (usage). */
int gv_tool_rc_pingpong(const struct gv_tool_opts *o, int argc, char **argv);
int gv_tool_ud_pingpong(const struct gv_tool_opts *o, int argc, char **argv);
int gv_tool_srq_pingpong(const struct gv_tool_opts *o, int argc, char **argv);
int gv_tool_perf(const struct gv_tool_opts *o, int argc, char **argv);
/* rc_pingpong meeting its peer through `meet` (see above). */
int gv_tool_rc_pingpong_meet(const struct gv_tool_opts *o, int argc,
			     char **argv, const struct gv_tool_meet *meet);
/* ud_pingpong meeting its peer through `meet` (a UD QP in INIT). */
int gv_tool_ud_pingpong_meet(const struct gv_tool_opts *o, int argc,
			     char **argv, const struct gv_tool_meet *meet);
/* rc_pingpong connected by CM MADs on QP1 (tool_cm.c). */
int gv_tool_cm_pingpong(const struct gv_tool_opts *o, int argc, char **argv);
/* rping's server on that connection (tool_cm.c, tool_rping.c). */
int gv_tool_cm_rping(const struct gv_tool_opts *o, int argc, char **argv);
/* The data phase of cm_rping (a gv_tool_meet's data()). */
int gv_tool_rping_serve(const struct gv_tool_data_args *d);
/* udaddy's server on a UD QP a SIDR exchange named (tool_cm.c,
 * tool_udaddy.c). */
int gv_tool_cm_udaddy(const struct gv_tool_opts *o, int argc, char **argv);
int gv_tool_udaddy_serve(const struct gv_tool_data_args *d);

#endif
