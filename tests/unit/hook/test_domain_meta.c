// SPDX-License-Identifier: MIT
/*
 * The libvirt hook's parser (hook/domain_meta.c): real domain documents
 * (tests/host/hook/domains/), other namespaces ignored, and every bad
 * document refused with what is wrong and on which line, leaving the
 * output untouched: missing or unknown attributes, bad ports, bad or too
 * many addresses, a DOCTYPE (entities, external DTDs), a document over the
 * size limit, bad names and paths.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <cmocka.h>

#include "common/cleanup.h"
#include "config.h"
#include "hook/domain_meta.h"

#define NS "xmlns:rdmagate=\"" RDMAGATE_XMLNS "\""

static char doc_buf[1 << 16];

/* A domain named name whose <metadata> holds md (line 3). */
static const char *domain(const char *name, const char *md)
{
	snprintf(doc_buf, sizeof(doc_buf),
		 "<domain type='kvm'>\n"
		 "  <name>%s</name>\n"
		 "  <metadata>%s</metadata>\n"
		 "  <devices><emulator>/usr/bin/qemu-system-x86_64</emulator>"
		 "</devices>\n"
		 "</domain>\n",
		 name, md);
	return doc_buf;
}

/* Our element with attrs and body, in a domain named vm-a. */
static const char *device(const char *attrs, const char *body)
{
	static char md[1 << 15];

	snprintf(md, sizeof(md),
		 "<rdmagate:device " NS " %s>%s</rdmagate:device>", attrs,
		 body);
	return domain("vm-a", md);
}

static int parse(const char *xml, struct domain_meta *m, struct reason *why)
{
	return domain_meta_parse(xml, strlen(xml), m, why);
}

static struct domain_meta ok_parse(const char *xml)
{
	struct reason why = { "" };
	struct domain_meta m;
	int ret = parse(xml, &m, &why);

	if (ret)
		print_error("unexpected error: %s\n", why.msg);
	assert_int_equal(ret, 0);
	return m;
}

/*
 * A refusal: errno, a substring of the message, the message is one line,
 * and the output is untouched.
 */
static void bad(const char *xml, int want, const char *msg)
{
	struct reason why = { "" };
	struct domain_meta m, sentinel;
	int ret;

	memset(&m, 0xa5, sizeof(m));
	sentinel = m;
	ret = parse(xml, &m, &why);
	if (ret != want || !strstr(why.msg, msg))
		print_error("got %d '%s', want %d '%s'\n", ret, why.msg, want,
			    msg);
	assert_int_equal(ret, want);
	assert_non_null(strstr(why.msg, msg));
	assert_null(strchr(why.msg, '\n'));
	assert_memory_equal(&m, &sentinel, sizeof(m));
}

static char *read_src(const char *rel)
{
	const char *src = getenv("RDMAGATE_SRC");
	char path[4096];
	char *buf;
	FILE *f;
	long n;

	assert_non_null(src);
	snprintf(path, sizeof(path), "%s/%s", src, rel);
	f = fopen(path, "r");
	if (!f)
		print_error("%s: %s\n", path, strerror(errno));
	assert_non_null(f);
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	buf = malloc((size_t)n + 1);
	assert_non_null(buf);
	assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
	buf[n] = '\0';
	fclose(f);
	return buf;
}

static void check_addr(const struct bp_addr *a, int family, const char *text)
{
	uint8_t want[16] = { 0 };

	assert_int_equal(inet_pton(family, text, want), 1);
	assert_int_equal(a->family, (uint32_t)family);
	assert_memory_equal(a->addr, want, sizeof(want));
}

/* A vm-a domain with our device and seclabels sl after <devices> (line 5). */
static const char *with_seclabel(const char *sl)
{
	static char buf[1 << 15];

	snprintf(buf, sizeof(buf),
		 "<domain type='kvm'>\n"
		 "  <name>vm-a</name>\n"
		 "  <metadata><rdmagate:device " NS " socket='/run/a.sock'/>"
		 "</metadata>\n"
		 "  <devices><disk><seclabel model='selinux' relabel='no'/>"
		 "</disk></devices>\n"
		 "%s\n"
		 "</domain>\n",
		 sl);
	return buf;
}

/* ---- good documents -------------------------------------------------- */

