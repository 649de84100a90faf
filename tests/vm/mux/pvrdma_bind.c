// SPDX-License-Identifier: MIT
/*
 * A test instrument, not product code: a bare-metal multiboot program that
 * QEMU 7.2 boots with -kernel instead of a guest OS, to drive its pvrdma
 * device the way the guest driver vmw_pvrdma does when it binds a GID:
 * it finds the device on PCI bus 0, hands it a device shared region
 * (command and response slots, CQ and async rings), then executes
 * CREATE_BIND / DESTROY_BIND commands, which make QEMU send REG / UNREG to
 * its MAD multiplexer.  Lines go to the debugcon port (0xe9); at the end
 * it leaves QEMU through isa-debug-exit (exit status 1 + 2 * code).
 *
 * Its command line (multiboot, after the file name): tokens
 * "b:INDEX:GID" (GID as 32 hex digits) to bind, "u:INDEX" to unbind.  Built
 * freestanding for i386 (tests/vm/mux/meson.build); the layouts below are the
 * PVRDMA device ABI (Linux drivers/infiniband/hw/vmw_pvrdma/pvrdma_dev_api.h),
 * written out as offsets because only these few fields are used.
 */
#include <stdint.h>

#define MB_MAGIC 0x1BADB002u
#define MB_FLAGS 0u

__attribute__((section(".multiboot"), used,
	       aligned(4))) static const uint32_t mb_header[3] = {
	MB_MAGIC, MB_FLAGS, -(MB_MAGIC + MB_FLAGS)
};

#define PCI_VENDOR_VMWARE 0x15ad
#define PCI_DEVICE_PVRDMA 0x0820

#define REG_DSRLOW  0x04
#define REG_DSRHIGH 0x08
#define REG_REQUEST 0x10
#define REG_ERR	    0x14

#define CMD_CREATE_BIND	 15
#define CMD_DESTROY_BIND 16

/* Guest memory the device reads (identity-mapped, paging off). */
#define PAGE	   4096u
#define DSR	   0x200000u
#define CMD_SLOT   (DSR + 1 * PAGE)
#define RESP_SLOT  (DSR + 2 * PAGE)
#define RING_CQ	   (DSR + 3 * PAGE) /* pdir, table, state, one page */
#define RING_ASYNC (DSR + 7 * PAGE)

static inline void outb(uint16_t port, uint8_t v)
{
	__asm__ volatile("outb %0, %1" : : "a"(v), "Nd"(port));
}

static inline void outl(uint16_t port, uint32_t v)
{
	__asm__ volatile("outl %0, %1" : : "a"(v), "Nd"(port));
}

static inline uint32_t inl(uint16_t port)
{
	uint32_t v;

	__asm__ volatile("inl %1, %0" : "=a"(v) : "Nd"(port));
	return v;
}

static void put(const char *s)
{
	while (*s)
		outb(0xe9, (uint8_t)*s++);
}

static void put_hex(uint32_t v, int digits)
{
	static const char hex[] = "0123456789abcdef";
	char b[9];
	int i;

	for (i = digits - 1; i >= 0; i--, v >>= 4)
		b[i] = hex[v & 15];
	b[digits] = '\0';
	put(b);
}

static void quit(uint8_t code) __attribute__((noreturn));
static void quit(uint8_t code)
{
	outb(0xf4, code); /* isa-debug-exit */
	for (;;)
		__asm__ volatile("hlt");
}

static void set(uint32_t addr, uint32_t v)
{
	*(volatile uint32_t *)addr = v;
}

static uint32_t get(uint32_t addr)
{
	return *(volatile uint32_t *)addr;
}

static void zero(uint32_t addr, uint32_t len)
{
	uint32_t i;

	for (i = 0; i < len; i += 4)
		set(addr + i, 0);
}

static uint32_t cfg_read(uint32_t devfn, uint32_t off)
{
	outl(0xcf8, 0x80000000u | devfn << 8 | (off & 0xfc));
	return inl(0xcfc);
}

static void cfg_write(uint32_t devfn, uint32_t off, uint32_t v)
{
	outl(0xcf8, 0x80000000u | devfn << 8 | (off & 0xfc));
	outl(0xcfc, v);
}

/* Bus 0 device/function number (dev << 3 | fn) of the pvrdma, or -1. */
static int find_pvrdma(void)
{
	uint32_t d;

	for (d = 0; d < 256; d++) {
		uint32_t id = cfg_read(d, 0);

		if ((id & 0xffff) == PCI_VENDOR_VMWARE &&
		    id >> 16 == PCI_DEVICE_PVRDMA)
			return (int)d;
	}
	return -1;
}

