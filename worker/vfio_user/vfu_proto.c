// SPDX-License-Identifier: MIT
/*
 * The vfio-user protocol core: framing checks, the command table, and a
 * reply for every request (see vfu_proto.h).
 */
#include "worker/vfio_user/vfu_proto.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "common/cleanup.h"
#include "common/log.h"

/* One received message, its header copied out once. */
struct msg {
	struct vfio_user_header hdr;
	const uint8_t *payload;
	size_t len; /* payload bytes */
	int *fds;
	unsigned int nfds;
};

/* A handler's output: the reply payload (after the header). */
struct out {
	uint8_t *payload;
	size_t len;
	int fd; /* to send with the reply (not ours to close), or -1 */
	struct reason why; /* on failure */
	bool expected; /* a refusal clients make routinely: debug log only */
};

typedef int (*handler_fn)(struct vfu_dev *dev, const struct msg *m,
			  struct out *o);

struct command {
	uint32_t min_len, max_len; /* payload bytes */
	uint8_t max_fds;
	handler_fn handle;
};

/* ---- framing ------------------------------------------------------------ */

int vfu_check_framing(const void *buf, size_t len, struct reason *why)
{
	struct vfio_user_header h;

	if (len < sizeof(h))
		return reason_fail(why, -EINVAL, "truncated header");
	memcpy(&h, buf, sizeof(h));
	if (h.size < sizeof(h))
		return reason_fail(why, -EINVAL,
				   "size field smaller than the header");
	if (h.size > VFIO_USER_MAX_MSG)
		return reason_fail(
			why, -EINVAL,
			"message larger than the maximum we announce");
	if (h.size != len)
		return reason_fail(
			why, -EINVAL,
			"size field differs from the bytes received");
	if ((h.flags & VFIO_USER_F_TYPE_MASK) != VFIO_USER_F_REQUEST)
		return reason_fail(
			why, -EINVAL,
			"not a request (we send none, so expect no reply)");
	if (h.flags & ~(VFIO_USER_F_TYPE_MASK | VFIO_USER_F_NO_REPLY))
		return reason_fail(why, -EINVAL,
				   "unknown or error flag on a request");
	return 0;
}

/* ---- handlers ----------------------------------------------------------- */

static int do_version(struct vfu_dev *dev, const struct msg *m, struct out *o)
{
	static const struct vfio_user_caps ours = {
		.present = VFIO_USER_CAPS_HAS_MAX_FDS |
			   VFIO_USER_CAPS_HAS_MAX_XFER |
			   VFIO_USER_CAPS_HAS_PGSIZES |
			   VFIO_USER_CAPS_HAS_MAX_DMA,
		.max_msg_fds = VFIO_USER_MAX_FDS,
		.max_data_xfer_size = VFIO_USER_MAX_XFER,
		.pgsizes = VFIO_USER_PGSIZE,
		.max_dma_maps = GM_TABLE_REGIONS,
	};
	struct vfio_user_version v;
	struct vfio_user_caps caps = { 0 };
	int n;

	if (dev->versioned)
		return reason_fail(&o->why, -EINVAL,
				   "VERSION again on a negotiated connection");
	memcpy(&v, m->payload, sizeof(v));
	if (v.major != VFIO_USER_MAJOR)
		return reason_fail(&o->why, -ENOTSUP,
				   "protocol major version is not 0");
	if (m->len > sizeof(v) &&
	    vfio_user_caps_parse((const char *)m->payload + sizeof(v),
				 m->len - sizeof(v), &caps, &o->why) < 0)
		return -EINVAL;
	v = (struct vfio_user_version){ VFIO_USER_MAJOR, VFIO_USER_MINOR };
	memcpy(o->payload, &v, sizeof(v));
	n = vfio_user_caps_format(&ours, (char *)o->payload + sizeof(v),
				  VFIO_USER_MAX_CAPS_JSON);
	if (n < 0)
		return reason_fail(&o->why, -EIO,
				   "our capabilities do not fit");
	o->len = sizeof(v) + (size_t)n;
	dev->client_caps = caps;
	dev->versioned = true;
	log_info("vfio-user client negotiated version %u.%u", VFIO_USER_MAJOR,
		 VFIO_USER_MINOR);
	return 0;
}