static void test_real_domain(void **state)
{
	_cleanup_free_ char *xml = read_src("tests/host/hook/domains/vm-a.xml");
	struct domain_meta m = ok_parse(xml);

	assert_true(m.present);
	assert_string_equal(m.s.vm, "vm-a");
	assert_string_equal(m.s.device, "rxe0");
	assert_int_equal(m.s.port, 1);
	assert_string_equal(m.s.socket, "/run/rdmagate/vm/vm-a.sock");
	assert_int_equal(m.s.flags, 0);
	assert_string_equal(m.s.test_syscall, "");
	assert_int_equal(m.s.n_addrs, 2);
	check_addr(&m.s.addrs[0], AF_INET, "10.99.0.10");
	check_addr(&m.s.addrs[1], AF_INET6, "fd99::7");
	for (int i = 2; i < BP_SPAWN_ADDRS_MAX; i++) {
		static const struct bp_addr zero;

		assert_memory_equal(&m.s.addrs[i], &zero, sizeof(zero));
	}
	assert_true(m.line > 10);
}

static void test_real_domain_defaults(void **state)
{
	_cleanup_free_ char *xml =
		read_src("tests/host/hook/domains/vm-b-bad-address.xml");
	struct domain_meta m = ok_parse(xml);

	/* the policy's device and port: the request leaves them empty */
	assert_true(m.present);
	assert_string_equal(m.s.vm, "vm-b");
	assert_string_equal(m.s.device, "");
	assert_int_equal(m.s.port, 0);
	assert_string_equal(m.s.socket, "/run/rdmagate/vm/vm-b.sock");
	assert_int_equal(m.s.n_addrs, 2);
	check_addr(&m.s.addrs[0], AF_INET, "10.99.0.11");
	check_addr(&m.s.addrs[1], AF_INET, "10.99.0.10");
}

/*
 * The PVRDMA domain of docs/libvirt-hook.md: the device is qemu:commandline
 * (libvirt models no vfio-user device) and a vmxnet3 <interface>; the
 * metadata names the frontend and the socket vfio-user-pci connects to.
 */
static void test_real_pvrdma_domain(void **state)
{
	_cleanup_free_ char *xml =
		read_src("tests/host/hook/domains/vm-p-pvrdma.xml");
	struct domain_meta m = ok_parse(xml);

	assert_true(m.present);
	assert_string_equal(m.s.vm, "vm-p");
	assert_int_equal(m.s.frontend, BP_FRONTEND_PVRDMA);
	assert_string_equal(m.s.device, "rxe0");
	assert_int_equal(m.s.port, 1);
	assert_string_equal(m.s.socket, "/run/rdmagate/vm/vm-p.sock");
	/* the same path as the vfio-user-pci device's, which QEMU dials */
	assert_non_null(strstr(xml, "\"path\":\"/run/rdmagate/vm/vm-p.sock\""));
	assert_int_equal(m.s.flags, 0);
	assert_int_equal(m.s.n_addrs, 1);
	check_addr(&m.s.addrs[0], AF_INET, "10.99.2.2");
	assert_true(m.line > 10);
}

static void test_real_domain_without_metadata(void **state)
{
	_cleanup_free_ char *xml =
		read_src("tests/host/hook/domains/plain.xml");
	struct domain_meta m = ok_parse(xml);

	assert_false(m.present);
}

static void test_minimal(void **state)
{
	struct domain_meta m = ok_parse(device("socket='/run/x/a.sock'", ""));

	assert_true(m.present);
	assert_int_equal(m.line, 3);
	assert_string_equal(m.s.vm, "vm-a");
	assert_string_equal(m.s.device, "");
	assert_int_equal(m.s.port, 0);
	assert_int_equal(m.s.n_addrs, 0);
}

static void test_no_metadata(void **state)
{
	struct domain_meta m;

	m = ok_parse("<domain type='kvm'><name>x</name></domain>");
	assert_false(m.present);
	m = ok_parse(domain("vm-a", ""));
	assert_false(m.present);
	/* a name the broker would refuse does not matter then */
	m = ok_parse(domain("my vm (test)", ""));
	assert_false(m.present);
}

