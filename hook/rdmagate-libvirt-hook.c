// SPDX-License-Identifier: MIT
/*
 * rdmagate-libvirt-hook: libvirtd runs it (as root) for every QEMU domain
 * event, as /etc/libvirt/hooks/qemu.d/rdmagate, with the arguments
 * OBJECT OPERATION SUB-OPERATION EXTRA and the domain XML on stdin.  For a
 * domain that carries rdmagate's metadata (hook/domain_meta.h) it asks the
 * broker to spawn the VM's worker on "prepare begin" and to stop it on
 * "release end", and refuses "migrate begin" and "restore begin" (the
 * worker's device state cannot move with the VM, and QEMU 11.1 migrates a
 * vfio-user-pci device without any: nothing else would stop it);
 * everything else exits 0 at once.  docs/libvirt-hook.md.
 *
 * libvirtd waits for its hooks and shows their stderr when one fails a VM
 * start: every socket operation has a timeout, and a failure is one line on
 * stderr and exit status 1.  Nothing is written to stdout (libvirt feeds a
 * hook's stdout to the next hook for some operations).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <libxml/parser.h>

#include "common/cleanup.h"
#include "common/ctl_client.h"
#include "common/log.h"
#include "hook/domain_meta.h"
#include "hook/opts.h"

/* what a STOP logged, and a SPAWN's reply beside what its STOP logged */
#define STOP_INFO_LEN 512
#define INFO_LEN      (2 * STOP_INFO_LEN)

/* ACT_SPAWN_SVIRT: the spawn of a domain with a dynamic SELinux label,
 * whose level libvirt has picked by "start begin" (not at "prepare begin") */
enum action { ACT_NONE, ACT_SPAWN, ACT_SPAWN_SVIRT, ACT_STOP, ACT_REFUSE };

/* libvirt's OPERATION SUB-OPERATION pairs that concern rdmagate; any other
 * is ACT_NONE */
static const struct {
	const char *op, *subop;
	enum action act;
} actions[] = {
	{ .op = "prepare", .subop = "begin", .act = ACT_SPAWN },
	/* after libvirt's security labels, before QEMU is executed */
	{ .op = "start", .subop = "begin", .act = ACT_SPAWN_SVIRT },
	{ .op = "release", .subop = "end", .act = ACT_STOP },
	/* on the destination, before its QEMU starts: the source runs on */
	{ .op = "migrate", .subop = "begin", .act = ACT_REFUSE },
	/* a saved state (virsh restore, a managed save at start) */
	{ .op = "restore", .subop = "begin", .act = ACT_REFUSE },
};

static enum action action_of(const char *op, const char *subop)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(actions); i++)
		if (!strcmp(op, actions[i].op) &&
		    !strcmp(subop, actions[i].subop))
			return actions[i].act;
	return ACT_NONE;
}

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: rdmagate-libvirt-hook [--control PATH] [--timeout SEC] "
		"DOMAIN OPERATION SUB-OPERATION EXTRA < domain.xml\n"
		"  libvirtd runs it as /etc/libvirt/hooks/qemu.d/rdmagate.\n"
		"  prepare begin: spawn the domain's rdmagate worker;\n"
		"  start begin: that, for a domain with a dynamic SELinux "
		"label;\n"
		"  release end: stop it; migrate begin, restore begin: "
		"refused;\n"
		"  anything else: nothing.\n"
		"  --control PATH   the broker's socket (else "
		"$RDMAGATE_CONTROL,\n"
		"                   else " RDMAGATE_CTL_DEFAULT_SOCKET ")\n"
		"  --timeout SEC    for each exchange with the broker "
		"(1..%d, default %d)\n",
		HOOK_TIMEOUT_MAX, HOOK_TIMEOUT_DEFAULT);
}

