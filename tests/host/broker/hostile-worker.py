#!/usr/bin/python3
# SPDX-License-Identifier: MIT
# A compromised worker, run by the broker in place of rdmagate-worker (its
# uid, cgroup and fds: the broker channel's listening socket is fd 5): it
# speaks the worker channel (common/worker_proto.h) as hostile code would.
# Usage: hostile-worker.py MODE OUTDIR
#   flood: HELLO, then GID_ADDs the policy refuses, for at least 2 s and at
#          least 5000 of them, never reading a reply; OUTDIR/flooding when
#          it starts, OUTDIR/flood-done when it ends; 6 s later one more
#          refused claim (its line carries the count of dropped ones)
#   empty: HELLO, an empty datagram, then a refused GID_ADD: OUTDIR/empty
#          gets the reply's status; then it closes the channel and waits
#          for the broker's new connection: OUTDIR/again gets the status
#          of a refused GID_ADD on it; then it answers STATS
#   reclaim: claims ::ffff:10.99.0.10 as RoCE v2, then (once OUTDIR/go-v1
#          exists) the same address as RoCE v1, then (once OUTDIR/go-v2
#          exists) as v2 again: OUTDIR/v2, OUTDIR/v1 and OUTDIR/v2again get
#          each reply's "status host_index"
import os
import socket
import struct
import sys
import time

VERSION = 3  # RDMAGATE_WORKER_PROTO_VERSION, common/worker_proto.h
HELLO, GID_ADD, GID_ADD_REPLY, STATS, STATS_REPLY = 2, 4, 5, 8, 9
ROCE_V1, ROCE_V2 = 1, 2

mode, out = sys.argv[1], sys.argv[2]


def note(name, text=""):
    with open(os.path.join(out, name + ".tmp"), "w") as f:
        f.write(text)
    os.rename(os.path.join(out, name + ".tmp"), os.path.join(out, name))


def wait_for_file(name):
    while not os.path.exists(os.path.join(out, name)):
        time.sleep(0.1)


def msg(mtype, payload):
    return struct.pack("=III", VERSION, mtype, len(payload)) + payload


def hello():
    return msg(HELLO, struct.pack("=II72s", os.getpid(), 0, b"a"))


def refused_claim(seq):
    # ::ffff:10.98.x.y, an address the test's policy does not give vm a
    gid = bytes(10) + b"\xff\xff" + bytes([10, 98, (seq >> 8) & 0xFF,
                                           1 + seq % 250])
    return msg(GID_ADD, struct.pack("=II16s", seq, ROCE_V2, gid))


def reply_status(conn, seq, index=False):
    """The status (and host index) of the GID_ADD_REPLY to seq (other
    messages skipped)."""
    conn.settimeout(10)
    while True:
        d = conn.recv(4096)
        if not d:
            return "closed"
        _, t, _ = struct.unpack_from("=III", d)
        if t == GID_ADD_REPLY:
            s, st, idx = struct.unpack_from("=III", d, 12)
            if s == seq:
                return "%d %d" % (st, idx) if index else str(st)


def claim(seq, gid_type, addr):
    gid = bytes(10) + b"\xff\xff" + socket.inet_aton(addr)
    return msg(GID_ADD, struct.pack("=II16s", seq, gid_type, gid))


lsock = socket.socket(fileno=5)
conn, _ = lsock.accept()
conn.send(hello())
if mode == "flood":
    note("flooding")
    t0, n = time.monotonic(), 0
    while n < 5000 or time.monotonic() - t0 < 2:
        n += 1
        conn.send(refused_claim(n))
    note("flood-done", str(n))
    time.sleep(6)
    conn.send(refused_claim(n + 1))
    while True:
        time.sleep(60)
elif mode == "empty":
    conn.send(b"")
    conn.send(refused_claim(1))
    note("empty", reply_status(conn, 1))
    conn.close()
    lsock.settimeout(10)
    conn, _ = lsock.accept()
    conn.send(hello())
    conn.send(refused_claim(2))
    note("again", reply_status(conn, 2))
    conn.settimeout(None)
    while True:
        d = conn.recv(4096)
        if not d:
            break
        _, t, _ = struct.unpack_from("=III", d)
        if t == STATS:
            seq, = struct.unpack_from("=I", d, 12)
            conn.send(msg(STATS_REPLY, struct.pack("=II", seq, 0) +
                          bytes(19 * 8)))
elif mode == "reclaim":
    conn.send(claim(1, ROCE_V2, "10.99.0.10"))
    note("v2", reply_status(conn, 1, True))
    wait_for_file("go-v1")
    conn.send(claim(2, ROCE_V1, "10.99.0.10"))
    note("v1", reply_status(conn, 2, True))
    wait_for_file("go-v2")
    conn.send(claim(3, ROCE_V2, "10.99.0.10"))
    note("v2again", reply_status(conn, 3, True))
    while True:
        time.sleep(60)
