/* SPDX-License-Identifier: MIT */
/*
 * The VMM half of the guest simulator: a vhost-user frontend that talks to
 * a backend (the rdmagate worker) the way QEMU 7-9 does: client socket,
 * negotiation in QEMU's order, REPLY_ACK where QEMU asks for it, the memory
 * table as memfds, rings addressed by the frontend's own user addresses.
 *
 * Functions return 0 or a negative errno: -EPROTO for a malformed or
 * unexpected reply, -ECONNRESET when the backend hung up, -ETIMEDOUT when it
 * did not answer within the timeout, -EREMOTEIO when it answered a
 * REPLY_ACK request with a non-zero status (a refusal).
 */
#ifndef RDMAGATE_GUEST_VHOST_CLIENT_H
#define RDMAGATE_GUEST_VHOST_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/vhost_user.h"
#include "guest/guest_ram.h"
#include "guest/vring.h"

/* Protocol features this frontend implements (what it offers). */
#define VHOST_CLIENT_PROTOCOL_FEATURES                                         \
	((1ull << VHOST_USER_PROTOCOL_F_MQ) |                                  \
	 (1ull << VHOST_USER_PROTOCOL_F_REPLY_ACK) |                           \
	 (1ull << VHOST_USER_PROTOCOL_F_CONFIG) |                              \
	 (1ull << VHOST_USER_PROTOCOL_F_CONFIGURE_MEM_SLOTS) |                 \
	 (1ull << VHOST_USER_PROTOCOL_F_RESET_DEVICE) |                        \
	 (1ull << VHOST_USER_PROTOCOL_F_STATUS))

struct vhost_client_opts {
	/* protocol features to offer: a subset of the above (tests clear
	 * bits to take the other code path, e.g. SET_MEM_TABLE) */
	uint64_t protocol_features;
	/* config space bytes to read with GET_CONFIG; 0 skips it */
	uint32_t config_size;
	/* per reply; 0 means 5000 ms */
	int timeout_ms;
};

struct vhost_client {
	int fd;
	int timeout_ms;
	uint64_t device_features;   /* GET_FEATURES */
	uint64_t features;	    /* what SET_FEATURES acked */
	uint64_t device_protocol;   /* GET_PROTOCOL_FEATURES */
	uint64_t protocol_features; /* negotiated: offered & device */
	uint64_t queue_num;	    /* GET_QUEUE_NUM, 0 without MQ */
	uint64_t max_mem_slots;	    /* GET_MAX_MEM_SLOTS, 0 without */
	uint32_t config_size;
	uint8_t config[VHOST_USER_CONFIG_MAX];
	unsigned long requests; /* messages sent, for statistics */
};

/* Connects to the backend's socket (the backend is the server). */
int vhost_client_connect(struct vhost_client *c, const char *path,
			 int timeout_ms);
/* Takes an already connected socket (e.g. a socketpair end). */
void vhost_client_attach(struct vhost_client *c, int fd, int timeout_ms);
void vhost_client_close(struct vhost_client *c);

bool vhost_client_has_protocol(const struct vhost_client *c, unsigned int bit);

/*
 * Raw message: `hdr` as given (any request, flags and size, so that tests
 * can lie) followed by `len` payload bytes, `nfds` descriptors attached.
 */
int vhost_client_send_raw(struct vhost_client *c,
			  const struct vhost_user_header *hdr,
			  const void *payload, size_t len, const int *fds,
			  unsigned int nfds);
/* A well-formed message of version 1 with `flags` added. */
int vhost_client_send(struct vhost_client *c, uint32_t request, uint32_t flags,
		      const void *payload, uint32_t size, const int *fds,
		      unsigned int nfds);
/* Receives a reply to `request` of exactly `size` payload bytes. */
int vhost_client_recv(struct vhost_client *c, uint32_t request, void *payload,
		      uint32_t size);
/*
 * Sends a request QEMU would confirm: with NEED_REPLY when REPLY_ACK is
 * negotiated (then waits for the status), otherwise followed by a
 * GET_FEATURES round trip as a barrier, as QEMU does.
 */
int vhost_client_send_acked(struct vhost_client *c, uint32_t request,
			    const void *payload, uint32_t size, const int *fds,
			    unsigned int nfds);
/* Sends a request that carries a u64 / a vring state, no reply. */
int vhost_client_send_u64(struct vhost_client *c, uint32_t request,
			  uint64_t value);
int vhost_client_send_state(struct vhost_client *c, uint32_t request,
			    uint32_t index, uint32_t num);

/*
 * The initialisation QEMU performs when the device is created:
 * GET_FEATURES, GET_PROTOCOL_FEATURES, SET_PROTOCOL_FEATURES,
 * GET_QUEUE_NUM (MQ), GET_MAX_MEM_SLOTS (CONFIGURE_MEM_SLOTS), SET_OWNER,
 * GET_FEATURES, GET_CONFIG (CONFIG, when opts->config_size).
 */
int vhost_client_init(struct vhost_client *c,
		      const struct vhost_client_opts *opts);

/*
 * SET_FEATURES with `driver_features` & the device's features (plus
 * VHOST_USER_F_PROTOCOL_FEATURES when offered, as QEMU keeps it), then
 * FEATURES_OK through GET_STATUS/SET_STATUS when STATUS is negotiated.
 */
int vhost_client_set_features(struct vhost_client *c, uint64_t driver_features);

/*
 * The memory table: ADD_MEM_REG per slot when CONFIGURE_MEM_SLOTS is
 * negotiated, else one SET_MEM_TABLE (at most 8 slots). userspace_addr is
 * our own mapping of each slot, mmap_offset its offset in the memfd.
 */
int vhost_client_set_mem_table(struct vhost_client *c,
			       const struct guest_ram *ram);
int vhost_client_add_mem_reg(struct vhost_client *c,
			     const struct guest_ram *ram, unsigned int slot);
int vhost_client_rem_mem_reg(struct vhost_client *c,
			     const struct guest_ram *ram, unsigned int slot);
/* Fills a table entry for `slot` as the two functions above send it. */
void vhost_client_region(const struct guest_ram *ram, unsigned int slot,
			 struct vhost_user_mem_region *ret);

/*
 * Brings one ring up: SET_VRING_NUM, SET_VRING_BASE (`base`: 0 for a new
 * ring, what GET_VRING_BASE returned to resume one), SET_VRING_ADDR (our
 * user addresses), SET_VRING_KICK, SET_VRING_CALL, SET_VRING_ENABLE(1)
 * when protocol features were negotiated.
 */
int vhost_client_start_vring(struct vhost_client *c, const struct guest_vq *q,
			     uint16_t base);
int vhost_client_set_vring_enable(struct vhost_client *c, unsigned int index,
				  bool enable);
/* Stops a ring; *ret_base is where the device would resume. */
int vhost_client_get_vring_base(struct vhost_client *c, unsigned int index,
				uint32_t *ret_base);

/* Adds `bits` to the device status (GET_STATUS, SET_STATUS) as QEMU. */
int vhost_client_add_status(struct vhost_client *c, uint8_t bits);
int vhost_client_set_status(struct vhost_client *c, uint8_t status);
int vhost_client_get_status(struct vhost_client *c, uint8_t *ret_status);
int vhost_client_get_config(struct vhost_client *c, uint32_t offset,
			    uint32_t size, void *ret_buf);
/* RESET_DEVICE when negotiated, else RESET_OWNER (QEMU's fallback). */
int vhost_client_reset_device(struct vhost_client *c);

#endif
