#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Writes the seed corpus of fuzz-rdmacm (tests/fuzz/mux/rdmacm-seeds/) in
# the record format fuzz_rdmacm.c describes: QEMU's REG/UNREG/MAD records
# laid out as QEMU 7.2's pvrdma writes them, and wire MADs that teach the
# destination table.  Run it again after changing the format.
import ipaddress
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "rdmacm-seeds")

A = ipaddress.IPv6Address("fd99::10").packed
B = ipaddress.IPv6Address("fd99::11").packed
C = ipaddress.IPv6Address("fd99::12").packed
R = ipaddress.IPv6Address("fd99::120").packed

REQ, MRA, REJ, REP, RTU, DREQ, DREP = 0x10, 0x11, 0x12, 0x13, 0x14, 0x15, 0x16
SIDR_REQ, SIDR_REP = 0x17, 0x18
REG, UNREG, MAD = 0, 1, 2


def mad(attr, local=0, remote=0, cls=0x07):
    m = bytearray(256)
    m[0:4] = bytes([1, cls, 2, 0x03])
    struct.pack_into(">H", m, 16, attr)
    struct.pack_into(">I", m, 24, local)
    if attr not in (REQ, SIDR_REQ, SIDR_REP):
        struct.pack_into(">I", m, 28, remote)
    return m


def req(local, src, dst):
    m = mad(REQ, local)
    m[80:96] = src
    m[96:112] = dst
    return m


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


seeds = {
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

os.makedirs(OUT, exist_ok=True)
for name, data in seeds.items():
    with open(os.path.join(OUT, name), "wb") as f:
        f.write(data)
print("wrote %d seeds to %s" % (len(seeds), OUT))
