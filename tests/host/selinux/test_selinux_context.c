// SPDX-License-Identifier: MIT
/*
 * The worker's switch into its SELinux sandbox domain
 * (worker/sandbox/selinux.c), run as a plain process: the context
 * computation on real context strings, and sandbox_selinux_enter() against
 * libselinux calls replaced at link time (-Wl,--wrap) so that every path
 * (disabled, not our domain, setcon refused while enforcing or permissive)
 * runs on a machine without SELinux; one case uses the real library.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <selinux/selinux.h>

#include "common/log.h"
#include "worker/sandbox/selinux.h"

/* ---- libselinux, replaced ------------------------------------------ */

static struct {
	bool real; /* pass every call through */
	int enabled;
	const char *con; /* what getcon returns; NULL: it fails */
	int getcon_errno;
	int setcon_errno; /* 0: setcon succeeds */
	int enforce;
	int setcon_calls;
	char set_to[256];
} fake;

int __real_is_selinux_enabled(void);
int __real_getcon(char **con);
int __real_setcon(const char *con);
int __real_security_getenforce(void);
int __wrap_is_selinux_enabled(void);
int __wrap_getcon(char **con);
int __wrap_setcon(const char *con);
int __wrap_security_getenforce(void);

int __wrap_is_selinux_enabled(void)
{
	return fake.real ? __real_is_selinux_enabled() : fake.enabled;
}

int __wrap_getcon(char **con)
{
	if (fake.real)
		return __real_getcon(con);
	if (!fake.con) {
		errno = fake.getcon_errno;
		return -1;
	}
	*con = strdup(fake.con);
	return *con ? 0 : -1;
}

int __wrap_setcon(const char *con)
{
	if (fake.real)
		return __real_setcon(con);
	fake.setcon_calls++;
	snprintf(fake.set_to, sizeof(fake.set_to), "%s", con);
	if (fake.setcon_errno) {
		errno = fake.setcon_errno;
		return -1;
	}
	return 0;
}

int __wrap_security_getenforce(void)
{
	return fake.real ? __real_security_getenforce() : fake.enforce;
}

static int reset(void **state)
{
	memset(&fake, 0, sizeof(fake));
	fake.enabled = 1;
	fake.enforce = 1;
	return 0;
}

/* ---- the context computation ---------------------------------------- */

static void expect_switch(const char *cur, const char *want)
{
	struct reason why = { "" };
	char *out = NULL;

	assert_int_equal(sandbox_selinux_context(cur, &out, &why), 1);
	assert_non_null(out);
	assert_string_equal(out, want);
	free(out);
}

static void expect_other(const char *cur)
{
	struct reason why = { "" };
	char *out = (char *)1;

	assert_int_equal(sandbox_selinux_context(cur, &out, &why), 0);
	assert_null(out);
}

static void expect_bad(const char *cur)
{
	struct reason why = { "" };
	char *out = (char *)1;

	assert_int_equal(sandbox_selinux_context(cur, &out, &why), -EINVAL);
	assert_null(out);
	assert_true(why.msg[0] != '\0');
}

static void context_keeps_user_role_level(void **state)
{
	expect_switch("system_u:system_r:rdmagate_worker_t:s0",
		      "system_u:system_r:rdmagate_worker_sandbox_t:s0");
	/* an MCS range with its own colon and categories */
	expect_switch("system_u:system_r:rdmagate_worker_t:s0-s0:c0.c1023",
		      "system_u:system_r:rdmagate_worker_sandbox_t:"
		      "s0-s0:c0.c1023");
	expect_switch("system_u:system_r:rdmagate_worker_t:s0:c12,c34",
		      "system_u:system_r:rdmagate_worker_sandbox_t:s0:c12,c34");
	/* a policy without MLS: no level */
	expect_switch("system_u:system_r:rdmagate_worker_t",
		      "system_u:system_r:rdmagate_worker_sandbox_t");
	expect_switch("staff_u:staff_r:rdmagate_worker_t:s0",
		      "staff_u:staff_r:rdmagate_worker_sandbox_t:s0");
}

static void context_other_types_untouched(void **state)
{
	expect_other("unconfined_u:unconfined_r:unconfined_t:s0-s0:c0.c1023");
	expect_other("system_u:system_r:rdmagate_worker_sandbox_t:s0");
	expect_other("system_u:system_r:rdmagate_broker_t:s0");
	/* the type must match whole, not as a prefix or suffix */
	expect_other("system_u:system_r:rdmagate_worker_tx:s0");
	expect_other("system_u:system_r:xrdmagate_worker_t:s0");
}

static void context_malformed(void **state)
{
	char *out = (char *)1;

	expect_bad("");
	expect_bad("::rdmagate_worker_t:s0");
	expect_bad("system_u::rdmagate_worker_t:s0");
	expect_bad("system_u:system_r::s0");
	expect_bad("system_u:system_r:rdmagate_worker_t:");
	expect_bad("a:b");
	expect_bad("kernel");
	/* no why buffer: still refused */
	assert_int_equal(sandbox_selinux_context(NULL, &out, NULL), -EINVAL);
	assert_null(out);
}

