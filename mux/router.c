// SPDX-License-Identifier: MIT
/*
 * rdmagate-mux's routing core (see mux/router.h, docs/mux.md): the GID
 * ownership table the broker fills, the communication / request id table
 * the guests' own sends fill, and the routing decisions.  Pure: no I/O,
 * the clock is an argument.  Every MAD it reads is hostile (the wire, a
 * worker): every field is read through a bounds check.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cleanup.h"
#include "common/probes.h"
#include "mux/router.h"

enum id_kind {
	ID_CONN = 1, /* a communication id (REQ ... DREP) */
	ID_SIDR = 2, /* a SIDR request id */
};

enum id_state {
	ID_HANDSHAKE = 1, /* REQ/REP/MRA/SIDR seen: id_ttl */
	ID_ESTABLISHED,	  /* RTU seen: conn_ttl */
	ID_CLOSING,	  /* DREQ, DREP or REJ seen: id_ttl */
};

struct id_entry {
	uint8_t used;
	uint8_t kind;  /* enum id_kind */
	uint8_t state; /* enum id_state */
	uint8_t pad;
	uint32_t id; /* the guest's own id (host order) */
	uint32_t worker_id;
	int32_t port_id;
	uint8_t gid[16]; /* the guest's GID the id lives on */
	uint64_t expires_ms;
	/* ID_CONN: the peer, as far as the messages told it, so that the
	 * mux can close the connection when the worker dies
	 * (router_farewell()) */
	uint8_t active;	  /* the guest sent the REQ */
	uint8_t has_peer; /* peer_id known: the peer sent or got a REP */
	uint8_t has_qpn;  /* peer_qpn known (from its REQ or REP) */
	uint8_t said;	  /* router_farewell() gave its MAD already */
	uint16_t pkey_index;
	uint32_t peer_id;  /* the peer's comm id */
	uint32_t peer_qpn; /* the peer's QPN: a DREQ names it */
	uint8_t peer_gid[16];
};

/*
 * A REQ from the wire that a worker got: the peer's QPN, which the
 * guest's REP does not repeat.  A ring (the oldest is overwritten), not
 * the id table: the wire fills it, and it must not eat a worker's share.
 */
struct peer_req {
	uint8_t used;
	uint32_t worker_id;
	uint32_t peer_id;
	uint32_t peer_qpn;
	uint8_t gid[16];      /* the guest's */
	uint8_t peer_gid[16]; /* the sender's */
};

struct port_entry {
	bool used;
	char device[MP_DEVICE_SIZE];
	uint32_t port;
	uint32_t pkeys;
};

struct gid_entry {
	bool used;
	uint32_t worker_id;
	int port_id;
	uint32_t host_index;
	uint8_t gid[16];
};

struct worker_entry {
	bool used;
	uint32_t id;
	uint32_t n_ids;
	struct mp_stats st;
};

struct router {
	struct router_config c;
	struct port_entry *ports;
	struct gid_entry *gids;
	struct worker_entry *workers;
	struct id_entry *ids; /* open addressing, linear probing */
	uint32_t id_cap;      /* a power of two >= 2 * max_ids */
	uint32_t n_ids;
	struct peer_req peer_reqs[ROUTER_PEER_REQS];
	uint32_t peer_req_next;
	struct mp_stats totals;
};

/* What the router knows of each CM attribute it routes. */
enum route_by {
	BY_PATH,      /* REQ: the path's GIDs (= the GRH's) */
	BY_DGID,      /* SIDR_REQ: the GRH's destination GID */
	BY_COMM_ID,   /* remote comm id = the guest's own */
	BY_REQUEST_ID /* SIDR_REP: the guest's SIDR request id */
};

struct attr_row {
	uint16_t attr;
	const char *name;
	uint16_t min_len; /* MAD bytes, header included */
	uint8_t by;	  /* enum route_by, incoming */
	uint8_t learn;	  /* enum id_kind learned from the guest's send */
	uint8_t state;	  /* the entry's state after it (0: unchanged) */
};

/* Lengths: up to the end of the last field the router reads or the
 * layout defines before private data (IBTA vol. 1, 12.6). */
static const struct attr_row attrs[] = {
	{ CM_ATTR_REQ, "REQ", 24 + 140, BY_PATH, ID_CONN, ID_HANDSHAKE },
	{ CM_ATTR_MRA, "MRA", 24 + 10, BY_COMM_ID, ID_CONN, 0 },
	{ CM_ATTR_REJ, "REJ", 24 + 12, BY_COMM_ID, ID_CONN, ID_CLOSING },
	{ CM_ATTR_REP, "REP", 24 + 36, BY_COMM_ID, ID_CONN, ID_HANDSHAKE },
	{ CM_ATTR_RTU, "RTU", 24 + 8, BY_COMM_ID, ID_CONN, ID_ESTABLISHED },
	{ CM_ATTR_DREQ, "DREQ", 24 + 12, BY_COMM_ID, ID_CONN, ID_CLOSING },
	{ CM_ATTR_DREP, "DREP", 24 + 8, BY_COMM_ID, ID_CONN, ID_CLOSING },
	{ CM_ATTR_SIDR_REQ, "SIDR_REQ", 24 + 16, BY_DGID, ID_SIDR,
	  ID_HANDSHAKE },
	{ CM_ATTR_SIDR_REP, "SIDR_REP", 24 + 24, BY_REQUEST_ID, 0, 0 },
	{ CM_ATTR_LAP, "LAP", 24 + 64, BY_COMM_ID, ID_CONN, 0 },
	{ CM_ATTR_APR, "APR", 24 + 12, BY_COMM_ID, ID_CONN, 0 },
};

