// SPDX-License-Identifier: MIT
/*
 * rdmagate-policy-check: parses a policy file as the broker would and
 * prints every error with its line, or the canonical form with --canonical.
 * `rdmagatectl policy check FILE` calls the same library function.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy/policy.h"

static const char usage[] =
	"usage: rdmagate-policy-check [--canonical] [--strict] FILE\n"
	"Checks an rdmagate policy file (docs/policy.md); FILE - is stdin.\n"
	"  -c, --canonical  print the canonical form on success\n"
	"  -s, --strict     refuse a file not owned by root or writable by\n"
	"                   group or others, as the broker does\n"
	"  -q, --quiet      print nothing on success\n"
	"Exit status: 0 valid, 1 invalid or unreadable, 2 usage.\n";

static const struct option longopts[] = {
	{ "canonical", no_argument, NULL, 'c' },
	{ "strict", no_argument, NULL, 's' },
	{ "quiet", no_argument, NULL, 'q' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

struct opts {
	bool canonical, quiet;
	unsigned flags;
	const char *file;
};

static int parse_args(int argc, char **argv, struct opts *o)
{
	int c;

	while ((c = getopt_long(argc, argv, "csqh", longopts, NULL)) != -1) {
		switch (c) {
		case 'c':
			o->canonical = true;
			break;
		case 's':
			o->flags |= POLICY_LOAD_STRICT;
			break;
		case 'q':
			o->quiet = true;
			break;
		case 'h':
			fputs(usage, stdout);
			exit(0);
		default:
			return -1;
		}
	}
	if (optind + 1 != argc)
		return -1;
	o->file = argv[optind];
	return 0;
}

int main(int argc, char **argv)
{
	struct policy_error err;
	struct opts o = { 0 };
	struct policy *p;
	int r;

	if (parse_args(argc, argv, &o) < 0) {
		fputs(usage, stderr);
		return 2;
	}
	if (!strcmp(o.file, "-"))
		r = policy_load_fd(0, "<stdin>", o.flags, &p, &err);
	else
		r = policy_load(o.file, o.flags, &p, &err);
	if (r < 0) {
		policy_error_print(&err, stderr);
		return 1;
	}
	if (o.canonical)
		r = policy_print_canonical(p, stdout);
	else if (!o.quiet)
		printf("%s: valid, %zu VM%s\n", o.file, policy_vm_count(p),
		       policy_vm_count(p) == 1 ? "" : "s");
	policy_free(p);
	if (fflush(stdout) != 0 || r < 0) {
		fprintf(stderr, "rdmagate-policy-check: cannot write: %s\n",
			strerror(errno));
		return 1;
	}
	return 0;
}
