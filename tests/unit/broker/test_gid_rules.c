// SPDX-License-Identifier: MIT
/*
 * The broker's GID_ADD admission (broker/gid_rules.c): another VM's
 * address, the per-VM limit, and one pending add per VM on both the new
 * address and the re-add branch; and the address watch's reading of an
 * RTM_DELADDR and its match against the granted addresses.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <cmocka.h>
#include <errno.h>
#include <linux/if_addr.h>
#include <linux/rtnetlink.h>

#include "broker/broker.h"
#include "broker/gid_rules.h"

#define N 8

static struct gid_entry table[N];

static struct gid_entry *put(unsigned int i, const char *vm, uint8_t last,
			     bool pending)
{
	struct gid_entry *e = &table[i];

	memset(e, 0, sizeof(*e));
	e->used = true;
	e->pending = pending;
	snprintf(e->vm, sizeof(e->vm), "%s", vm);
	e->family = AF_INET;
	e->addr[0] = 10;
	e->addr[3] = last;
	return e;
}

static const uint8_t *v4(uint8_t last)
{
	static uint8_t a[16];

	memset(a, 0, sizeof(a));
	a[0] = 10;
	a[3] = last;
	return a;
}

static enum gid_verdict admit(const char *vm, uint8_t last, unsigned int max,
			      const struct gid_entry **e)
{
	return gid_rules_admit(table, N, vm, AF_INET, v4(last), max, e);
}

static int setup(void **state)
{
	(void)state;
	memset(table, 0, sizeof(table));
	return 0;
}

static void test_new_and_owned(void **state)
{
	const struct gid_entry *e;
	struct gid_entry *a1;

	(void)state;
	assert_int_equal(admit("a", 1, 4, &e), GID_NEW);
	assert_null(e);
	a1 = put(0, "a", 1, false);
	assert_int_equal(admit("a", 1, 4, &e), GID_OWNED);
	assert_ptr_equal(e, a1);
	assert_int_equal(admit("b", 1, 4, &e), GID_OTHER_VM);
	assert_ptr_equal(e, a1);
	assert_int_equal(admit("b", 2, 4, &e), GID_NEW);
}

static void test_limit(void **state)
{
	const struct gid_entry *e;

	(void)state;
	put(0, "a", 1, false);
	put(1, "a", 2, false);
	assert_int_equal(admit("a", 3, 2, &e), GID_VM_FULL);
	/* re-adding one it owns is no new address */
	assert_int_equal(admit("a", 2, 2, &e), GID_OWNED);
	assert_int_equal(admit("b", 3, 2, &e), GID_NEW);
}

static void test_one_pending(void **state)
{
	const struct gid_entry *e;

	(void)state;
	put(0, "a", 1, true);
	put(1, "a", 2, false);
	put(2, "b", 3, false);
	assert_int_equal(admit("a", 1, 4, &e), GID_SAME_PENDING);
	assert_int_equal(admit("a", 5, 4, &e), GID_OTHER_PENDING);
	/* the re-add branch (issue 15 item 5): 10.0.0.2 is a's, 10.0.0.1
	 * is pending, so no second poll starts */
	assert_int_equal(admit("a", 2, 4, &e), GID_OTHER_PENDING);
	/* another VM is not held up by a's pending add */
	assert_int_equal(admit("b", 3, 4, &e), GID_OWNED);
	assert_int_equal(admit("b", 6, 4, &e), GID_NEW);
	/* nor may a take b's address while busy */
	assert_int_equal(admit("a", 3, 4, &e), GID_OTHER_VM);
}

static void test_families(void **state)
{
	const struct gid_entry *e;
	uint8_t a6[16] = { 10, 0, 0, 1 };

	(void)state;
	put(0, "a", 1, false);
	/* an IPv6 address whose first bytes are an owned IPv4 one */
	assert_int_equal(gid_rules_admit(table, N, "b", AF_INET6, a6, 4, &e),
			 GID_NEW);
	table[0].used = false;
	assert_int_equal(admit("b", 1, 4, &e), GID_NEW);
}

/* An RTM_NEWADDR/RTM_DELADDR as the kernel sends it: ifaddrmsg, then
 * IFA_ADDRESS and (IPv4) IFA_LOCAL. */