static const struct attr_row *attr_row(uint16_t attr)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(attrs); i++)
		if (attrs[i].attr == attr)
			return &attrs[i];
	return NULL;
}

const char *router_attr_name(uint16_t attr_id, char buf[16])
{
	const struct attr_row *a = attr_row(attr_id);

	if (a)
		return a->name;
	if (attr_id == CM_ATTR_CLASS_PORT_INFO)
		return "ClassPortInfo";
	snprintf(buf, 16, "attr 0x%04x", attr_id);
	return buf;
}

const char *router_reason_name(uint32_t reason)
{
	static const char *const names[] = {
		[RDMAGATE_MUX_DROP_MALFORMED] = "malformed",
		[RDMAGATE_MUX_DROP_CLASS] = "class",
		[RDMAGATE_MUX_DROP_ATTR] = "attribute",
		[RDMAGATE_MUX_DROP_UNKNOWN_GID] = "unknown-gid",
		[RDMAGATE_MUX_DROP_PATH] = "path-mismatch",
		[RDMAGATE_MUX_DROP_UNKNOWN_ID] = "unknown-id",
		[RDMAGATE_MUX_DROP_SPOOF] = "spoof",
		[RDMAGATE_MUX_DROP_ADDRESS] = "address",
		[RDMAGATE_MUX_DROP_TABLE_FULL] = "id-table-full",
		[RDMAGATE_MUX_DROP_WORKER_FULL] = "worker-full",
		[RDMAGATE_MUX_DROP_WORKER_GONE] = "worker-gone",
		[RDMAGATE_MUX_DROP_SEND_FAILED] = "send-failed",
	};

	if (reason < ARRAY_SIZE(names) && names[reason])
		return names[reason];
	return "?";
}

const char *router_gid_str(const uint8_t gid[16], char buf[46])
{
	if (!inet_ntop(AF_INET6, gid, buf, 46))
		snprintf(buf, 46, "?");
	return buf;
}

void router_config_default(struct router_config *c)
{
	memset(c, 0, sizeof(*c));
	c->max_ports = 32;
	c->max_workers = 1024;
	c->max_gids = 4096;
	c->max_ids = 65536;
	c->max_ids_per_worker = 4096;
	c->id_ttl_ms = 60 * 1000;
	c->conn_ttl_ms = 24 * 3600 * 1000ull;
	c->hash_seed = 0;
}

struct router *router_new(const struct router_config *c)
{
	_cleanup_free_ struct router *r = NULL;
	uint32_t cap = 16;

	if (!c->max_ports || !c->max_workers || !c->max_gids || !c->max_ids ||
	    !c->max_ids_per_worker || c->max_ids_per_worker > c->max_ids ||
	    c->max_ids > (1u << 30) || !c->id_ttl_ms || !c->conn_ttl_ms) {
		errno = EINVAL;
		return NULL;
	}
	while (cap < 2 * c->max_ids)
		cap *= 2;
	r = calloc(1, sizeof(*r));
	if (!r)
		return NULL;
	r->c = *c;
	r->id_cap = cap;
	r->ports = calloc(c->max_ports, sizeof(*r->ports));
	r->gids = calloc(c->max_gids, sizeof(*r->gids));
	r->workers = calloc(c->max_workers, sizeof(*r->workers));
	r->ids = calloc(cap, sizeof(*r->ids));
	if (!r->ports || !r->gids || !r->workers || !r->ids) {
		router_free(TAKE_PTR(r));
		errno = ENOMEM;
		return NULL;
	}
	return TAKE_PTR(r);
}

void router_free(struct router *r)
{
	if (!r)
		return;
	free(r->ports);
	free(r->gids);
	free(r->workers);
	free(r->ids);
	free(r);
}

static bool port_ok(const struct router *r, int port_id)
{
	return port_id >= 0 && (uint32_t)port_id < r->c.max_ports &&
	       r->ports[port_id].used;
}

int router_port_find(const struct router *r, const char *device, uint32_t port)
{
	uint32_t i;

	for (i = 0; i < r->c.max_ports; i++)
		if (r->ports[i].used && r->ports[i].port == port &&
		    !strcmp(r->ports[i].device, device))
			return (int)i;
	return -ENOENT;
}