static int do_dma_map(struct vfu_dev *dev, const struct msg *m, struct out *o)
{
	struct vfio_user_dma_map d;
	int ret;

	memcpy(&d, m->payload, sizeof(d));
	if (d.argsz != sizeof(d))
		return reason_fail(&o->why, -EINVAL,
				   "argsz is not the struct size");
	ret = pci_fn_dma_map(&dev->fn, &d, m->nfds ? m->fds[0] : -1, &o->why);
	if (ret == 0)
		log_debug("DMA region [0x%llx, +0x%llx) mapped",
			  (unsigned long long)d.addr,
			  (unsigned long long)d.size);
	return ret;
}

static int do_dma_unmap(struct vfu_dev *dev, const struct msg *m, struct out *o)
{
	struct vfio_user_dma_unmap u;
	int ret;

	memcpy(&u, m->payload, sizeof(u));
	if (u.argsz != sizeof(u))
		return reason_fail(&o->why, -EINVAL,
				   "argsz is not the struct size");
	ret = pci_fn_dma_unmap(&dev->fn, &u, &o->why);
	if (ret < 0)
		return ret;
	memcpy(o->payload, &u, sizeof(u));
	o->len = sizeof(u);
	return 0;
}

static int do_get_info(struct vfu_dev *dev, const struct msg *m, struct out *o)
{
	struct vfio_user_device_info i;

	memcpy(&i, m->payload, sizeof(i));
	if (i.argsz < sizeof(i))
		return reason_fail(&o->why, -EINVAL,
				   "argsz smaller than the struct");
	i = (struct vfio_user_device_info){
		.argsz = sizeof(i),
		.flags = VFIO_USER_DEVICE_F_PCI | VFIO_USER_DEVICE_F_RESET,
		.num_regions = VFIO_USER_PCI_NUM_REGIONS,
		.num_irqs = PCI_FN_NUM_IRQ_INDEXES,
	};
	memcpy(o->payload, &i, sizeof(i));
	o->len = sizeof(i);
	return 0;
}

static int do_region_info(struct vfu_dev *dev, const struct msg *m,
			  struct out *o)
{
	struct vfio_user_region_info r;
	int ret;

	memcpy(&r, m->payload, sizeof(r));
	if (r.argsz < sizeof(r))
		return reason_fail(&o->why, -EINVAL,
				   "argsz smaller than the struct");
	ret = pci_fn_region_info(&dev->fn, r.index, &r, &o->fd);
	if (ret < 0) {
		reason_set(&o->why, "no such region");
		return ret;
	}
	memcpy(o->payload, &r, sizeof(r));
	o->len = sizeof(r);
	return 0;
}

static int do_irq_info(struct vfu_dev *dev, const struct msg *m, struct out *o)
{
	struct vfio_user_irq_info i;
	int ret;

	memcpy(&i, m->payload, sizeof(i));
	if (i.argsz < sizeof(i))
		return reason_fail(&o->why, -EINVAL,
				   "argsz smaller than the struct");
	ret = pci_fn_irq_info(&dev->fn, i.index, &i);
	if (ret < 0) {
		reason_set(&o->why, "no such irq index");
		/* QEMU asks for ERR (and REQ) at every start */
		o->expected = i.index == VFIO_USER_PCI_ERR ||
			      i.index == VFIO_USER_PCI_REQ;
		return ret;
	}
	memcpy(o->payload, &i, sizeof(i));
	o->len = sizeof(i);
	return 0;
}

static int do_set_irqs(struct vfu_dev *dev, const struct msg *m, struct out *o)
{
	struct vfio_user_irq_set s;

	memcpy(&s, m->payload, sizeof(s));
	if (s.argsz != m->len)
		return reason_fail(&o->why, -EINVAL,
				   "argsz differs from the payload size");
	/* it keeps the fds it installs (their slots become -1) */
	return pci_fn_set_irqs(&dev->fn, &s, m->payload + sizeof(s),
			       m->len - sizeof(s), m->fds, m->nfds, &o->why);
}

