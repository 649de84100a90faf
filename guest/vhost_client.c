// SPDX-License-Identifier: MIT
/* The vhost-user frontend of the guest simulator, in QEMU's order. */
#include "guest/vhost_client.h"

#include <errno.h>
#include <linux/virtio_config.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/unix_socket.h"

#define DEFAULT_TIMEOUT_MS 5000

void vhost_client_attach(struct vhost_client *c, int fd, int timeout_ms)
{
	memset(c, 0, sizeof(*c));
	c->fd = fd;
	c->timeout_ms = timeout_ms > 0 ? timeout_ms : DEFAULT_TIMEOUT_MS;
}

int vhost_client_connect(struct vhost_client *c, const char *path,
			 int timeout_ms)
{
	int fd = unix_socket_connect(path);

	if (fd < 0)
		return fd;
	vhost_client_attach(c, fd, timeout_ms);
	return 0;
}

void vhost_client_close(struct vhost_client *c)
{
	c->fd = safe_close(c->fd);
}

bool vhost_client_has_protocol(const struct vhost_client *c, unsigned int bit)
{
	return c->protocol_features & (1ull << bit);
}

int vhost_client_send_raw(struct vhost_client *c,
			  const struct vhost_user_header *hdr,
			  const void *payload, size_t len, const int *fds,
			  unsigned int nfds)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * VHOST_USER_MAX_FDS * 2)];
		struct cmsghdr align;
	} ctl;
	struct iovec iov[2] = {
		{ .iov_base = (void *)hdr, .iov_len = sizeof(*hdr) },
		{ .iov_base = (void *)payload, .iov_len = len },
	};
	struct msghdr msg = { .msg_iov = iov, .msg_iovlen = len ? 2 : 1 };
	ssize_t n;

	if (nfds > VHOST_USER_MAX_FDS * 2)
		return -EINVAL;
	if (nfds) {
		struct cmsghdr *cm;

		memset(&ctl, 0, sizeof(ctl));
		msg.msg_control = ctl.buf;
		msg.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
		cm = CMSG_FIRSTHDR(&msg);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
		memcpy(CMSG_DATA(cm), fds, sizeof(int) * nfds);
	}
	do {
		n = sendmsg(c->fd, &msg, MSG_NOSIGNAL);
	} while (n < 0 && errno == EINTR);
	if (n < 0)
		return errno == EPIPE ? -ECONNRESET : -errno;
	if ((size_t)n != sizeof(*hdr) + len)
		return -EIO;
	c->requests++;
	return 0;
}

int vhost_client_send(struct vhost_client *c, uint32_t request, uint32_t flags,
		      const void *payload, uint32_t size, const int *fds,
		      unsigned int nfds)
{
	struct vhost_user_header hdr = {
		.request = request,
		.flags = VHOST_USER_VERSION | flags,
		.size = size,
	};

	return vhost_client_send_raw(c, &hdr, payload, size, fds, nfds);
}