int router_port_add(struct router *r, const char *device, uint32_t port,
		    uint32_t pkeys)
{
	int id = router_port_find(r, device, port);
	uint32_t i;

	if (strlen(device) >= MP_DEVICE_SIZE || !device[0] || port < 1 ||
	    port > MP_PORT_MAX)
		return -EINVAL;
	if (id >= 0) {
		r->ports[id].pkeys = pkeys;
		return id;
	}
	for (i = 0; i < r->c.max_ports; i++) {
		struct port_entry *p = &r->ports[i];

		if (p->used)
			continue;
		memset(p, 0, sizeof(*p));
		p->used = true;
		memcpy(p->device, device, strlen(device));
		p->port = port;
		p->pkeys = pkeys;
		return (int)i;
	}
	return -ENOSPC;
}

static struct worker_entry *worker_of(const struct router *r, uint32_t id)
{
	uint32_t i;

	if (!id)
		return NULL;
	for (i = 0; i < r->c.max_workers; i++)
		if (r->workers[i].used && r->workers[i].id == id)
			return &r->workers[i];
	return NULL;
}

bool router_worker_exists(const struct router *r, uint32_t worker_id)
{
	return worker_of(r, worker_id) != NULL;
}

int router_worker_add(struct router *r, uint32_t worker_id)
{
	uint32_t i;

	if (!worker_id)
		return -EINVAL;
	if (worker_of(r, worker_id))
		return -EEXIST;
	for (i = 0; i < r->c.max_workers; i++) {
		struct worker_entry *w = &r->workers[i];

		if (w->used)
			continue;
		memset(w, 0, sizeof(*w));
		w->used = true;
		w->id = worker_id;
		return 0;
	}
	return -ENOSPC;
}

/* ---- the id table ------------------------------------------------------ */

struct id_key {
	uint32_t kind;
	uint32_t id;
	int32_t port_id;
	uint8_t gid[16];
};

static uint32_t id_hash(const struct router *r, const struct id_key *k)
{
	/* FNV-1a over the key, seeded so that a guest cannot aim its ids
	 * at one probe chain without knowing the seed. */
	uint64_t h = 0xcbf29ce484222325ull ^ r->c.hash_seed;
	uint8_t b[28];
	size_t i;

	memcpy(b, &k->kind, 4);
	memcpy(b + 4, &k->id, 4);
	memcpy(b + 8, &k->port_id, 4);
	memcpy(b + 12, k->gid, 16);
	for (i = 0; i < sizeof(b); i++) {
		h ^= b[i];
		h *= 0x100000001b3ull;
	}
	h ^= h >> 29;
	return (uint32_t)h & (r->id_cap - 1);
}

static bool id_match(const struct id_entry *e, const struct id_key *k)
{
	return e->used && e->kind == k->kind && e->id == k->id &&
	       e->port_id == k->port_id && !memcmp(e->gid, k->gid, 16);
}

/* The slot of key, or -1. */
static int64_t id_find(const struct router *r, const struct id_key *k)
{
	uint32_t i = id_hash(r, k), n;

	for (n = 0; n < r->id_cap; n++, i = (i + 1) & (r->id_cap - 1)) {
		const struct id_entry *e = &r->ids[i];

		if (!e->used)
			return -1;
		if (id_match(e, k))
			return i;
	}
	return -1;
}

/* Empties slot i and shifts the rest of its probe chain back
 * (no tombstones: lookups stay as short as the table is full). */
static void id_remove_slot(struct router *r, uint32_t i)
{
	uint32_t mask = r->id_cap - 1, j = i;
	struct worker_entry *w = worker_of(r, r->ids[i].worker_id);

	if (w && w->n_ids)
		w->n_ids--;
	r->n_ids--;
	r->ids[i].used = 0;
	for (;;) {
		struct id_key k;
		uint32_t home;

		j = (j + 1) & mask;
		if (!r->ids[j].used)
			return;
		k.kind = r->ids[j].kind;
		k.id = r->ids[j].id;
		k.port_id = r->ids[j].port_id;
		memcpy(k.gid, r->ids[j].gid, 16);
		home = id_hash(r, &k);
		/* j stays if its home lies cyclically in (i, j] */
		if (i <= j ? (i < home && home <= j) : (i < home || home <= j))
			continue;
		r->ids[i] = r->ids[j];
		r->ids[j].used = 0;
		i = j;
	}
}

/* Removes every entry for which match() holds, returns how many. */
static uint32_t id_remove_if(struct router *r,
			     bool (*match)(const struct id_entry *e,
					   const void *arg),
			     const void *arg)
{
	uint32_t i = 0, n = 0;

	while (i < r->id_cap) {
		if (r->ids[i].used && match(&r->ids[i], arg)) {
			/* the chain shifted into i: look at it again */
			id_remove_slot(r, i);
			n++;
			continue;
		}
		i++;
	}
	return n;
}

static bool expired(const struct id_entry *e, const void *arg)
{
	return e->expires_ms <= *(const uint64_t *)arg;
}

uint32_t router_expire(struct router *r, uint64_t now_ms)
{
	return id_remove_if(r, expired, &now_ms);
}

