// SPDX-License-Identifier: MIT
/* The privilege drop the broker and the mux run (see privdrop.h). */
#include "common/privdrop.h"

#include <errno.h>
#include <linux/capability.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cap-ng.h>

#include "common/cleanup.h"
#include "common/log.h"

static int check_ids(uid_t uid, gid_t gid)
{
	uid_t ru, eu, su;
	gid_t rg, eg, sg;

	if (getresuid(&ru, &eu, &su) < 0 || getresgid(&rg, &eg, &sg) < 0)
		return -errno;
	if (ru != uid || eu != uid || su != uid) {
		log_warnx("privdrop: uids are %u/%u/%u, not %u", ru, eu, su,
			  uid);
		return -EPERM;
	}
	if (rg != gid || eg != gid || sg != gid) {
		log_warnx("privdrop: gids are %u/%u/%u, not %u", rg, eg, sg,
			  gid);
		return -EPERM;
	}
	if (getgroups(0, NULL) != 0) {
		log_warnx("privdrop: supplementary groups are still set");
		return -EPERM;
	}
	return 0;
}

/* Effective, permitted and inheritable sets, read with capget(2). */
static int check_cap_sets(void)
{
	struct __user_cap_header_struct h = {
		.version = _LINUX_CAPABILITY_VERSION_3,
	};
	struct __user_cap_data_struct d[_LINUX_CAPABILITY_U32S_3];
	unsigned int i;

	if (syscall(SYS_capget, &h, d) < 0)
		return -errno;
	for (i = 0; i < ARRAY_SIZE(d); i++) {
		if (d[i].effective || d[i].permitted || d[i].inheritable) {
			log_warnx("privdrop: capabilities left after the drop "
				  "(word %u: eff %#x prm %#x inh %#x)",
				  i, d[i].effective, d[i].permitted,
				  d[i].inheritable);
			return -EPERM;
		}
	}
	return 0;
}

/* Bounding and ambient sets, one capability at a time up to the last. */
static int check_bound_ambient(void)
{
	int cap, r;

	for (cap = 0; cap < 64; cap++) {
		r = prctl(PR_CAPBSET_READ, cap, 0, 0, 0);
		if (r < 0 && errno == EINVAL)
			return 0; /* past the kernel's last capability */
		if (r != 0) {
			log_warnx("privdrop: capability %d is still in the "
				  "bounding set",
				  cap);
			return -EPERM;
		}
		if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_IS_SET, cap, 0, 0) !=
		    0) {
			log_warnx("privdrop: capability %d is still ambient",
				  cap);
			return -EPERM;
		}
	}
	return 0;
}

static int check_dropped(uid_t uid, gid_t gid)
{
	int ret;

	ret = check_ids(uid, gid);
	if (ret == 0)
		ret = check_cap_sets();
	if (ret == 0)
		ret = check_bound_ambient();
	if (ret == 0 && prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) != 1) {
		log_warnx("privdrop: no_new_privs is not set");
		ret = -EPERM;
	}
	/* The way back must be closed too (OpenSSH checks the same). */
	if (ret == 0 && (setuid(0) == 0 || setgid(0) == 0)) {
		log_warnx("privdrop: could get root back after the drop");
		ret = -EPERM;
	}
	return ret;
}

int privdrop_to(uid_t uid, gid_t gid)
{
	int r;

	if (uid == 0 || gid == 0) {
		log_warnx("privdrop: refusing to run as uid %u "
			  "gid %u (root)",
			  uid, gid);
		return -EINVAL;
	}
	capng_clear(CAPNG_SELECT_ALL);
	r = capng_change_id((int)uid, (int)gid,
			    CAPNG_DROP_SUPP_GRP | CAPNG_CLEAR_BOUNDING);
	if (r != 0) {
		log_warnx("privdrop: capng_change_id(%u, %u) failed with %d "
			  "(see capng_change_id(3); needs root)",
			  uid, gid, r);
		return -EPERM;
	}
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 &&
	    errno != EINVAL) {
		log_warn("privdrop: clearing the ambient set");
		return -errno;
	}
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) {
		log_warn("privdrop: PR_SET_NO_NEW_PRIVS");
		return -errno;
	}
	return check_dropped(uid, gid);
}
