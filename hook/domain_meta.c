// SPDX-License-Identifier: MIT
/*
 * The libvirt hook's pure part (hook/domain_meta.h): libvirt domain XML in,
 * the SPAWN request rdmagate's metadata asks for out.  Runs in
 * rdmagate-libvirt-hook (root, started by libvirtd); the input is what
 * libvirtd wrote, but it is parsed as if anyone had: bounded, no network,
 * no DTD, no entities, every value checked and every error located.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <libxml/parser.h>
#include <libxml/parserInternals.h>
#include <libxml/tree.h>
#include <libxml/xmlerror.h>

#include "common/ctl_client.h"
#include "config.h"
#include "hook/domain_meta.h"

/* Any other version of our namespace: refused, not silently ignored. */
#define RDMAGATE_XMLNS_FAMILY "https://rdmagate.dev/xmlns/libvirt/"

#define XML_OPTIONS                                                            \
	(XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING |           \
	 XML_PARSE_BIG_LINES)

struct parse_state {
	bool doctype;
	long doctype_line;
};

static void xml_freep(void *p)
{
	xmlFree(*(void **)p);
}
#define _cleanup_xml_ __attribute__((cleanup(xml_freep)))

/* Every reason says where, and is one line: control characters from the
 * document become ?. */
static int fail(struct reason *why, long line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int fail(struct reason *why, long line, const char *fmt, ...)
{
	char what[REASON_LEN];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	if (line > 0)
		reason_set(why, "domain XML line %ld: %s", line, what);
	else
		reason_set(why, "domain XML: %s", what);
	for (char *c = why->msg; *c; c++)
		if ((unsigned char)*c < 0x20 || *c == 0x7f)
			*c = '?';
	return -EINVAL;
}

/*
 * SAX: a DOCTYPE stops the parse before its internal subset (and any
 * entity declaration in it) is read.
 */
static void on_doctype(void *ctx, const xmlChar *name, const xmlChar *ext_id,
		       const xmlChar *sys_id)
{
	xmlParserCtxtPtr ctxt = ctx;
	struct parse_state *ps = ctxt->_private;

	ps->doctype = true;
	ps->doctype_line = ctxt->input ? ctxt->input->line : 0;
	xmlStopParser(ctxt);
}

/* Errors are kept in the context (lastError), not printed. */
#if LIBXML_VERSION >= 21200
static void quiet(void *data, const xmlError *e)
#else
static void quiet(void *data, xmlErrorPtr e)
#endif
{
}

static bool is_ns(const xmlNs *ns, const char *href)
{
	return ns && ns->href && !strcmp((const char *)ns->href, href);
}

static bool is_elem(const xmlNode *n, const char *name, const char *href)
{
	if (n->type != XML_ELEMENT_NODE || strcmp((const char *)n->name, name))
		return false;
	return href ? is_ns(n->ns, href) : !n->ns;
}

/* Another version of our namespace. */
static bool is_other_version(const xmlNs *ns)
{
	return ns && ns->href &&
	       !strncmp((const char *)ns->href, RDMAGATE_XMLNS_FAMILY,
			strlen(RDMAGATE_XMLNS_FAMILY)) &&
	       !is_ns(ns, RDMAGATE_XMLNS);
}

static bool has_control_char(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return true;
	return false;
}

static int parse_port(const char *v, uint32_t *ret)
{
	unsigned int p = 0;
	size_t i;

	for (i = 0; v[i]; i++) {
		if (i >= 3 || v[i] < '0' || v[i] > '9')
			return -EINVAL;
		p = p * 10 + (unsigned int)(v[i] - '0');
	}
	if (i == 0 || p < 1 || p > 255)
		return -EINVAL;
	*ret = p;
	return 0;
}

static int set_attr(char *field, size_t size, const char *v, const char *what,
		    long line, struct reason *why)
{
	if (bp_set_str(field, size, v) < 0)
		return fail(why, line,
			    "<rdmagate:device>: %s '%.40s...': longer than "
			    "%zu bytes",
			    what, v, size - 1);
	return 0;
}

/* One attribute of <rdmagate:device>. */
static int device_attr(struct domain_meta *m, const xmlAttr *a, const char *v,
		       bool *has_socket, struct reason *why)
{
	const char *an = (const char *)a->name;
	long line = m->line;

	if (a->ns && is_ns(a->ns, RDMAGATE_XMLNS)) {
		if (strcmp(an, "test-echo"))
			return fail(why, line,
				    "<rdmagate:device>: unknown attribute "
				    "rdmagate:%.40s",
				    an);
#if RDMAGATE_TEST_HOOKS
		if (strcmp(v, "1") && strcmp(v, "0"))
			return fail(why, line,
				    "<rdmagate:device>: rdmagate:test-echo "
				    "'%.40s': not 0 or 1",
				    v);
		if (!strcmp(v, "1"))
			m->s.flags |= BP_SPAWN_TEST_ECHO;
		return 0;
#else
		return fail(why, line,
			    "<rdmagate:device>: rdmagate:test-echo: this hook "
			    "was built without test hooks");
#endif
	}
	if (a->ns) /* another namespace's: not ours to judge */
		return 0;
	if (!strcmp(an, "socket")) {
		if (has_control_char(v))
			return fail(why, line,
				    "<rdmagate:device>: socket '%.107s': "
				    "contains a control character",
				    v);
		*has_socket = true;
		return set_attr(m->s.socket, sizeof(m->s.socket), v, "socket",
				line, why);
	}
	if (!strcmp(an, "name")) {
		if (!v[0])
			return fail(
				why, line,
				"<rdmagate:device>: name is empty (leave it "
				"out for the policy's device)");
		return set_attr(m->s.device, sizeof(m->s.device), v, "name",
				line, why);
	}
	if (!strcmp(an, "frontend")) {
		if (bp_frontend_parse(v, &m->s.frontend) < 0)
			return fail(why, line,
				    "<rdmagate:device>: frontend '%.40s': not "
				    "virtio-rdma or pvrdma (leave it out for "
				    "the policy's)",
				    v);
		return 0;
	}
	if (!strcmp(an, "port")) {
		if (parse_port(v, &m->s.port) < 0)
			return fail(
				why, line,
				"<rdmagate:device>: port '%.40s': not 1..255 "
				"(leave it out for the policy's port)",
				v);
		return 0;
	}
	return fail(why, line,
		    "<rdmagate:device>: unknown attribute %.40s (it has name, "
		    "port, socket, frontend)",
		    an);
}

/* <rdmagate:address>: text only, one IPv4 or IPv6 address. */
static int device_address(struct domain_meta *m, xmlDoc *doc, const xmlNode *n,
			  struct reason *why)
{
	long line = xmlGetLineNo(n);
	_cleanup_xml_ xmlChar *text = NULL;
	const xmlNode *c;
	char *s, *end;
	int ret;

	for (c = n->children; c; c = c->next)
		if (c->type != XML_TEXT_NODE &&
		    c->type != XML_CDATA_SECTION_NODE)
			return fail(why, line,
				    "<rdmagate:address>: holds more than an "
				    "address");
	text = xmlNodeListGetString(doc, n->children, 1);
	s = text ? (char *)text : "";
	while (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r')
		s++;
	end = s + strlen(s);
	while (end > s && (end[-1] == ' ' || end[-1] == '\t' ||
			   end[-1] == '\n' || end[-1] == '\r'))
		*--end = '\0';
	ret = ctl_spawn_add_address(&m->s, s);
	if (ret == -E2BIG)
		return fail(why, line,
			    "<rdmagate:address> %.64s: more than %u addresses",
			    s, BP_SPAWN_ADDRS_MAX);
	if (ret < 0)
		return fail(why, line,
			    "<rdmagate:address> '%.64s': not an IPv4 or IPv6 "
			    "address (one address, not a prefix)",
			    s);
	return 0;
}

static int parse_device(struct domain_meta *m, xmlDoc *doc, const xmlNode *dev,
			struct reason *why)
{
	bool has_socket = false;
	const xmlAttr *a;
	const xmlNode *n;
	int ret;

	for (a = dev->properties; a; a = a->next) {
		_cleanup_xml_ xmlChar *v =
			xmlNodeListGetString(doc, a->children, 1);

		ret = device_attr(m, a, v ? (const char *)v : "", &has_socket,
				  why);
		if (ret < 0)
			return ret;
	}
	if (!has_socket)
		return fail(why, m->line,
			    "<rdmagate:device>: no socket attribute (the "
			    "vhost-user socket the VM's QEMU connects to)");
	for (n = dev->children; n; n = n->next) {
		if (n->type != XML_ELEMENT_NODE)
			continue;
		if (is_elem(n, "address", RDMAGATE_XMLNS))
			ret = device_address(m, doc, n, why);
		else if (is_ns(n->ns, RDMAGATE_XMLNS))
			ret = fail(
				why, xmlGetLineNo(n),
				"unknown element <rdmagate:%.40s> in "
				"<rdmagate:device> (it has <rdmagate:address>)",
				(const char *)n->name);
		else
			ret = 0; /* another namespace's */
		if (ret < 0)
			return ret;
	}
	return 0;
}

/* Finds <rdmagate:device> in /domain/metadata; one at most. */
static int find_device(const xmlNode *root, const xmlNode **ret,
		       struct reason *why)
{
	const xmlNode *md, *n;

	*ret = NULL;
	for (md = root->children; md; md = md->next) {
		if (!is_elem(md, "metadata", NULL))
			continue;
		for (n = md->children; n; n = n->next) {
			if (n->type != XML_ELEMENT_NODE)
				continue;
			if (is_other_version(n->ns))
				return fail(why, xmlGetLineNo(n),
					    "<%.40s> in namespace %.100s: this "
					    "hook knows only " RDMAGATE_XMLNS,
					    (const char *)n->name,
					    (const char *)n->ns->href);
			if (!is_ns(n->ns, RDMAGATE_XMLNS))
				continue;
			if (strcmp((const char *)n->name, "device"))
				return fail(why, xmlGetLineNo(n),
					    "unknown element <rdmagate:%.40s> "
					    "in <metadata> (it has "
					    "<rdmagate:device>)",
					    (const char *)n->name);
			if (*ret)
				return fail(why, xmlGetLineNo(n),
					    "a second <rdmagate:device> (the "
					    "first is on line %ld): one "
					    "worker per VM",
					    xmlGetLineNo(*ret));
			*ret = n;
		}
	}
	return 0;
}

static int parse_name(struct domain_meta *m, xmlDoc *doc, const xmlNode *root,
		      struct reason *why)
{
	_cleanup_xml_ xmlChar *text = NULL;
	const xmlNode *n;
	const char *name;

	for (n = root->children; n; n = n->next)
		if (is_elem(n, "name", NULL))
			break;
	if (!n)
		return fail(why, 0, "no <name> in <domain>");
	text = xmlNodeListGetString(doc, n->children, 1);
	name = text ? (const char *)text : "";
	if (!bp_vm_name_ok(name))
		return fail(why, xmlGetLineNo(n),
			    "<name> '%.64s': not a VM name the broker accepts "
			    "(1..64 of A-Z a-z 0-9 _ . -, no leading . or -)",
			    name);
	/* bp_vm_name_ok() bounds it to 64 bytes: it fits */
	return bp_set_str(m->s.vm, sizeof(m->s.vm), name) < 0 ? -EINVAL : 0;
}

/*
 * libvirt's SELinux label for the domain's QEMU: the <seclabel
 * model='selinux'> child of <domain> (a device's own <seclabel> is not the
 * process's).  type='dynamic' sets svirt_dynamic: libvirt writes its
 * <label> only once it has picked the pair, after "prepare begin".  A
 * <label> (dynamic or static) must end in a level the broker accepts
 * (bp_mcs_level_check): it goes to the SPAWN as selinux_level.
 */
static int parse_seclabel(struct domain_meta *m, xmlDoc *doc,
			  const xmlNode *root, struct reason *why)
{
	const xmlNode *n, *l;

	for (n = root->children; n; n = n->next) {
		_cleanup_xml_ xmlChar *model = NULL, *type = NULL;

		if (!is_elem(n, "seclabel", NULL))
			continue;
		model = xmlGetNoNsProp(n, (const xmlChar *)"model");
		if (!model || strcmp((const char *)model, "selinux"))
			continue;
		type = xmlGetNoNsProp(n, (const xmlChar *)"type");
		m->svirt_dynamic =
			type && !strcmp((const char *)type, "dynamic");
		for (l = n->children; l; l = l->next) {
			_cleanup_xml_ xmlChar *text = NULL;
			struct reason lerr;
			const char *level;
			int i;

			if (!is_elem(l, "label", NULL))
				continue;
			text = xmlNodeListGetString(doc, l->children, 1);
			level = text ? (const char *)text : "";
			/* user:role:type:LEVEL */
			for (i = 0; i < 3 && level; i++) {
				level = strchr(level, ':');
				level = level ? level + 1 : NULL;
			}
			if (!level)
				return fail(why, xmlGetLineNo(l),
					    "<seclabel model='selinux'>: "
					    "<label> is not user:role:type:"
					    "level");
			if (bp_mcs_level_check(level, NULL, NULL, &lerr) < 0)
				return fail(why, xmlGetLineNo(l),
					    "<seclabel model='selinux'>: %s "
					    "(rdmagate needs the category "
					    "pair sVirt gives each QEMU)",
					    lerr.msg);
			/* checked: at most BP_LEVEL_SIZE - 1 bytes */
			bp_set_str(m->s.selinux_level,
				   sizeof(m->s.selinux_level), level);
		}
		return 0;
	}
	return 0;
}

/* Everything after a well-formed parse. */
static int parse_doc(struct domain_meta *m, xmlDoc *doc, struct reason *why)
{
	const xmlNode *root = xmlDocGetRootElement(doc);
	const xmlNode *dev;
	struct bp_msg req;
	struct reason cerr;
	int ret;

	if (doc->intSubset || doc->extSubset)
		return fail(why, 0, "a DOCTYPE: refused");
	if (!root || !is_elem(root, "domain", NULL))
		return fail(why, root ? xmlGetLineNo(root) : 0,
			    "the root element is <%.40s>, not <domain>",
			    root ? (const char *)root->name : "");
	ret = find_device(root, &dev, why);
	if (ret < 0 || !dev)
		return ret;
	m->present = true;
	m->line = xmlGetLineNo(dev);
	ret = parse_name(m, doc, root, why);
	if (ret < 0)
		return ret;
	ret = parse_device(m, doc, dev, why);
	if (ret == 0)
		ret = parse_seclabel(m, doc, root, why);
	if (ret < 0)
		return ret;
	/* what the broker's decoder would refuse, said here with a line */
	bp_init(&req, BP_SPAWN);
	req.u.spawn = m->s;
	if (ctl_check(&req, &cerr) < 0)
		return fail(why, m->line, "<rdmagate:device>: %s", cerr.msg);
	return 0;
}

int domain_meta_parse(const char *xml, size_t len, struct domain_meta *ret,
		      struct reason *why)
{
	struct parse_state ps = { 0 };
	struct domain_meta m = { 0 };
	xmlParserCtxtPtr ctxt;
	xmlDoc *doc;
	int r;

	if (len > DOMAIN_XML_MAX)
		return reason_fail(why, -EFBIG,
				   "domain XML: more than %u bytes",
				   DOMAIN_XML_MAX);
	if (!len)
		return fail(why, 0, "empty");
	ctxt = xmlCreateMemoryParserCtxt(xml, (int)len);
	if (!ctxt)
		return reason_fail(why, -ENOMEM, "domain XML: out of memory");
	xmlCtxtUseOptions(ctxt, XML_OPTIONS);
	ctxt->_private = &ps;
	ctxt->sax->internalSubset = on_doctype;
	ctxt->sax->externalSubset = on_doctype;
	ctxt->sax->serror = quiet;
	xmlParseDocument(ctxt);
	doc = ctxt->myDoc;
	ctxt->myDoc = NULL;
	if (ps.doctype)
		r = fail(why, ps.doctype_line,
			 "a DOCTYPE: refused (libvirt sends none; no DTD or "
			 "entity is read)");
	else if (!ctxt->wellFormed || !doc) {
		const xmlError *e = xmlCtxtGetLastError(ctxt);
		char msg[200] = "not well-formed";

		if (e && e->message) {
			snprintf(msg, sizeof(msg), "%s", e->message);
			msg[strcspn(msg, "\n")] = '\0';
		}
		r = fail(why, e ? e->line : 0, "%s", msg);
	} else
		r = parse_doc(&m, doc, why);
	xmlFreeDoc(doc);
	xmlFreeParserCtxt(ctxt);
	if (r == 0)
		*ret = m;
	return r;
}