/* Reads exactly `len` bytes within the timeout; drops any fds sent. */
static int read_full(struct vhost_client *c, void *buf, size_t len)
{
	uint8_t *p = buf;

	while (len) {
		struct pollfd pfd = { .fd = c->fd, .events = POLLIN };
		ssize_t n;
		int r = poll(&pfd, 1, c->timeout_ms);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		if (r == 0)
			return -ETIMEDOUT;
		n = recv(c->fd, p, len, MSG_CMSG_CLOEXEC);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return errno == ECONNRESET ? -ECONNRESET : -errno;
		if (n == 0)
			return -ECONNRESET;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int vhost_client_recv(struct vhost_client *c, uint32_t request, void *payload,
		      uint32_t size)
{
	struct vhost_user_header hdr;
	int r = read_full(c, &hdr, sizeof(hdr));

	if (r)
		return r;
	if ((hdr.flags & VHOST_USER_VERSION_MASK) != VHOST_USER_VERSION ||
	    !(hdr.flags & VHOST_USER_REPLY_MASK) || hdr.request != request ||
	    hdr.size != size)
		return -EPROTO;
	return read_full(c, payload, size);
}

/* QEMU's barrier when REPLY_ACK is absent: a GET_FEATURES round trip. */
static int sync_with_get_features(struct vhost_client *c)
{
	uint64_t features;
	int r = vhost_client_send(c, VHOST_USER_GET_FEATURES, 0, NULL, 0, NULL,
				  0);

	if (!r)
		r = vhost_client_recv(c, VHOST_USER_GET_FEATURES, &features,
				      sizeof(features));
	return r;
}

int vhost_client_send_acked(struct vhost_client *c, uint32_t request,
			    const void *payload, uint32_t size, const int *fds,
			    unsigned int nfds)
{
	bool ack =
		vhost_client_has_protocol(c, VHOST_USER_PROTOCOL_F_REPLY_ACK);
	uint64_t status;
	int r;

	r = vhost_client_send(c, request, ack ? VHOST_USER_NEED_REPLY : 0,
			      payload, size, fds, nfds);
	if (r)
		return r;
	if (!ack)
		return sync_with_get_features(c);
	r = vhost_client_recv(c, request, &status, sizeof(status));
	if (r)
		return r;
	return status ? -EREMOTEIO : 0;
}

int vhost_client_send_u64(struct vhost_client *c, uint32_t request,
			  uint64_t value)
{
	return vhost_client_send(c, request, 0, &value, sizeof(value), NULL, 0);
}

int vhost_client_send_state(struct vhost_client *c, uint32_t request,
			    uint32_t index, uint32_t num)
{
	struct vhost_user_vring_state st = { .index = index, .num = num };

	return vhost_client_send(c, request, 0, &st, sizeof(st), NULL, 0);
}

/* A request without payload whose answer is one u64. */
static int get_u64(struct vhost_client *c, uint32_t request,
		   uint64_t *ret_value)
{
	uint64_t v;
	int r = vhost_client_send(c, request, 0, NULL, 0, NULL, 0);

	if (!r)
		r = vhost_client_recv(c, request, &v, sizeof(v));
	if (!r)
		*ret_value = v;
	return r;
}

static int negotiate_protocol(struct vhost_client *c,
			      const struct vhost_client_opts *opts)
{
	int r = get_u64(c, VHOST_USER_GET_PROTOCOL_FEATURES,
			&c->device_protocol);

	if (r)
		return r;
	c->protocol_features = c->device_protocol & opts->protocol_features &
			       VHOST_CLIENT_PROTOCOL_FEATURES;
	r = vhost_client_send_u64(c, VHOST_USER_SET_PROTOCOL_FEATURES,
				  c->protocol_features);
	if (!r && vhost_client_has_protocol(c, VHOST_USER_PROTOCOL_F_MQ))
		r = get_u64(c, VHOST_USER_GET_QUEUE_NUM, &c->queue_num);
	if (!r && vhost_client_has_protocol(
			  c, VHOST_USER_PROTOCOL_F_CONFIGURE_MEM_SLOTS))
		r = get_u64(c, VHOST_USER_GET_MAX_MEM_SLOTS, &c->max_mem_slots);
	return r;
}

int vhost_client_init(struct vhost_client *c,
		      const struct vhost_client_opts *opts)
{
	int r = get_u64(c, VHOST_USER_GET_FEATURES, &c->device_features);

	if (r)
		return r;
	if (c->device_features & (1ull << VHOST_USER_F_PROTOCOL_FEATURES)) {
		r = negotiate_protocol(c, opts);
		if (r)
			return r;
	}
	r = vhost_client_send(c, VHOST_USER_SET_OWNER, 0, NULL, 0, NULL, 0);
	if (!r) /* vhost_dev_init() reads the features again */
		r = get_u64(c, VHOST_USER_GET_FEATURES, &c->device_features);
	if (r || !opts->config_size)
		return r;
	if (!vhost_client_has_protocol(c, VHOST_USER_PROTOCOL_F_CONFIG))
		return -EOPNOTSUPP;
	if (opts->config_size > VHOST_USER_CONFIG_MAX)
		return -EINVAL;
	r = vhost_client_get_config(c, 0, opts->config_size, c->config);
	if (!r)
		c->config_size = opts->config_size;
	return r;
}

int vhost_client_get_config(struct vhost_client *c, uint32_t offset,
			    uint32_t size, void *ret_buf)
{
	struct vhost_user_config cfg = { .offset = offset, .size = size };
	uint32_t len = VHOST_USER_CONFIG_HDR_SIZE + size;
	int r;

	if (size > VHOST_USER_CONFIG_MAX)
		return -EINVAL;
	r = vhost_client_send(c, VHOST_USER_GET_CONFIG, 0, &cfg, len, NULL, 0);
	if (!r)
		r = vhost_client_recv(c, VHOST_USER_GET_CONFIG, &cfg, len);
	if (r)
		return r;
	if (cfg.offset != offset || cfg.size != size)
		return -EPROTO;
	memcpy(ret_buf, cfg.payload, size);
	return 0;
}

int vhost_client_set_features(struct vhost_client *c, uint64_t driver_features)
{
	uint64_t pf = 1ull << VHOST_USER_F_PROTOCOL_FEATURES;
	uint64_t features = driver_features & c->device_features;
	int r;

	features |= c->device_features & pf;
	r = vhost_client_send_u64(c, VHOST_USER_SET_FEATURES, features);
	if (r)
		return r;
	c->features = features;
	if (vhost_client_has_protocol(c, VHOST_USER_PROTOCOL_F_STATUS))
		return vhost_client_add_status(c, VIRTIO_CONFIG_S_FEATURES_OK);
	return 0;
}

void vhost_client_region(const struct guest_ram *ram, unsigned int slot,
			 struct vhost_user_mem_region *ret)
{
	const struct guest_slot *s = &ram->slots[slot];

	*ret = (struct vhost_user_mem_region){
		.guest_phys_addr = s->gpa,
		.memory_size = s->size,
		.userspace_addr =
			(uint64_t)(uintptr_t)guest_slot_host(ram, slot),
		.mmap_offset = s->offset,
	};
}

static int mem_reg(struct vhost_client *c, uint32_t request,
		   const struct guest_ram *ram, unsigned int slot)
{
	struct vhost_user_mem_reg_single m = { 0 };
	int fd = ram->blocks[ram->slots[slot].block].fd;

	vhost_client_region(ram, slot, &m.region);
	return vhost_client_send_acked(c, request, &m, sizeof(m), &fd, 1);
}

int vhost_client_add_mem_reg(struct vhost_client *c,
			     const struct guest_ram *ram, unsigned int slot)
{
	return mem_reg(c, VHOST_USER_ADD_MEM_REG, ram, slot);
}

int vhost_client_rem_mem_reg(struct vhost_client *c,
			     const struct guest_ram *ram, unsigned int slot)
{
	return mem_reg(c, VHOST_USER_REM_MEM_REG, ram, slot);
}

int vhost_client_set_mem_table(struct vhost_client *c,
			       const struct guest_ram *ram)
{
	struct vhost_user_memory mem = { .nregions = ram->nslots };
	int fds[VHOST_USER_MEM_BASELINE_NREGS];
	uint32_t size;

	if (vhost_client_has_protocol(
		    c, VHOST_USER_PROTOCOL_F_CONFIGURE_MEM_SLOTS)) {
		if (ram->nslots > c->max_mem_slots)
			return -E2BIG;
		for (unsigned int i = 0; i < ram->nslots; i++) {
			int r = vhost_client_add_mem_reg(c, ram, i);

			if (r)
				return r;
		}
		return 0;
	}
	if (ram->nslots > VHOST_USER_MEM_BASELINE_NREGS)
		return -E2BIG;
	for (unsigned int i = 0; i < ram->nslots; i++) {
		vhost_client_region(ram, i, &mem.regions[i]);
		fds[i] = ram->blocks[ram->slots[i].block].fd;
	}
	/* like QEMU: only the regions present, not the whole array */
	size = 8 + ram->nslots * (uint32_t)sizeof(mem.regions[0]);
	return vhost_client_send_acked(c, VHOST_USER_SET_MEM_TABLE, &mem, size,
				       fds, ram->nslots);
}

static int send_vring_fd(struct vhost_client *c, uint32_t request,
			 unsigned int index, int fd)
{
	uint64_t v = index;

	return vhost_client_send(c, request, 0, &v, sizeof(v), &fd, 1);
}

int vhost_client_start_vring(struct vhost_client *c, const struct guest_vq *q,
			     uint16_t base)
{
	struct vhost_user_vring_addr addr = {
		.index = q->index,
		.desc_user_addr = (uint64_t)(uintptr_t)q->desc,
		.used_user_addr = (uint64_t)(uintptr_t)q->used,
		.avail_user_addr = (uint64_t)(uintptr_t)q->avail,
	};
	int r;

	r = vhost_client_send_state(c, VHOST_USER_SET_VRING_NUM, q->index,
				    q->num);
	if (!r)
		r = vhost_client_send_state(c, VHOST_USER_SET_VRING_BASE,
					    q->index, base);
	if (!r)
		r = vhost_client_send(c, VHOST_USER_SET_VRING_ADDR, 0, &addr,
				      sizeof(addr), NULL, 0);
	if (!r)
		r = send_vring_fd(c, VHOST_USER_SET_VRING_KICK, q->index,
				  q->kick_fd);
	if (!r)
		r = send_vring_fd(c, VHOST_USER_SET_VRING_CALL, q->index,
				  q->call_fd);
	if (!r && (c->features & (1ull << VHOST_USER_F_PROTOCOL_FEATURES)))
		r = vhost_client_set_vring_enable(c, q->index, true);
	return r;
}

int vhost_client_set_vring_enable(struct vhost_client *c, unsigned int index,
				  bool enable)
{
	return vhost_client_send_state(c, VHOST_USER_SET_VRING_ENABLE, index,
				       enable);
}

int vhost_client_get_vring_base(struct vhost_client *c, unsigned int index,
				uint32_t *ret_base)
{
	struct vhost_user_vring_state st;
	int r;

	r = vhost_client_send_state(c, VHOST_USER_GET_VRING_BASE, index, 0);
	if (!r)
		r = vhost_client_recv(c, VHOST_USER_GET_VRING_BASE, &st,
				      sizeof(st));
	if (r)
		return r;
	if (st.index != index)
		return -EPROTO;
	*ret_base = st.num;
	return 0;
}

int vhost_client_get_status(struct vhost_client *c, uint8_t *ret_status)
{
	uint64_t v;
	int r = get_u64(c, VHOST_USER_GET_STATUS, &v);

	if (r)
		return r;
	if (v > 0xff)
		return -EPROTO;
	*ret_status = (uint8_t)v;
	return 0;
}

int vhost_client_set_status(struct vhost_client *c, uint8_t status)
{
	uint64_t v = status;

	return vhost_client_send_acked(c, VHOST_USER_SET_STATUS, &v, sizeof(v),
				       NULL, 0);
}

int vhost_client_add_status(struct vhost_client *c, uint8_t bits)
{
	uint8_t s;
	int r = vhost_client_get_status(c, &s);

	if (r)
		return r;
	if ((s & bits) == bits)
		return 0;
	return vhost_client_set_status(c, (uint8_t)(s | bits));
}

int vhost_client_reset_device(struct vhost_client *c)
{
	uint32_t req = VHOST_USER_RESET_OWNER;

	if (vhost_client_has_protocol(c, VHOST_USER_PROTOCOL_F_RESET_DEVICE))
		req = VHOST_USER_RESET_DEVICE;
	return vhost_client_send(c, req, 0, NULL, 0, NULL, 0);
}
