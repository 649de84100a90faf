// SPDX-License-Identifier: MIT
/*
 * The control protocol's one table and its pure decoder (see
 * common/broker_proto.h and docs/control-protocol.md).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "common/broker_proto.h"
#include "common/cleanup.h"

/* Checks one payload already copied out; returns 0 or -EINVAL with err. */
typedef int (*bp_check_fn)(const struct bp_msg *m, char *err);

struct bp_row {
	struct bp_type_info info;
	bp_check_fn check;
};

static void set_err(char *err, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void set_err(char *err, const char *fmt, ...)
{
	va_list ap;

	if (!err)
		return;
	va_start(ap, fmt);
	vsnprintf(err, BP_ERR_LEN, fmt, ap);
	va_end(ap);
}

/* The string's length, or -1 if the field has no NUL or junk after it. */
static int field_len(const char *f, size_t size)
{
	const char *nul = memchr(f, '\0', size);
	size_t i;

	if (!nul)
		return -1;
	for (i = (size_t)(nul - f); i < size; i++)
		if (f[i])
			return -1;
	return (int)(nul - f);
}

static bool name_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-';
}

/* [A-Za-z0-9_.-]{1,max}, not starting with '.' or '-' */
static bool name_ok(const char *s, size_t max)
{
	size_t i;

	if (!s[0] || s[0] == '.' || s[0] == '-')
		return false;
	for (i = 0; s[i]; i++)
		if (i >= max || !name_char(s[i]))
			return false;
	return true;
}

bool bp_vm_name_ok(const char *s)
{
	return name_ok(s, BP_VM_NAME_MAX);
}

/* Absolute, no "." or ".." component, no empty last component. */
static bool path_ok(const char *s)
{
	const char *c = s;

	if (s[0] != '/' || s[strlen(s) - 1] == '/')
		return false;
	while (c) {
		c++;
		if (!strncmp(c, "./", 2) || !strcmp(c, ".") ||
		    !strncmp(c, "../", 3) || !strcmp(c, ".."))
			return false;
		c = strchr(c, '/');
	}
	return true;
}

static bool syscall_name_ok(const char *s)
{
	size_t i;

	for (i = 0; s[i]; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') ||
		      (s[i] >= '0' && s[i] <= '9') || s[i] == '_'))
			return false;
	return true;
}

#define FIELD(m, f, what)                                                      \
	do {                                                                   \
		if (field_len((m).f, sizeof((m).f)) < 0) {                     \
			set_err(err, "%s: not NUL-terminated and NUL-padded",  \
				what);                                         \
			return -EINVAL;                                        \
		}                                                              \
	} while (0)

static int check_vm(const char *vm, char *err)
{
	if (field_len(vm, BP_VM_SIZE) < 0) {
		set_err(err, "vm name: not NUL-terminated and NUL-padded");
		return -EINVAL;
	}
	if (!bp_vm_name_ok(vm)) {
		set_err(err,
			"vm name '%.64s': not 1..64 of A-Z a-z 0-9 _ . - "
			"(no leading . or -)",
			vm);
		return -EINVAL;
	}
	return 0;
}

static int check_empty(const struct bp_msg *m, char *err)
{
	return 0;
}

static bool all_zero(const void *p, size_t len)
{
	const uint8_t *b = p;

	while (len--)
		if (*b++)
			return false;
	return true;
}

static int check_addrs(const struct bp_spawn *s, char *err)
{
	uint32_t i;

	if (s->n_addrs > BP_SPAWN_ADDRS_MAX) {
		set_err(err, "%u addresses: at most %u", s->n_addrs,
			BP_SPAWN_ADDRS_MAX);
		return -EINVAL;
	}
	for (i = 0; i < BP_SPAWN_ADDRS_MAX; i++) {
		const struct bp_addr *a = &s->addrs[i];

		if (i >= s->n_addrs) {
			if (!all_zero(a, sizeof(*a))) {
				set_err(err, "address %u: past n_addrs (%u) "
					"but not zero", i, s->n_addrs);
				return -EINVAL;
			}
			continue;
		}
		if (a->family == AF_INET && all_zero(a->addr + 4, 12))
			continue;
		if (a->family == AF_INET6)
			continue;
		if (a->family == AF_INET)
			set_err(err, "address %u: AF_INET with bytes past "
				"the IPv4 address", i);
		else
			set_err(err, "address %u: family %u is not AF_INET "
				"or AF_INET6", i, a->family);
		return -EINVAL;
	}
	return 0;
}

