// SPDX-License-Identifier: MIT
/*
 * The vfio-user server's PCI function: config space, BARs, MSI-X and the
 * DMA regions of one client connection (see pci.h).
 */
#include "worker/vfio_user/pci.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/pci_regs.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/log.h"

#define MSIX_ENTRY_SIZE 16u
#define MSIX_CTRL	(PCI_CFG_MSIX_CAP + PCI_MSIX_FLAGS)
#define MIN_BAR_SIZE	16ull
#define MAX_BAR_SIZE	(1ull << 30)
#define CMD_WRITABLE                                                           \
	(PCI_COMMAND_MEMORY | PCI_COMMAND_MASTER | PCI_COMMAND_PARITY |        \
	 PCI_COMMAND_SERR | PCI_COMMAND_INTX_DISABLE)

static bool is_pow2(uint64_t v)
{
	return v && !(v & (v - 1));
}

static uint32_t pba_bytes(uint16_t vectors)
{
	return ((vectors + 63u) / 64u) * 8u;
}

static uint16_t cfg16(const struct pci_fn *fn, unsigned int off)
{
	return (uint16_t)(fn->cfg[off] | fn->cfg[off + 1] << 8);
}

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static void put32(uint8_t *p, uint32_t v)
{
	put16(p, (uint16_t)v);
	put16(p + 2, (uint16_t)(v >> 16));
}

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

/* ---- the device description ------------------------------------------ */

static int check_bars(const struct pci_fn_ops *ops, struct reason *why)
{
	unsigned int i;

	for (i = 0; i < PCI_FN_NUM_BARS; i++) {
		const struct pci_fn_bar *b = &ops->bars[i];

		if (!b->size) {
			if (b->flags)
				return reason_fail(why, -EINVAL,
						   "flags on a BAR of size 0");
			continue;
		}
		if (!is_pow2(b->size) || b->size < MIN_BAR_SIZE ||
		    b->size > MAX_BAR_SIZE)
			return reason_fail(
				why, -EINVAL,
				"BAR size not a power of 2 in [16, 1 GiB]");
		if (b->flags & ~(PCI_FN_BAR_MEM64 | PCI_FN_BAR_PREFETCH))
			return reason_fail(why, -EINVAL, "unknown BAR flags");
		if (!(b->flags & PCI_FN_BAR_MEM64))
			continue;
		if (i + 1 >= PCI_FN_NUM_BARS || ops->bars[i + 1].size ||
		    ops->bars[i + 1].flags)
			return reason_fail(
				why, -EINVAL,
				"a 64-bit BAR needs the next BAR free");
		i++; /* its upper half */
	}
	return 0;
}

static int check_msix(const struct pci_fn_ops *ops, struct reason *why)
{
	const struct pci_fn_msix *m = &ops->msix;
	uint64_t tend, pend, bar_size;

	if (m->vectors == 0 || m->vectors > PCI_FN_MAX_VECTORS)
		return reason_fail(why, -EINVAL,
				   "MSI-X vectors not in 1..2048");
	if (m->bar >= PCI_FN_NUM_BARS || !ops->bars[m->bar].size)
		return reason_fail(why, -EINVAL, "MSI-X BAR not implemented");
	bar_size = ops->bars[m->bar].size;
	tend = (uint64_t)m->table_offset +
	       (uint64_t)m->vectors * MSIX_ENTRY_SIZE;
	pend = (uint64_t)m->pba_offset + pba_bytes(m->vectors);
	if ((m->table_offset | m->pba_offset) & 7)
		return reason_fail(why, -EINVAL,
				   "MSI-X table or PBA not 8-byte aligned");
	if (tend > bar_size || pend > bar_size)
		return reason_fail(why, -EINVAL,
				   "MSI-X table or PBA outside its BAR");
	if (m->table_offset < pend && m->pba_offset < tend)
		return reason_fail(why, -EINVAL, "MSI-X table and PBA overlap");
	return 0;
}

