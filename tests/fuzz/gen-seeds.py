#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Writes the seed corpora of the fuzz targets (tests/fuzz/vu_msg/ and
# tests/fuzz/virtq/) in the input formats fuzz_vu_msg.c and fuzz_virtq.c
# describe.  Run it again after changing a format; the seeds are committed.
# Files named regress-* are inputs that once crashed a target (kept as seeds
# so every run repeats them); this script leaves them alone.
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))

# ---- vhost-user script ops (fuzz_vu_msg.c) ----------------------------
GET_FEATURES, SET_FEATURES, SET_OWNER, RESET_OWNER, SET_MEM_TABLE = 1, 2, 3, 4, 5
SET_VRING_NUM, SET_VRING_ADDR, SET_VRING_BASE, GET_VRING_BASE = 8, 9, 10, 11
SET_VRING_KICK, SET_VRING_CALL, SET_VRING_ERR = 12, 13, 14
GET_PROTOCOL_FEATURES, SET_PROTOCOL_FEATURES, GET_QUEUE_NUM = 15, 16, 17
SET_VRING_ENABLE, GET_CONFIG, SET_CONFIG, RESET_DEVICE = 18, 24, 25, 34
GET_MAX_MEM_SLOTS, ADD_MEM_REG, REM_MEM_REG, SET_STATUS, GET_STATUS = 36, 37, 38, 39, 40
PF_ALL = (1 << 0) | (1 << 3) | (1 << 9) | (1 << 13) | (1 << 15) | (1 << 16)
F_ALL = (1 << 32) | (1 << 28) | (1 << 30)
UVA = 0x7F0000000000
NOFD = 1 << 8


def msg(req, payload=b"", nfds=0, flags=1):
    return bytes([0, nfds]) + struct.pack("<III", req, flags, len(payload)) + payload


def u64(v):
    return struct.pack("<Q", v)


def state(i, n):
    return struct.pack("<II", i, n)


def kick(q):
    return bytes([1, q])


def write(off, data):
    out = b""
    while data:
        chunk, data = data[:255], data[255:]
        out += bytes([2]) + struct.pack("<HB", off, len(chunk)) + chunk
        off += len(chunk)
    return out


def poll():
    return bytes([3])


def desc(addr, length, flags, nxt):
    return struct.pack("<QIHH", addr, length, flags, nxt)


def handshake(features=F_ALL):
    return (msg(GET_FEATURES) + msg(GET_PROTOCOL_FEATURES)
            + msg(SET_PROTOCOL_FEATURES, u64(PF_ALL))
            + msg(GET_QUEUE_NUM) + msg(GET_MAX_MEM_SLOTS)
            + msg(GET_CONFIG, struct.pack("<III", 0, 16, 0) + bytes(16))
            + msg(SET_OWNER) + msg(SET_FEATURES, u64(features), flags=1 | 8))


def ring(q, num=8, kick_flags=0):
    region = struct.pack("<QQQQ", 0, 0x10000, UVA, 0)
    addr = struct.pack("<IIQQQQ", q, 0, UVA + 0x1000, UVA + 0x3000,
                       UVA + 0x2000, 0)
    return (msg(SET_MEM_TABLE, struct.pack("<II", 1, 0) + region, nfds=1)
            + msg(SET_VRING_NUM, state(q, num))
            + msg(SET_VRING_BASE, state(q, 0))
            + msg(SET_VRING_ADDR, addr)
            + msg(SET_VRING_CALL, u64(q), nfds=1)
            + msg(SET_VRING_KICK, u64(q | kick_flags),
                  nfds=0 if kick_flags & NOFD else 1)
            + msg(SET_VRING_ENABLE, state(q, 1)))


def avail(entries):
    return struct.pack("<HH", 0, len(entries)) + b"".join(
        struct.pack("<H", e) for e in entries)


def direct_chain():
    return (write(0x1000, desc(0x4000, 5, 1, 1) + desc(0x4100, 16, 2, 0))
            + write(0x4000, b"hello") + write(0x2000, avail([0])))


def indirect_chain():
    table = desc(0x4000, 5, 1, 1) + desc(0x4100, 16, 2, 0)
    return (write(0x1000, desc(0x5000, len(table), 4, 0))
            + write(0x5000, table) + write(0x4000, b"hello")
            + write(0x2000, avail([0])))