/* A ring of one data page: directory -> table -> {state, page}. */
static void ring(uint32_t base, uint32_t info)
{
	zero(base, 4 * PAGE);
	set(base, base + PAGE);		       /* dir[0] = the table */
	set(base + PAGE, base + 2 * PAGE);     /* tbl[0] = ring state */
	set(base + PAGE + 8, base + 3 * PAGE); /* tbl[1] = the page */
	set(info, 2);			       /* num_pages, with state */
	set(info + 8, base);		       /* pdir_dma */
}

static uint32_t run(uint32_t regs, uint32_t cmd, uint32_t index,
		    const uint8_t *gid)
{
	uint32_t i;

	zero(CMD_SLOT, PAGE);
	zero(RESP_SLOT, PAGE);
	set(CMD_SLOT, 0x1234);	/* response key */
	set(CMD_SLOT + 8, cmd); /* hdr.cmd */
	if (cmd == CMD_CREATE_BIND) {
		set(CMD_SLOT + 16, 1024); /* mtu */
		set(CMD_SLOT + 24, index);
		for (i = 0; i < 16; i++)
			*(volatile uint8_t *)(CMD_SLOT + 28 + i) = gid[i];
		*(volatile uint8_t *)(CMD_SLOT + 44) = 1; /* RoCE v2 */
	} else {
		set(CMD_SLOT + 16, index);
	}
	set(regs + REG_REQUEST, 0);
	return get(regs + REG_ERR);
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

static const char *number(const char *s, uint32_t *v)
{
	*v = 0;
	while (*s >= '0' && *s <= '9')
		*v = *v * 10 + (uint32_t)(*s++ - '0');
	return s;
}

void start(uint32_t magic, const uint32_t *mbi);
void start(uint32_t magic, const uint32_t *mbi)
{
	const char *s;
	uint32_t regs, devfn;
	int d;

	if (magic != 0x2BADB002u || !(mbi[0] & 4)) {
		put("pvrdma-bind: not booted by multiboot with a command "
		    "line\n");
		quit(1);
	}
	d = find_pvrdma();
	if (d < 0) {
		put("pvrdma-bind: no pvrdma on bus 0\n");
		quit(1);
	}
	devfn = (uint32_t)d;
	regs = cfg_read(devfn, 0x14) & ~0xfu; /* BAR1: the registers */
	if (!regs) {
		put("pvrdma-bind: BAR1 not assigned\n");
		quit(1);
	}
	/* memory decoding, and bus mastering: the device DMAs the DSR */
	cfg_write(devfn, 0x04, cfg_read(devfn, 0x04) | 0x6);
	zero(DSR, PAGE);
	set(DSR + 16, CMD_SLOT);
	set(DSR + 24, RESP_SLOT);
	ring(RING_ASYNC, DSR + 32);
	ring(RING_CQ, DSR + 48);
	set(regs + REG_DSRLOW, DSR);
	set(regs + REG_DSRHIGH, 0);
	put("pvrdma-bind: device at 00:");
	put_hex(devfn >> 3, 2);
	put(".");
	put_hex(devfn & 7, 1);
	put(" registers at 0x");
	put_hex(regs, 8);
	put("\n");

	/* QEMU's multiboot command line starts with the kernel's file name */
	for (s = (const char *)mbi[4]; *s && *s != ' ';)
		s++;
	while (*s) {
		uint8_t gid[16] = { 0 };
		uint32_t index, err, cmd;
		int i;

		while (*s == ' ')
			s++;
		if (!*s)
			break;
		cmd = *s == 'b' ? CMD_CREATE_BIND : CMD_DESTROY_BIND;
		if ((*s != 'b' && *s != 'u') || s[1] != ':') {
			put("pvrdma-bind: bad token\n");
			quit(1);
		}
		s = number(s + 2, &index);
		if (cmd == CMD_CREATE_BIND) {
			if (*s++ != ':')
				quit(1);
			for (i = 0; i < 32; i++, s++) {
				if (hexval(*s) < 0) {
					put("pvrdma-bind: bad GID\n");
					quit(1);
				}
				gid[i / 2] =
					(uint8_t)(gid[i / 2] << 4 | hexval(*s));
			}
		}
		err = run(regs, cmd, index, gid);
		put(cmd == CMD_CREATE_BIND ? "CREATE_BIND" : "DESTROY_BIND");
		put(" index ");
		put_hex(index, 2);
		put(" err ");
		put_hex(err, 4);
		put(" resp ack ");
		put_hex(get(RESP_SLOT + 8), 8);
		put("\n");
	}
	put("pvrdma-bind: done\n");
	quit(0);
}

/* Multiboot enters in 32-bit protected mode, no stack: make one. */
__asm__(".pushsection .text\n"
	".globl _start\n"
	"_start:\n"
	"	mov $stack_top, %esp\n"
	"	push %ebx\n"
	"	push %eax\n"
	"	call start\n"
	"1:	hlt\n"
	"	jmp 1b\n"
	".popsection\n"
	".pushsection .bss\n"
	".align 16\n"
	"	.skip 16384\n"
	"stack_top:\n"
	".popsection\n");
