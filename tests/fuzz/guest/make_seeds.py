#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Writes the seed corpus of fuzz-guest-cm (cm/): one MAD of each CM
# message as an rdma_cm guest sends it, in fuzz_cm.c's framing ([mode]
# [GRH area if mode & 1][MAD]). Field offsets: IBTA vol. 1 ch. 12. Run it
# again after changing the framing; the seeds are committed.
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
GID_A = bytes(10) + b'\xff\xff' + bytes([10, 99, 0, 1])
GID_B = bytes(10) + b'\xff\xff' + bytes([10, 99, 0, 2])


def write(name, data):
    d = os.path.join(HERE, 'cm')
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), 'wb') as f:
        f.write(data)


def mad(attr, body, tid=0x1122334455667788):
    hdr = struct.pack('>BBBBHHQHHI', 1, 7, 2, 3, 0, 0, tid, attr, 0, 0)
    body = body.ljust(232, b'\0')
    assert len(hdr) == 24 and len(body) == 232
    return hdr + body


def u24(v, low=0):
    return struct.pack('>I', v << 8 | low)


def path(lgid, rgid):
    return (struct.pack('>HH', 0xffff, 0xffff) + lgid + rgid +
            struct.pack('>I', 0x12345 << 12 | 3) + bytes([0, 64, 0, 17 << 3]))


cma = (bytes([0, 0x40]) + struct.pack('>H', 40000) +
       bytes(12) + GID_A[12:] + bytes(12) + GID_B[12:])
req = (struct.pack('>I4xQQ4xI', 0xa1b2c3d4, 0x0000000001064853,
                   0x0002c90300a1b2c3, 0) +
       u24(0x12, 1) + u24(0, 1) + u24(0, 20 << 3 | 1) + u24(0xabcdef,
                                                           20 << 3 | 7) +
       struct.pack('>HBB', 0xffff, 3 << 4 | 7, 15 << 4) +
       path(GID_A, GID_B) + bytes(44))
assert len(req) == 140
req += cma
rep = (struct.pack('>III', 0x01020304, 0xa1b2c3d4, 0) + u24(0x34) +
       u24(0) + u24(0xfedcba) + bytes([1, 1, 15 << 3 | 1, 7 << 5]) +
       struct.pack('>Q', 0x0002c90300d4e5f6))
ids = struct.pack('>II', 0xa1b2c3d4, 0x01020304)
rej = ids + bytes([0, 8 << 1]) + struct.pack('>H', 4) + struct.pack(
    '>Q', 0x0002c90300a1b2c3)
mra = ids + bytes([0, 18 << 3])

write('req', bytes([0]) + mad(0x10, req))
write('rep', bytes([0]) + mad(0x13, rep))
write('rtu', bytes([0]) + mad(0x14, ids))
write('dreq', bytes([0]) + mad(0x15, ids + u24(0x34), tid=2))
write('drep', bytes([0]) + mad(0x16, ids, tid=2))
write('rej', bytes([0]) + mad(0x12, rej))
write('mra', bytes([0]) + mad(0x11, mra))
write('sidr_req', bytes([0]) + mad(0x17, struct.pack(
    '>IH2xQ', 7, 0xffff, 0x0000000001111d2f)))
# a UD receive: IPv6-form GRH (RoCE v2 GIDs), then the REQ
grh = struct.pack('>IHBB', 6 << 28 | 0x12345, 256, 17, 64) + GID_A + GID_B
write('req_grh', bytes([1]) + grh + mad(0x10, req))
# RoCE v2 over IPv4: the IPv4 header in the last 20 bytes
ip4 = (struct.pack('>BBHHHBBH', 0x45, 0, 284, 0, 0x4000, 64, 17, 0) +
       GID_A[12:] + GID_B[12:])
write('rep_grh4', bytes([1]) + bytes(20) + ip4 + mad(0x13, rep))