int pci_fn_ops_check(const struct pci_fn_ops *ops, struct reason *why)
{
	int ret;

	if (!ops->create || !ops->destroy || !ops->bar_read ||
	    !ops->bar_write || !ops->reset)
		return reason_fail(why, -EINVAL,
				   "a mandatory callback is missing");
	ret = check_bars(ops, why);
	return ret < 0 ? ret : check_msix(ops, why);
}

/* ---- config space ------------------------------------------------------ */

static uint32_t bar_flag_bits(const struct pci_fn_bar *b)
{
	uint32_t v = 0;

	if (b->flags & PCI_FN_BAR_MEM64)
		v |= PCI_BASE_ADDRESS_MEM_TYPE_64;
	if (b->flags & PCI_FN_BAR_PREFETCH)
		v |= PCI_BASE_ADDRESS_MEM_PREFETCH;
	return v;
}

/*
 * The BAR registers after a write: the address bits below the size read
 * as 0 (that is how the guest sizes a BAR by writing all-ones), the type
 * bits are fixed.  The upper half of a 64-bit BAR is all address bits.
 */
static void bars_normalize(struct pci_fn *fn)
{
	unsigned int i;

	for (i = 0; i < PCI_FN_NUM_BARS; i++) {
		const struct pci_fn_bar *b = &fn->ops->bars[i];
		uint8_t *reg = fn->cfg + PCI_BASE_ADDRESS_0 + 4 * i;
		uint32_t v;

		if (!b->size)
			continue;
		v = get32(reg) & ~(uint32_t)(b->size - 1) & ~0xfu;
		put32(reg, v | bar_flag_bits(b));
		if (b->flags & PCI_FN_BAR_MEM64)
			i++;
	}
}

static void set_wmask(struct pci_fn *fn)
{
	unsigned int i;

	memset(fn->wmask, 0, sizeof(fn->wmask));
	put16(fn->wmask + PCI_COMMAND, CMD_WRITABLE);
	fn->wmask[PCI_CACHE_LINE_SIZE] = 0xff;
	fn->wmask[PCI_INTERRUPT_LINE] = 0xff;
	for (i = 0; i < PCI_FN_NUM_BARS; i++) {
		const struct pci_fn_bar *b = &fn->ops->bars[i];
		unsigned int words = b->flags & PCI_FN_BAR_MEM64 ? 2 : 1;

		if (!b->size)
			continue;
		memset(fn->wmask + PCI_BASE_ADDRESS_0 + 4 * i, 0xff, 4 * words);
		i += words - 1;
	}
	put16(fn->wmask + MSIX_CTRL,
	      PCI_MSIX_FLAGS_ENABLE | PCI_MSIX_FLAGS_MASKALL);
}

/* Power-on config space: IDs, the capability list, everything else 0. */
static void cfg_reset(struct pci_fn *fn)
{
	const struct pci_fn_ops *o = fn->ops;
	const struct pci_fn_msix *m = &o->msix;
	uint8_t *c = fn->cfg;

	memset(c, 0, PCI_CFG_SIZE);
	put16(c + PCI_VENDOR_ID, o->ids.vendor);
	put16(c + PCI_DEVICE_ID, o->ids.device);
	put16(c + PCI_STATUS, PCI_STATUS_CAP_LIST);
	c[PCI_REVISION_ID] = o->ids.revision;
	c[PCI_CLASS_PROG] = (uint8_t)o->ids.class_code;
	put16(c + PCI_CLASS_DEVICE, (uint16_t)(o->ids.class_code >> 8));
	c[PCI_HEADER_TYPE] = PCI_HEADER_TYPE_NORMAL;
	put16(c + PCI_SUBSYSTEM_VENDOR_ID, o->ids.subsys_vendor);
	put16(c + PCI_SUBSYSTEM_ID, o->ids.subsys_device);
	c[PCI_CAPABILITY_LIST] = PCI_CFG_MSIX_CAP;
	/* no INTx: interrupt pin 0, so QEMU never sets INTx up */
	c[PCI_CFG_MSIX_CAP + PCI_CAP_LIST_ID] = PCI_CAP_ID_MSIX;
	c[PCI_CFG_MSIX_CAP + PCI_CAP_LIST_NEXT] = 0;
	put16(c + MSIX_CTRL, (uint16_t)(m->vectors - 1));
	put32(c + PCI_CFG_MSIX_CAP + PCI_MSIX_TABLE, m->table_offset | m->bar);
	put32(c + PCI_CFG_MSIX_CAP + PCI_MSIX_PBA, m->pba_offset | m->bar);
	bars_normalize(fn);
}

