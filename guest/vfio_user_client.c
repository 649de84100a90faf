// SPDX-License-Identifier: MIT
/* The vfio-user client of the guest simulator, in QEMU's order. */
#include "guest/vfio_user_client.h"

#include <errno.h>
#include <linux/pci_regs.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/unix_socket.h"
#include "common/stream_msg.h"

#define DEFAULT_TIMEOUT_MS 5000
/* The most reply payload we accept: a region read of max_xfer bytes. */
#define MAX_REPLY (VFIO_USER_MAX_MSG - sizeof(struct vfio_user_header))

/* QEMU 11.1's VERSION capabilities, as vfio_user_validate_version sends. */
static const char qemu_caps[] =
	"{\"capabilities\":{\"max_msg_fds\":16,\"max_data_xfer_size\":1048576,"
	"\"pgsizes\":4096,\"max_dma_maps\":65535,\"migration\":{\"pgsize\":"
	"4096,\"max_bitmap_size\":268435456},\"write_multiple\":true}}";

void vfio_user_client_attach(struct vfio_user_client *c, int fd, int timeout_ms)
{
	unsigned int i;

	memset(c, 0, sizeof(*c));
	c->fd = fd;
	c->reply_fd = -1;
	c->timeout_ms = timeout_ms > 0 ? timeout_ms : DEFAULT_TIMEOUT_MS;
	for (i = 0; i < VFIO_USER_CLIENT_MAX_VECTORS; i++)
		c->irq_fds[i] = -1;
	/* the protocol's defaults until VERSION says otherwise */
	c->max_fds = 8;
	c->max_xfer = 1024 * 1024;
	c->pgsizes = 4096;
	c->max_dma_maps = 65535;
}

int vfio_user_client_connect(struct vfio_user_client *c, const char *path,
			     int timeout_ms)
{
	int fd = unix_socket_connect(path);

	if (fd < 0)
		return fd;
	vfio_user_client_attach(c, fd, timeout_ms);
	return 0;
}

static void close_irq_fds(struct vfio_user_client *c)
{
	unsigned int i;

	for (i = 0; i < VFIO_USER_CLIENT_MAX_VECTORS; i++)
		c->irq_fds[i] = safe_close(c->irq_fds[i]);
	c->nvectors = 0;
}

void vfio_user_client_close(struct vfio_user_client *c)
{
	unsigned int i;

	close_irq_fds(c);
	for (i = 0; i <= VFIO_USER_PCI_BAR5; i++) {
		if (c->bar_map[i])
			munmap(c->bar_map[i], c->regions[i].size);
		c->bar_map[i] = NULL;
	}
	c->reply_fd = safe_close(c->reply_fd);
	c->fd = safe_close(c->fd);
}

int vfio_user_client_send_raw(struct vfio_user_client *c, const void *msg,
			      size_t len, const int *fds, unsigned int nfds)
{
	int r = stream_send(c->fd, msg, len, fds, nfds);

	if (r == -EPIPE)
		return -ECONNRESET;
	if (r == 0)
		c->requests++;
	return r;
}

static int wait_readable(struct vfio_user_client *c)
{
	struct pollfd pfd = { .fd = c->fd, .events = POLLIN };
	int r;

	do
		r = poll(&pfd, 1, c->timeout_ms);
	while (r < 0 && errno == EINTR);
	if (r < 0)
		return -errno;
	return r == 0 ? -ETIMEDOUT : 0;
}

static int read_exact(struct vfio_user_client *c, void *buf, size_t len)
{
	int r = len ? wait_readable(c) : 0;

	if (r == 0)
		r = stream_read_full(c->fd, buf, len, 0);
	return r == -EPIPE ? -ECONNRESET : r;
}