static int do_region_read(struct vfu_dev *dev, const struct msg *m,
			  struct out *o)
{
	struct vfio_user_region_rw rw;
	int ret;

	memcpy(&rw, m->payload, sizeof(rw));
	if (rw.count > VFIO_USER_MAX_XFER)
		return reason_fail(&o->why, -E2BIG,
				   "count larger than max_data_xfer_size");
	ret = pci_fn_region_rw(&dev->fn, rw.region, rw.offset,
			       o->payload + sizeof(rw), rw.count, false,
			       &o->why);
	if (ret < 0)
		return ret;
	memcpy(o->payload, &rw, sizeof(rw));
	o->len = sizeof(rw) + rw.count;
	return 0;
}

static int do_region_write(struct vfu_dev *dev, const struct msg *m,
			   struct out *o)
{
	uint8_t data[VFIO_USER_MAX_XFER];
	struct vfio_user_region_rw rw;
	int ret;

	memcpy(&rw, m->payload, sizeof(rw));
	if (rw.count != m->len - sizeof(rw))
		return reason_fail(&o->why, -EINVAL,
				   "count differs from the data sent");
	memcpy(data, m->payload + sizeof(rw), rw.count);
	ret = pci_fn_region_rw(&dev->fn, rw.region, rw.offset, data, rw.count,
			       true, &o->why);
	if (ret < 0)
		return ret;
	memcpy(o->payload, &rw, sizeof(rw));
	o->len = sizeof(rw);
	return 0;
}

static int do_reset(struct vfu_dev *dev, const struct msg *m, struct out *o)
{
	log_info("vfio-user client reset the device");
	pci_fn_reset(&dev->fn);
	return 0;
}

#define RW_HDR	 sizeof(struct vfio_user_region_rw)
#define IRQ_SET	 sizeof(struct vfio_user_irq_set)
#define VER	 sizeof(struct vfio_user_version)
#define EXACT(t) sizeof(t), sizeof(t)
static const struct command commands[VFIO_USER_MAX_COMMAND] = {
	[VFIO_USER_VERSION] = { VER, VER + VFIO_USER_MAX_CAPS_JSON, 0,
				do_version },
	[VFIO_USER_DMA_MAP] = { EXACT(struct vfio_user_dma_map), 1,
				do_dma_map },
	[VFIO_USER_DMA_UNMAP] = { EXACT(struct vfio_user_dma_unmap), 0,
				  do_dma_unmap },
	[VFIO_USER_DEVICE_GET_INFO] = { EXACT(struct vfio_user_device_info), 0,
					do_get_info },
	[VFIO_USER_DEVICE_GET_REGION_INFO] = { EXACT(struct
						     vfio_user_region_info),
					       0, do_region_info },
	[VFIO_USER_DEVICE_GET_IRQ_INFO] = { EXACT(struct vfio_user_irq_info), 0,
					    do_irq_info },
	[VFIO_USER_DEVICE_SET_IRQS] = { IRQ_SET, IRQ_SET + PCI_FN_MAX_VECTORS,
					VFIO_USER_MAX_FDS, do_set_irqs },
	[VFIO_USER_REGION_READ] = { RW_HDR, RW_HDR, 0, do_region_read },
	[VFIO_USER_REGION_WRITE] = { RW_HDR + 1, RW_HDR + VFIO_USER_MAX_XFER, 0,
				     do_region_write },
	[VFIO_USER_DEVICE_RESET] = { 0, 0, 0, do_reset },
};

/* ---- dispatch ------------------------------------------------------------ */

static void reply(const struct msg *m, int err, size_t len,
		  struct vfu_result *res)
{
	if (m->hdr.flags & VFIO_USER_F_NO_REPLY)
		return;
	res->reply.hdr = (struct vfio_user_header){
		.msg_id = m->hdr.msg_id,
		.command = m->hdr.command,
		.size = (uint32_t)(sizeof(res->reply.hdr) + (err ? 0 : len)),
		.flags = VFIO_USER_F_REPLY | (err ? VFIO_USER_F_ERROR : 0),
		.error_no = (uint32_t)err,
	};
	res->reply_len = res->reply.hdr.size;
}