static bool msix_enabled(const struct pci_fn *fn)
{
	return cfg16(fn, MSIX_CTRL) & PCI_MSIX_FLAGS_ENABLE;
}

bool pci_fn_bus_master(const struct pci_fn *fn)
{
	return cfg16(fn, PCI_COMMAND) & PCI_COMMAND_MASTER;
}

/* ---- MSI-X ------------------------------------------------------------- */

static bool vector_masked(const struct pci_fn *fn, unsigned int v)
{
	return fn->msix_table[v * MSIX_ENTRY_SIZE +
			      PCI_MSIX_ENTRY_VECTOR_CTRL] &
	       PCI_MSIX_ENTRY_CTRL_MASKBIT;
}

static bool deliverable(const struct pci_fn *fn, unsigned int v)
{
	return msix_enabled(fn) &&
	       !(cfg16(fn, MSIX_CTRL) & PCI_MSIX_FLAGS_MASKALL) &&
	       pci_fn_bus_master(fn) && !vector_masked(fn, v) &&
	       fn->irq_fds[v] >= 0;
}

static int signal_fd(struct pci_fn *fn, unsigned int v)
{
	uint64_t one = 1;

	/* EAGAIN: the counter is saturated; the client sees it anyway */
	if (write(fn->irq_fds[v], &one, sizeof(one)) < 0 && errno != EAGAIN)
		return -EIO;
	fn->stats.delivered++;
	return 0;
}

/* Delivers the pending vectors that nothing blocks any more. */
static void flush_pending(struct pci_fn *fn)
{
	unsigned int v;

	for (v = 0; v < fn->ops->msix.vectors; v++) {
		if (!(fn->pba[v / 64] & (1ull << (v % 64))) ||
		    !deliverable(fn, v))
			continue;
		fn->pba[v / 64] &= ~(1ull << (v % 64));
		if (signal_fd(fn, v) < 0)
			log_peer_warn("MSI-X vector %u: writing its eventfd",
				      v);
	}
}

int pci_fn_raise(struct pci_fn *fn, unsigned int vector)
{
	if (vector >= fn->ops->msix.vectors)
		return -EINVAL;
	fn->stats.raised++;
	if (!msix_enabled(fn)) {
		fn->stats.dropped++;
		return 0;
	}
	if (!deliverable(fn, vector)) {
		fn->pba[vector / 64] |= 1ull << (vector % 64);
		return 0;
	}
	return signal_fd(fn, vector);
}

const struct guest_mem *pci_fn_mem(const struct pci_fn *fn)
{
	return &fn->mem;
}

static void close_irq_fds(struct pci_fn *fn, unsigned int start,
			  unsigned int count)
{
	unsigned int v;

	for (v = start; v < start + count; v++)
		fn->irq_fds[v] = safe_close(fn->irq_fds[v]);
}

/* Power-on MSI-X state: entries 0, vectors unmasked, nothing pending. */
static void msix_reset(struct pci_fn *fn)
{
	uint16_t n = fn->ops->msix.vectors;

	memset(fn->msix_table, 0, (size_t)n * MSIX_ENTRY_SIZE);
	memset(fn->pba, 0, pba_bytes(n));
	close_irq_fds(fn, 0, n);
}

/* ---- life cycle -------------------------------------------------------- */