uint32_t router_id_count(const struct router *r)
{
	return r->n_ids;
}

static uint64_t ttl_of(const struct router *r, uint8_t state)
{
	return state == ID_ESTABLISHED ? r->c.conn_ttl_ms : r->c.id_ttl_ms;
}

/* The live entry of key (an expired one is removed), or NULL. */
static struct id_entry *id_lookup(struct router *r, const struct id_key *k,
				  uint64_t now_ms)
{
	int64_t i = id_find(r, k);

	if (i < 0)
		return NULL;
	if (r->ids[i].expires_ms <= now_ms) {
		id_remove_slot(r, (uint32_t)i);
		return NULL;
	}
	return &r->ids[i];
}

static void id_touch(const struct router *r, struct id_entry *e, uint8_t state,
		     uint64_t now_ms)
{
	if (state)
		e->state = state;
	e->expires_ms = now_ms + ttl_of(r, e->state);
}

/*
 * Learns (or refreshes) key for worker w.  Returns 0 or
 * RDMAGATE_MUX_DROP_TABLE_FULL with why filled.
 */
static uint32_t id_learn(struct router *r, struct worker_entry *w,
			 const struct id_key *k, uint8_t state, uint64_t now_ms,
			 struct router_verdict *v, struct id_entry **ret)
{
	struct id_entry *e = id_lookup(r, k, now_ms);
	uint32_t i;

	if (e) {
		/* keyed by the worker's own GID: it is its own entry */
		id_touch(r, e, state, now_ms);
		*ret = e;
		return 0;
	}
	if (w->n_ids >= r->c.max_ids_per_worker || r->n_ids >= r->c.max_ids)
		router_expire(r, now_ms);
	if (w->n_ids >= r->c.max_ids_per_worker) {
		snprintf(v->why, sizeof(v->why),
			 "the worker holds %u ids, its share of the table: "
			 "new ones refused until some expire",
			 w->n_ids);
		return RDMAGATE_MUX_DROP_TABLE_FULL;
	}
	if (r->n_ids >= r->c.max_ids) {
		snprintf(v->why, sizeof(v->why),
			 "the id table is full (%u entries): new ids refused "
			 "until some expire",
			 r->n_ids);
		return RDMAGATE_MUX_DROP_TABLE_FULL;
	}
	for (i = id_hash(r, k); r->ids[i].used; i = (i + 1) & (r->id_cap - 1))
		;
	e = &r->ids[i];
	memset(e, 0, sizeof(*e));
	e->used = 1;
	e->kind = (uint8_t)k->kind;
	e->id = k->id;
	e->port_id = k->port_id;
	memcpy(e->gid, k->gid, 16);
	e->worker_id = w->id;
	e->state = state ? state : ID_HANDSHAKE;
	e->expires_ms = now_ms + ttl_of(r, e->state);
	w->n_ids++;
	r->n_ids++;
	*ret = e;
	return 0;
}

static bool of_worker(const struct id_entry *e, const void *arg)
{
	return e->worker_id == *(const uint32_t *)arg;
}

struct gid_ref {
	uint32_t worker_id;
	const uint8_t *gid;
};

static bool of_gid(const struct id_entry *e, const void *arg)
{
	const struct gid_ref *g = arg;

	return e->worker_id == g->worker_id && !memcmp(e->gid, g->gid, 16);
}

/* ---- GIDs --------------------------------------------------------------- */

static const uint8_t zero_gid[16];

static struct gid_entry *gid_on_port(const struct router *r, int port_id,
				     const uint8_t gid[16])
{
	uint32_t i;

	for (i = 0; i < r->c.max_gids; i++)
		if (r->gids[i].used && r->gids[i].port_id == port_id &&
		    !memcmp(r->gids[i].gid, gid, 16))
			return &r->gids[i];
	return NULL;
}

/* worker_id's entry for gid (its first port), or NULL. */
static struct gid_entry *
gid_of_worker(const struct router *r, uint32_t worker_id, const uint8_t gid[16])
{
	uint32_t i;

	for (i = 0; i < r->c.max_gids; i++)
		if (r->gids[i].used && r->gids[i].worker_id == worker_id &&
		    !memcmp(r->gids[i].gid, gid, 16))
			return &r->gids[i];
	return NULL;
}

bool router_gid_owned(const struct router *r, uint32_t worker_id,
		      const uint8_t gid[16])
{
	return gid_of_worker(r, worker_id, gid) != NULL;
}

const uint8_t *router_gid_at(const struct router *r, int port_id,
			     uint32_t host_index)
{
	uint32_t i;

	for (i = 0; i < r->c.max_gids; i++)
		if (r->gids[i].used && r->gids[i].port_id == port_id &&
		    r->gids[i].host_index == host_index)
			return r->gids[i].gid;
	return NULL;
}