static void test_foreign_namespaces_ignored(void **state)
{
	struct domain_meta m;

	/* other applications' metadata, and a <device> in no namespace */
	m = ok_parse(domain(
		"vm-a",
		"<nova:instance xmlns:nova='http://openstack.org/xmlns/libvirt/"
		"nova/1.1'><nova:device socket='/x'/></nova:instance>"
		"<device socket='/run/rdmagate/vm/vm-a.sock'/>"
		"<d:device xmlns:d='https://rdmagate.dev.example/xmlns/libvirt/"
		"1' socket='/x'/>"));
	assert_false(m.present);
	/* our element outside <metadata> is not metadata */
	m = ok_parse("<domain><name>vm-a</name><devices><rdmagate:device " NS
		     " socket='/run/a.sock'/></devices></domain>");
	assert_false(m.present);
	/* inside ours: other namespaces' attributes and children */
	m = ok_parse(device("socket='/run/a.sock' xmlns:o='urn:other' "
			    "o:port='99' o:name='x'",
			    "<o:address>not an address</o:address>"
			    "<rdmagate:address>10.1.2.3</rdmagate:address>"
			    "<!-- a comment -->"));
	assert_true(m.present);
	assert_int_equal(m.s.port, 0);
	assert_string_equal(m.s.device, "");
	assert_int_equal(m.s.n_addrs, 1);
	/* any prefix will do: the namespace is what counts */
	m = ok_parse(domain("vm-a", "<rg:device xmlns:rg='" RDMAGATE_XMLNS
				    "' socket='/run/a.sock' port='2'/>"));
	assert_true(m.present);
	assert_int_equal(m.s.port, 2);
	/* ... also as the default namespace */
	m = ok_parse(domain("vm-a", "<device xmlns='" RDMAGATE_XMLNS
				    "' socket='/run/a.sock'><address>fd99::1"
				    "</address></device>"));
	assert_true(m.present);
	assert_int_equal(m.s.n_addrs, 1);
}

static void test_addresses(void **state)
{
	char body[4096] = "";
	struct domain_meta m;
	int i;

	/* whitespace around the text is not part of the address */
	m = ok_parse(
		device("socket='/run/a.sock'",
		       "<rdmagate:address>\n  10.0.0.1\n</rdmagate:address>"
		       "<rdmagate:address><![CDATA[fd00::2]]>"
		       "</rdmagate:address>"));
	assert_int_equal(m.s.n_addrs, 2);
	check_addr(&m.s.addrs[0], AF_INET, "10.0.0.1");
	check_addr(&m.s.addrs[1], AF_INET6, "fd00::2");
	for (i = 0; i < BP_SPAWN_ADDRS_MAX; i++)
		snprintf(body + strlen(body), sizeof(body) - strlen(body),
			 "<rdmagate:address>10.0.0.%d</rdmagate:address>",
			 i + 1);
	m = ok_parse(device("socket='/run/a.sock'", body));
	assert_int_equal(m.s.n_addrs, BP_SPAWN_ADDRS_MAX);
	check_addr(&m.s.addrs[7], AF_INET, "10.0.0.8");
}

static void test_device_and_port(void **state)
{
	struct domain_meta m;

	m = ok_parse(
		device("name='mlx5_0' port='255' socket='/run/a.sock'", ""));
	assert_string_equal(m.s.device, "mlx5_0");
	assert_int_equal(m.s.port, 255);
	m = ok_parse(device("port='1' socket='/run/rdmagate/vm/a.sock'", ""));
	assert_int_equal(m.s.port, 1);
	assert_int_equal(m.s.frontend, BP_FRONTEND_POLICY);
}

/* frontend: the policy's unless the domain says; a file name alone names
 * the socket in the broker's socket_dir */
static void test_frontend_and_socket_name(void **state)
{
	struct domain_meta m;

	m = ok_parse(device("socket='a.sock' frontend='pvrdma'", ""));
	assert_int_equal(m.s.frontend, BP_FRONTEND_PVRDMA);
	assert_string_equal(m.s.socket, "a.sock");
	m = ok_parse(device("socket='a.sock' frontend='virtio-rdma'", ""));
	assert_int_equal(m.s.frontend, BP_FRONTEND_VIRTIO_RDMA);
	bad(device("socket='a.sock' frontend='e1000'", ""), -EINVAL,
	    "line 3: <rdmagate:device>: frontend 'e1000': not virtio-rdma or "
	    "pvrdma");
}