/* ---- sandbox_selinux_enter() ------------------------------------------ */

static void enter_disabled_does_nothing(void **state)
{
	struct reason why = { "x" };

	fake.enabled = 0;
	fake.con = "system_u:system_r:rdmagate_worker_t:s0";
	assert_int_equal(sandbox_selinux_enter(&why), 0);
	assert_int_equal(fake.setcon_calls, 0);
	fake.enabled = -1; /* cannot tell: as disabled */
	assert_int_equal(sandbox_selinux_enter(&why), 0);
	assert_int_equal(fake.setcon_calls, 0);
}

static void enter_switches_worker(void **state)
{
	struct reason why;

	fake.con = "system_u:system_r:rdmagate_worker_t:s0:c5";
	assert_int_equal(sandbox_selinux_enter(&why), 0);
	assert_int_equal(fake.setcon_calls, 1);
	assert_string_equal(
		fake.set_to,
		"system_u:system_r:rdmagate_worker_sandbox_t:s0:c5");
	assert_string_equal(why.msg, "");
}

static void enter_other_domain_does_nothing(void **state)
{
	struct reason why;

	fake.con = "unconfined_u:unconfined_r:unconfined_t:s0-s0:c0.c1023";
	assert_int_equal(sandbox_selinux_enter(&why), 0);
	fake.con = "system_u:system_r:rdmagate_worker_sandbox_t:s0";
	assert_int_equal(sandbox_selinux_enter(&why), 0);
	assert_int_equal(fake.setcon_calls, 0);
}

static void enter_refused_enforcing_is_error(void **state)
{
	struct reason why;

	fake.con = "system_u:system_r:rdmagate_worker_t:s0";
	fake.setcon_errno = EACCES;
	assert_int_equal(sandbox_selinux_enter(&why), -EACCES);
	assert_int_equal(fake.setcon_calls, 1);
	assert_non_null(strstr(why.msg, "setcon"));
	assert_non_null(strstr(why.msg, "rdmagate_worker_sandbox_t"));
	/* enforcement unknown: refused as if enforcing */
	fake.enforce = -1;
	assert_int_equal(sandbox_selinux_enter(&why), -EACCES);
}

static void enter_refused_permissive_goes_on(void **state)
{
	struct reason why;

	fake.con = "system_u:system_r:rdmagate_worker_t:s0";
	fake.setcon_errno = EINVAL; /* e.g. the module is not loaded */
	fake.enforce = 0;
	assert_int_equal(sandbox_selinux_enter(&why), 0);
	assert_int_equal(fake.setcon_calls, 1);
}

static void enter_getcon_fails(void **state)
{
	struct reason why;

	fake.con = NULL;
	fake.getcon_errno = ENOENT;
	assert_int_equal(sandbox_selinux_enter(&why), -ENOENT);
	assert_non_null(strstr(why.msg, "getcon"));
	assert_int_equal(fake.setcon_calls, 0);
	fake.enforce = 0;
	assert_int_equal(sandbox_selinux_enter(&why), 0);
}

static void enter_bad_context_enforcing(void **state)
{
	struct reason why;

	fake.con = "system_u::rdmagate_worker_t:s0";
	assert_int_equal(sandbox_selinux_enter(&why), -EINVAL);
	assert_int_equal(fake.setcon_calls, 0);
}

/* The real library on this machine. */
static void enter_real_library(void **state)
{
	struct reason why;

	fake.real = true;
	if (__real_is_selinux_enabled() > 0) {
		char *con = NULL;

		/* only meaningful outside the worker's domain */
		assert_int_equal(__real_getcon(&con), 0);
		if (strstr(con, ":" SANDBOX_SELINUX_WORKER_TYPE ":")) {
			freecon(con);
			skip();
		}
		freecon(con);
	}
	assert_int_equal(sandbox_selinux_enter(&why), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(context_keeps_user_role_level, reset),
		cmocka_unit_test_setup(context_other_types_untouched, reset),
		cmocka_unit_test_setup(context_malformed, reset),
		cmocka_unit_test_setup(enter_disabled_does_nothing, reset),
		cmocka_unit_test_setup(enter_switches_worker, reset),
		cmocka_unit_test_setup(enter_other_domain_does_nothing, reset),
		cmocka_unit_test_setup(enter_refused_enforcing_is_error, reset),
		cmocka_unit_test_setup(enter_refused_permissive_goes_on, reset),
		cmocka_unit_test_setup(enter_getcon_fails, reset),
		cmocka_unit_test_setup(enter_bad_context_enforcing, reset),
		cmocka_unit_test_setup(enter_real_library, reset),
	};

	log_init("test-selinux", LOG_LVL_ERR);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