static int check_spawn(const struct bp_msg *m, char *err)
{
	const struct bp_spawn *s = &m->u.spawn;
	int ret = check_vm(s->vm, err);

	if (ret < 0)
		return ret;
	FIELD(*s, socket, "socket path");
	FIELD(*s, device, "device");
	FIELD(*s, test_syscall, "test syscall");
	if (!path_ok(s->socket)) {
		set_err(err,
			"socket path '%.107s': not an absolute path "
			"without . or .. components",
			s->socket);
		return -EINVAL;
	}
	if (s->device[0] && !name_ok(s->device, BP_DEVICE_SIZE - 1)) {
		set_err(err, "device '%.63s': not a device name", s->device);
		return -EINVAL;
	}
	if (!syscall_name_ok(s->test_syscall)) {
		set_err(err, "test syscall '%.31s': not a syscall name",
			s->test_syscall);
		return -EINVAL;
	}
	if (s->port > 255) {
		set_err(err, "port %u: not 0 (the policy's) or 1..255",
			s->port);
		return -EINVAL;
	}
	if (s->flags & ~(uint32_t)BP_SPAWN_FLAGS_ALL) {
		set_err(err, "flags 0x%x: unknown bits", s->flags);
		return -EINVAL;
	}
	return check_addrs(s, err);
}

static int check_stop(const struct bp_msg *m, char *err)
{
	return check_vm(m->u.stop.vm, err);
}

static int check_status(const struct bp_status *st, char *err)
{
	if (st->status < 0 || st->status > 4095) {
		set_err(err, "status %d: not 0 or an errno", st->status);
		return -EINVAL;
	}
	FIELD(*st, text, "reply text");
	return 0;
}

static int check_status_reply(const struct bp_msg *m, char *err)
{
	return check_status(&m->u.status, err);
}

static int check_spawn_reply(const struct bp_msg *m, char *err)
{
	if (m->u.spawn_reply.pad) {
		set_err(err, "spawn reply: padding is not zero");
		return -EINVAL;
	}
	return check_status(&m->u.spawn_reply.st, err);
}

static int check_list_reply(const struct bp_msg *m, char *err)
{
	const struct bp_list_reply *r = &m->u.list_reply;
	int ret = check_status(&r->st, err);

	if (ret < 0)
		return ret;
	if (r->pad) {
		set_err(err, "list reply: padding is not zero");
		return -EINVAL;
	}
	if (r->index >= r->total && !(r->total == 0 && r->index == 0)) {
		set_err(err, "list reply: index %u of %u", r->index, r->total);
		return -EINVAL;
	}
	if (r->total == 0)
		return 0;
	ret = check_vm(r->w.vm, err);
	if (ret < 0)
		return ret;
	FIELD(r->w, socket, "worker socket path");
	FIELD(r->w, device, "worker device");
	return 0;
}

/* THE table: every message the protocol has. */
static const struct bp_row rows[] = {
	{ { BP_HELLO, "HELLO", 0, BP_FROM_CALLER }, check_empty },
	{ { BP_HELLO_REPLY, "HELLO_REPLY", sizeof(struct bp_hello_reply),
	    BP_FROM_BROKER },
	  check_status_reply },
	{ { BP_SPAWN, "SPAWN", sizeof(struct bp_spawn), BP_FROM_CALLER },
	  check_spawn },
	{ { BP_SPAWN_REPLY, "SPAWN_REPLY", sizeof(struct bp_spawn_reply),
	    BP_FROM_BROKER },
	  check_spawn_reply },
	{ { BP_STOP, "STOP", sizeof(struct bp_stop), BP_FROM_CALLER },
	  check_stop },
	{ { BP_STOP_REPLY, "STOP_REPLY", sizeof(struct bp_status),
	    BP_FROM_BROKER },
	  check_status_reply },
	{ { BP_LIST, "LIST", 0, BP_FROM_CALLER }, check_empty },
	{ { BP_LIST_REPLY, "LIST_REPLY", sizeof(struct bp_list_reply),
	    BP_FROM_BROKER },
	  check_list_reply },
	{ { BP_RELOAD, "RELOAD", 0, BP_FROM_ROOT }, check_empty },
	{ { BP_RELOAD_REPLY, "RELOAD_REPLY", sizeof(struct bp_status),
	    BP_FROM_BROKER },
	  check_status_reply },
	{ { BP_ERROR_REPLY, "ERROR_REPLY", sizeof(struct bp_status),
	    BP_FROM_BROKER },
	  check_status_reply },
};