int pci_fn_init(struct pci_fn *fn, const struct pci_fn_ops *ops,
		const struct dev_env *env)
{
	uint16_t n = ops->msix.vectors;
	struct reason why;
	int ret;

	ret = pci_fn_ops_check(ops, &why);
	if (ret < 0) {
		log_warnx("PCI function '%s': %s", ops->name, why.msg);
		return ret;
	}
	memset(fn, 0, sizeof(*fn));
	fn->ops = ops;
	gm_init(&fn->mem);
	fn->mem.max_regions = GM_TABLE_REGIONS; /* QEMU maps every section */
	fn->msix_table = calloc(n, MSIX_ENTRY_SIZE);
	fn->pba = calloc(1, pba_bytes(n));
	fn->irq_fds = calloc(n, sizeof(int));
	if (!fn->msix_table || !fn->pba || !fn->irq_fds) {
		ret = -ENOMEM;
		goto err_free;
	}
	memset(fn->irq_fds, 0xff, n * sizeof(int)); /* all -1 */
	set_wmask(fn);
	cfg_reset(fn);
	ret = ops->create(fn, env, &fn->priv);
	if (ret < 0)
		goto err_free;
	return 0;
err_free:
	free(fn->msix_table);
	free(fn->pba);
	free(fn->irq_fds);
	return ret;
}

static void notify_unmap(struct pci_fn *fn, const struct gm_region *r)
{
	if (fn->ops->dma_unmap)
		fn->ops->dma_unmap(fn->priv, r->gpa, r->size);
}

void pci_fn_fini(struct pci_fn *fn)
{
	unsigned int i;

	for (i = 0; i < fn->mem.nregions; i++)
		notify_unmap(fn, &fn->mem.regions[i]);
	gm_clear(&fn->mem);
	close_irq_fds(fn, 0, fn->ops->msix.vectors);
	fn->ops->destroy(fn->priv);
	free(fn->msix_table);
	free(fn->pba);
	free(fn->irq_fds);
	memset(fn, 0, sizeof(*fn));
}

void pci_fn_reset(struct pci_fn *fn)
{
	msix_reset(fn);
	cfg_reset(fn);
	fn->ops->reset(fn->priv);
}

/* ---- region and irq info ------------------------------------------------ */

/* Size of BAR i as a region: 0 for the upper half of a 64-bit BAR. */
static uint64_t bar_size(const struct pci_fn *fn, unsigned int i)
{
	return fn->ops->bars[i].size;
}

int pci_fn_region_info(const struct pci_fn *fn, uint32_t index,
		       struct vfio_user_region_info *ret, int *ret_fd)
{
	struct vfio_user_region_info r = { .argsz = sizeof(r), .index = index };
	int fd = -1;

	if (index >= VFIO_USER_PCI_NUM_REGIONS)
		return -EINVAL;
	if (index <= VFIO_USER_PCI_BAR5)
		r.size = bar_size(fn, index);
	else if (index == VFIO_USER_PCI_CONFIG)
		r.size = PCI_CFG_SIZE;
	if (r.size)
		r.flags = VFIO_USER_REGION_F_READ | VFIO_USER_REGION_F_WRITE;
	/* the whole BAR at offset 0 of the device's fd */
	if (r.size && index <= VFIO_USER_PCI_BAR5 && fn->ops->bar_shm &&
	    fn->ops->bar_shm(fn->priv, index, &fd) == 0 && fd >= 0)
		r.flags |= VFIO_USER_REGION_F_MMAP;
	*ret = r;
	*ret_fd = fd;
	return 0;
}

int pci_fn_irq_info(const struct pci_fn *fn, uint32_t index,
		    struct vfio_user_irq_info *ret)
{
	struct vfio_user_irq_info r = { .argsz = sizeof(r), .index = index };

	if (index >= PCI_FN_NUM_IRQ_INDEXES)
		return -EINVAL;
	if (index == VFIO_USER_PCI_MSIX) {
		r.flags = VFIO_USER_IRQ_INFO_F_EVENTFD;
		r.count = fn->ops->msix.vectors;
	}
	*ret = r;
	return 0;
}

/* ---- region accesses ---------------------------------------------------- */