int vfio_user_client_recv(struct vfio_user_client *c, uint16_t id,
			  uint16_t command, void *payload, uint32_t max,
			  uint32_t *ret_len)
{
	uint8_t skip[256];
	struct vfio_user_header h;
	int fds[VFIO_USER_MAX_FDS];
	unsigned int nfds = 0, i;
	uint64_t deadline;
	uint32_t len;
	int r = wait_readable(c);

	/* the header with the fds a reply may carry (a region's memory) */
	if (r == 0)
		r = stream_recv_hdr(c->fd, &h, sizeof(h), fds,
				    VFIO_USER_MAX_FDS, &nfds, &deadline);
	if (r)
		return r == -EPIPE ? -ECONNRESET : r;
	c->reply_fd = safe_close(c->reply_fd);
	for (i = 0; i < nfds; i++) {
		if (i == 0)
			c->reply_fd = fds[i];
		else
			close(fds[i]);
	}
	if ((h.flags & VFIO_USER_F_TYPE_MASK) != VFIO_USER_F_REPLY ||
	    h.msg_id != id || h.command != command || h.size < sizeof(h) ||
	    h.size - sizeof(h) > MAX_REPLY)
		return -EPROTO;
	len = h.size - (uint32_t)sizeof(h);
	if (h.flags & VFIO_USER_F_ERROR) {
		c->last_error = h.error_no;
		/* an error reply has no payload; drain it if it lies */
		while (len) {
			uint32_t n = len < sizeof(skip) ? len : sizeof(skip);

			r = read_exact(c, skip, n);
			if (r)
				return r;
			len -= n;
		}
		return -EREMOTEIO;
	}
	if (len > max)
		return -EPROTO;
	r = read_exact(c, payload, len);
	if (r == 0 && ret_len)
		*ret_len = len;
	return r;
}

/* Sends header + payload as one message with fds; *ret_id its id. */
static int send_msg(struct vfio_user_client *c, uint16_t command,
		    uint32_t flags, const void *payload, uint32_t len,
		    const int *fds, unsigned int nfds, uint16_t *ret_id)
{
	uint8_t buf[VFIO_USER_MAX_MSG];
	struct vfio_user_header h = {
		.msg_id = c->next_id++,
		.command = command,
		.size = (uint32_t)sizeof(h) + len,
		.flags = VFIO_USER_F_REQUEST | flags,
	};

	if (len > sizeof(buf) - sizeof(h))
		return -EINVAL;
	memcpy(buf, &h, sizeof(h));
	if (len)
		memcpy(buf + sizeof(h), payload, len);
	if (ret_id)
		*ret_id = h.msg_id;
	return vfio_user_client_send_raw(c, buf, h.size, fds, nfds);
}

int vfio_user_client_call(struct vfio_user_client *c, uint16_t command,
			  const void *payload, uint32_t len, const int *fds,
			  unsigned int nfds, void *reply, uint32_t max,
			  uint32_t *ret_len)
{
	uint16_t id;
	int r = send_msg(c, command, 0, payload, len, fds, nfds, &id);

	return r ? r
		 : vfio_user_client_recv(c, id, command, reply, max, ret_len);
}

/* A call whose reply must be exactly `size` bytes (an info struct). */
static int call_exact(struct vfio_user_client *c, uint16_t command, void *inout,
		      uint32_t size)
{
	uint32_t got = 0;
	int r = vfio_user_client_call(c, command, inout, size, NULL, 0, inout,
				      size, &got);

	return r ? r : got == size ? 0 : -EPROTO;
}

/* ---- negotiation ----------------------------------------------------- */

static void take_caps(struct vfio_user_client *c,
		      const struct vfio_user_caps *caps)
{
	if (caps->present & VFIO_USER_CAPS_HAS_MAX_FDS)
		c->max_fds = caps->max_msg_fds;
	if (caps->present & VFIO_USER_CAPS_HAS_MAX_XFER)
		c->max_xfer = caps->max_data_xfer_size;
	if (caps->present & VFIO_USER_CAPS_HAS_PGSIZES)
		c->pgsizes = caps->pgsizes;
	if (caps->present & VFIO_USER_CAPS_HAS_MAX_DMA)
		c->max_dma_maps = caps->max_dma_maps;
}

int vfio_user_client_version(struct vfio_user_client *c, const char *json)
{
	uint8_t buf[sizeof(struct vfio_user_version) + VFIO_USER_MAX_CAPS_JSON];
	struct vfio_user_version v = { VFIO_USER_MAJOR, VFIO_USER_MINOR };
	struct vfio_user_caps caps = { 0 };
	struct reason why;
	size_t jl;
	uint32_t got = 0;
	int r;

	json = json ? json : qemu_caps;
	jl = strlen(json) + 1;
	if (jl > VFIO_USER_MAX_CAPS_JSON)
		return -EINVAL;
	memcpy(buf, &v, sizeof(v));
	memcpy(buf + sizeof(v), json, jl);
	r = vfio_user_client_call(c, VFIO_USER_VERSION, buf,
				  (uint32_t)(sizeof(v) + jl), NULL, 0, buf,
				  sizeof(buf), &got);
	if (r)
		return r;
	if (got < sizeof(v))
		return -EPROTO;
	memcpy(&v, buf, sizeof(v));
	/* QEMU: the major must match, the minor may not be newer */
	if (v.major != VFIO_USER_MAJOR || v.minor > VFIO_USER_MINOR)
		return -EPROTO;
	if (got > sizeof(v) &&
	    vfio_user_caps_parse((const char *)buf + sizeof(v), got - sizeof(v),
				 &caps, &why) < 0)
		return -EPROTO;
	c->major = v.major;
	c->minor = v.minor;
	take_caps(c, &caps);
	return 0;
}

