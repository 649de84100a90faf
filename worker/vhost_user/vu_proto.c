// SPDX-License-Identifier: MIT
/* vhost-user protocol core: one table validates and dispatches requests. */
#include "vu_proto.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/cleanup.h"
#include "common/log.h"

/* How a request's payload size is checked. */
enum size_rule { SZ_FIXED, SZ_MEM_TABLE, SZ_CONFIG };
/* How many fds must come with it. */
enum fd_rule { FD_NONE, FD_ONE, FD_PER_REGION, FD_UNLESS_NOFD, FD_AT_MOST_ONE };
/* RP_ACK: REPLY_ACK answers if asked; RP_ALWAYS: has its own reply. */
enum reply_rule { RP_ACK, RP_ALWAYS };

#define NO_PF (-1)
/* A handler's "drop the connection" return (it logged why). */
#define DROP (-EPROTO)

struct msg {
	struct vhost_user_header hdr;
	union vhost_user_payload p;
	const char *name;
	int *fds;
	unsigned int nfds;
	struct vu_result *res;
};

typedef int handler_fn(struct vu_dev *dev, struct msg *m);

struct req_rule {
	handler_fn *fn;
	uint8_t size_rule;
	uint16_t size;
	uint8_t fd_rule;
	uint8_t reply;
	int8_t needs_pf; /* protocol feature that must be negotiated */
};

static handler_fn h_get_features, h_set_features, h_set_owner, h_reset_owner,
	h_set_mem_table, h_set_vring_num, h_set_vring_addr, h_set_vring_base,
	h_get_vring_base, h_set_vring_kick, h_set_vring_call, h_set_vring_err,
	h_get_protocol_features, h_set_protocol_features, h_get_queue_num,
	h_set_vring_enable, h_get_config, h_set_config, h_reset_device,
	h_get_max_mem_slots, h_add_mem_reg, h_rem_mem_reg, h_set_status,
	h_get_status;

