#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Hostile control-socket clients for test-broker.sh (common/broker_proto.h):
#   slots SOCKET N      opens N connections, says HELLO on each, prints how
#                       many the broker served, then waits for the broker to
#                       close them (idle) and prints how many it closed
#   replies SOCKET      sends LIST without reading until its socket is full,
#                       then reads: prints "sent N got M" (every reply must
#                       come, however long the client took to read)
import select
import socket
import struct
import sys
import time

VERSION, HELLO, LIST, LIST_REPLY = 4, 2, 8, 9


def msg(t):
    return struct.pack("=III", VERSION, t, 0)


def slots(path, n):
    conns, served = [], 0
    for _ in range(n):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        s.connect(path)
        s.settimeout(2)
        try:
            s.send(msg(HELLO))
            if s.recv(1024):
                served += 1
                conns.append(s)
                continue
        except OSError:
            pass
        s.close()
    print("served %d of %d" % (served, n), flush=True)
    # the broker closes idle connections: each reads EOF
    closed, deadline = 0, time.time() + 20
    for s in conns:
        s.settimeout(max(0.1, deadline - time.time()))
        try:
            if s.recv(1024) == b"":
                closed += 1
        except OSError:
            pass
    print("closed %d" % closed, flush=True)


def replies(path):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    s.connect(path)
    s.send(msg(HELLO))  # the first message on every connection
    s.setblocking(False)
    sent = 0
    while sent < 100000:
        try:
            s.send(msg(LIST))
            sent += 1
        except BlockingIOError:
            break
    time.sleep(3)  # the broker must not wait for us meanwhile
    got = 0
    s.setblocking(True)
    s.settimeout(3)
    try:
        while got < sent:
            r = s.recv(4096)
            if not r:
                break
            if struct.unpack("=III", r[:12])[1] == LIST_REPLY:
                got += 1
    except OSError:
        pass
    print("sent %d got %d" % (sent, got), flush=True)


if sys.argv[1] == "slots":
    slots(sys.argv[2], int(sys.argv[3]))
else:
    replies(sys.argv[2])