def vu_msg_seeds():
    mem_reg = struct.pack("<QQQQQ", 0, 0, 0x10000, UVA, 0)
    return {
        "handshake": handshake(),
        "echo-direct": handshake() + ring(0) + direct_chain() + kick(0)
        + msg(GET_VRING_BASE, state(0, 0)) + msg(GET_STATUS),
        "echo-indirect": handshake() + ring(3) + indirect_chain() + kick(3)
        + msg(SET_STATUS, u64(0x0F)) + msg(RESET_DEVICE),
        # RING_EVENT_IDX (29): the rings' event fields are translated too
        "echo-event-idx": handshake(F_ALL | 1 << 29) + ring(2)
        + direct_chain() + kick(2) + kick(2),
        "echo-nofd-poll": handshake() + ring(1, kick_flags=NOFD)
        + direct_chain() + poll() + msg(SET_VRING_ERR, u64(1 | NOFD)),
        "mem-slots": handshake()
        + msg(ADD_MEM_REG, mem_reg, nfds=1) + msg(REM_MEM_REG, mem_reg)
        + msg(RESET_OWNER),
        "bad-config": handshake()
        + msg(SET_CONFIG, struct.pack("<III", 0, 4, 0) + bytes(4), flags=9)
        + msg(GET_CONFIG, struct.pack("<III", 12, 8, 0) + bytes(8)),
    }


# ---- virtq inputs (fuzz_virtq.c) ---------------------------------------
def virtq_input(num_log2, indirect, base, ram):
    return bytes([num_log2, indirect]) + struct.pack("<H", base) + ram


def vring(num, descs, heads, base=0, extra=b"", used_event=None):
    d = b"".join(descs).ljust(16 * num, b"\0")
    a = struct.pack("<HH", 0, (base + len(heads)) & 0xFFFF) + b"".join(
        struct.pack("<H", h) for h in heads).ljust(2 * num, b"\0")
    if used_event is not None:  # RING_EVENT_IDX: used_event, avail_event
        a += struct.pack("<H", used_event)
    used_off = (len(d) + len(a) + 3) & ~3
    used = bytes(4 + 8 * num + (2 if used_event is not None else 0))
    body = (d + a).ljust(used_off, b"\0") + used
    return body + extra


def virtq_seeds():
    return {
        "direct": virtq_input(3, 0, 0, vring(8, [desc(0x1000, 4, 1, 1),
                                                 desc(0x1100, 8, 2, 0)],
                                             [0])),
        "indirect": virtq_input(3, 1, 0, vring(8, [desc(0x400, 32, 4, 0)],
                                               [0]).ljust(0x400, b"\0")
                                + desc(0x1000, 4, 1, 1)
                                + desc(0x1100, 8, 2, 0)),
        "spanning": virtq_input(2, 0, 0, vring(4, [desc(0x7FF0, 0x20, 2, 0)],
                                               [0])),
        "wrap": virtq_input(0, 0, 0xFFFF, vring(1, [desc(0x1000, 1, 0, 0)],
                                                [0], base=0xFFFF)),
        # mode 2 | 4: event index, a notify after every push; used_event 1
        "event-idx": virtq_input(3, 6, 0, vring(8, [desc(0x1000, 4, 1, 1),
                                                    desc(0x1100, 8, 2, 0),
                                                    desc(0x1200, 4, 0, 0)],
                                                [0, 2], used_event=1)),
        # mode 2 | 8: event index, signalling skipped once, index wraps
        "event-idx-wrap": virtq_input(1, 10, 0xFFFF,
                                      vring(2, [desc(0x1000, 1, 0, 0)], [0],
                                            base=0xFFFF, used_event=0xFFFF)),
    }


def main():
    for sub, seeds in (("vu_msg", vu_msg_seeds()), ("virtq", virtq_seeds())):
        d = os.path.join(HERE, sub)
        os.makedirs(d, exist_ok=True)
        for name, data in seeds.items():
            with open(os.path.join(d, name), "wb") as f:
                f.write(data)


if __name__ == "__main__":
    main()