static size_t addr_msg(uint8_t *buf, uint16_t type, int family, int ifindex,
		       const uint8_t *addr)
{
	struct nlmsghdr *nlh = (struct nlmsghdr *)buf;
	struct ifaddrmsg *ifa = NLMSG_DATA(nlh);
	size_t alen = family == AF_INET ? 4 : 16;
	struct rtattr *rta;
	int i;

	memset(buf, 0, 256);
	nlh->nlmsg_type = type;
	nlh->nlmsg_len = NLMSG_LENGTH(sizeof(*ifa));
	ifa->ifa_family = (uint8_t)family;
	ifa->ifa_prefixlen = family == AF_INET ? 32 : 128;
	ifa->ifa_index = (uint32_t)ifindex;
	for (i = 0; i < (family == AF_INET ? 2 : 1); i++) {
		rta = (struct rtattr *)(buf + NLMSG_ALIGN(nlh->nlmsg_len));
		rta->rta_type = i ? IFA_LOCAL : IFA_ADDRESS;
		rta->rta_len = (uint16_t)RTA_LENGTH(alen);
		memcpy(RTA_DATA(rta), addr, alen);
		nlh->nlmsg_len =
			NLMSG_ALIGN(nlh->nlmsg_len) + RTA_ALIGN(rta->rta_len);
	}
	return nlh->nlmsg_len;
}

/* The address watch: which removal is someone else's. */
static void test_deladdr_of_a_granted_address(void **state)
{
	static const uint8_t v6[16] = { 0xfd, 0x99, [15] = 0x10 };
	uint8_t buf[256], addr[16];
	int ifindex = 0, family = 0;
	struct gid_entry *e;
	size_t len;

	(void)state;
	e = put(0, "a", 10, false);
	e->ifindex = 7;
	len = addr_msg(buf, RTM_DELADDR, AF_INET, 7, v4(10));
	assert_int_equal(gid_rules_deladdr(buf, len, &ifindex, &family, addr),
			 1);
	assert_int_equal(ifindex, 7);
	assert_int_equal(family, AF_INET);
	assert_memory_equal(addr, v4(10), 16);
	assert_ptr_equal(gid_rules_gone(table, N, 7, AF_INET, addr), e);
	/* another interface, another address, a pending add: not ours */
	assert_null(gid_rules_gone(table, N, 8, AF_INET, addr));
	assert_null(gid_rules_gone(table, N, 7, AF_INET, v4(11)));
	e->pending = true;
	assert_null(gid_rules_gone(table, N, 7, AF_INET, addr));
	e->pending = false;
	/* the broker's own removal frees the entry first */
	e->used = false;
	assert_null(gid_rules_gone(table, N, 7, AF_INET, addr));
	/* IPv6 (IFA_ADDRESS only) */
	e = put(1, "b", 0, false);
	e->family = AF_INET6;
	memcpy(e->addr, v6, 16);
	e->ifindex = 7;
	len = addr_msg(buf, RTM_DELADDR, AF_INET6, 7, v6);
	assert_int_equal(gid_rules_deladdr(buf, len, &ifindex, &family, addr),
			 1);
	assert_ptr_equal(gid_rules_gone(table, N, 7, AF_INET6, addr), e);
	/* an added address is no removal; short or lying lengths refused */
	len = addr_msg(buf, RTM_NEWADDR, AF_INET6, 7, v6);
	family = -1;
	assert_int_equal(gid_rules_deladdr(buf, len, &ifindex, &family, addr),
			 0);
	assert_int_equal(family, -1); /* untouched */
	len = addr_msg(buf, RTM_DELADDR, AF_INET6, 7, v6);
	assert_int_equal(gid_rules_deladdr(buf, 10, &ifindex, &family, addr),
			 -EINVAL);
	assert_int_equal(
		gid_rules_deladdr(buf, len - 1, &ifindex, &family, addr),
		-EINVAL);
	((struct nlmsghdr *)buf)->nlmsg_len = NLMSG_LENGTH(2);
	assert_int_equal(gid_rules_deladdr(buf, len, &ifindex, &family, addr),
			 -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_new_and_owned, setup),
		cmocka_unit_test_setup(test_limit, setup),
		cmocka_unit_test_setup(test_one_pending, setup),
		cmocka_unit_test_setup(test_families, setup),
		cmocka_unit_test_setup(test_deladdr_of_a_granted_address,
				       setup),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