static void test_test_echo(void **state)
{
	const char *xml =
		device("socket='/run/a.sock' rdmagate:test-echo='1'", "");
#if RDMAGATE_TEST_HOOKS
	struct domain_meta m = ok_parse(xml);

	assert_int_equal(m.s.flags, BP_SPAWN_TEST_ECHO);
	m = ok_parse(device("socket='/run/a.sock' rdmagate:test-echo='0'", ""));
	assert_int_equal(m.s.flags, 0);
	bad(device("socket='/run/a.sock' rdmagate:test-echo='yes'", ""),
	    -EINVAL, "line 3: <rdmagate:device>: rdmagate:test-echo 'yes'");
#else
	bad(xml, -EINVAL, "this hook was built without test hooks");
#endif
	/* a plain test-echo is not ours: refused as unknown */
	bad(device("socket='/run/a.sock' test-echo='1'", ""), -EINVAL,
	    "unknown attribute test-echo");
}

/* ---- refusals ----------------------------------------------------------- */

static void test_missing_attributes(void **state)
{
	bad(device("", ""), -EINVAL,
	    "domain XML line 3: <rdmagate:device>: no socket attribute");
	bad(device("name='rxe0' port='1'",
		   "<rdmagate:address>10.0.0.1</rdmagate:address>"),
	    -EINVAL, "line 3: <rdmagate:device>: no socket attribute");
	bad(device("name='' socket='/run/a.sock'", ""), -EINVAL,
	    "line 3: <rdmagate:device>: name is empty");
}

static void test_unknown_attribute(void **state)
{
	bad(device("sockett='/run/a.sock'", ""), -EINVAL,
	    "line 3: <rdmagate:device>: unknown attribute sockett");
	bad(device("socket='/run/a.sock' rdmagate:port='1'", ""), -EINVAL,
	    "unknown attribute rdmagate:port");
}

static void test_bad_port(void **state)
{
	static const char *const ports[] = { "0",   "256",	  "1x", "-1",
					     "",    "0001",	  " 1", "1 ",
					     "1e2", "99999999999" };

	for (size_t i = 0; i < ARRAY_SIZE(ports); i++) {
		char attrs[128], msg[128];

		snprintf(attrs, sizeof(attrs), "socket='/run/a.sock' port='%s'",
			 ports[i]);
		snprintf(msg, sizeof(msg),
			 "line 3: <rdmagate:device>: port '%s': not 1..255",
			 ports[i]);
		bad(device(attrs, ""), -EINVAL, msg);
	}
}

/* libvirt's sVirt label: its level goes to the SPAWN; a dynamic label
 * without <label> (prepare begin) is marked dynamic with no level. */
static void test_seclabel(void **state)
{
	struct domain_meta m;

	m = ok_parse(with_seclabel(
		"<seclabel type='dynamic' model='dac' relabel='yes'>"
		"<label>+64055:+64055</label></seclabel>"
		"<seclabel type='dynamic' model='selinux' relabel='yes'>"
		"<label>system_u:system_r:svirt_t:s0:c123,c456</label>"
		"<imagelabel>system_u:object_r:svirt_image_t:s0:c123,c456"
		"</imagelabel></seclabel>"));
	assert_true(m.svirt_dynamic);
	assert_string_equal(m.s.selinux_level, "s0:c123,c456");
	m = ok_parse(with_seclabel(
		"<seclabel type='dynamic' model='selinux' relabel='yes'/>"));
	assert_true(m.svirt_dynamic);
	assert_string_equal(m.s.selinux_level, "");
	m = ok_parse(with_seclabel(
		"<seclabel type='static' model='selinux' relabel='yes'>"
		"<label>system_u:system_r:svirt_t:s0:c1,c2</label></"
		"seclabel>"));
	assert_false(m.svirt_dynamic);
	assert_string_equal(m.s.selinux_level, "s0:c1,c2");
	/* no selinux seclabel, only a device's: nothing */
	m = ok_parse(with_seclabel(""));
	assert_false(m.svirt_dynamic);
	assert_string_equal(m.s.selinux_level, "");
}

static void test_bad_seclabel(void **state)
{
	static const struct {
		const char *label, *msg;
	} cases[] = {
		{ "system_u:system_r:svirt_t:s0:c456,c123",
		  "categories not two in increasing order" },
		{ "system_u:system_r:svirt_t:s1:c1,c2", "not s0:cA,cB" },
		{ "system_u:system_r:svirt_t:s0", "not s0:cA,cB" },
		{ "system_u:system_r:svirt_t:s0-s0:c0.c1023", "not s0:cA,cB" },
		{ "system_u:system_r:svirt_t:s0:c1,c1024", "c0..c1023" },
		{ "system_u:system_r:svirt_t:s0:c1,c2&#10;", "'s0:c1,c2?'" },
		{ "system_u:system_r:svirt_t:s0:c1,c2,c3,c4,c5,c6,c7,c8,c9,c10",
		  "longer than 31 bytes" },
		{ "svirt_t", "<label> is not user:role:type:level" },
	};

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		char sl[256];

		snprintf(sl, sizeof(sl),
			 "<seclabel type='dynamic' model='selinux'>"
			 "<label>%s</label></seclabel>",
			 cases[i].label);
		bad(with_seclabel(sl), -EINVAL, "line 5: <seclabel");
		bad(with_seclabel(sl), -EINVAL, cases[i].msg);
	}
}