static int cfg_rw(struct pci_fn *fn, uint64_t off, uint8_t *buf, uint32_t count,
		  bool write, struct reason *why)
{
	uint16_t old_cmd = cfg16(fn, PCI_COMMAND);
	uint16_t old_msix = cfg16(fn, MSIX_CTRL);
	uint32_t i;

	if (off >= PCI_CFG_SIZE || count > PCI_CFG_SIZE - off)
		return reason_fail(why, -EINVAL,
				   "access past the end of config space");
	if (!write) {
		memcpy(buf, fn->cfg + off, count);
		return 0;
	}
	for (i = 0; i < count; i++) {
		uint8_t m = fn->wmask[off + i];

		fn->cfg[off + i] =
			(uint8_t)((fn->cfg[off + i] & ~m) | (buf[i] & m));
	}
	bars_normalize(fn);
	if ((old_cmd ^ cfg16(fn, PCI_COMMAND)) & PCI_COMMAND_MASTER &&
	    fn->ops->bus_master)
		fn->ops->bus_master(fn->priv, pci_fn_bus_master(fn));
	if (old_cmd != cfg16(fn, PCI_COMMAND) ||
	    old_msix != cfg16(fn, MSIX_CTRL))
		flush_pending(fn);
	return 0;
}

/* Table entries: address and data writable, vector control bit 0 only. */
static void table_rw(struct pci_fn *fn, uint64_t off, uint8_t *buf,
		     uint32_t count, bool write)
{
	uint32_t i;

	if (!write) {
		memcpy(buf, fn->msix_table + off, count);
		return;
	}
	for (i = 0; i < count; i++) {
		uint64_t o = off + i;
		uint8_t m = 0xff;

		if (o % MSIX_ENTRY_SIZE >= PCI_MSIX_ENTRY_VECTOR_CTRL)
			m = o % MSIX_ENTRY_SIZE == PCI_MSIX_ENTRY_VECTOR_CTRL
				    ? PCI_MSIX_ENTRY_CTRL_MASKBIT
				    : 0;
		fn->msix_table[o] =
			(uint8_t)((fn->msix_table[o] & ~m) | (buf[i] & m));
	}
	flush_pending(fn);
}

enum bar_area { AREA_DEVICE, AREA_TABLE, AREA_PBA, AREA_STRADDLE };

/* Which part of the MSI-X BAR [off, off + count) is in; *ret_rel its offset. */
static enum bar_area msix_area(const struct pci_fn *fn, unsigned int bar,
			       uint64_t off, uint32_t count, uint64_t *ret_rel)
{
	const struct pci_fn_msix *m = &fn->ops->msix;
	const uint64_t starts[2] = { m->table_offset, m->pba_offset };
	const uint64_t lens[2] = { (uint64_t)m->vectors * MSIX_ENTRY_SIZE,
				   pba_bytes(m->vectors) };
	unsigned int i;

	if (bar != m->bar)
		return AREA_DEVICE;
	for (i = 0; i < 2; i++) {
		if (off >= starts[i] && off + count <= starts[i] + lens[i]) {
			*ret_rel = off - starts[i];
			return i == 0 ? AREA_TABLE : AREA_PBA;
		}
		if (off < starts[i] + lens[i] && starts[i] < off + count)
			return AREA_STRADDLE;
	}
	return AREA_DEVICE;
}

static int bar_rw(struct pci_fn *fn, unsigned int bar, uint64_t off,
		  uint8_t *buf, uint32_t count, bool write, struct reason *why)
{
	uint64_t size = bar_size(fn, bar), rel = 0, val = 0;
	int ret;

	if (!size)
		return reason_fail(why, -EINVAL, "BAR not implemented");
	if ((count != 1 && count != 2 && count != 4 && count != 8) ||
	    off % count)
		return reason_fail(
			why, -EINVAL,
			"BAR access not of 1, 2, 4 or 8 aligned bytes");
	if (off >= size || count > size - off)
		return reason_fail(why, -EINVAL,
				   "access past the end of the BAR");
	switch (msix_area(fn, bar, off, count, &rel)) {
	case AREA_TABLE:
		table_rw(fn, rel, buf, count, write);
		return 0;
	case AREA_PBA:
		/* read-only: writes are ignored, as the spec says */
		if (!write)
			memcpy(buf, (uint8_t *)fn->pba + rel, count);
		return 0;
	case AREA_STRADDLE:
		return reason_fail(why, -EINVAL,
				   "access straddles the MSI-X table or PBA");
	case AREA_DEVICE:
		break;
	}
	if (write) {
		memcpy(&val, buf, count);
		ret = fn->ops->bar_write(fn->priv, bar, off, count, val);
	} else {
		ret = fn->ops->bar_read(fn->priv, bar, off, count, &val);
		if (ret == 0)
			memcpy(buf, &val, count);
	}
	if (ret < 0)
		reason_set(why, "the device refused the access");
	return ret;
}