int router_gid_add(struct router *r, uint32_t worker_id, int port_id,
		   const uint8_t gid[16], uint32_t host_index)
{
	struct gid_entry *g;
	uint32_t i;

	if (!memcmp(gid, zero_gid, 16) || host_index > MP_GID_INDEX_MAX)
		return -EINVAL;
	if (!worker_of(r, worker_id) || !port_ok(r, port_id))
		return -ENOENT;
	g = gid_on_port(r, port_id, gid);
	if (g)
		return g->worker_id == worker_id && g->host_index == host_index
			       ? 0
			       : -EEXIST;
	if (router_gid_at(r, port_id, host_index))
		return -EEXIST;
	for (i = 0; i < r->c.max_gids; i++) {
		g = &r->gids[i];
		if (g->used)
			continue;
		memset(g, 0, sizeof(*g));
		g->used = true;
		g->worker_id = worker_id;
		g->port_id = port_id;
		g->host_index = host_index;
		memcpy(g->gid, gid, 16);
		return 0;
	}
	return -ENOSPC;
}

int router_gid_del(struct router *r, uint32_t worker_id, const uint8_t gid[16])
{
	struct gid_ref ref = { worker_id, gid };
	struct gid_entry *g;
	int n = 0;

	while ((g = gid_of_worker(r, worker_id, gid))) {
		g->used = false;
		n++;
	}
	if (!n)
		return -ENOENT;
	id_remove_if(r, of_gid, &ref);
	return 0;
}

int router_worker_del(struct router *r, uint32_t worker_id)
{
	struct worker_entry *w = worker_of(r, worker_id);
	uint32_t i;

	if (!w)
		return -ENOENT;
	for (i = 0; i < r->c.max_gids; i++)
		if (r->gids[i].used && r->gids[i].worker_id == worker_id)
			r->gids[i].used = false;
	id_remove_if(r, of_worker, &worker_id);
	w->used = false;
	return 0;
}

/* ---- decisions ---------------------------------------------------------- */

static uint16_t rd16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static uint32_t rd32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	       (uint32_t)p[2] << 8 | p[3];
}

static uint32_t rd24(const uint8_t *p)
{
	return (uint32_t)p[0] << 16 | (uint32_t)p[1] << 8 | p[2];
}

/* v into the n bytes at p, big-endian (the MAD's order). */
static void wr_be(uint8_t *p, uint32_t v, size_t n)
{
	while (n--) {
		p[n] = (uint8_t)v;
		v >>= 8;
	}
}

/* ---- what the peer told: for router_farewell() -------------------------- */

/* A REQ from the wire for worker_id (to its gid): remember the QPN. */
static void peer_req_note(struct router *r, uint32_t worker_id,
			  const uint8_t gid[16], const uint8_t sgid[16],
			  const uint8_t *mad)
{
	struct peer_req *q = &r->peer_reqs[r->peer_req_next];

	r->peer_req_next = (r->peer_req_next + 1) % ROUTER_PEER_REQS;
	q->used = 1;
	q->worker_id = worker_id;
	q->peer_id = rd32(mad + CM_OFF_LOCAL_COMM_ID);
	q->peer_qpn = rd24(mad + CM_OFF_REQ_LOCAL_QPN);
	memcpy(q->gid, gid, 16);
	memcpy(q->peer_gid, sgid, 16);
}

/* The guest's REP answers the REQ remembered for it: take its QPN. */
static void peer_req_take(struct router *r, struct id_entry *e)
{
	size_t i;

	for (i = 0; i < ROUTER_PEER_REQS; i++) {
		struct peer_req *q = &r->peer_reqs[i];

		if (!q->used || q->worker_id != e->worker_id ||
		    q->peer_id != e->peer_id || memcmp(q->gid, e->gid, 16) ||
		    memcmp(q->peer_gid, e->peer_gid, 16))
			continue;
		e->peer_qpn = q->peer_qpn;
		e->has_qpn = 1;
		q->used = 0;
		return;
	}
}

/* The guest's own connection message s (attribute attr) says who the
 * peer is. */
static void conn_note_out(struct router *r, struct id_entry *e, uint16_t attr,
			  const struct mp_mad_send *s)
{
	uint32_t peer_id;

	e->pkey_index = s->pkey_index;
	if (attr == CM_ATTR_REQ) {
		e->active = 1;
		e->has_peer = 0;
		e->has_qpn = 0;
		memcpy(e->peer_gid, s->dgid, 16);
		return;
	}
	peer_id = rd32(s->mad + CM_OFF_REMOTE_COMM_ID);
	if (e->has_peer || !peer_id)
		return;
	e->peer_id = peer_id;
	e->has_peer = 1;
	memcpy(e->peer_gid, s->dgid, 16);
	if (attr == CM_ATTR_REP && !e->active)
		peer_req_take(r, e);
}

/* The peer's REP to the guest's REQ: its comm id and QPN. */
static void conn_note_rep(struct id_entry *e, const uint8_t sgid[16],
			  const uint8_t *mad)
{
	if (!e->active || memcmp(e->peer_gid, sgid, 16))
		return; /* not the peer the REQ went to */
	e->peer_id = rd32(mad + CM_OFF_LOCAL_COMM_ID);
	e->peer_qpn = rd24(mad + CM_OFF_REP_LOCAL_QPN);
	e->has_peer = 1;
	e->has_qpn = 1;
}

