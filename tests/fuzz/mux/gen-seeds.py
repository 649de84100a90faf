#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Writes the seed corpus of fuzz-mux-router (tests/fuzz/mux/seeds/) in the
# record format fuzz_router.c describes: CM conversations (REQ/REP/RTU,
# DREQ/DREP, REJ, MRA, LAP/APR, SIDR), a spoof, an unknown GID, expiry;
# and that of fuzz-rdmacm (tests/fuzz/mux/rdmacm-seeds/, fuzz_rdmacm.c's
# format): QEMU's REG/UNREG/MAD records as QEMU 7.2's pvrdma writes them,
# between wire MADs that teach the destination table.
# Run it again after changing the format; the seeds are committed.
import ipaddress
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "seeds")

A = ipaddress.IPv6Address("fd99::10").packed
B = ipaddress.IPv6Address("fd99::11").packed
R = ipaddress.IPv6Address("fd99::120").packed

REQ, MRA, REJ, REP, RTU, DREQ, DREP = 0x10, 0x11, 0x12, 0x13, 0x14, 0x15, 0x16
SIDR_REQ, SIDR_REP, LAP, APR = 0x17, 0x18, 0x19, 0x1A


def mad(attr, local=0, remote=0, cls=0x07, ver=2, method=0x03):
    m = bytearray(256)
    m[0:4] = bytes([1, cls, ver, method])
    m[8:16] = b"\x12\x34\x56\x78\x00\x00\x00\x01"
    struct.pack_into(">H", m, 16, attr)
    struct.pack_into(">I", m, 24, local)
    if attr not in (REQ, SIDR_REQ, SIDR_REP):
        struct.pack_into(">I", m, 28, remote)
    return m


def req(local, frm, to):
    m = mad(REQ, local)
    m[80:96] = frm
    m[96:112] = to
    return m


# sel: bit0 from a worker; bit1 port 1 / worker 2; bits2-3 dgid (in) or
# sgid (out): 0 A, 1 B, 2 the record's, 3 none / A2; bit4 QP 2; bit5 dgid R
def rec(sel, m, sgid=R, dgid=R, dt=0):
    m = bytes(m)
    return bytes([sel, dt, len(m) - 1]) + sgid + dgid + m


IN_A, IN_B = 0 | (0 << 2), 2 | (1 << 2)
OUT_1_A, OUT_2_B = 1 | (0 << 2) | 0x20, 1 | 2 | (1 << 2) | 0x20

seeds = {
    # a remote REQ to A, worker 1 answers REP, the RTU comes back
    "passive-connect": rec(IN_A, req(0x1111, R, A)) +
    rec(OUT_1_A, mad(REP, 0x2222, 0x1111)) +
    rec(IN_A, mad(RTU, 0x1111, 0x2222)),
    # worker 1 connects out, then disconnects
    "active-connect-disconnect": rec(OUT_1_A, req(0x42, A, R)) +
    rec(IN_A, mad(MRA, 0x9, 0x42)) + rec(IN_A, mad(REP, 0x9, 0x42)) +
    rec(OUT_1_A, mad(RTU, 0x42, 0x9)) +
    rec(IN_A, mad(DREQ, 0x9, 0x42), dt=200) +
    rec(OUT_1_A, mad(DREP, 0x42, 0x9)),
    # both workers use comm id 7
    "same-id-two-workers": rec(OUT_1_A, req(7, A, R)) +
    rec(OUT_2_B, req(7, B, R)) + rec(IN_A, mad(REP, 1, 7)) +
    rec(IN_B, mad(REJ, 2, 7)),
    "lap-apr": rec(OUT_1_A, req(0x55, A, R)) +
    rec(IN_A, mad(LAP, 0x9, 0x55)) + rec(OUT_1_A, mad(APR, 0x55, 0x9)),
    "sidr": rec(OUT_1_A, mad(SIDR_REQ, 0x77)) +
    rec(IN_A, mad(SIDR_REP, 0x77)) + rec(IN_B, mad(SIDR_REQ, 0x78)),
    # worker 1 sends from B: refused
    "spoof": rec(1 | (1 << 2) | 0x20, req(0x1, B, R)),
    # a REQ for a GID nobody owns, and for no receive index
    "unknown-gid": rec(2 << 2, req(0x1, R, R), dgid=R) +
    rec(3 << 2, req(0x1, R, A)),
    # the REP arrives 61 s after the REQ: expired
    "expired": rec(OUT_1_A, req(0x99, A, R)) +
    rec(IN_A, mad(REP, 0x1, 0x99), dt=61),
    "not-cm": rec(IN_A, mad(0x01, cls=0x03, ver=1, method=0x01)) +
    rec(OUT_1_A | 0x10, req(0x1, A, R)),
    "short": rec(IN_A, mad(REQ)[:30]),
}


