#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Writes the seed corpora of the PVRDMA fuzz targets (seeds-cmd/,
# seeds-pdir/, seeds-ring/) in the formats the targets describe: commands
# as the driver builds them, a DSR, a two-table directory, ring states.
# Run it again after changing a format; the seeds are committed.
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
PAGE = 4096


def write(sub, name, data):
    d = os.path.join(HERE, sub)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def slot(cmd, body):
    data = struct.pack("<QII", 0x1234, cmd, 0) + body
    return data + bytes(184 - len(data))


def cmd_seeds():
    write("seeds-cmd", "query-port", slot(0, bytes([1]) + bytes(7)))
    write("seeds-cmd", "create-pd", slot(2, struct.pack("<II", 0, 0)))
    write("seeds-cmd", "create-mr", slot(4, struct.pack(
        "<QQQIIII", 0x10000ff0, 0x20, 0x9000, 1, 1, 0, 2)))
    write("seeds-cmd", "create-mr-dma", slot(4, struct.pack(
        "<QQQIIII", 0, 0, 0, 1, 1, 1, 0)))
    write("seeds-cmd", "create-cq", slot(6, struct.pack(
        "<QIIII", 0x7000, 0, 256, 5, 0)))
    # CREATE_QP RC 64x4 send (wqe 256 B: 4 pages + state), 128x2 recv
    write("seeds-cmd", "create-qp", slot(9, struct.pack(
        "<QIIIIIIIIIIIHHHBBBxxx", 0x5000, 1, 1, 1, 0, 64, 128, 4, 2, 0,
        0, 0, 1 + 4 + 2, 4, 0, 0, 2, 0)))
    attrs = struct.pack("<IIIIIIIIIHHBBBBBBBBBBB5x", 2, 0, 3, 0, 0, 0, 0,
                        0x42, 0, 0, 0, 0, 0, 1, 1, 12, 1, 7, 7, 7, 0, 0)
    attrs += bytes(24)  # caps
    ah = bytes(16) + struct.pack("<IBBBB", 0, 3, 64, 0, 0) + \
        struct.pack("<HHBBBBB6sB", 0, 0, 0, 0, 0, 1, 1, bytes(6), 0)
    attrs += ah + ah
    write("seeds-cmd", "modify-qp", slot(10, struct.pack(
        "<II", 1, 1 | (1 << 7) | (1 << 8)) + attrs))
    write("seeds-cmd", "create-bind", slot(15, struct.pack(
        "<III", 1024, 0, 1) + bytes(16) + bytes([2]) + bytes(3)))
    write("seeds-cmd", "create-srq", slot(17, struct.pack(
        "<QIIIIIIB7x", 0x3000, 1, 3, 64, 2, 10, 0, 0)))
    dsr = struct.pack("<IIIIQQIIQIIQQ", 20, 0, 0x9, 0, 0x1000, 0x2000,
                      4, 0, 0x3000, 4, 0, 0x4000, 0xfe000)
    write("seeds-cmd", "dsr", dsr + bytes(280 - len(dsr)))


def pdir_seeds():
    # RAM: page 0 directory, pages 1-2 tables, 600 pages from page 3
    ram = bytearray(3 * PAGE)
    base = 0x100000
    struct.pack_into("<QQ", ram, 0, base + PAGE, base + 2 * PAGE)
    for i in range(600):
        struct.pack_into("<Q", ram, PAGE + 8 * i,
                         base + (3 + i) * PAGE)
    write("seeds-pdir", "two-tables",
          struct.pack("<IIB", 600, 1024, 0) + bytes(ram))
    write("seeds-pdir", "one-page",
          struct.pack("<IIB", 1, 64, 0) + bytes(ram[:2 * PAGE]))


def ring_seeds():
    recs = [(4, 0, 0), (4, 4, 0), (4, 7, 3), (512, 1023, 0),
            (1536, 5, 1), (0, 0, 0), (4, 8, 0), (1 << 24, 1, 0)]
    write("seeds-ring", "states",
          b"".join(struct.pack("<III", *r) for r in recs))
    wqe = struct.pack("<QIIIIII", 7, 2, 0, 2, 2, 0, 0) + bytes(48)
    wqe += struct.pack("<QII", 0x1000, 64, 5) * 2
    write("seeds-ring", "send-wqe", wqe)


cmd_seeds()
pdir_seeds()
ring_seeds()


def dev_seeds():
    # fuzz_pvrdma_dev.c: records [op] + bytes. A driver's session: PD, CQ
    # (ring at 15), QP (ring at 21), a send WQE, its doorbell, an arm, a
    # completion, an event, a reset.
    def cmd(code, body):
        c = struct.pack("<QII", 0x1234, code, 0) + body
        return bytes([1]) + (c + bytes(184))[:184]
    pd = cmd(2, struct.pack("<II", 0, 0))
    base = 0x100000
    cq = cmd(6, struct.pack("<QIIII", base + 15 * PAGE, 0, 64, 2, 0))
    qp = cmd(9, struct.pack("<QIIIIIIIIIIIHHHBBBxxx", base + 21 * PAGE,
                            1, 1, 1, 0, 16, 16, 2, 2, 0, 0, 0, 3, 1, 0, 0,
                            2, 0))
    wqe = struct.pack("<QIIIIII", 7, 1, 0, 2, 2, 0, 0) + bytes(48) + \
        struct.pack("<QII", 0x4000, 64, 0x101)
    # RAM write: page 24 (QP data page 1 = ring page 3), offset 0
    ramw = bytes([0, 24, 0, len(wqe)]) + wqe
    # prod_tail = 1 at page 23 offset 0
    tail = bytes([0, 23, 0, 4]) + struct.pack("<I", 1)
    bell = bytes([2]) + struct.pack("<HI", 0, (1 << 30) | 1)
    arm = bytes([2]) + struct.pack("<HI", 4, (1 << 30) | 1)
    comp = bytes([5, 1, 0, 7])
    ev = bytes([6, 4, 3, 1])
    reset = bytes([7, 6])
    write("seeds-dev", "session",
          pd + cq + qp + ramw + tail + bell + arm + comp + ev)
    write("seeds-dev", "session-reset",
          pd + cq + qp + reset + pd + cq + qp + bell)
    # a host event naming a QP the guest has destroyed: the backend
    # drops it (CI's crash-6ce97e48, a use-after-free in the fake)
    destroy = cmd(12, struct.pack("<II", 1, 0))
    write("seeds-dev", "event-after-destroy",
          pd + cq + qp + destroy + bytes([6, 4, 3, 1]))
    write("seeds-dev", "bad-indices", pd + cq + qp +
          bytes([0, 23, 0, 8]) + struct.pack("<Ii", 0x7fffffff, -1) + bell)


dev_seeds()