int pci_fn_region_rw(struct pci_fn *fn, uint32_t index, uint64_t offset,
		     uint8_t *buf, uint32_t count, bool write,
		     struct reason *why)
{
	if (count == 0)
		return reason_fail(why, -EINVAL, "zero-byte access");
	if (index == VFIO_USER_PCI_CONFIG)
		return cfg_rw(fn, offset, buf, count, write, why);
	if (index <= VFIO_USER_PCI_BAR5)
		return bar_rw(fn, index, offset, buf, count, write, why);
	return reason_fail(why, -EINVAL,
			   "no such region (ROM and VGA are not implemented)");
}

/* ---- interrupts ---------------------------------------------------------- */

/* Exactly one bit of mask set in v. */
static bool one_bit(uint32_t v, uint32_t mask)
{
	return is_pow2(v & mask);
}

/*
 * An address no process can map (the kernel's half on x86_64 and arm64):
 * a write from it fails in the kernel's address check, before the file's
 * write method runs.
 */
#define IRQ_PROBE_ADDR ((const void *)(uintptr_t)0xffff800000000000ull)

/*
 * An irq fd gets an 8-byte write from the worker's one thread, which must
 * never wait: only an eventfd is accepted.  A regular file ignores
 * O_NONBLOCK (on FUSE or NFS a write can stall the worker for good); a
 * pipe, socket or device is someone else's buffer.  /proc/self/fdinfo,
 * which names an fd's kind, is out of the sandbox's reach, so the check
 * uses what the allow-list has (docs/sandbox.md): fstat() must show the
 * kernel's anonymous inode (no file type bits: no file, directory, FIFO,
 * socket or device), and a write from IRQ_PROBE_ADDR must fail with
 * EFAULT, which only a file with a write method returns: an eventfd, not
 * the timerfd, signalfd, epoll or inotify fds that share its inode
 * (EINVAL).  Nothing is written.  Then it is made non-blocking, so a full
 * eventfd only makes a raise see EAGAIN.
 */
static const char *file_kind(mode_t m)
{
	if (S_ISREG(m))
		return "regular file";
	if (S_ISFIFO(m))
		return "pipe";
	if (S_ISSOCK(m))
		return "socket";
	if (S_ISCHR(m) || S_ISBLK(m))
		return "device";
	return "directory or link";
}

