// SPDX-License-Identifier: MIT
/*
 * The worker's switch into its SELinux sandbox domain (see selinux.h); run
 * by rdmagate-worker once, between opening its device and loading its
 * seccomp filter.
 */
#include "worker/sandbox/selinux.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <selinux/context.h>
#include <selinux/selinux.h>

#include "common/cleanup.h"
#include "common/log.h"

static void set_why(char *why, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void set_why(char *why, size_t len, const char *fmt, ...)
{
	va_list ap;

	if (!why || !len)
		return;
	va_start(ap, fmt);
	vsnprintf(why, len, fmt, ap);
	va_end(ap);
}

static void context_freep(context_t *c)
{
	if (*c)
		context_free(*c);
}

int sandbox_selinux_context(const char *cur, char **ret, char *why, size_t len)
{
	_cleanup_(context_freep) context_t c = NULL;
	const char *type, *s;
	char *out;

	*ret = NULL;
	/*
	 * user:role:type[:level], every part non-empty.  context_new() takes
	 * empty parts, and reads a trailing ':' as "no level": refuse both.
	 */
	if (!cur || !*cur) {
		set_why(why, len, "empty security context");
		return -EINVAL;
	}
	if (cur[strlen(cur) - 1] == ':') {
		set_why(why, len, "'%s' ends with an empty level", cur);
		return -EINVAL;
	}
	c = context_new(cur);
	if (!c) {
		if (errno == ENOMEM)
			return -ENOMEM;
		set_why(why, len, "'%s' is not a security context", cur);
		return -EINVAL;
	}
	type = context_type_get(c);
	if (!context_user_get(c)[0] || !context_role_get(c)[0] || !type[0] ||
	    (context_range_get(c) && !context_range_get(c)[0])) {
		set_why(why, len, "'%s' has an empty user, role, type or level",
			cur);
		return -EINVAL;
	}
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
static int at_vm_level(const char *ctx, char **ret, char *why, size_t len)
{
	_cleanup_(context_freep) context_t c = context_new(ctx);
	const char *s;

	if (!c)
		return -ENOMEM;
	if (context_range_set(c, vm_level) != 0 || !(s = context_str(c))) {
		set_why(why, len, "cannot give %s the level '%s'", ctx,
			vm_level);
		return -EINVAL;
	}
	*ret = strdup(s);
	return *ret ? 0 : -ENOMEM;
}

/* A failure is fatal unless SELinux is known not to enforce. */
static int fail(int err, char *why, size_t len)
{
	if (security_getenforce() != 0)
		return -err;
	log_warnx("selinux: %s (not enforcing: going on without the sandbox "
		  "domain)",
		  why);
	return 0;
}

int sandbox_selinux_enter(char *why, size_t len)
{
	_cleanup_free_ char *next = NULL;
	char *cur = NULL;
	int r;

	if (why && len)
		why[0] = '\0';
	r = is_selinux_enabled();
	if (r <= 0)
		return 0;
	if (getcon(&cur) < 0) {
		r = errno ? errno : EIO;
		set_why(why, len, "getcon: %s", strerror(r));
		return fail(r, why, len);
	}
	r = sandbox_selinux_context(cur, &next, why, len);
	if (r == 0)
		log_debug("selinux: running as %s, not %s: no sandbox domain "
			  "to enter",
			  cur, SANDBOX_SELINUX_WORKER_TYPE);
	freecon(cur);
	if (r < 0)
		return fail(-r, why, len);
	if (r == 0)
		return 0;
	if (vm_level) {
		char *lv = NULL;

		r = at_vm_level(next, &lv, why, len);
		if (r < 0)
			return fail(-r, why, len);
		free(next);
		next = lv;
	}
	if (setcon(next) < 0) {
		r = errno ? errno : EPERM;
		set_why(why, len, "setcon %s: %s", next, strerror(r));
		return fail(r, why, len);
	}
	log_info("selinux: now %s", next);
	return 0;
}