/* The domain XML from stdin: at most DOMAIN_XML_MAX bytes. */
static int read_stdin(char **ret, size_t *ret_len)
{
	_cleanup_free_ char *buf = NULL;
	size_t len = 0, cap = 0;
	ssize_t n;

	for (;;) {
		if (len == cap) {
			size_t ncap = cap ? cap * 2 : 65536;
			char *nb;

			/* one byte past the limit tells "too large" */
			if (ncap > DOMAIN_XML_MAX + 1)
				ncap = DOMAIN_XML_MAX + 1;
			if (ncap == cap)
				break;
			nb = realloc(buf, ncap);
			if (!nb)
				return -ENOMEM;
			buf = nb;
			cap = ncap;
		}
		n = read(STDIN_FILENO, buf + len, cap - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			break;
		len += (size_t)n;
	}
	*ret = TAKE_PTR(buf);
	*ret_len = len;
	return 0;
}

/*
 * STOP.  info gets what to log once everything worked: on failure the one
 * line on stderr is the error.
 */
static int stop_worker(struct ctl_conn *c, const char *vm, char *info,
		       struct reason *why)
{
	struct bp_msg m;
	int ret;

	bp_init(&m, BP_STOP);
	bp_set_str(m.u.stop.vm, sizeof(m.u.stop.vm), vm);
	ret = ctl_request(c, &m, why);
	if (ret < 0)
		return ret;
	if (m.u.status.status == ESRCH) {
		snprintf(info, STOP_INFO_LEN,
			 "vm %s has no worker: nothing to stop", vm);
		return 0;
	}
	ret = ctl_status(&m.u.status, why);
	if (ret == 0)
		snprintf(info, STOP_INFO_LEN, "%s", m.u.status.text);
	return ret;
}

/*
 * SPAWN.  A worker the broker already has for this VM is stale: libvirt
 * runs one instance of a domain, and this one has not started yet (a
 * "release end" was lost, e.g. libvirtd was killed).  It is stopped and
 * the spawn asked once more.
 */
static int spawn_worker(struct ctl_conn *c, const struct bp_spawn *s,
			char *info, struct reason *why)
{
	char stale[STOP_INFO_LEN] = "";
	struct bp_msg m;
	int ret;

	for (;;) {
		bp_init(&m, BP_SPAWN);
		m.u.spawn = *s;
		ret = ctl_request(c, &m, why);
		if (ret < 0)
			return ret;
		if (m.u.spawn_reply.st.status != EEXIST || stale[0])
			break;
		ret = stop_worker(c, s->vm, stale, why);
		if (ret < 0)
			return ret;
	}
	ret = ctl_status(&m.u.spawn_reply.st, why);
	if (ret == 0)
		snprintf(info, INFO_LEN, "%s%s%s", m.u.spawn_reply.st.text,
			 stale[0] ? "; it replaces a stale worker: " : "",
			 stale);
	return ret;
}

/* The row of hook_opt_nums that argument arg names (--NAME), or NULL. */
static const struct opt_num *num_opt(const char *arg)
{
	size_t r;

	if (strncmp(arg, "--", 2))
		return NULL;
	for (r = 0; r < HO_COUNT; r++)
		if (!strcmp(arg + 2, hook_opt_nums[r].name))
			return &hook_opt_nums[r];
	return NULL;
}

int main(int argc, char **argv)
{
	const char *control = getenv("RDMAGATE_CONTROL");
	struct hook_opts ho = { .timeout_s = HOOK_TIMEOUT_DEFAULT };
	const struct opt_num *row;
	const char *object, *op, *subop;
	_cleanup_free_ char *xml = NULL;
	struct reason why;
	char info[INFO_LEN];
	struct domain_meta meta;
	struct ctl_conn conn;
	enum action act;
	size_t len = 0;
	int i, ret;

	log_init("rdmagate-libvirt-hook", LOG_LVL_INFO);
	if (!control || !control[0])
		control = RDMAGATE_CTL_DEFAULT_SOCKET;
	/* libvirt's four arguments are always the last four: options first */
	for (i = 1; i < argc - 4; i++) {
		if (!strcmp(argv[i], "--control") && i + 1 < argc - 4)
			control = argv[++i];
		else if ((row = num_opt(argv[i])) && i + 1 < argc - 4) {
			if (opt_num_parse(row, argv[++i], &ho, &why) < 0)
				fatalx("%s", why.msg);
		} else if (!strcmp(argv[i], "--help") ||
			   !strcmp(argv[i], "-h")) {
			usage(stdout);
			return 0;
		} else {
			usage(stderr);
			return 2;
		}
	}
	if (argc == 2 &&
	    (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		usage(stdout);
		return 0;
	}
	if (argc < 5) {
		usage(stderr);
		return 2;
	}
	object = argv[argc - 4];
	op = argv[argc - 3];
	subop = argv[argc - 2];
	act = action_of(op, subop);
	if (act == ACT_NONE)
		return 0;

	ret = read_stdin(&xml, &len);
	if (ret < 0)
		fatalx("%s %s %s: reading the domain XML from stdin: %s",
		       object, op, subop, strerror(-ret));
	LIBXML_TEST_VERSION;
	ret = domain_meta_parse(xml, len, &meta, &why);
	if (ret < 0)
		fatalx("%s %s %s: %s", object, op, subop, why.msg);
	if (!meta.present)
		return 0;
	if (strcmp(object, meta.s.vm))
		fatalx("%s %s %s: the domain XML names domain %s", object, op,
		       subop, meta.s.vm);
	if (act == ACT_REFUSE)
		fatalx("vm %s: %s refused: an rdmagate VM cannot migrate or "
		       "be restored from a saved state (its worker's queue "
		       "pairs, memory regions and GIDs do not move with it)",
		       meta.s.vm, op);

	/* a dynamic sVirt label is known only at start begin: the worker
	 * must run at its level */
	if (act == ACT_SPAWN && meta.svirt_dynamic)
		return 0;
	if (act == ACT_SPAWN_SVIRT && !meta.svirt_dynamic)
		return 0;
	if (act == ACT_SPAWN_SVIRT && !meta.s.selinux_level[0])
		fatalx("vm %s: %s %s: the domain's dynamic SELinux label has "
		       "no <label> yet: the worker cannot run at its QEMU's "
		       "categories",
		       meta.s.vm, op, subop);
	ret = ctl_connect(&conn, control, ho.timeout_s, &why);
	if (ret == 0) {
		if (act != ACT_STOP)
			ret = spawn_worker(&conn, &meta.s, info, &why);
		else
			ret = stop_worker(&conn, meta.s.vm, info, &why);
		ctl_close(&conn);
	}
	if (ret < 0)
		fatalx("vm %s: %s its rdmagate worker: %s", meta.s.vm,
		       act != ACT_STOP ? "cannot start" : "cannot stop",
		       why.msg);
	log_info("vm %s: %s", meta.s.vm, info);
	return 0;
}
