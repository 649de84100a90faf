#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Plays QEMU's side of the rdmacm-mux protocol (common/rdmacm_mux_proto.h:
# one 360-byte record each way) on a VM's socket, for the host test of the
# broker's qemu-pvrdma attach: "reg GID" sends a REG and prints the mux's
# err_code ("err N"), or "closed" when the mux closes the connection;
# "hold" waits until the connection ends and prints "eof".
# Usage: rdmacm-client.py SOCKET reg GID | hold
import ipaddress
import socket
import struct
import sys

RECORD = 360
path, mode = sys.argv[1], sys.argv[2]
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.settimeout(10)
try:
    s.connect(path)
except OSError as e:
    print("connect: %s" % e.strerror)
    sys.exit(1)


def read_record():
    buf = b""
    while len(buf) < RECORD:
        try:
            part = s.recv(RECORD - len(buf))
        except ConnectionResetError:
            part = b""
        if not part:
            return None
        buf += part
    return buf


if mode == "reg":
    gid = ipaddress.IPv6Address(sys.argv[3]).packed
    # msg_type 0 (request), op_code 0 (REG), the GID; the rest zero
    rec = struct.pack("<II16s", 0, 0, gid).ljust(RECORD, b"\0")
    try:
        s.sendall(rec)
        resp = read_record()
    except OSError:
        resp = None
    if resp is None:
        print("closed")
    else:
        msg_type, op, _, err = struct.unpack_from("<II16sI", resp)
        print("err %d" % err if msg_type == 1 and op == 0 else
              "unexpected type %d op %d" % (msg_type, op))
elif mode == "hold":
    s.settimeout(None)
    print("eof" if read_record() is None else "data", flush=True)
