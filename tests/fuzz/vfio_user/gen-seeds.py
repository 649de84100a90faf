#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Writes the seed corpora of the vfio-user fuzz targets (msg/ and caps/) in
# the input formats fuzz_vfio_user_msg.c and fuzz_vfio_user_caps.c
# describe.  Run it again after changing a format; the seeds are committed.
# Files named regress-* are inputs that once crashed a target; this script
# leaves them alone.
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
VERSION, DMA_MAP, DMA_UNMAP, GET_INFO, REGION_INFO = 1, 2, 3, 4, 5
IRQ_INFO, SET_IRQS, REGION_READ, REGION_WRITE, RESET = 7, 8, 9, 10, 13
NO_REPLY = 0x10
QEMU_CAPS = (b'{"capabilities":{"max_msg_fds":16,"max_data_xfer_size":1048576,'
             b'"pgsizes":4096,"max_dma_maps":65535,"migration":{"pgsize":4096,'
             b'"max_bitmap_size":268435456},"write_multiple":true}}\0')
MSIX = 2
EV_TRIGGER = 4 | 32
NONE_TRIGGER = 1 | 32
CONFIG = 7
mid = [0]


def msg(cmd, payload=b"", nfds=0, flags=0):
    mid[0] += 1
    return (bytes([0, nfds]) +
            struct.pack("<HHIII", mid[0], cmd, 16 + len(payload), flags, 0) +
            payload)


def raise_vec(v):
    return bytes([1]) + struct.pack("<H", v)


def ram(off, data):
    return bytes([2]) + struct.pack("<HB", off, len(data)) + data


def rw(region, off, data=None, count=4, flags=0):
    if data is None:
        return msg(REGION_READ, struct.pack("<QII", off, region, count))
    return msg(REGION_WRITE, struct.pack("<QII", off, region, len(data)) + data,
               flags=flags)


def handshake():
    s = msg(VERSION, struct.pack("<HH", 0, 0) + QEMU_CAPS)
    s += msg(GET_INFO, struct.pack("<IIII", 16, 0, 0, 0))
    for i in range(9):
        s += msg(REGION_INFO, struct.pack("<IIIIQQ", 32, 0, i, 0, 0, 0))
    for i in range(5):
        s += msg(IRQ_INFO, struct.pack("<IIII", 16, 0, i, 0))
    s += rw(CONFIG, 0, count=256)
    return s


def u32(v):
    return struct.pack("<I", v)


def u64(v):
    return struct.pack("<Q", v)


def msix_on():
    s = msg(SET_IRQS, struct.pack("<IIIII", 20, EV_TRIGGER, MSIX, 0, 4), nfds=4)
    s += rw(CONFIG, 4, struct.pack("<H", 6))
    s += rw(CONFIG, 0x42, struct.pack("<H", 0x8000))
    return s


SEEDS = {
    "handshake": handshake(),
    "bar-io": handshake() + rw(0, 0) + rw(0, 8, u64(0x1122334455667788)) +
    rw(0, 8, b"\x55", flags=NO_REPLY) + rw(0, 12, count=2),
    "bar-sizing": handshake() + rw(CONFIG, 0x10, u32(0xffffffff)) +
    rw(CONFIG, 0x18, u32(0xffffffff)) + rw(CONFIG, 0x1c, u32(0xffffffff)) +
    rw(CONFIG, 0x10) + rw(CONFIG, 0x18, count=8),
    "dma": handshake() +
    msg(DMA_MAP, struct.pack("<IIQQQ", 32, 3, 0, 0x100000, 0x8000), nfds=1) +
    msg(DMA_MAP, struct.pack("<IIQQQ", 32, 3, 0x8000, 0x108000, 0x8000), nfds=1) +
    ram(0x100, b"payload!" * 4) + rw(CONFIG, 4, struct.pack("<H", 4)) +
    rw(0, 0x20, u64(0x100100)) + rw(0, 0x28, u64(0x107ff0)) +
    rw(0, 0x30, u32(32)) + rw(0, 0x38, u32(1)) + msix_on() +
    rw(0, 0x34, u32(1)) + rw(0, 0x1c) +
    msg(DMA_UNMAP, struct.pack("<IIQQ", 24, 0, 0x108000, 0x8000)) +
    msg(DMA_UNMAP, struct.pack("<IIQQ", 24, 2, 0, 0)),
    "msix": handshake() + msix_on() + raise_vec(0) + raise_vec(3) +
    rw(2, 16 + 12, u32(1)) + raise_vec(1) + rw(2, 0x1000, count=8) +
    rw(2, 16 + 12, u32(0)) + rw(CONFIG, 0x42, struct.pack("<H", 0xc000)) +
    raise_vec(2) + rw(CONFIG, 0x42, struct.pack("<H", 0x8000)) +
    msg(SET_IRQS, struct.pack("<IIIII", 20, EV_TRIGGER, MSIX, 2, 1)) +
    raise_vec(2) +
    msg(SET_IRQS, struct.pack("<IIIII", 22, 2 | 32, MSIX, 0, 2) + b"\1\0") +
    msg(SET_IRQS, struct.pack("<IIIII", 20, NONE_TRIGGER, MSIX, 0, 0)),
    "reset": handshake() + msix_on() + rw(0, 8, u32(7)) + msg(RESET) +
    rw(0, 8) + rw(0, 0x44),
    "hostile": handshake() +
    msg(DMA_MAP, struct.pack("<IIQQQ", 32, 3, 0, 0x100000, 0x8000)) +
    msg(SET_IRQS, struct.pack("<IIIII", 20, EV_TRIGGER, MSIX, 79, 2), nfds=2) +
    rw(0, 4094, count=4) + rw(9, 0) + rw(CONFIG, 250, count=8) +
    msg(0x1234, b"x") + msg(VERSION, b"\0\0{}\0"),
}

CAPS = {
    "qemu": QEMU_CAPS,
    "ours": b'{"capabilities":{"max_msg_fds":8,"max_data_xfer_size":4096,'
            b'"pgsizes":4096,"max_dma_maps":8}}\0',
    "nested": b' {"x":[1,-2.5e3,"s\\u00e9\\n",null,true,{}],'
              b'"capabilities":{"future":{"a":[]},"write_multiple":false}}\0',
    "empty": b"{}\0",
}


def write(sub, name, data):
    d = os.path.join(HERE, sub)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


for n, s in SEEDS.items():
    write("msg", n, s)
for n, s in CAPS.items():
    write("caps", n, s)