/* Whether a framed request can be handled at all: 0, or -errno (the
 * error the reply carries) and why. */
static int check_request(const struct vfu_dev *dev, const struct msg *m,
			 struct reason *why)
{
	const struct command *c;

	if (m->hdr.command >= VFIO_USER_MAX_COMMAND ||
	    !commands[m->hdr.command].handle)
		return reason_fail(why, -ENOTSUP,
				   "command not implemented by this server");
	c = &commands[m->hdr.command];
	if (!dev->versioned && m->hdr.command != VFIO_USER_VERSION)
		return reason_fail(why, -EINVAL, "request before VERSION");
	if (m->len < c->min_len || m->len > c->max_len)
		return reason_fail(why, -EINVAL,
				   "payload size out of range for the command");
	if (m->nfds > c->max_fds)
		return reason_fail(why, -EINVAL,
				   "more fds than the command takes");
	return 0;
}

void vfu_handle(struct vfu_dev *dev, const void *buf, size_t len, int *fds,
		unsigned int nfds, struct vfu_result *res)
{
	struct out o = { .payload = res->reply.bytes + sizeof(res->reply.hdr),
			 .fd = -1 };
	struct msg m = { .fds = fds, .nfds = nfds };
	struct reason why;
	unsigned int i;
	int err;

	res->disconnect = false;
	res->reply_len = 0;
	res->reply_fd = -1;
	if (vfu_check_framing(buf, len, &why) < 0) {
		log_peer_warnx("vfio-user: %s; dropping the connection",
			       why.msg);
		res->disconnect = true;
		goto close_fds;
	}
	memcpy(&m.hdr, buf, sizeof(m.hdr));
	m.payload = (const uint8_t *)buf + sizeof(m.hdr);
	m.len = len - sizeof(m.hdr);
	log_debug("vfio-user: %s (id %u, %zu bytes, %u fds%s)",
		  vfio_user_command_name(m.hdr.command), m.hdr.msg_id, m.len,
		  nfds, m.hdr.flags & VFIO_USER_F_NO_REPLY ? ", no reply" : "");
	err = -check_request(dev, &m, &why);
	if (err) {
		log_peer_warnx("vfio-user: refusing %s (%u, id %u): %s",
			       vfio_user_command_name(m.hdr.command),
			       m.hdr.command, m.hdr.msg_id, why.msg);
		reply(&m, err, 0, res);
		goto close_fds;
	}
	err = -commands[m.hdr.command].handle(dev, &m, &o);
	if (err && o.expected)
		log_debug("vfio-user: refusing %s (id %u): %s",
			  vfio_user_command_name(m.hdr.command), m.hdr.msg_id,
			  o.why.msg);
	else if (err)
		log_peer_warnx("vfio-user: refusing %s (id %u): %s",
			       vfio_user_command_name(m.hdr.command),
			       m.hdr.msg_id,
			       o.why.msg[0] ? o.why.msg : strerror(err));
	reply(&m, err, o.len, res);
	if (!err && res->reply_len)
		res->reply_fd = o.fd;
close_fds:
	/* a handler that keeps an fd sets its slot to -1 */
	for (i = 0; i < nfds; i++)
		fds[i] = safe_close(fds[i]);
}

int vfu_dev_new(const struct pci_fn_ops *ops, const struct dev_env *env,
		struct vfu_dev **ret_dev)
{
	struct vfu_dev *dev = calloc(1, sizeof(*dev));
	int ret;

	if (!dev)
		return -ENOMEM;
	ret = pci_fn_init(&dev->fn, ops, env);
	if (ret < 0) {
		free(dev);
		return ret;
	}
	*ret_dev = dev;
	return 0;
}

void vfu_dev_free(struct vfu_dev *dev)
{
	if (!dev)
		return;
	pci_fn_fini(&dev->fn);
	free(dev);
}
