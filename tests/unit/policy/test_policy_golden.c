// SPDX-License-Identifier: MIT
/*
 * Golden files: for every golden/NAME.conf, the canonical form must equal
 * NAME.canon and parsing that again must print it unchanged; for every
 * golden/bad-NAME.conf, the errors must equal bad-NAME.err exactly.
 * RDMAGATE_GOLDEN_UPDATE=1 rewrites the expected files instead (review
 * the diff before committing it).
 */
#include <errno.h>
#include <glob.h>
#include <libgen.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "policy/policy.h"

static bool update;

static char *slurp(const char *path)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = fopen(path, "re");

	if (!f)
		return NULL;
	if (getdelim(&buf, &len, '\0', f) < 0) {
		free(buf);
		buf = strdup("");
	}
	fclose(f);
	return buf;
}

static void spit(const char *path, const char *text)
{
	FILE *f = fopen(path, "we");

	assert_non_null(f);
	fputs(text, f);
	assert_int_equal(fclose(f), 0);
}

/* The expected file next to conf: same stem, extension ext. */
static void sibling(const char *conf, const char *ext, char *buf, size_t len)
{
	size_t n = strlen(conf) - strlen(".conf");

	snprintf(buf, len, "%.*s%s", (int)n, conf, ext);
}

static void compare(const char *expected_path, const char *actual)
{
	char *expected;

	if (update) {
		spit(expected_path, actual);
		return;
	}
	expected = slurp(expected_path);
	if (!expected)
		fail_msg("%s: missing (RDMAGATE_GOLDEN_UPDATE=1 writes it)",
			 expected_path);
	assert_string_equal(actual, expected);
	free(expected);
}

static void test_good(void **state)
{
	const char *conf = *state;
	char *text = slurp(conf), *canon, *again, path[4096], name[256];
	struct policy_error err;
	struct policy *p = NULL, *q = NULL;
	int r;

	assert_non_null(text);
	snprintf(name, sizeof(name), "%s", strrchr(conf, '/') + 1);
	r = policy_parse_string(text, name, &p, &err);
	if (r < 0)
		policy_error_print(&err, stderr);
	assert_int_equal(r, 0);
	canon = policy_canonical_string(p);
	assert_non_null(canon);
	sibling(conf, ".canon", path, sizeof(path));
	compare(path, canon);
	/* the canonical form is a fixed point */
	assert_int_equal(policy_parse_string(canon, "canon", &q, &err), 0);
	again = policy_canonical_string(q);
	assert_string_equal(again, canon);
	free(again);
	free(canon);
	free(text);
	policy_free(q);
	policy_free(p);
}

static void test_bad(void **state)
{
	const char *conf = *state;
	char *text = slurp(conf), *out = NULL, path[4096], name[256];
	struct policy_error err;
	struct policy *p = (struct policy *)0x1;
	size_t len;
	FILE *f;

	assert_non_null(text);
	snprintf(name, sizeof(name), "%s", strrchr(conf, '/') + 1);
	assert_int_equal(policy_parse_string(text, name, &p, &err), -EINVAL);
	assert_ptr_equal(p, (struct policy *)0x1);
	f = open_memstream(&out, &len);
	assert_non_null(f);
	policy_error_print(&err, f);
	assert_int_equal(fclose(f), 0);
	sibling(conf, ".err", path, sizeof(path));
	compare(path, out);
	free(out);
	free(text);
}

int main(void)
{
	const char *src = getenv("RDMAGATE_SRC");
	struct CMUnitTest *tests;
	char pattern[4096];
	glob_t g;
	size_t i;
	int r;

	if (!src) {
		fprintf(stderr, "RDMAGATE_SRC is not set (run under meson "
				"test)\n");
		return 1;
	}
	update = getenv("RDMAGATE_GOLDEN_UPDATE") != NULL;
	snprintf(pattern, sizeof(pattern), "%s/tests/unit/policy/golden/*.conf",
		 src);
	if (glob(pattern, 0, NULL, &g) != 0 || g.gl_pathc < 2) {
		fprintf(stderr, "%s: no golden files\n", pattern);
		return 1;
	}
	tests = calloc(g.gl_pathc, sizeof(*tests));
	if (!tests)
		return 1;
	for (i = 0; i < g.gl_pathc; i++) {
		const char *base = strrchr(g.gl_pathv[i], '/') + 1;

		tests[i].name = base;
		tests[i].test_func =
			strncmp(base, "bad-", 4) ? test_good : test_bad;
		tests[i].initial_state = g.gl_pathv[i];
	}
	r = _cmocka_run_group_tests("policy-golden", tests, g.gl_pathc, NULL,
				    NULL);
	free(tests);
	globfree(&g);
	return r;
}