static void test_bad_address(void **state)
{
	static const char *const addrs[] = { "10.99.0.300",
					     "10.0.0.0/24",
					     "fd99::/64",
					     "hello",
					     "",
					     "10.0.0.1 10.0.0.2",
					     "::ffff:1.2.3.4.5" };

	for (size_t i = 0; i < ARRAY_SIZE(addrs); i++) {
		char body[256], msg[160];

		snprintf(body, sizeof(body),
			 "\n<rdmagate:address>%s</rdmagate:address>", addrs[i]);
		snprintf(msg, sizeof(msg),
			 "line 4: <rdmagate:address> '%s': not an IPv4 or "
			 "IPv6 address",
			 addrs[i]);
		bad(device("socket='/run/a.sock'", body), -EINVAL, msg);
	}
	bad(device("socket='/run/a.sock'",
		   "<rdmagate:address><b>10.0.0.1</b></rdmagate:address>"),
	    -EINVAL, "<rdmagate:address>: holds more than an address");
}

static void test_too_many_addresses(void **state)
{
	char body[4096] = "";
	int i;

	for (i = 0; i <= BP_SPAWN_ADDRS_MAX; i++)
		snprintf(body + strlen(body), sizeof(body) - strlen(body),
			 "\n<rdmagate:address>fd99::%d</rdmagate:address>",
			 i + 1);
	bad(device("socket='/run/a.sock'", body), -EINVAL,
	    "line 12: <rdmagate:address> fd99::9: more than 8 addresses");
}

static void test_doctype_refused(void **state)
{
	/* internal entities (billion laughs) */
	bad("<?xml version='1.0'?>\n"
	    "<!DOCTYPE domain [\n"
	    "  <!ENTITY a 'aaaaaaaaaa'>\n"
	    "  <!ENTITY b '&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;'>\n"
	    "  <!ENTITY c '&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;'>\n"
	    "]>\n"
	    "<domain><name>&c;</name><metadata><rdmagate:device " NS
	    " socket='/run/a.sock'/></metadata></domain>",
	    -EINVAL, "domain XML line 2: a DOCTYPE: refused");
	/* an external DTD or entity: nothing is fetched or read */
	bad("<!DOCTYPE domain SYSTEM 'http://example.invalid/domain.dtd'>"
	    "<domain><name>vm-a</name></domain>",
	    -EINVAL, "a DOCTYPE: refused");
	bad("<!DOCTYPE domain [<!ENTITY x SYSTEM 'file:///etc/passwd'>]>"
	    "<domain><name>&x;</name></domain>",
	    -EINVAL, "a DOCTYPE: refused");
	/* a bare DOCTYPE too: libvirt never sends one */
	bad("<!DOCTYPE domain><domain><name>vm-a</name></domain>", -EINVAL,
	    "a DOCTYPE: refused");
	/* an entity without a DOCTYPE is simply not well-formed */
	bad(device("socket='&x;'", ""), -EINVAL,
	    "domain XML line 3: Entity 'x' not defined");
}

static void test_huge_refused(void **state)
{
	struct reason why;
	struct domain_meta m;
	size_t big = (size_t)DOMAIN_XML_MAX + 1;
	_cleanup_free_ char *xml = malloc(big);
	const char *head = "<domain><name>vm-a</name><!--";
	const char *tail = "--></domain>";

	assert_non_null(xml);
	memset(xml, 'x', big);
	memcpy(xml, head, strlen(head));
	memcpy(xml + big - strlen(tail), tail, strlen(tail));
	assert_int_equal(domain_meta_parse(xml, big, &m, &why), -EFBIG);
	assert_string_equal(why.msg, "domain XML: more than 4194304 bytes");
	/* the same document at the limit is parsed */
	memcpy(xml + big - 1 - strlen(tail), tail, strlen(tail));
	assert_int_equal(domain_meta_parse(xml, big - 1, &m, &why), 0);
	assert_false(m.present);
}