static const struct bp_row *row_of(uint32_t type)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(rows); i++)
		if (rows[i].info.type == type)
			return &rows[i];
	return NULL;
}

const struct bp_type_info *bp_type_info(uint32_t type)
{
	const struct bp_row *r = row_of(type);

	return r ? &r->info : NULL;
}

const char *bp_type_name(uint32_t type)
{
	const struct bp_row *r = row_of(type);

	return r ? r->info.name : "unknown";
}

int bp_decode(const void *buf, size_t len, struct bp_msg *ret, char *err)
{
	const struct bp_row *r;
	struct bp_msg m;
	int rc;

	if (len < sizeof(m.h)) {
		set_err(err, "short message: %zu bytes, the header is %zu", len,
			sizeof(m.h));
		return -EBADMSG;
	}
	if (len > BP_MSG_MAX) {
		set_err(err, "long message: %zu bytes, at most %zu", len,
			BP_MSG_MAX);
		return -EMSGSIZE;
	}
	memset(&m, 0, sizeof(m));
	memcpy(&m.h, buf, sizeof(m.h));
	if (m.h.version != RDMAGATE_CTL_VERSION) {
		set_err(err, "protocol version %u, this side speaks %u",
			m.h.version, RDMAGATE_CTL_VERSION);
		return -EPROTONOSUPPORT;
	}
	r = row_of(m.h.type);
	if (!r) {
		set_err(err, "unknown message type %u", m.h.type);
		return -EOPNOTSUPP;
	}
	if (m.h.len != len - sizeof(m.h)) {
		set_err(err,
			"%s: header says %u payload bytes, the message has "
			"%zu",
			r->info.name, m.h.len, len - sizeof(m.h));
		return -EBADMSG;
	}
	if (m.h.len != r->info.size) {
		set_err(err, "%s: payload of %u bytes, it has %u", r->info.name,
			m.h.len, r->info.size);
		return -EBADMSG;
	}
	memcpy(&m.u, (const uint8_t *)buf + sizeof(m.h), m.h.len);
	rc = r->check(&m, err);
	if (rc < 0)
		return rc;
	memcpy(ret, &m, sizeof(m));
	return 0;
}

size_t bp_init(struct bp_msg *m, uint32_t type)
{
	const struct bp_row *r = row_of(type);

	if (!r)
		return 0;
	memset(m, 0, sizeof(*m));
	m->h.version = RDMAGATE_CTL_VERSION;
	m->h.type = type;
	m->h.len = r->info.size;
	return sizeof(m->h) + r->info.size;
}

int bp_send(int fd, const struct bp_msg *m)
{
	struct iovec iov[2] = {
		{ (void *)&m->h, sizeof(m->h) },
		{ (void *)&m->u, m->h.len },
	};
	struct msghdr mh = { .msg_iov = iov, .msg_iovlen = 2 };
	ssize_t n;

	if (m->h.len > sizeof(m->u))
		return -EINVAL;
	do
		n = sendmsg(fd, &mh, MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	return n < 0 ? -errno : 0;
}

void bp_set_status(struct bp_status *st, int status, const char *fmt, ...)
{
	va_list ap;

	memset(st, 0, sizeof(*st));
	st->status = status;
	va_start(ap, fmt);
	vsnprintf(st->text, sizeof(st->text), fmt, ap);
	va_end(ap);
}

int bp_set_str(char *field, size_t size, const char *s)
{
	size_t n = strlen(s);

	if (n >= size)
		return -ENAMETOOLONG;
	memset(field, 0, size);
	memcpy(field, s, n);
	return 0;
}