uint8_t vfio_user_client_find_cap(const struct vfio_user_client *c, uint8_t id)
{
	uint8_t off = c->config[PCI_CAPABILITY_LIST];
	unsigned int hops;

	if (!(c->config[PCI_STATUS] & PCI_STATUS_CAP_LIST))
		return 0;
	/* 48 capabilities at most fit: a loop in the list ends here */
	for (hops = 0; off >= 0x40 && hops < 48; hops++) {
		if (off > VFIO_USER_CLIENT_CONFIG_SIZE - 2)
			return 0;
		if (c->config[off] == id)
			return off;
		off = c->config[off + 1];
	}
	return 0;
}

/*
 * A BAR offered with the MMAP flag and an fd: map it, as QEMU maps it
 * into the guest.  The fd is closed either way.
 */
static int map_bar(struct vfio_user_client *c, uint32_t i)
{
	const struct vfio_user_region_info *r = &c->regions[i];
	_cleanup_close_ int fd = c->reply_fd;
	void *p;

	c->reply_fd = -1;
	if (c->no_mmap || fd < 0 || !(r->flags & VFIO_USER_REGION_F_MMAP) ||
	    !r->size)
		return 0;
	p = mmap(NULL, r->size, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		 (off_t)r->offset);
	if (p == MAP_FAILED)
		return -errno;
	c->bar_map[i] = p;
	return 0;
}

int vfio_user_client_init(struct vfio_user_client *c)
{
	uint32_t i;
	int r = vfio_user_client_version(c, NULL);

	if (r)
		return r;
	c->info = (struct vfio_user_device_info){ .argsz = sizeof(c->info) };
	r = call_exact(c, VFIO_USER_DEVICE_GET_INFO, &c->info, sizeof(c->info));
	if (r)
		return r;
	if (!(c->info.flags & VFIO_USER_DEVICE_F_PCI) ||
	    c->info.num_regions < VFIO_USER_PCI_NUM_REGIONS ||
	    c->info.num_irqs <= VFIO_USER_PCI_MSIX)
		return -EPROTO;
	for (i = 0; i < VFIO_USER_PCI_NUM_REGIONS && !r; i++) {
		c->regions[i] = (struct vfio_user_region_info){
			.argsz = sizeof(c->regions[i]), .index = i
		};
		r = call_exact(c, VFIO_USER_DEVICE_GET_REGION_INFO,
			       &c->regions[i], sizeof(c->regions[i]));
		if (!r && i <= VFIO_USER_PCI_BAR5)
			r = map_bar(c, i);
	}
	/* the indexes the server has (QEMU asks for ERR and REQ regardless) */
	for (i = 0; i < c->info.num_irqs && i < VFIO_USER_PCI_NUM_IRQS && !r;
	     i++) {
		c->irqs[i] = (struct vfio_user_irq_info){
			.argsz = sizeof(c->irqs[i]), .index = i
		};
		r = call_exact(c, VFIO_USER_DEVICE_GET_IRQ_INFO, &c->irqs[i],
			       sizeof(c->irqs[i]));
	}
	if (r)
		return r;
	if (c->regions[VFIO_USER_PCI_CONFIG].size < sizeof(c->config))
		return -EPROTO;
	r = vfio_user_client_region_read(c, VFIO_USER_PCI_CONFIG, 0, c->config,
					 sizeof(c->config));
	if (r < 0)
		return r;
	if (r != (int)sizeof(c->config))
		return -EPROTO;
	c->msix_cap = vfio_user_client_find_cap(c, PCI_CAP_ID_MSIX);
	return 0;
}

/* ---- DMA ----------------------------------------------------------------- */