static void drop(struct router_verdict *v, uint32_t reason, const char *fmt,
		 ...) __attribute__((format(printf, 3, 4)));
static void drop(struct router_verdict *v, uint32_t reason, const char *fmt,
		 ...)
{
	va_list ap;

	v->reason = reason;
	va_start(ap, fmt);
	vsnprintf(v->why, sizeof(v->why), fmt, ap);
	va_end(ap);
}

/*
 * The common MAD header: fills class and attr; returns the attribute's
 * row, or NULL with v a drop.
 */
static const struct attr_row *parse_header(const uint8_t *mad, size_t len,
					   struct router_verdict *v)
{
	const struct attr_row *a;
	char an[16];

	if (len < MP_MAD_HDR) {
		drop(v, RDMAGATE_MUX_DROP_MALFORMED,
		     "%zu bytes: shorter than the %u-byte MAD header", len,
		     MP_MAD_HDR);
		return NULL;
	}
	v->mgmt_class = mad[1];
	v->attr_id = rd16(mad + 16);
	if (mad[0] != 1 || mad[1] != ROUTER_CM_CLASS ||
	    mad[2] != ROUTER_CM_CLASS_VERSION || mad[3] != ROUTER_METHOD_SEND) {
		drop(v, RDMAGATE_MUX_DROP_CLASS,
		     "base version %u class 0x%02x version %u method 0x%02x: "
		     "only CM (1, 0x07, 2, Send 0x03) is routed",
		     mad[0], mad[1], mad[2], mad[3]);
		return NULL;
	}
	a = attr_row(v->attr_id);
	if (!a) {
		drop(v, RDMAGATE_MUX_DROP_ATTR, "CM %s: not routed",
		     router_attr_name(v->attr_id, an));
		return NULL;
	}
	if (len < a->min_len) {
		drop(v, RDMAGATE_MUX_DROP_MALFORMED,
		     "CM %s of %zu bytes: shorter than its %u", a->name, len,
		     a->min_len);
		return NULL;
	}
	return a;
}

static void verdict_init(struct router_verdict *v, uint32_t dir,
			 uint32_t worker_id, int port_id)
{
	memset(v, 0, sizeof(*v));
	v->direction = dir;
	v->worker_id = worker_id;
	v->port_id = port_id;
}

void router_incoming(struct router *r, int port_id, const uint8_t sgid[16],
		     const uint8_t dgid[16], const uint8_t *mad, size_t len,
		     uint64_t now_ms, struct router_verdict *v)
{
	const struct attr_row *a;
	struct gid_entry *owner;
	struct id_entry *e;
	struct id_key k;
	char g1[46], g2[46], g3[46], g4[46];

	verdict_init(v, RDMAGATE_MUX_IN, 0, port_id);
	if (!port_ok(r, port_id)) {
		drop(v, RDMAGATE_MUX_DROP_UNKNOWN_GID, "port %d: not added",
		     port_id);
		return;
	}
	if (len < MP_MAD_HDR) {
		parse_header(mad, len, v);
		return;
	}
	owner = dgid ? gid_on_port(r, port_id, dgid) : NULL;
	if (!owner && !dgid) {
		v->mgmt_class = mad[1];
		v->attr_id = rd16(mad + 16);
		drop(v, RDMAGATE_MUX_DROP_UNKNOWN_GID,
		     "to a host GID index no worker owns (from %s)",
		     router_gid_str(sgid, g2));
		return;
	}
	if (!owner) {
		v->mgmt_class = mad[1];
		v->attr_id = rd16(mad + 16);
		drop(v, RDMAGATE_MUX_DROP_UNKNOWN_GID,
		     "destination GID %s (from %s): no worker owns it",
		     router_gid_str(dgid, g1), router_gid_str(sgid, g2));
		return;
	}
	v->worker_id = owner->worker_id;
	a = parse_header(mad, len, v);
	if (!a)
		return;
	switch (a->by) {
	case BY_PATH:
		if (memcmp(mad + CM_OFF_REQ_PRI_REMOTE_GID, dgid, 16) ||
		    memcmp(mad + CM_OFF_REQ_PRI_LOCAL_GID, sgid, 16)) {
			drop(v, RDMAGATE_MUX_DROP_PATH,
			     "REQ primary path %s -> %s, its GRH %s -> %s",
			     router_gid_str(mad + CM_OFF_REQ_PRI_LOCAL_GID, g1),
			     router_gid_str(mad + CM_OFF_REQ_PRI_REMOTE_GID,
					    g2),
			     router_gid_str(sgid, g3),
			     router_gid_str(dgid, g4));
			return;
		}
		peer_req_note(r, owner->worker_id, dgid, sgid, mad);
		return; /* to the owner of the path's remote GID */
	case BY_DGID:
		return;
	case BY_COMM_ID:
	case BY_REQUEST_ID:
		memset(&k, 0, sizeof(k));
		k.kind = a->by == BY_COMM_ID ? ID_CONN : ID_SIDR;
		k.id = rd32(mad + (a->by == BY_COMM_ID ? CM_OFF_REMOTE_COMM_ID
						       : CM_OFF_REQUEST_ID));
		k.port_id = port_id;
		memcpy(k.gid, dgid, 16);
		e = id_lookup(r, &k, now_ms);
		if (!e || e->worker_id != owner->worker_id) {
			drop(v, RDMAGATE_MUX_DROP_UNKNOWN_ID,
			     "%s for %s id 0x%08x on %s: the guest never sent "
			     "it (or it expired)",
			     a->name, a->by == BY_COMM_ID ? "comm" : "request",
			     k.id, router_gid_str(dgid, g1));
			return;
		}
		if (a->by == BY_COMM_ID)
			id_touch(r, e, a->state, now_ms);
		else
			id_touch(r, e, 0, now_ms);
		if (a->attr == CM_ATTR_REP)
			conn_note_rep(e, sgid, mad);
		return;
	}
}