# ---- fuzz-rdmacm -------------------------------------------------------

C = ipaddress.IPv6Address("fd99::12").packed
REG, UNREG, MAD = 0, 1, 2


def qemu(op, gid, m=b"", msg_type=0, dt=0, umad_len=None):
    r = bytearray(360)
    struct.pack_into("<II", r, 0, msg_type, op)
    r[8:24] = gid
    struct.pack_into("<i", r, 32, len(m) if umad_len is None else umad_len)
    if op == MAD:
        struct.pack_into(">I", r, 56, 1)
        r[68] = 1
        r[70] = 0xFF
        r[72:88] = gid
        r[100:100 + len(m)] = m
    return bytes([dt << 2]) + bytes(r)


def wire(sgid, m, to_b=False, dt=0):
    return bytes([1 | (2 if to_b else 0) | dt << 2]) + sgid + \
        bytes([len(m) - 1]) + bytes(m)


rdmacm_seeds = {
    "active": qemu(REG, A) + qemu(MAD, A, req(0x42, A, R)) +
    wire(R, mad(REP, 0x9, 0x42)) + qemu(MAD, A, mad(RTU, 0x42, 0x9)) +
    qemu(MAD, A, mad(DREQ, 0x42, 0x9), dt=30) + wire(R, mad(DREP, 0x9, 0x42)),
    "passive": qemu(REG, B) + wire(R, req(0x7, R, B), to_b=True) +
    qemu(MAD, B, mad(REP, 0x8, 0x7)) + wire(R, mad(RTU, 0x7, 0x8), to_b=True) +
    wire(R, mad(DREQ, 0x7, 0x8), to_b=True) +
    qemu(MAD, B, mad(DREP, 0x8, 0x7)) + qemu(UNREG, B),
    "reject": wire(R, req(0x5, R, A)) + qemu(MAD, A, mad(REJ, 0, 0x5)) +
    qemu(MAD, A, mad(MRA, 0x6, 0x5)),
    "sidr": wire(R, mad(SIDR_REQ, 0x77)) + qemu(MAD, A, mad(SIDR_REP, 0x77)) +
    qemu(MAD, A, mad(SIDR_REQ, 0x78)),
    "spoof": qemu(REG, C) + qemu(MAD, C, req(0x1, C, R)) +
    qemu(MAD, A, req(0x1, C, R)),
    "unknown-id": qemu(MAD, A, mad(RTU, 0x1, 0x1234)),
    "malformed": qemu(REG, A, msg_type=1) + qemu(7, A) +
    qemu(MAD, A, mad(RTU), umad_len=300) + qemu(MAD, A, umad_len=-1) +
    qemu(REG, bytes(16)) + qemu(MAD, A, mad(REQ, cls=0x04)),
}

for out, corpus in ((OUT, seeds),
                    (os.path.join(HERE, "rdmacm-seeds"), rdmacm_seeds)):
    os.makedirs(out, exist_ok=True)
    for name, data in corpus.items():
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)
    print("wrote %d seeds to %s" % (len(corpus), out))