int vfio_user_client_dma_map(struct vfio_user_client *c,
			     const struct guest_ram *ram, unsigned int slot)
{
	return vfio_user_client_dma_map_flags(
		c, ram, slot, VFIO_USER_DMA_F_READ | VFIO_USER_DMA_F_WRITE);
}

int vfio_user_client_dma_map_flags(struct vfio_user_client *c,
				   const struct guest_ram *ram,
				   unsigned int slot, uint32_t flags)
{
	const struct guest_slot *s;
	struct vfio_user_dma_map m;
	int fd;

	if (slot >= ram->nslots)
		return -EINVAL;
	s = &ram->slots[slot];
	fd = ram->blocks[s->block].fd;
	m = (struct vfio_user_dma_map){
		.argsz = sizeof(m),
		.flags = flags,
		.offset = s->offset,
		.addr = s->gpa,
		.size = s->size,
	};
	return vfio_user_client_call(c, VFIO_USER_DMA_MAP, &m, sizeof(m), &fd,
				     1, NULL, 0, NULL);
}

int vfio_user_client_map_ram(struct vfio_user_client *c,
			     const struct guest_ram *ram)
{
	unsigned int i;
	int r = 0;

	for (i = 0; i < ram->nslots && !r; i++)
		r = vfio_user_client_dma_map(c, ram, i);
	return r;
}

int vfio_user_client_dma_unmap(struct vfio_user_client *c, uint64_t gpa,
			       uint64_t size, uint32_t flags)
{
	struct vfio_user_dma_unmap u = {
		.argsz = sizeof(u), .flags = flags, .addr = gpa, .size = size
	};

	return call_exact(c, VFIO_USER_DMA_UNMAP, &u, sizeof(u));
}

/* ---- region I/O -----------------------------------------------------------
 */

int vfio_user_client_region_read(struct vfio_user_client *c, uint32_t region,
				 uint64_t offset, void *buf, uint32_t count)
{
	uint8_t reply[MAX_REPLY];
	struct vfio_user_region_rw rw = { .offset = offset,
					  .region = region,
					  .count = count };
	struct vfio_user_region_rw got;
	uint32_t len = 0;
	int r;

	if (count > c->max_xfer || count > MAX_REPLY - sizeof(rw))
		return -EINVAL;
	r = vfio_user_client_call(c, VFIO_USER_REGION_READ, &rw, sizeof(rw),
				  NULL, 0, reply, sizeof(reply), &len);
	if (r)
		return r;
	if (len < sizeof(got))
		return -EPROTO;
	memcpy(&got, reply, sizeof(got));
	/* QEMU: a reply count larger than asked is an error */
	if (got.count > count || got.count != len - sizeof(got))
		return -EPROTO;
	memcpy(buf, reply + sizeof(got), got.count);
	return (int)got.count;
}

int vfio_user_client_region_write(struct vfio_user_client *c, uint32_t region,
				  uint64_t offset, const void *buf,
				  uint32_t count, bool posted)
{
	uint8_t msg[VFIO_USER_MAX_MSG - sizeof(struct vfio_user_header)];
	struct vfio_user_region_rw rw = { .offset = offset,
					  .region = region,
					  .count = count };
	uint16_t id;
	int r;

	if (count > c->max_xfer || count > sizeof(msg) - sizeof(rw))
		return -EINVAL;
	memcpy(msg, &rw, sizeof(rw));
	memcpy(msg + sizeof(rw), buf, count);
	r = send_msg(c, VFIO_USER_REGION_WRITE,
		     posted ? VFIO_USER_F_NO_REPLY : 0, msg,
		     (uint32_t)(sizeof(rw) + count), NULL, 0, &id);
	if (r || posted)
		return r;
	return vfio_user_client_recv(c, id, VFIO_USER_REGION_WRITE, msg,
				     sizeof(msg), NULL);
}

static bool access_size_ok(unsigned int size)
{
	return size == 1 || size == 2 || size == 4 || size == 8;
}

int vfio_user_client_cfg_read(struct vfio_user_client *c, uint32_t off,
			      unsigned int size, uint64_t *ret_val)
{
	uint64_t v = 0;
	int r;

	if (!access_size_ok(size))
		return -EINVAL;
	r = vfio_user_client_region_read(c, VFIO_USER_PCI_CONFIG, off, &v,
					 size);
	if (r < 0)
		return r;
	if (r != (int)size)
		return -EPROTO;
	*ret_val = v;
	return 0;
}