static int irq_fd_ok(int fd, struct reason *why)
{
	struct stat st;
	int fl;

	if (fstat(fd, &st) < 0 || (fl = fcntl(fd, F_GETFL)) < 0)
		return reason_fail(why, -EINVAL, "cannot inspect an irq fd: %s",
				   strerror(errno));
	if ((st.st_mode & S_IFMT) != 0)
		return reason_fail(why, -EINVAL,
				   "an irq fd is a %s, not an eventfd",
				   file_kind(st.st_mode));
	if ((fl & O_ACCMODE) == O_RDONLY || (fl & O_PATH))
		return reason_fail(why, -EINVAL,
				   "an irq fd is not open for writing");
	if (write(fd, IRQ_PROBE_ADDR, sizeof(uint64_t)) >= 0 || errno != EFAULT)
		return reason_fail(why, -EINVAL,
				   "an irq fd is not an eventfd (an anonymous "
				   "file without a write method)");
	if (!(fl & O_NONBLOCK) && fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
		return reason_fail(why, -EINVAL,
				   "cannot make an irq fd non-blocking: %s",
				   strerror(errno));
	return 0;
}

static int irqs_set_fds(struct pci_fn *fn, uint32_t start, uint32_t count,
			int *fds, unsigned int nfds, struct reason *why)
{
	unsigned int i;
	int ret;

	if (nfds == 0) {
		/* QEMU removes a run of vectors' eventfds so */
		close_irq_fds(fn, start, count);
		return 0;
	}
	if (nfds != count)
		return reason_fail(
			why, -EINVAL,
			"eventfd count differs from the vector count");
	for (i = 0; i < nfds; i++) {
		ret = irq_fd_ok(fds[i], why);
		if (ret < 0)
			return ret;
	}
	close_irq_fds(fn, start, count);
	for (i = 0; i < nfds; i++) {
		fn->irq_fds[start + i] = fds[i];
		fds[i] = -1;
	}
	return 0;
}

static int irqs_trigger(struct pci_fn *fn, const struct vfio_user_irq_set *s,
			const uint8_t *data, size_t data_len,
			struct reason *why)
{
	bool is_bool = s->flags & VFIO_USER_IRQ_SET_DATA_BOOL;
	uint32_t i;

	if (data_len != (is_bool ? s->count : 0))
		return reason_fail(why, -EINVAL,
				   "data size does not match the count");
	for (i = 0; is_bool && i < s->count; i++)
		if (data[i] > 1)
			return reason_fail(why, -EINVAL,
					   "a bool is neither 0 nor 1");
	for (i = 0; i < s->count; i++)
		if (!is_bool || data[i])
			pci_fn_raise(fn, s->start + i);
	return 0;
}

static int irqs_check(const struct pci_fn *fn,
		      const struct vfio_user_irq_set *s, unsigned int nfds,
		      struct reason *why)
{
	uint32_t avail =
		s->index == VFIO_USER_PCI_MSIX ? fn->ops->msix.vectors : 0;

	if (s->flags &
	    ~(VFIO_USER_IRQ_SET_DATA_MASK | VFIO_USER_IRQ_SET_ACTION_BITS))
		return reason_fail(why, -EINVAL, "unknown flags");
	if (!one_bit(s->flags, VFIO_USER_IRQ_SET_DATA_MASK) ||
	    !one_bit(s->flags, VFIO_USER_IRQ_SET_ACTION_BITS))
		return reason_fail(why, -EINVAL,
				   "not exactly one data type and one action");
	if (s->index >= PCI_FN_NUM_IRQ_INDEXES)
		return reason_fail(why, -EINVAL, "no such irq index");
	if (nfds && !(s->flags & VFIO_USER_IRQ_SET_DATA_EVENTFD))
		return reason_fail(why, -EINVAL, "fds without DATA_EVENTFD");
	/* DATA_NONE + TRIGGER with count 0: disable the index (vfio) */
	if (s->count == 0 && s->start == 0 &&
	    s->flags == (VFIO_USER_IRQ_SET_DATA_NONE |
			 VFIO_USER_IRQ_SET_ACTION_TRIGGER))
		return 0;
	if (s->count == 0 || s->start >= avail || s->count > avail - s->start)
		return reason_fail(why, -EINVAL,
				   "vectors out of range (only MSI-X has any)");
	if (!(s->flags & VFIO_USER_IRQ_SET_ACTION_TRIGGER))
		return reason_fail(
			why, -EINVAL,
			"MSI-X masks through its table, not SET_IRQS");
	return 0;
}

int pci_fn_set_irqs(struct pci_fn *fn, const struct vfio_user_irq_set *s,
		    const uint8_t *data, size_t data_len, int *fds,
		    unsigned int nfds, struct reason *why)
{
	unsigned int i;
	int ret;

	ret = irqs_check(fn, s, nfds, why);
	if (ret < 0)
		goto out;
	if (s->count == 0) {
		if (s->index == VFIO_USER_PCI_MSIX)
			close_irq_fds(fn, 0, fn->ops->msix.vectors);
		goto out;
	}
	if (s->flags & VFIO_USER_IRQ_SET_DATA_EVENTFD)
		ret = irqs_set_fds(fn, s->start, s->count, fds, nfds, why);
	else
		ret = irqs_trigger(fn, s, data, data_len, why);
	if (ret == 0)
		flush_pending(fn);
out:
	for (i = 0; i < nfds; i++)
		fds[i] = safe_close(fds[i]);
	return ret;
}

/* ---- DMA regions -----------------------------------------------------------
 */

/* DMA_MAP's access flags as mmap() protection (struct gm_desc.prot). */
static int dma_prot(uint32_t flags)
{
	return (flags & VFIO_USER_DMA_F_READ ? PROT_READ : 0) |
	       (flags & VFIO_USER_DMA_F_WRITE ? PROT_WRITE : 0);
}

int pci_fn_dma_map(struct pci_fn *fn, const struct vfio_user_dma_map *m, int fd,
		   struct reason *why)
{
	/* a read-only region (QEMU's ROM) is mapped and kept read-only */
	struct gm_desc r = {
		.gpa = m->addr,
		.size = m->size,
		.uva = m->addr, /* no VMM addresses in vfio-user */
		.mmap_offset = m->offset,
		.prot = dma_prot(m->flags),
	};
	int ret;

	if (m->flags & ~(VFIO_USER_DMA_F_READ | VFIO_USER_DMA_F_WRITE))
		return reason_fail(why, -EINVAL, "unknown DMA_MAP flags");
	if (fd < 0)
		return reason_fail(
			why, -EINVAL,
			"region without an fd: guest RAM must be shared "
			"memory (QEMU: -object memory-backend-memfd,"
			"share=on and -machine aux-ram-share=on)");
	if ((m->addr | m->size | m->offset) & (VFIO_USER_PGSIZE - 1))
		return reason_fail(why, -EINVAL,
				   "address, size or offset not 4 KiB aligned");
	ret = gm_add_region(&fn->mem, &r, fd, why);
	if (ret < 0)
		return ret;
	if (fn->ops->dma_map)
		fn->ops->dma_map(fn->priv, m->addr, m->size);
	return 0;
}

static void remove_region(struct pci_fn *fn, unsigned int i)
{
	const struct gm_region *g = &fn->mem.regions[i];
	struct gm_desc r = { .gpa = g->gpa, .size = g->size, .uva = g->uva };

	notify_unmap(fn, g);
	gm_remove_region(&fn->mem, &r);
}

int pci_fn_dma_unmap(struct pci_fn *fn, const struct vfio_user_dma_unmap *u,
		     struct reason *why)
{
	bool all = u->flags & VFIO_USER_DMA_UNMAP_F_ALL;
	uint64_t end;
	unsigned int i, removed = 0;

	if (u->flags & VFIO_USER_DMA_UNMAP_F_DIRTY_BITMAP)
		return reason_fail(why, -ENOTSUP,
				   "dirty page tracking is not supported");
	if (u->flags & ~VFIO_USER_DMA_UNMAP_F_ALL)
		return reason_fail(why, -EINVAL, "unknown DMA_UNMAP flags");
	if (all ? (u->addr || u->size) : u->size == 0)
		return reason_fail(why, -EINVAL, "%s",
				   all ? "UNMAP_ALL with an address or size"
				       : "zero size");
	if (all)
		end = UINT64_MAX;
	else if (__builtin_add_overflow(u->addr, u->size, &end))
		return reason_fail(why, -EINVAL, "address + size overflows");
	/* all or nothing: no region may be cut in two */
	for (i = 0; i < fn->mem.nregions; i++) {
		const struct gm_region *g = &fn->mem.regions[i];
		bool overlaps = g->gpa < end && u->addr < g->gpa + g->size;
		bool inside = g->gpa >= u->addr && g->gpa + g->size <= end;

		if (overlaps && !inside && !all)
			return reason_fail(why, -EINVAL,
					   "range cuts a mapped region");
	}
	for (i = fn->mem.nregions; i-- > 0;) {
		const struct gm_region *g = &fn->mem.regions[i];

		if (all || (g->gpa >= u->addr && g->gpa + g->size <= end)) {
			remove_region(fn, i);
			removed++;
		}
	}
	if (!removed && !all)
		return reason_fail(why, -ENOENT, "no region mapped there");
	return 0;
}
