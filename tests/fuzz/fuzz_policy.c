// SPDX-License-Identifier: MIT
/*
 * libFuzzer target for the policy parser: any bytes must parse or fail
 * cleanly, and whatever parses must print a canonical form that parses
 * again to the same text (the golden tests' property, on random input).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "policy/policy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void round_trip(const struct policy *p)
{
	struct policy_error err;
	struct policy *q = NULL;
	char *canon, *again;
	size_t i;

	canon = policy_canonical_string(p);
	if (!canon)
		abort();
	if (policy_parse_string(canon, "canon", &q, &err) != 0)
		abort();
	again = policy_canonical_string(q);
	if (!again || strcmp(canon, again))
		abort();
	for (i = 0; i < policy_vm_count(p); i++) {
		const struct policy_vm *vm = policy_vm_at(p, i);

		if (policy_lookup_vm(q, vm->name) == NULL)
			abort();
		if (vm->n_addrs &&
		    !policy_vm_may_claim(q, vm->name, vm->addrs[0].family,
					 vm->addrs[0].addr))
			abort();
	}
	free(again);
	free(canon);
	policy_free(q);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct policy_error err;
	struct policy *p = NULL;

	if (policy_parse_buffer((const char *)data, size, "fuzz", &p, &err) ==
	    0) {
		round_trip(p);
		policy_free(p);
	}
	return 0;
}
