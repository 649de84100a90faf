// SPDX-License-Identifier: MIT
/*
 * The worker's switch into its SELinux sandbox domain (see selinux.h); run
 * by rdmagate-worker once, between opening its device and loading its
 * seccomp filter.
 */
#include "worker/sandbox/selinux.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <selinux/context.h>
#include <selinux/selinux.h>

#include "common/cleanup.h"
#include "common/log.h"

static void context_freep(context_t *c)
{
	if (*c)
		context_free(*c);
}

int sandbox_selinux_context(const char *cur, char **ret, struct reason *why)
{
	_cleanup_(context_freep) context_t c = NULL;
	const char *type, *s;
	char *out;

	*ret = NULL;
	/*
	 * user:role:type[:level], every part non-empty.  context_new() takes
	 * empty parts, and reads a trailing ':' as "no level": refuse both.
	 */
	if (!cur || !*cur)
		return reason_fail(why, -EINVAL, "empty security context");
	if (cur[strlen(cur) - 1] == ':')
		return reason_fail(why, -EINVAL,
				   "'%s' ends with an empty level", cur);
	c = context_new(cur);
	if (!c) {
		if (errno == ENOMEM)
			return -ENOMEM;
		return reason_fail(why, -EINVAL,
				   "'%s' is not a security context", cur);
	}
	type = context_type_get(c);
	if (!context_user_get(c)[0] || !context_role_get(c)[0] || !type[0] ||
	    (context_range_get(c) && !context_range_get(c)[0]))
		return reason_fail(
			why, -EINVAL,
			"'%s' has an empty user, role, type or level", cur);
	if (strcmp(type, SANDBOX_SELINUX_WORKER_TYPE) != 0)
		return 0;
	if (context_type_set(c, SANDBOX_SELINUX_SANDBOX_TYPE) != 0)
		return -ENOMEM;
	s = context_str(c);
	if (!s)
		return -ENOMEM;
	out = strdup(s);
	if (!out)
		return -ENOMEM;
	*ret = out;
	return 1;
}

/* The VM's MCS level, from the broker (--selinux-level), or NULL. */
static const char *vm_level;

void sandbox_selinux_set_level(const char *level)
{
	vm_level = level;
}

/* ctx with its level replaced by vm_level, into *ret (freed by caller). */
static int at_vm_level(const char *ctx, char **ret, struct reason *why)
{
	_cleanup_(context_freep) context_t c = context_new(ctx);
	const char *s;

	if (!c)
		return -ENOMEM;
	if (context_range_set(c, vm_level) != 0 || !(s = context_str(c))) {
		return reason_fail(why, -EINVAL,
				   "cannot give %s the level '%s'", ctx,
				   vm_level);
	}
	*ret = strdup(s);
	return *ret ? 0 : -ENOMEM;
}

/* A failure is fatal unless SELinux is known not to enforce. */
static int fail(int err, const struct reason *why)
{
	if (security_getenforce() != 0)
		return -err;
	log_warnx("selinux: %s (not enforcing: going on without the sandbox "
		  "domain)",
		  why->msg);
	return 0;
}

int sandbox_selinux_enter(struct reason *why)
{
	_cleanup_free_ char *next = NULL;
	struct reason local;
	char *cur = NULL;
	int r;

	if (!why)
		why = &local; /* fail() logs it */
	why->msg[0] = '\0';
	r = is_selinux_enabled();
	if (r <= 0)
		return 0;
	if (getcon(&cur) < 0) {
		r = errno ? errno : EIO;
		reason_set(why, "getcon: %s", strerror(r));
		return fail(r, why);
	}
	r = sandbox_selinux_context(cur, &next, why);
	if (r == 0)
		log_debug("selinux: running as %s, not %s: no sandbox domain "
			  "to enter",
			  cur, SANDBOX_SELINUX_WORKER_TYPE);
	freecon(cur);
	if (r < 0)
		return fail(-r, why);
	if (r == 0)
		return 0;
	if (vm_level) {
		char *lv = NULL;

		r = at_vm_level(next, &lv, why);
		if (r < 0)
			return fail(-r, why);
		free(next);
		next = lv;
	}
	if (setcon(next) < 0) {
		r = errno ? errno : EPERM;
		reason_set(why, "setcon %s: %s", next, strerror(r));
		return fail(r, why);
	}
	log_info("selinux: now %s", next);
	return 0;
}