static void test_bad_name(void **state)
{
	const char *md = "<rdmagate:device " NS " socket='/run/a.sock'/>";

	bad(domain("my vm", md), -EINVAL,
	    "domain XML line 2: <name> 'my vm': not a VM name the broker "
	    "accepts");
	bad(domain("-x", md), -EINVAL, "<name> '-x': not a VM name");
	bad(domain("", md), -EINVAL, "<name> '': not a VM name");
	bad(domain("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
		   "aaaaaa",
		   md),
	    -EINVAL, "not a VM name");
	bad("<domain><metadata><rdmagate:device " NS
	    " socket='/run/a.sock'/></metadata></domain>",
	    -EINVAL, "domain XML: no <name> in <domain>");
}

static void test_bad_socket_and_device(void **state)
{
	char attrs[256];

	bad(device("socket='run/a.sock'", ""), -EINVAL,
	    "line 3: <rdmagate:device>: socket 'run/a.sock': not a file name "
	    "nor an absolute path");
	bad(device("socket='/run/../etc/a.sock'", ""), -EINVAL,
	    "socket '/run/../etc/a.sock'");
	bad(device("socket='/run/rdmagate/'", ""), -EINVAL, "socket '/run");
	snprintf(attrs, sizeof(attrs), "socket='/%0120d'", 0);
	bad(device(attrs, ""), -EINVAL, "longer than 107 bytes");
	bad(device("socket='/run/a&#10;b.sock'", ""), -EINVAL,
	    "socket '/run/a?b.sock': contains a control character");
	bad(device("name='rxe 0' socket='/run/a.sock'", ""), -EINVAL,
	    "line 3: <rdmagate:device>: device 'rxe 0': not a device name");
}

static void test_structure(void **state)
{
	bad("<domain><name>vm-a</name>", -EINVAL, "domain XML line 1: ");
	bad("", -EINVAL, "domain XML: empty");
	bad("<network><name>vm-a</name></network>", -EINVAL,
	    "the root element is <network>, not <domain>");
	bad(domain("vm-a", "<rdmagate:device " NS " socket='/run/a.sock'/>\n"
			   "<rdmagate:device " NS " socket='/run/b.sock'/>"),
	    -EINVAL,
	    "domain XML line 4: a second <rdmagate:device> (the first is on "
	    "line 3)");
	bad(domain("vm-a", "<rdmagate:worker " NS "/>"), -EINVAL,
	    "line 3: unknown element <rdmagate:worker> in <metadata>");
	bad(device("socket='/run/a.sock'", "\n<rdmagate:addr>10.0.0.1"
					   "</rdmagate:addr>"),
	    -EINVAL,
	    "line 4: unknown element <rdmagate:addr> in "
	    "<rdmagate:device>");
	bad(domain("vm-a", "<r:device xmlns:r='https://rdmagate.dev/xmlns/"
			   "libvirt/2' socket='/run/a.sock'/>"),
	    -EINVAL,
	    "line 3: <device> in namespace https://rdmagate.dev/xmlns/libvirt/"
	    "2: this hook knows only " RDMAGATE_XMLNS);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_real_domain),
		cmocka_unit_test(test_real_domain_defaults),
		cmocka_unit_test(test_real_pvrdma_domain),
		cmocka_unit_test(test_real_domain_without_metadata),
		cmocka_unit_test(test_minimal),
		cmocka_unit_test(test_no_metadata),
		cmocka_unit_test(test_foreign_namespaces_ignored),
		cmocka_unit_test(test_addresses),
		cmocka_unit_test(test_device_and_port),
		cmocka_unit_test(test_test_echo),
		cmocka_unit_test(test_frontend_and_socket_name),
		cmocka_unit_test(test_missing_attributes),
		cmocka_unit_test(test_unknown_attribute),
		cmocka_unit_test(test_bad_port),
		cmocka_unit_test(test_bad_address),
		cmocka_unit_test(test_seclabel),
		cmocka_unit_test(test_bad_seclabel),
		cmocka_unit_test(test_too_many_addresses),
		cmocka_unit_test(test_doctype_refused),
		cmocka_unit_test(test_huge_refused),
		cmocka_unit_test(test_bad_name),
		cmocka_unit_test(test_bad_socket_and_device),
		cmocka_unit_test(test_structure),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