/* Is gid (if not zero) one of worker_id's? */
static bool own_or_zero(const struct router *r, uint32_t worker_id,
			const uint8_t *gid)
{
	return !memcmp(gid, zero_gid, 16) || gid_of_worker(r, worker_id, gid);
}

void router_outgoing(struct router *r, uint32_t worker_id,
		     const struct mp_mad_send *s, uint64_t now_ms,
		     struct router_verdict *v)
{
	struct worker_entry *w = worker_of(r, worker_id);
	const uint8_t *mad = s->mad;
	size_t len = s->mad_len;
	const struct attr_row *a;
	struct gid_entry *src;
	struct id_entry *e;
	struct id_key k;
	uint32_t reason;
	char g1[46], g2[46], g3[46];

	verdict_init(v, RDMAGATE_MUX_OUT, worker_id, -1);
	if (!w) {
		v->worker_id = 0;
		drop(v, RDMAGATE_MUX_DROP_WORKER_GONE,
		     "worker %u: not attached", worker_id);
		return;
	}
	if (len > MP_MAD_SIZE) /* mp_decode() checked it; be sure */
		len = MP_MAD_SIZE;
	if (len >= MP_MAD_HDR) {
		v->mgmt_class = mad[1];
		v->attr_id = rd16(mad + 16);
	}
	src = gid_of_worker(r, worker_id, s->sgid);
	if (!src) {
		drop(v, RDMAGATE_MUX_DROP_SPOOF,
		     "source GID %s: not assigned to this worker",
		     router_gid_str(s->sgid, g1));
		return;
	}
	v->port_id = src->port_id;
	v->host_gid_index = src->host_index;
	if (s->remote_qpn != ROUTER_GSI_QPN ||
	    s->remote_qkey != ROUTER_GSI_QKEY) {
		drop(v, RDMAGATE_MUX_DROP_ADDRESS,
		     "to QP 0x%x Q_Key 0x%08x: CM goes to QP1 with the GSI "
		     "Q_Key 0x%08x",
		     s->remote_qpn, s->remote_qkey, ROUTER_GSI_QKEY);
		return;
	}
	if (s->dgid[0] == 0xff || !memcmp(s->dgid, zero_gid, 16)) {
		drop(v, RDMAGATE_MUX_DROP_ADDRESS,
		     "destination GID %s: not a unicast GID",
		     router_gid_str(s->dgid, g1));
		return;
	}
	if (s->pkey_index >= r->ports[src->port_id].pkeys) {
		drop(v, RDMAGATE_MUX_DROP_ADDRESS,
		     "P_Key index %u: the port has %u", s->pkey_index,
		     r->ports[src->port_id].pkeys);
		return;
	}
	a = parse_header(mad, len, v);
	if (!a)
		return;
	if (a->attr == CM_ATTR_REQ) {
		if (memcmp(mad + CM_OFF_REQ_PRI_LOCAL_GID, s->sgid, 16) ||
		    !own_or_zero(r, worker_id,
				 mad + CM_OFF_REQ_ALT_LOCAL_GID)) {
			drop(v, RDMAGATE_MUX_DROP_SPOOF,
			     "REQ local port GIDs %s / %s: not this worker's "
			     "source GID %s",
			     router_gid_str(mad + CM_OFF_REQ_PRI_LOCAL_GID, g1),
			     router_gid_str(mad + CM_OFF_REQ_ALT_LOCAL_GID, g2),
			     router_gid_str(s->sgid, g3));
			return;
		}
		if (memcmp(mad + CM_OFF_REQ_PRI_REMOTE_GID, s->dgid, 16)) {
			drop(v, RDMAGATE_MUX_DROP_PATH,
			     "REQ primary remote port GID %s: not the "
			     "destination %s",
			     router_gid_str(mad + CM_OFF_REQ_PRI_REMOTE_GID,
					    g1),
			     router_gid_str(s->dgid, g2));
			return;
		}
	}
	if (a->attr == CM_ATTR_LAP &&
	    !own_or_zero(r, worker_id, mad + CM_OFF_LAP_ALT_LOCAL_GID)) {
		drop(v, RDMAGATE_MUX_DROP_SPOOF,
		     "LAP alternate local port GID %s: not this worker's",
		     router_gid_str(mad + CM_OFF_LAP_ALT_LOCAL_GID, g1));
		return;
	}
	if (!a->learn)
		return;
	memset(&k, 0, sizeof(k));
	k.kind = a->learn;
	/* the sender's own id: local comm id or SIDR request id, both at
	 * the start of the message */
	k.id = rd32(mad + CM_OFF_LOCAL_COMM_ID);
	k.port_id = src->port_id;
	memcpy(k.gid, s->sgid, 16);
	if (a->attr == CM_ATTR_REJ && k.id == 0)
		return; /* a REJ of a REQ the guest kept no id for */
	reason = id_learn(r, w, &k, a->state, now_ms, v, &e);
	if (reason)
		v->reason = reason;
	else if (k.kind == ID_CONN)
		conn_note_out(r, e, a->attr, s);
}

