/* SPDX-License-Identifier: MIT */
/*
 * The wire constants of InfiniBand Communication Management (IBTA vol. 1,
 * ch. 12 and 16.7) that more than one rdmagate program needs: the CM class
 * on QP1 and its attribute ids.  rdmagate-mux routes by them
 * (mux/router.c); the guest simulator speaks them (guest/cm.c).
 */
#ifndef RDMAGATE_COMMON_IB_CM_H
#define RDMAGATE_COMMON_IB_CM_H

#define CM_MGMT_CLASS	 0x07
#define CM_CLASS_VERSION 2
#define CM_METHOD_SEND	 0x03

#define CM_QP1_QPN  1
#define CM_QP1_QKEY 0x80010000u /* the GSI Q_Key */

enum cm_attr_id {
	CM_ATTR_CLASS_PORT_INFO = 0x0001,
	CM_ATTR_REQ = 0x0010,
	CM_ATTR_MRA = 0x0011,
	CM_ATTR_REJ = 0x0012,
	CM_ATTR_REP = 0x0013,
	CM_ATTR_RTU = 0x0014,
	CM_ATTR_DREQ = 0x0015,
	CM_ATTR_DREP = 0x0016,
	CM_ATTR_SIDR_REQ = 0x0017,
	CM_ATTR_SIDR_REP = 0x0018,
	CM_ATTR_LAP = 0x0019,
	CM_ATTR_APR = 0x001a,
};

#endif
