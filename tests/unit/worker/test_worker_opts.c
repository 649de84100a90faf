// SPDX-License-Identifier: MIT
/*
 * The worker's command line split into a transport and a device model
 * (worker_opts_split(), worker/opts.c): every spelling the broker, the
 * hook and the tests pass, and each refusal with its message.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "common/cleanup.h"
#include "worker/opts.h"

struct ok_case {
	const char *frontend, *device, *test_device;
	enum worker_transport t;
	enum worker_model m;
};

static const struct ok_case oks[] = {
	{ NULL, "rxe0", NULL, WT_VHOST_USER, WM_VIRTIO_RDMA },
	{ "vhost-user", "rxe0", NULL, WT_VHOST_USER, WM_VIRTIO_RDMA },
	{ "virtio-rdma", "rxe0", NULL, WT_VHOST_USER, WM_VIRTIO_RDMA },
	{ NULL, NULL, "echo", WT_VHOST_USER, WM_ECHO },
	{ "vhost-user", NULL, "echo", WT_VHOST_USER, WM_ECHO },
	{ "pvrdma", "rxe0", NULL, WT_VFIO_USER, WM_PVRDMA },
	{ "vfio-user", "rxe0", NULL, WT_VFIO_USER, WM_PVRDMA },
	{ "vfio-user", NULL, "pci-test", WT_VFIO_USER, WM_PCI_TEST },
};

static void test_spellings(void **state)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(oks); i++) {
		struct worker_opts o = { .frontend = oks[i].frontend,
					 .device = oks[i].device,
					 .test_device = oks[i].test_device };
		enum worker_transport t = (enum worker_transport) - 1;
		enum worker_model m = (enum worker_model) - 1;
		struct reason why = { 0 };

		print_message("--frontend %s --device %s --test-device %s\n",
			      oks[i].frontend ? oks[i].frontend : "-",
			      oks[i].device ? oks[i].device : "-",
			      oks[i].test_device ? oks[i].test_device : "-");
		assert_int_equal(worker_opts_split(&o, &t, &m, &why), 0);
		assert_int_equal(t, oks[i].t);
		assert_int_equal(m, oks[i].m);
	}
}

struct bad_case {
	const char *frontend, *device, *test_device;
	const char *msg;
};

static const struct bad_case bads[] = {
	{ NULL, "rxe0", "echo",
	  "give one of --device NAME and --test-device echo" },
	{ NULL, NULL, NULL,
	  "no device to serve: give --device NAME (a verbs device, e.g. "
	  "rxe0)" },
	{ "virtio-rdma", NULL, "pci-test",
	  "unknown test device 'pci-test' (only 'echo')" },
	{ "pvrdma", NULL, NULL,
	  "PVRDMA serves a verbs device: give --device NAME (e.g. rxe0) and "
	  "no --test-device" },
	{ "pvrdma", "rxe0", "pci-test",
	  "PVRDMA serves a verbs device: give --device NAME (e.g. rxe0) and "
	  "no --test-device" },
	{ "vfio-user", NULL, NULL,
	  "--frontend vfio-user serves --device NAME (PVRDMA) or "
	  "--test-device pci-test" },
	{ "vfio-user", NULL, "echo",
	  "unknown vfio-user test device 'echo' (only 'pci-test')" },
	{ "qemu-pvrdma", "rxe0", NULL,
	  "--frontend: 'qemu-pvrdma' is none of virtio-rdma (vhost-user), "
	  "pvrdma and vfio-user" },
};

static void test_refusals(void **state)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(bads); i++) {
		struct worker_opts o = { .frontend = bads[i].frontend,
					 .device = bads[i].device,
					 .test_device = bads[i].test_device };
		enum worker_transport t;
		enum worker_model m;
		struct reason why = { 0 };

		assert_int_equal(worker_opts_split(&o, &t, &m, &why), -EINVAL);
		assert_string_equal(why.msg, bads[i].msg);
	}
}

int main(void)
{
	static const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_spellings),
		cmocka_unit_test(test_refusals),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