/* The MAD header of a CM Send of attr. */
static void farewell_header(uint8_t *mad, uint16_t attr, uint64_t tid)
{
	mad[0] = 1;
	mad[1] = ROUTER_CM_CLASS;
	mad[2] = ROUTER_CM_CLASS_VERSION;
	mad[3] = ROUTER_METHOD_SEND;
	wr_be(mad + 8, (uint32_t)(tid >> 32), 4);
	wr_be(mad + 12, (uint32_t)tid, 4);
	wr_be(mad + 16, attr, 2);
}

/* What e's guest would say, dying, to its peer: 0 when nothing (the peer
 * never answered, or it is closing already). */
static uint16_t farewell_attr(const struct id_entry *e)
{
	if (e->kind != ID_CONN || e->said || !e->has_peer)
		return 0;
	if (e->state == ID_ESTABLISHED)
		return e->has_qpn ? CM_ATTR_DREQ : 0;
	return e->state == ID_HANDSHAKE ? CM_ATTR_REJ : 0;
}

int router_farewell(struct router *r, uint32_t worker_id, uint64_t tid,
		    uint64_t now_ms, uint32_t *cursor, struct mp_mad_send *ret)
{
	for (; *cursor < r->id_cap; (*cursor)++) {
		struct id_entry *e = &r->ids[*cursor];
		uint8_t *mad = ret->mad;
		uint16_t attr;

		if (!e->used || e->worker_id != worker_id ||
		    e->expires_ms <= now_ms)
			continue;
		attr = farewell_attr(e);
		if (!attr)
			continue;
		e->said = 1;
		memset(ret, 0, sizeof(*ret));
		memcpy(ret->sgid, e->gid, 16);
		memcpy(ret->dgid, e->peer_gid, 16);
		ret->hop_limit = 64; /* RoCE v2: a routable IP TTL */
		ret->pkey_index = e->pkey_index;
		ret->remote_qpn = ROUTER_GSI_QPN;
		ret->remote_qkey = ROUTER_GSI_QKEY;
		ret->mad_len = MP_MAD_SIZE;
		farewell_header(mad, attr, tid);
		wr_be(mad + CM_OFF_LOCAL_COMM_ID, e->id, 4);
		wr_be(mad + CM_OFF_REMOTE_COMM_ID, e->peer_id, 4);
		if (attr == CM_ATTR_DREQ) {
			wr_be(mad + CM_OFF_DREQ_REMOTE_QPN, e->peer_qpn, 3);
		} else {
			mad[CM_OFF_REJ_MSG_REJECTED] =
				(e->active ? CM_REJ_MSG_REP : CM_REJ_MSG_OTHER)
				<< 6;
			wr_be(mad + CM_OFF_REJ_REASON, CM_REJ_CONSUMER_DEFINED,
			      2);
		}
		(*cursor)++;
		return 1;
	}
	return 0;
}

void router_account(struct router *r, const struct router_verdict *v)
{
	struct worker_entry *w = worker_of(r, v->worker_id);
	struct mp_stats *st[2] = { &r->totals, w ? &w->st : NULL };
	size_t i;

	for (i = 0; i < 2; i++) {
		if (!st[i])
			continue;
		if (!v->reason) {
			if (v->direction == RDMAGATE_MUX_IN)
				st[i]->routed_in++;
			else
				st[i]->routed_out++;
			continue;
		}
		if (v->reason == RDMAGATE_MUX_DROP_SPOOF)
			st[i]->refused_spoofs++;
		if (v->reason < MP_DROP_SLOTS)
			st[i]->dropped[v->reason]++;
	}
}

int router_stats(const struct router *r, uint32_t worker_id,
		 struct mp_stats *ret)
{
	const struct worker_entry *w;

	if (!worker_id) {
		*ret = r->totals;
		return 0;
	}
	w = worker_of(r, worker_id);
	if (!w)
		return -ENOENT;
	*ret = w->st;
	return 0;
}