/* Config writes are never posted (QEMU waits for them). */
int vfio_user_client_cfg_write(struct vfio_user_client *c, uint32_t off,
			       unsigned int size, uint64_t val)
{
	if (!access_size_ok(size))
		return -EINVAL;
	return vfio_user_client_region_write(c, VFIO_USER_PCI_CONFIG, off, &val,
					     size, false);
}

int vfio_user_client_bar_read(struct vfio_user_client *c, unsigned int bar,
			      uint64_t off, unsigned int size,
			      uint64_t *ret_val)
{
	uint64_t v = 0;
	int r;

	if (!access_size_ok(size) || bar > VFIO_USER_PCI_BAR5)
		return -EINVAL;
	if (c->bar_map[bar]) {
		if (off + size > c->regions[bar].size)
			return -EINVAL;
		memcpy(&v, (uint8_t *)c->bar_map[bar] + off, size);
		*ret_val = v;
		return 0;
	}
	r = vfio_user_client_region_read(c, bar, off, &v, size);
	if (r < 0)
		return r;
	if (r != (int)size)
		return -EPROTO;
	*ret_val = v;
	return 0;
}

int vfio_user_client_bar_write(struct vfio_user_client *c, unsigned int bar,
			       uint64_t off, unsigned int size, uint64_t val)
{
	uint8_t *p;

	if (!access_size_ok(size) || bar > VFIO_USER_PCI_BAR5)
		return -EINVAL;
	if (!c->bar_map[bar])
		return vfio_user_client_region_write(c, bar, off, &val, size,
						     true);
	/* a store into the mapped BAR, as a guest's: no message */
	if (off + size > c->regions[bar].size || off % size)
		return -EINVAL;
	p = (uint8_t *)c->bar_map[bar] + off;
	if (size == 4)
		__atomic_store_n((uint32_t *)p, (uint32_t)val,
				 __ATOMIC_RELEASE);
	else if (size == 8)
		__atomic_store_n((uint64_t *)p, val, __ATOMIC_RELEASE);
	else
		memcpy(p, &val, size);
	return 0;
}

/* ---- interrupts
 * -------------------------------------------------------------- */

int vfio_user_client_set_irqs(struct vfio_user_client *c, uint32_t index,
			      uint32_t flags, uint32_t start, uint32_t count,
			      const int *fds, unsigned int nfds)
{
	struct vfio_user_irq_set s = {
		.argsz = sizeof(s),
		.flags = flags,
		.index = index,
		.start = start,
		.count = count,
	};

	return vfio_user_client_call(c, VFIO_USER_DEVICE_SET_IRQS, &s,
				     sizeof(s), fds, nfds, NULL, 0, NULL);
}

/* MSI-X table location from the cached capability. */
static int msix_table(const struct vfio_user_client *c, unsigned int *ret_bar,
		      uint64_t *ret_off)
{
	uint32_t t;

	if (!c->msix_cap)
		return -ENODEV;
	memcpy(&t, c->config + c->msix_cap + PCI_MSIX_TABLE, sizeof(t));
	*ret_bar = t & PCI_MSIX_TABLE_BIR;
	*ret_off = t & PCI_MSIX_TABLE_OFFSET;
	return 0;
}

int vfio_user_client_msix_mask(struct vfio_user_client *c, unsigned int vec,
			       bool mask)
{
	unsigned int bar;
	uint64_t off;
	int r = msix_table(c, &bar, &off);

	if (r)
		return r;
	return vfio_user_client_bar_write(
		c, bar,
		off + vec * PCI_MSIX_ENTRY_SIZE + PCI_MSIX_ENTRY_VECTOR_CTRL, 4,
		mask ? PCI_MSIX_ENTRY_CTRL_MASKBIT : 0);
}

/* SET_IRQS in runs of at most max_fds eventfds, as QEMU chunks them. */
static int send_vector_fds(struct vfio_user_client *c, unsigned int nvec)
{
	unsigned int sent, n;
	int r = 0;

	for (sent = 0; sent < nvec && !r; sent += n) {
		n = nvec - sent;
		if (n > c->max_fds)
			n = (unsigned int)c->max_fds;
		r = vfio_user_client_set_irqs(
			c, VFIO_USER_PCI_MSIX,
			VFIO_USER_IRQ_SET_DATA_EVENTFD |
				VFIO_USER_IRQ_SET_ACTION_TRIGGER,
			sent, n, c->irq_fds + sent, n);
	}
	return r;
}