#define U64   sizeof(uint64_t)
#define STATE sizeof(struct vhost_user_vring_state)
#define R(req, fn, sr, sz, fr, rp, pf)                                         \
	[VHOST_USER_##req] = { fn, sr, sz, fr, rp, pf }
#define PF(x) VHOST_USER_PROTOCOL_F_##x

/* The one table: every request we serve; the rest are refused. */
static const struct req_rule rules[VHOST_USER_MAX_REQUEST] = {
	R(GET_FEATURES, h_get_features, SZ_FIXED, 0, FD_NONE, RP_ALWAYS, NO_PF),
	R(SET_FEATURES, h_set_features, SZ_FIXED, U64, FD_NONE, RP_ACK, NO_PF),
	R(SET_OWNER, h_set_owner, SZ_FIXED, 0, FD_NONE, RP_ACK, NO_PF),
	R(RESET_OWNER, h_reset_owner, SZ_FIXED, 0, FD_NONE, RP_ACK, NO_PF),
	R(SET_MEM_TABLE, h_set_mem_table, SZ_MEM_TABLE, 0, FD_PER_REGION,
	  RP_ACK, NO_PF),
	R(SET_VRING_NUM, h_set_vring_num, SZ_FIXED, STATE, FD_NONE, RP_ACK,
	  NO_PF),
	R(SET_VRING_ADDR, h_set_vring_addr, SZ_FIXED,
	  sizeof(struct vhost_user_vring_addr), FD_NONE, RP_ACK, NO_PF),
	R(SET_VRING_BASE, h_set_vring_base, SZ_FIXED, STATE, FD_NONE, RP_ACK,
	  NO_PF),
	R(GET_VRING_BASE, h_get_vring_base, SZ_FIXED, STATE, FD_NONE, RP_ALWAYS,
	  NO_PF),
	R(SET_VRING_KICK, h_set_vring_kick, SZ_FIXED, U64, FD_UNLESS_NOFD,
	  RP_ACK, NO_PF),
	R(SET_VRING_CALL, h_set_vring_call, SZ_FIXED, U64, FD_UNLESS_NOFD,
	  RP_ACK, NO_PF),
	R(SET_VRING_ERR, h_set_vring_err, SZ_FIXED, U64, FD_UNLESS_NOFD, RP_ACK,
	  NO_PF),
	R(GET_PROTOCOL_FEATURES, h_get_protocol_features, SZ_FIXED, 0, FD_NONE,
	  RP_ALWAYS, NO_PF),
	R(SET_PROTOCOL_FEATURES, h_set_protocol_features, SZ_FIXED, U64,
	  FD_NONE, RP_ACK, NO_PF),
	R(GET_QUEUE_NUM, h_get_queue_num, SZ_FIXED, 0, FD_NONE, RP_ALWAYS,
	  PF(MQ)),
	R(SET_VRING_ENABLE, h_set_vring_enable, SZ_FIXED, STATE, FD_NONE,
	  RP_ACK, NO_PF),
	R(GET_CONFIG, h_get_config, SZ_CONFIG, 0, FD_NONE, RP_ALWAYS,
	  PF(CONFIG)),
	R(SET_CONFIG, h_set_config, SZ_CONFIG, 0, FD_NONE, RP_ACK, PF(CONFIG)),
	R(RESET_DEVICE, h_reset_device, SZ_FIXED, 0, FD_NONE, RP_ACK,
	  PF(RESET_DEVICE)),
	R(GET_MAX_MEM_SLOTS, h_get_max_mem_slots, SZ_FIXED, 0, FD_NONE,
	  RP_ALWAYS, PF(CONFIGURE_MEM_SLOTS)),
	R(ADD_MEM_REG, h_add_mem_reg, SZ_FIXED,
	  sizeof(struct vhost_user_mem_reg_single), FD_ONE, RP_ACK,
	  PF(CONFIGURE_MEM_SLOTS)),
	/* QEMU before 6.0 sent the region's fd with REM_MEM_REG too. */
	R(REM_MEM_REG, h_rem_mem_reg, SZ_FIXED,
	  sizeof(struct vhost_user_mem_reg_single), FD_AT_MOST_ONE, RP_ACK,
	  PF(CONFIGURE_MEM_SLOTS)),
	R(SET_STATUS, h_set_status, SZ_FIXED, U64, FD_NONE, RP_ACK, PF(STATUS)),
	R(GET_STATUS, h_get_status, SZ_FIXED, 0, FD_NONE, RP_ALWAYS,
	  PF(STATUS)),
};

#undef R
#undef PF

/* ---- framing ---------------------------------------------------------- */

static int check_header(const struct vhost_user_header *h, size_t plen,
			struct reason *why)
{
	if ((h->flags & VHOST_USER_VERSION_MASK) != VHOST_USER_VERSION)
		return reason_fail(why, -EINVAL,
				   "header flags 0x%x carry version %u, not %u",
				   h->flags, h->flags & VHOST_USER_VERSION_MASK,
				   VHOST_USER_VERSION);
	if (h->flags & ~(VHOST_USER_VERSION_MASK | VHOST_USER_NEED_REPLY))
		return reason_fail(why, -EINVAL,
				   "header flags 0x%x set reply or reserved "
				   "bits",
				   h->flags);
	if (h->size > VHOST_USER_MAX_PAYLOAD)
		return reason_fail(why, -EINVAL, "payload size %u exceeds %u",
				   h->size, VHOST_USER_MAX_PAYLOAD);
	if (h->size != plen)
		return reason_fail(why, -EINVAL,
				   "size field %u but %zu payload bytes",
				   h->size, plen);
	if (h->request >= VHOST_USER_MAX_REQUEST || !rules[h->request].fn)
		return reason_fail(why, -EINVAL, "unsupported request %u",
				   h->request);
	return 0;
}

static uint32_t ld_u32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

/* Expected payload size; mem tables and configs carry their own count. */
static int check_size(const struct req_rule *r, const uint8_t *pl,
		      uint32_t size, struct reason *why)
{
	uint32_t k;

	switch (r->size_rule) {
	case SZ_MEM_TABLE:
		if (size < 8)
			return reason_fail(why, -EINVAL,
					   "payload of %u bytes, need at least "
					   "8",
					   size);
		k = ld_u32(pl);
		if (k == 0 || k > VHOST_USER_MEM_BASELINE_NREGS)
			return reason_fail(why, -EINVAL,
					   "%u regions (1 to %u allowed)", k,
					   VHOST_USER_MEM_BASELINE_NREGS);
		if (size != 8 + 32 * k)
			return reason_fail(why, -EINVAL,
					   "payload of %u bytes for %u "
					   "regions, expected %u",
					   size, k, 8 + 32 * k);
		return 0;
	case SZ_CONFIG:
		if (size < VHOST_USER_CONFIG_HDR_SIZE)
			return reason_fail(why, -EINVAL,
					   "payload of %u bytes, need at least "
					   "%u",
					   size, VHOST_USER_CONFIG_HDR_SIZE);
		k = ld_u32(pl + 4);
		if (k > VHOST_USER_CONFIG_MAX ||
		    size != VHOST_USER_CONFIG_HDR_SIZE + k)
			return reason_fail(why, -EINVAL,
					   "payload of %u bytes for %u config "
					   "bytes",
					   size, k);
		return 0;
	default:
		if (size != r->size)
			return reason_fail(why, -EINVAL,
					   "payload of %u bytes, expected %u",
					   size, r->size);
		return 0;
	}
}

static int check_fds(const struct req_rule *r, const uint8_t *pl,
		     unsigned int nfds, struct reason *why)
{
	unsigned int want;
	uint64_t v;

	switch (r->fd_rule) {
	case FD_ONE:
		want = 1;
		break;
	case FD_PER_REGION:
		want = ld_u32(pl);
		break;
	case FD_UNLESS_NOFD:
		memcpy(&v, pl, sizeof(v));
		want = (v & VHOST_USER_VRING_NOFD_MASK) ? 0 : 1;
		break;
	case FD_AT_MOST_ONE:
		if (nfds <= 1)
			return 0;
		return reason_fail(why, -EINVAL, "%u fds, expected at most 1",
				   nfds);
	default:
		want = 0;
		break;
	}
	if (nfds != want)
		return reason_fail(why, -EINVAL, "%u fds, expected %u", nfds,
				   want);
	return 0;
}

static int check_framing(const void *buf, size_t len, unsigned int nfds,
			 struct reason *why)
{
	struct vhost_user_header h;
	const uint8_t *pl = (const uint8_t *)buf + sizeof(h);
	const struct req_rule *r;
	int ret;

	if (len < sizeof(h))
		return reason_fail(why, -EINVAL,
				   "message of %zu bytes is shorter than the "
				   "header",
				   len);
	memcpy(&h, buf, sizeof(h));
	ret = check_header(&h, len - sizeof(h), why);
	if (ret < 0)
		return ret;
	r = &rules[h.request];
	ret = check_size(r, pl, h.size, why);
	return ret < 0 ? ret : check_fds(r, pl, nfds, why);
}

int vu_check_framing(const void *buf, size_t len, unsigned int nfds,
		     struct reason *why)
{
	return check_framing(buf, len, nfds, why);
}

/* ---- logging ---------------------------------------------------------- */

static int refuse(struct vu_dev *dev, const struct msg *m, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Logs "NAME: what; refused" and returns -EINVAL. */
static int refuse(struct vu_dev *dev, const struct msg *m, const char *fmt, ...)
{
	char what[200];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	log_peer_warnx("%s: %s; refused", m->name, what);
	return -EINVAL;
}

/* ---- replies ---------------------------------------------------------- */

static void *reply(struct msg *m, uint32_t size)
{
	struct vu_result *res = m->res;
	struct vhost_user_header h = {
		.request = m->hdr.request,
		.flags = VHOST_USER_VERSION | VHOST_USER_REPLY_MASK,
		.size = size,
	};

	memcpy(res->reply.bytes, &h, sizeof(h));
	res->reply_len = sizeof(h) + size;
	return res->reply.bytes + sizeof(h);
}

static int reply_u64(struct msg *m, uint64_t v)
{
	memcpy(reply(m, sizeof(v)), &v, sizeof(v));
	return 0;
}

/* ---- rings ------------------------------------------------------------ */

static bool ring_enabled(const struct vu_dev *dev, const struct vu_ring *r)
{
	if (!(dev->features & (1ull << VHOST_USER_F_PROTOCOL_FEATURES)))
		return true;
	return r->enabled;
}

static void ring_stop(struct vu_dev *dev, struct vu_ring *r)
{
	if (!r->running)
		return;
	dev->ops->ring_stopped(dev->priv, &r->vq);
	r->last_avail = r->vq.last_avail;
	r->used_idx = r->vq.used_idx;
	vq_teardown(&r->vq);
	r->running = false;
}

static void rings_stop_all(struct vu_dev *dev)
{
	unsigned int i;

	for (i = 0; i < dev->ops->num_queues; i++)
		ring_stop(dev, &dev->rings[i]);
}

/* Checks that each ring part lies in one region; why names the part. */
static int ring_translate(const struct vu_dev *dev, const struct vu_ring *r,
			  void *ret_ptrs[3], struct reason *why)
{
	static const char *const part[3] = { "descriptor table", "avail ring",
					     "used ring" };
	const uint64_t uva[3] = { r->desc_uva, r->avail_uva, r->used_uva };
	/* event index: used_event and avail_event after the rings */
	const uint64_t ev = dev->features & (1ull << VIRTIO_F_RING_EVENT_IDX)
				    ? VQ_EVENT_BYTES
				    : 0;
	const uint64_t len[3] = { VQ_DESC_BYTES(r->num),
				  VQ_AVAIL_BYTES(r->num) + ev,
				  VQ_USED_BYTES(r->num) + ev };
	const unsigned int align[3] = { 16, 2, 4 };
	unsigned int i;

	for (i = 0; i < 3; i++) {
		ret_ptrs[i] = gm_uva_to_host(&dev->mem, uva[i], len[i]);
		if (!ret_ptrs[i])
			return reason_fail(
				why, -EFAULT,
				"queue %u %s 0x%llx+%llu not in guest "
				"memory",
				r->vq.index, part[i],
				(unsigned long long)uva[i],
				(unsigned long long)len[i]);
		if ((uintptr_t)ret_ptrs[i] % align[i])
			return reason_fail(
				why, -EINVAL,
				"queue %u %s 0x%llx not %u-byte aligned",
				r->vq.index, part[i],
				(unsigned long long)uva[i], align[i]);
	}
	return 0;
}

static int ring_start(struct vu_dev *dev, struct vu_ring *r, struct reason *why)
{
	bool indirect = dev->features & (1ull << VIRTIO_F_RING_INDIRECT_DESC);
	void *p[3];
	int ret;

	ret = ring_translate(dev, r, p, why);
	if (ret < 0)
		return ret;
	ret = vq_setup(&r->vq, &dev->mem, r->num, p[0], p[1], p[2],
		       r->last_avail, indirect, &dev->status);
	if (ret < 0) {
		reason_set(why, "queue %u: cannot set up the ring",
			   r->vq.index);
		return ret;
	}
	vq_set_event_idx(&r->vq,
			 dev->features & (1ull << VIRTIO_F_RING_EVENT_IDX));
	r->vq.used_idx = r->used_idx;
	r->running = true;
	log_debug("queue %u started (size %u)", r->vq.index, r->num);
	dev->ops->ring_started(dev->priv, &r->vq);
	/* Buffers made available before we watched the kick fd. */
	dev->ops->ring_kicked(dev->priv, &r->vq);
	return 0;
}

/* Starts r if it is now fully configured and enabled. */
static int ring_update(struct vu_dev *dev, struct vu_ring *r,
		       struct reason *why)
{
	if (r->running || !r->num_set || !r->addr_set || !r->kick_set ||
	    !ring_enabled(dev, r) || dev->mem.nregions == 0)
		return 0;
	return ring_start(dev, r, why);
}

/* After a change of memory or features: start what can start. */
static void rings_update(struct vu_dev *dev, const char *name)
{
	struct reason why;
	unsigned int i;

	for (i = 0; i < dev->ops->num_queues; i++)
		if (ring_update(dev, &dev->rings[i], &why) < 0)
			log_peer_warnx("%s: %s; queue not started", name,
				       why.msg);
}

static void drop_kick(struct vu_dev *dev, struct vu_ring *r)
{
	if (r->kick_fd >= 0) {
		dev->host->unwatch_kick(dev->host_ctx, r->vq.index, r->kick_fd);
		r->kick_fd = safe_close(r->kick_fd);
	}
	r->kick_set = false;
	r->kick_nofd = false;
}

/* Back to the state of a new connection, except memory and owner. */
static void ring_reset(struct vu_dev *dev, struct vu_ring *r)
{
	unsigned int index = r->vq.index;

	ring_stop(dev, r);
	drop_kick(dev, r);
	safe_close(r->vq.call_fd);
	safe_close(r->err_fd);
	memset(r, 0, sizeof(*r));
	vq_init(&r->vq, index);
	r->kick_fd = -1;
	r->err_fd = -1;
}

static void device_reset(struct vu_dev *dev)
{
	unsigned int i;

	for (i = 0; i < dev->ops->num_queues; i++)
		ring_reset(dev, &dev->rings[i]);
	dev->features = 0;
	dev->status = 0;
	dev->ops->reset(dev->priv);
}

/* The ring a vring_state names, or NULL after refusing the message. */
static struct vu_ring *ring_of(struct vu_dev *dev, struct msg *m,
			       uint64_t index)
{
	if (index >= dev->ops->num_queues) {
		refuse(dev, m, "queue index %llu, device has %u queues",
		       (unsigned long long)index, dev->ops->num_queues);
		return NULL;
	}
	return &dev->rings[index];
}

/* ---- handlers: features and ownership --------------------------------- */

static int h_get_features(struct vu_dev *dev, struct msg *m)
{
	return reply_u64(m, dev->ops->features);
}

static int h_set_features(struct vu_dev *dev, struct msg *m)
{
	uint64_t v = m->p.u64;

	if (v & ~dev->ops->features)
		return refuse(dev, m,
			      "features 0x%llx include 0x%llx, never "
			      "offered",
			      (unsigned long long)v,
			      (unsigned long long)(v & ~dev->ops->features));
	dev->features = v;
	rings_update(dev, m->name);
	return 0;
}

static int h_set_owner(struct vu_dev *dev, struct msg *m)
{
	dev->owner = true;
	return 0;
}

static int h_reset_owner(struct vu_dev *dev, struct msg *m)
{
	device_reset(dev);
	gm_clear(&dev->mem);
	dev->protocol_features = 0;
	dev->owner = false;
	return 0;
}

static int h_get_protocol_features(struct vu_dev *dev, struct msg *m)
{
	return reply_u64(m, VU_PROTOCOL_FEATURES);
}

static int h_set_protocol_features(struct vu_dev *dev, struct msg *m)
{
	uint64_t v = m->p.u64;

	if (v & ~VU_PROTOCOL_FEATURES)
		return refuse(dev, m,
			      "protocol features 0x%llx include "
			      "0x%llx, never offered",
			      (unsigned long long)v,
			      (unsigned long long)(v & ~VU_PROTOCOL_FEATURES));
	dev->protocol_features = v;
	return 0;
}

static int h_get_queue_num(struct vu_dev *dev, struct msg *m)
{
	return reply_u64(m, dev->ops->num_queues);
}

/* ---- handlers: memory ------------------------------------------------- */

/* Whether next maps region g again unchanged (QEMU sends the whole table). */
static bool mapped_again(const struct guest_mem *next,
			 const struct gm_region *g)
{
	unsigned int i;

	for (i = 0; i < next->nregions; i++) {
		const struct gm_region *n = &next->regions[i];

		if (n->gpa == g->gpa && n->size == g->size &&
		    n->uva == g->uva && n->mmap_offset == g->mmap_offset &&
		    n->prot == g->prot)
			return true;
	}
	return false;
}

/*
 * Guest memory leaves the table: the device gives up what it registered
 * over it (its MRs), while the old mapping still exists.
 */
static void mem_gone(struct vu_dev *dev, const struct gm_region *g)
{
	if (dev->ops->mem_gone)
		dev->ops->mem_gone(dev->priv, g->gpa, g->size);
}

_Static_assert(GM_MAX_REGIONS == VHOST_USER_MEM_BASELINE_NREGS,
	       "SET_MEM_TABLE's array is the table's default limit");

/* A vhost-user region as guest_mem takes it: always read-write. */
static struct gm_desc region_desc(const struct vhost_user_mem_region *r)
{
	return (struct gm_desc){
		.gpa = r->guest_phys_addr,
		.size = r->memory_size,
		.uva = r->userspace_addr,
		.mmap_offset = r->mmap_offset,
		.prot = PROT_READ | PROT_WRITE,
	};
}

static int h_set_mem_table(struct vu_dev *dev, struct msg *m)
{
	const struct vhost_user_memory *mem = &m->p.memory;
	struct guest_mem next;
	struct reason why;
	unsigned int i;

	gm_init(&next);
	for (i = 0; i < mem->nregions; i++) {
		const struct vhost_user_mem_region *r = &mem->regions[i];
		struct gm_desc d = region_desc(r);

		if (gm_add_region(&next, &d, m->fds[i], &why) < 0) {
			gm_clear(&next);
			return refuse(dev, m,
				      "region %u (guest 0x%llx size "
				      "0x%llx offset 0x%llx): %s",
				      i, (unsigned long long)r->guest_phys_addr,
				      (unsigned long long)r->memory_size,
				      (unsigned long long)r->mmap_offset,
				      why.msg);
		}
	}
	/* Rings stop while the old mappings still exist. */
	rings_stop_all(dev);
	for (i = 0; i < dev->mem.nregions; i++)
		if (!mapped_again(&next, &dev->mem.regions[i]))
			mem_gone(dev, &dev->mem.regions[i]);
	gm_clear(&dev->mem);
	gm_move(&dev->mem, &next);
	rings_update(dev, m->name);
	return 0;
}

static int h_get_max_mem_slots(struct vu_dev *dev, struct msg *m)
{
	return reply_u64(m, GM_MAX_REGIONS);
}

static int h_add_mem_reg(struct vu_dev *dev, struct msg *m)
{
	const struct vhost_user_mem_region *r = &m->p.mem_reg.region;
	struct gm_desc d = region_desc(r);
	struct reason why;

	/* Existing mappings stay where they are: running rings are fine. */
	if (gm_add_region(&dev->mem, &d, m->fds[0], &why) < 0)
		return refuse(dev, m,
			      "region guest 0x%llx size 0x%llx "
			      "offset 0x%llx: %s",
			      (unsigned long long)r->guest_phys_addr,
			      (unsigned long long)r->memory_size,
			      (unsigned long long)r->mmap_offset, why.msg);
	rings_update(dev, m->name);
	return 0;
}

static const struct gm_region *
find_region(const struct guest_mem *gm, const struct vhost_user_mem_region *r)
{
	unsigned int i;

	for (i = 0; i < gm->nregions; i++)
		if (gm->regions[i].gpa == r->guest_phys_addr &&
		    gm->regions[i].size == r->memory_size &&
		    gm->regions[i].uva == r->userspace_addr)
			return &gm->regions[i];
	return NULL;
}

static int h_rem_mem_reg(struct vu_dev *dev, struct msg *m)
{
	const struct vhost_user_mem_region *r = &m->p.mem_reg.region;
	const struct gm_region *g = find_region(&dev->mem, r);
	struct gm_desc d = region_desc(r);

	if (!g)
		return refuse(dev, m,
			      "no region at guest 0x%llx size 0x%llx "
			      "user 0x%llx",
			      (unsigned long long)r->guest_phys_addr,
			      (unsigned long long)r->memory_size,
			      (unsigned long long)r->userspace_addr);
	rings_stop_all(dev);
	mem_gone(dev, g);
	gm_remove_region(&dev->mem, &d);
	rings_update(dev, m->name);
	return 0;
}

/* ---- handlers: rings -------------------------------------------------- */

static int h_set_vring_num(struct vu_dev *dev, struct msg *m)
{
	const struct vhost_user_vring_state *s = &m->p.state;
	struct vu_ring *r = ring_of(dev, m, s->index);
	uint32_t max = dev->ops->max_ring_size;

	if (!r)
		return -EINVAL;
	if (r->running)
		return refuse(dev, m, "queue %u is running", s->index);
	if (s->num == 0 || s->num > max || (s->num & (s->num - 1)))
		return refuse(dev, m,
			      "queue %u size %u is not a power of 2 "
			      "from 1 to %u",
			      s->index, s->num, max);
	r->num = (uint16_t)s->num;
	r->num_set = true;
	return 0;
}

static int h_set_vring_addr(struct vu_dev *dev, struct msg *m)
{
	const struct vhost_user_vring_addr *a = &m->p.addr;
	struct vu_ring *r = ring_of(dev, m, a->index);
	struct reason why;
	void *p[3];

	if (!r)
		return -EINVAL;
	/* The only flag is VHOST_VRING_F_LOG; we offer no dirty logging. */
	if (a->flags)
		return refuse(dev, m,
			      "queue %u flags 0x%x: dirty logging is "
			      "not supported",
			      a->index, a->flags);
	ring_stop(dev, r);
	r->desc_uva = a->desc_user_addr;
	r->avail_uva = a->avail_user_addr;
	r->used_uva = a->used_user_addr;
	r->addr_set = true;
	if (r->num_set && dev->mem.nregions > 0 &&
	    ring_translate(dev, r, p, &why) < 0) {
		r->addr_set = false;
		return refuse(dev, m, "%s", why.msg);
	}
	if (ring_update(dev, r, &why) < 0)
		return refuse(dev, m, "%s", why.msg);
	return 0;
}

static int h_set_vring_base(struct vu_dev *dev, struct msg *m)
{
	const struct vhost_user_vring_state *s = &m->p.state;
	struct vu_ring *r = ring_of(dev, m, s->index);

	if (!r)
		return -EINVAL;
	if (r->running)
		return refuse(dev, m, "queue %u is running", s->index);
	if (s->num > UINT16_MAX)
		return refuse(dev, m, "queue %u base %u exceeds 65535",
			      s->index, s->num);
	r->last_avail = r->used_idx = (uint16_t)s->num;
	return 0;
}

static int h_get_vring_base(struct vu_dev *dev, struct msg *m)
{
	const struct vhost_user_vring_state *s = &m->p.state;
	struct vhost_user_vring_state out;
	struct vu_ring *r = ring_of(dev, m, s->index);

	if (!r)
		return DROP; /* a reply is due and none can be right */
	ring_stop(dev, r);
	drop_kick(dev, r);
	out.index = s->index;
	out.num = r->last_avail;
	memcpy(reply(m, sizeof(out)), &out, sizeof(out));
	return 0;
}

/* The ring a KICK/CALL/ERR payload names, or NULL after refusing. */
static struct vu_ring *ring_of_fd_msg(struct vu_dev *dev, struct msg *m)
{
	uint64_t v = m->p.u64;

	if (v & ~(uint64_t)(VHOST_USER_VRING_IDX_MASK |
			    VHOST_USER_VRING_NOFD_MASK)) {
		refuse(dev, m, "payload 0x%llx sets reserved bits",
		       (unsigned long long)v);
		return NULL;
	}
	return ring_of(dev, m, v & VHOST_USER_VRING_IDX_MASK);
}

static bool nofd(const struct msg *m)
{
	return m->p.u64 & VHOST_USER_VRING_NOFD_MASK;
}

static int h_set_vring_kick(struct vu_dev *dev, struct msg *m)
{
	struct vu_ring *r = ring_of_fd_msg(dev, m);
	struct reason why;
	int ret;

	if (!r)
		return -EINVAL;
	ring_stop(dev, r);
	drop_kick(dev, r);
	if (nofd(m)) {
		r->kick_nofd = true;
	} else {
		ret = dev->host->watch_kick(dev->host_ctx, r->vq.index,
					    m->fds[0]);
		if (ret < 0)
			return refuse(dev, m,
				      "queue %u: cannot watch the kick "
				      "fd: %s",
				      r->vq.index, strerror(-ret));
		r->kick_fd = TAKE_FD(m->fds[0]);
	}
	r->kick_set = true;
	if (ring_update(dev, r, &why) < 0)
		return refuse(dev, m, "%s", why.msg);
	return 0;
}

/*
 * A call or err fd is written by the worker's one thread, so a write must
 * never wait: the fd must be writable, of a kind whose writes honour
 * O_NONBLOCK (eventfd, pipe, socket; not a regular file, which a FUSE or
 * network file system could stall), and is made non-blocking here.  The
 * flag is on the open file the frontend shares; QEMU's eventfds have it.
 * Then a full eventfd or pipe only makes vq_notify() see EAGAIN.
 */
static int signal_fd_ok(int fd, struct reason *why)
{
	struct stat st;
	int fl;

	if (fstat(fd, &st) < 0 || (fl = fcntl(fd, F_GETFL)) < 0)
		return reason_fail(why, -EBADF, "cannot inspect it: %s",
				   strerror(errno));
	if (S_ISREG(st.st_mode) || S_ISDIR(st.st_mode) || S_ISBLK(st.st_mode))
		return reason_fail(why, -EINVAL,
				   "a file or block device, not an eventfd");
	if ((fl & O_ACCMODE) == O_RDONLY || (fl & O_PATH))
		return reason_fail(why, -EBADF, "not open for writing");
	if (!(fl & O_NONBLOCK) && fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
		return reason_fail(why, -EINVAL,
				   "cannot make it non-blocking: %s",
				   strerror(errno));
	return 0;
}

/* The fd slot of a ring that SET_VRING_CALL / SET_VRING_ERR replaces. */
static int *call_slot(struct vu_ring *r)
{
	return &r->vq.call_fd;
}

static int *err_slot(struct vu_ring *r)
{
	return &r->err_fd;
}

static int set_signal_fd(struct vu_dev *dev, struct msg *m,
			 int *(*slot_of)(struct vu_ring *), const char *what)
{
	struct vu_ring *r = ring_of_fd_msg(dev, m);
	struct reason why;
	int *slot;

	if (!r)
		return -EINVAL;
	if (!nofd(m) && signal_fd_ok(m->fds[0], &why) < 0)
		return refuse(dev, m, "queue %u %s fd: %s", r->vq.index, what,
			      why.msg);
	slot = slot_of(r);
	safe_close(*slot);
	*slot = nofd(m) ? -1 : TAKE_FD(m->fds[0]);
	return 0;
}

static int h_set_vring_call(struct vu_dev *dev, struct msg *m)
{
	return set_signal_fd(dev, m, call_slot, "call");
}

static int h_set_vring_err(struct vu_dev *dev, struct msg *m)
{
	return set_signal_fd(dev, m, err_slot, "err");
}

static int h_set_vring_enable(struct vu_dev *dev, struct msg *m)
{
	const struct vhost_user_vring_state *s = &m->p.state;
	struct vu_ring *r = ring_of(dev, m, s->index);
	struct reason why;

	if (!r)
		return -EINVAL;
	if (s->num > 1)
		return refuse(dev, m, "queue %u enable value %u is not 0 or 1",
			      s->index, s->num);
	r->enable_seen = true;
	r->enabled = s->num;
	if (!r->enabled) {
		ring_stop(dev, r);
		return 0;
	}
	if (ring_update(dev, r, &why) < 0)
		return refuse(dev, m, "%s", why.msg);
	return 0;
}

/* ---- handlers: config, reset, status ---------------------------------- */

static int h_get_config(struct vu_dev *dev, struct msg *m)
{
	const struct vhost_user_config *c = &m->p.config;
	uint8_t space[VHOST_USER_CONFIG_MAX] = { 0 };
	uint32_t total = dev->ops->config_size;
	uint8_t *out;

	if (c->offset > total || c->size > total - c->offset) {
		reply(m, 0); /* an empty reply tells QEMU it failed */
		return refuse(dev, m,
			      "bytes %u+%u outside the %u-byte config "
			      "space",
			      c->offset, c->size, total);
	}
	dev->ops->get_config(dev->priv, space);
	out = reply(m, VHOST_USER_CONFIG_HDR_SIZE + c->size);
	memcpy(out, c, VHOST_USER_CONFIG_HDR_SIZE);
	memcpy(out + VHOST_USER_CONFIG_HDR_SIZE, space + c->offset, c->size);
	return 0;
}

static int h_set_config(struct vu_dev *dev, struct msg *m)
{
	return refuse(dev, m, "the config space is read-only");
}

static int h_reset_device(struct vu_dev *dev, struct msg *m)
{
	device_reset(dev);
	return 0;
}

static int h_set_status(struct vu_dev *dev, struct msg *m)
{
	uint64_t v = m->p.u64;

	if (v > 0xff)
		return refuse(dev, m, "status 0x%llx does not fit a byte",
			      (unsigned long long)v);
	/* Writing 0 is the driver's reset: it clears NEEDS_RESET too. */
	if (v == 0)
		dev->status = 0;
	else
		dev->status =
			(uint8_t)v | (dev->status & VIRTIO_STATUS_NEEDS_RESET);
	return 0;
}

static int h_get_status(struct vu_dev *dev, struct msg *m)
{
	return reply_u64(m, dev->status);
}

/* ---- entry points ----------------------------------------------------- */

int vu_dev_new(const struct device_ops *ops, const struct vu_host_ops *host,
	       void *host_ctx, struct vu_dev **ret_dev)
{
	const struct dev_env env = { .loop_ctx = host_ctx };

	return vu_dev_new_env(ops, host, host_ctx, &env, ret_dev);
}

int vu_dev_new_env(const struct device_ops *ops, const struct vu_host_ops *host,
		   void *host_ctx, const struct dev_env *env,
		   struct vu_dev **ret_dev)
{
	_cleanup_free_ struct vu_dev *dev = NULL;
	unsigned int i;
	int ret;

	dev = calloc(1, sizeof(*dev));
	if (!dev)
		return -ENOMEM;
	dev->rings = calloc(ops->num_queues, sizeof(*dev->rings));
	if (!dev->rings)
		return -ENOMEM;
	for (i = 0; i < ops->num_queues; i++) {
		vq_init(&dev->rings[i].vq, i);
		dev->rings[i].kick_fd = -1;
		dev->rings[i].err_fd = -1;
	}
	dev->ops = ops;
	dev->host = host;
	dev->host_ctx = host_ctx;
	gm_init(&dev->mem);
	ret = ops->create(env, &dev->priv);
	if (ret < 0) {
		free(dev->rings);
		return ret;
	}
	*ret_dev = TAKE_PTR(dev);
	return 0;
}

void vu_dev_free(struct vu_dev *dev)
{
	unsigned int i;

	if (!dev)
		return;
	for (i = 0; i < dev->ops->num_queues; i++)
		ring_reset(dev, &dev->rings[i]);
	dev->ops->destroy(dev->priv);
	gm_clear(&dev->mem);
	free(dev->rings);
	free(dev);
}

static void close_fds(int *fds, unsigned int nfds)
{
	unsigned int i;

	for (i = 0; i < nfds; i++)
		fds[i] = safe_close(fds[i]);
}

static void finish(struct vu_dev *dev, struct msg *m, int ret)
{
	const struct req_rule *r = &rules[m->hdr.request];
	bool acked = (m->hdr.flags & VHOST_USER_NEED_REPLY) &&
		     (dev->protocol_features &
		      (1ull << VHOST_USER_PROTOCOL_F_REPLY_ACK));

	if (ret == DROP) {
		m->res->disconnect = true;
	} else if (r->reply == RP_ALWAYS) {
		if (m->res->reply_len == 0)
			m->res->disconnect = true;
	} else if (acked) {
		reply_u64(m, ret < 0 ? 1 : 0);
	} else if (ret < 0) {
		log_peer_warnx(
			"%s: failure cannot be reported without REPLY_ACK; "
			"dropping the connection",
			m->name);
		m->res->disconnect = true;
	}
}

void vu_handle(struct vu_dev *dev, const void *buf, size_t len, int *fds,
	       unsigned int nfds, struct vu_result *res)
{
	struct msg m = { .fds = fds, .nfds = nfds, .res = res };
	const struct req_rule *r;
	struct reason why;
	int ret;

	res->disconnect = false;
	res->reply_len = 0;
	if (check_framing(buf, len, nfds, &why) < 0) {
		uint32_t req = len >= 4 ? ld_u32(buf) : VHOST_USER_NONE;

		log_peer_warnx("%s: %s; dropping the connection",
			       vhost_user_request_name(req), why.msg);
		res->disconnect = true;
		close_fds(fds, nfds);
		return;
	}
	/* The one copy of the message we look at. */
	memcpy(&m.hdr, buf, sizeof(m.hdr));
	memcpy(&m.p, (const uint8_t *)buf + sizeof(m.hdr), m.hdr.size);
	m.name = vhost_user_request_name(m.hdr.request);
	r = &rules[m.hdr.request];
	if (r->needs_pf != NO_PF &&
	    !(dev->protocol_features & (1ull << r->needs_pf))) {
		log_peer_warnx(
			"%s: protocol feature %d not negotiated; dropping "
			"the connection",
			m.name, r->needs_pf);
		ret = DROP;
	} else {
		log_debug("%s", m.name);
		ret = r->fn(dev, &m);
	}
	finish(dev, &m, ret);
	close_fds(fds, nfds);
}

void vu_kick(struct vu_dev *dev, unsigned int q)
{
	struct vu_ring *r;
	struct reason why;

	if (q >= dev->ops->num_queues)
		return;
	r = &dev->rings[q];
	if (r->running) {
		dev->ops->ring_kicked(dev->priv, &r->vq);
		return;
	}
	/* ABI §2.3: a kicked, configured ring counts as enabled. */
	if (!r->enable_seen && !r->enabled && r->kick_set) {
		r->enabled = true;
		if (ring_update(dev, r, &why) < 0)
			log_peer_warnx("kick: %s; queue not started", why.msg);
	}
}

bool vu_needs_poll(const struct vu_dev *dev)
{
	unsigned int i;

	for (i = 0; i < dev->ops->num_queues; i++)
		if (dev->rings[i].running && dev->rings[i].kick_nofd)
			return true;
	return false;
}

void vu_poll(struct vu_dev *dev)
{
	unsigned int i;

	for (i = 0; i < dev->ops->num_queues; i++)
		if (dev->rings[i].running && dev->rings[i].kick_nofd)
			dev->ops->ring_kicked(dev->priv, &dev->rings[i].vq);
}
