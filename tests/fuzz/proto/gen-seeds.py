#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Writes the seed corpora of the protocol decoder targets (fuzz_proto.c):
# tests/fuzz/proto/{broker,worker,mux}/.  Input format: one control byte
# (bits 0-1 the sender, mux: enum mp_from - 1; bits 2-3 the fds that came
# with it; bit 4 HELLO came already; bit 5 a peer that is not root), then
# the datagram {version, type, len} + len payload bytes.  One seed per message type with its exact size and a
# zero payload (the fuzzer finds the field values from there), and a few
# broken frames.  The types and sizes are those of the tables in
# common/{broker,worker,mux}_proto.c; run this again after changing them.
# Files named regress-* are inputs that once crashed a target; kept.
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))

# protocol: (version, {type: (name, payload size, sender)})
PROTOCOLS = {
    "broker": (3, {
        2: ("hello", 0, 2), 3: ("hello-reply", 264, 1), 4: ("spawn", 456, 2),
        5: ("spawn-reply", 276, 1), 6: ("stop", 72, 2),
        7: ("stop-reply", 260, 1), 8: ("list", 0, 2),
        9: ("list-reply", 544, 1), 10: ("reload", 0, 3),
        11: ("reload-reply", 260, 1), 13: ("error-reply", 260, 1),
        14: ("stats", 72, 2), 15: ("stats-reply", 504, 1),
    }),
    "worker": (3, {
        2: ("hello", 80, 1), 4: ("gid-add", 24, 1),
        5: ("gid-add-reply", 176, 2), 6: ("gid-del", 24, 1),
        7: ("gid-del-reply", 176, 2), 8: ("stats", 8, 2),
        9: ("stats-reply", 160, 1), 10: ("mux-channel", 8, 2),
        11: ("gid-gone", 24, 2),
    }),
    "mux": (1, {
        2: ("hello", 0, 1), 3: ("hello-reply", 264, 2),
        4: ("port-add", 68, 1), 5: ("port-add-reply", 260, 2),
        6: ("worker-attach", 76, 1), 7: ("worker-attach-reply", 260, 2),
        8: ("worker-detach", 4, 1), 9: ("worker-detach-reply", 260, 2),
        10: ("gid-add", 92, 1), 11: ("gid-add-reply", 260, 2),
        12: ("gid-del", 20, 1), 13: ("gid-del-reply", 260, 2),
        14: ("stats", 4, 1), 15: ("stats-reply", 416, 2),
        17: ("error-reply", 260, 2), 18: ("rdmacm-attach", 80, 1),
        19: ("rdmacm-attach-reply", 260, 2), 32: ("mad-send", 308, 3),
        33: ("mad-recv", 304, 2),
    }),
}


def frame(sender, version, mtype, length, payload):
    return bytes([(sender - 1) & 0xff]) + struct.pack(
        "<III", version, mtype, length) + payload


def write(d, name, data):
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def main():
    for proto, (version, types) in PROTOCOLS.items():
        d = os.path.join(HERE, proto)
        os.makedirs(d, exist_ok=True)
        for f in os.listdir(d):
            if not f.startswith("regress-"):
                os.remove(os.path.join(d, f))
        for mtype, (name, size, sender) in types.items():
            write(d, name, frame(sender, version, mtype, size, bytes(size)))
        write(d, "bad-short", b"\x00" + struct.pack("<II", version, 2))
        write(d, "bad-version", frame(1, version + 1, 2, 0, b""))
        write(d, "bad-len", frame(1, version, 4, 4, bytes(8)))
    # the receive helper's rules (msg_conn_decode): fds, phase, root
    mux = os.path.join(HERE, "mux")
    v = PROTOCOLS["mux"][0]
    attach = bytearray(76)
    struct.pack_into("<I3s", attach, 0, 1, b"vm1")
    write(mux, "conn-attach-with-fd", bytes([0x10 | 1 << 2]) +
          struct.pack("<III", v, 6, 76) + bytes(attach))
    write(mux, "conn-hello-with-fd", bytes([1 << 2]) +
          struct.pack("<III", v, 2, 0))
    write(mux, "conn-second-hello", bytes([0x10]) +
          struct.pack("<III", v, 2, 0))
    write(os.path.join(HERE, "broker"), "conn-reload-not-root",
          bytes([0x30]) + struct.pack("<III", PROTOCOLS["broker"][0], 10, 0))
    # a SPAWN choosing frontend qemu-pvrdma (3), the last field but the pad
    spawn = bytearray(456)
    struct.pack_into("<I", spawn, 448, 3)
    write(os.path.join(HERE, "broker"), "spawn-qemu-pvrdma",
          frame(2, PROTOCOLS["broker"][0], 4, 456, bytes(spawn)))


if __name__ == "__main__":
    main()