/* Programs table entry vec: a distinct address/data pair, unmasked. */
static int program_vector(struct vfio_user_client *c, unsigned int bar,
			  uint64_t table, unsigned int vec)
{
	uint64_t e = table + vec * PCI_MSIX_ENTRY_SIZE;
	int r;

	r = vfio_user_client_bar_write(c, bar, e + PCI_MSIX_ENTRY_LOWER_ADDR, 4,
				       0xfee00000u);
	if (!r)
		r = vfio_user_client_bar_write(
			c, bar, e + PCI_MSIX_ENTRY_UPPER_ADDR, 4, 0);
	if (!r)
		r = vfio_user_client_bar_write(c, bar, e + PCI_MSIX_ENTRY_DATA,
					       4, 0x4000 + vec);
	if (!r)
		r = vfio_user_client_msix_mask(c, vec, false);
	return r;
}

int vfio_user_client_msix_enable(struct vfio_user_client *c, unsigned int nvec)
{
	unsigned int bar, i;
	uint64_t table, cmd;
	int r = msix_table(c, &bar, &table);

	if (r)
		return r;
	if (nvec == 0 || nvec > VFIO_USER_CLIENT_MAX_VECTORS ||
	    nvec > c->irqs[VFIO_USER_PCI_MSIX].count)
		return -EINVAL;
	close_irq_fds(c);
	for (i = 0; i < nvec; i++) {
		c->irq_fds[i] = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		if (c->irq_fds[i] < 0) {
			r = -errno;
			close_irq_fds(c);
			return r;
		}
	}
	c->nvectors = nvec;
	r = send_vector_fds(c, nvec);
	if (!r)
		r = vfio_user_client_cfg_read(c, PCI_COMMAND, 2, &cmd);
	if (!r)
		r = vfio_user_client_cfg_write(c, PCI_COMMAND, 2,
					       cmd | PCI_COMMAND_MEMORY |
						       PCI_COMMAND_MASTER);
	/* the Linux order: enable with all masked, program, unmask all */
	if (!r)
		r = vfio_user_client_cfg_write(
			c, c->msix_cap + PCI_MSIX_FLAGS, 2,
			PCI_MSIX_FLAGS_ENABLE | PCI_MSIX_FLAGS_MASKALL);
	for (i = 0; i < nvec && !r; i++)
		r = program_vector(c, bar, table, i);
	if (!r)
		r = vfio_user_client_cfg_write(c, c->msix_cap + PCI_MSIX_FLAGS,
					       2, PCI_MSIX_FLAGS_ENABLE);
	return r;
}

int vfio_user_client_msix_disable(struct vfio_user_client *c)
{
	int r;

	if (!c->msix_cap)
		return -ENODEV;
	r = vfio_user_client_cfg_write(c, c->msix_cap + PCI_MSIX_FLAGS, 2, 0);
	if (!r)
		r = vfio_user_client_set_irqs(
			c, VFIO_USER_PCI_MSIX,
			VFIO_USER_IRQ_SET_DATA_NONE |
				VFIO_USER_IRQ_SET_ACTION_TRIGGER,
			0, 0, NULL, 0);
	close_irq_fds(c);
	return r;
}

int vfio_user_client_irq_count(struct vfio_user_client *c, unsigned int vec)
{
	uint64_t n;

	if (vec >= c->nvectors)
		return -EINVAL;
	if (read(c->irq_fds[vec], &n, sizeof(n)) != sizeof(n))
		return errno == EAGAIN ? 0 : -errno;
	return n > 0x7fffffff ? 0x7fffffff : (int)n;
}

int vfio_user_client_irq_wait(struct vfio_user_client *c, unsigned int vec,
			      int timeout_ms)
{
	struct pollfd pfd;
	int r;

	if (vec >= c->nvectors)
		return -EINVAL;
	pfd = (struct pollfd){ .fd = c->irq_fds[vec], .events = POLLIN };
	do
		r = poll(&pfd, 1, timeout_ms);
	while (r < 0 && errno == EINTR);
	if (r < 0)
		return -errno;
	if (r == 0)
		return -ETIMEDOUT;
	return vfio_user_client_irq_count(c, vec);
}

int vfio_user_client_reset(struct vfio_user_client *c)
{
	int r = vfio_user_client_call(c, VFIO_USER_DEVICE_RESET, NULL, 0, NULL,
				      0, NULL, 0, NULL);

	close_irq_fds(c);
	return r;
}
