#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Writes the seed corpora of the rdma fuzz targets (cmd/, wqe/, mr_pt/):
# one valid input per command / work-request kind, in the targets' input
# framing. Run it from anywhere; it writes next to itself.
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))


def write(sub, name, data):
    d = os.path.join(HERE, sub)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), 'wb') as f:
        f.write(data)


# fuzz_rdma_cmd: [first_len sel][in_len u16][code][request]
def cmd(name, code, req, in_len):
    write('cmd', name, bytes([0]) + struct.pack('<H', in_len) +
          bytes([code]) + req)


qp = struct.pack('<IBBxxIIIIIII', 1, 2, 1, 64, 2, 0, 64, 2, 1, 64)
ah = (bytes(16) + struct.pack('<IBBBx', 0, 3, 64, 0) +
      struct.pack('<BBBB', 0, 0, 1, 1) + bytes(12))
qp_attr = (struct.pack('<IIIIIIIII', 2, 0, 3, 0, 0, 0xabc, 0, 0x12, 7) +
           struct.pack('<HHBBBBBBBBBBBx', 0, 0, 0, 0, 1, 1, 12, 1, 14, 7,
                       7, 0, 0) +
           struct.pack('<I', 0) + bytes(20) + bytes(4) + ah + bytes(40))
assert len(qp_attr) == 160, len(qp_attr)
cmd('query_port', 1, struct.pack('<I', 1), 173)
cmd('create_cq', 2, struct.pack('<I', 128), 5)
cmd('destroy_cq', 3, struct.pack('<I', 0), 1)
cmd('create_pd', 4, b'', 5)
cmd('destroy_pd', 5, struct.pack('<I', 1), 1)
cmd('get_dma_mr', 6, struct.pack('<II', 1, 7), 13)
cmd('create_mr', 7, struct.pack('<III', 1, 1, 16), 13)
cmd('reg_user_mr', 9, struct.pack('<IIQQQQIxxxx', 1, 7, 0x7f0000000100,
                                  3 * 4096, 0x7f0000000100, 0x200000, 4), 13)
cmd('dereg_mr', 10, struct.pack('<I', 1), 1)
cmd('create_qp', 11, qp, 5)
cmd('create_qp_srq', 11, qp + struct.pack('<II', 1, 1), 9)
cmd('modify_qp', 12, struct.pack('<II', 0x11, 0x1191 | 0x80) + qp_attr, 1)
cmd('query_qp', 13, struct.pack('<II', 0x11, 0x1fffff), 161)
cmd('destroy_qp', 14, struct.pack('<I', 0x11), 1)
cmd('query_pkey', 15, struct.pack('<IHxx', 1, 0), 3)
cmd('add_gid', 16, bytes(16) + struct.pack('<IHxxI', 2, 1, 1), 1)
cmd('del_gid', 17, struct.pack('<HxxI', 1, 1), 1)
cmd('req_notify_cq', 18, struct.pack('<II', 0, 2), 1)
cmd('create_srq', 19, struct.pack('<IIII', 1, 128, 2, 16), 9)
cmd('modify_srq', 20, struct.pack('<IIII', 1, 3, 256, 32), 1)
cmd('query_srq', 21, struct.pack('<I', 1), 13)
cmd('destroy_srq', 22, struct.pack('<I', 1), 1)
write('cmd', 'bad_header', bytes([0xf2]) + struct.pack('<H', 5) +
      bytes([2, 0]) + struct.pack('<I', 1))


# fuzz_rdma_wqe: [mode][max_sge][max_inline u16][element]
RC, UC, UD, GSI = 2, 3, 4, 1


def sge(addr, length, lkey):
    return struct.pack('<QII', addr, length, lkey)


def sq(name, qpt, opcode, flags, union, tail, nsge, imm=0):
    hdr = struct.pack('<IIIIQII', nsge, flags, opcode, 0, 0x1234, imm, 0)
    union = union.ljust(56, b'\0')
    write('wqe', name, bytes([qpt << 1, 4]) + struct.pack('<H', 64) +
          hdr + union + tail)


av = (struct.pack('<III', 1, 1, (0x20 << 20) | 0x12345) + bytes(15) +
      b'\x09' + bytes([2, 0, 64]) + bytes(6) + bytes(7))
assert len(av) == 44
sq('rc_send', RC, 2, 2, b'', sge(0x1000, 64, 1) + sge(0x2000, 64, 1), 2)
sq('rc_send_imm', RC, 3, 2, b'', sge(0x1000, 64, 1), 1, imm=0xdeadbeef)
sq('rc_write', RC, 0, 2, struct.pack('<QI', 0x5000, 9), sge(0x1000, 8, 1), 1)
sq('uc_write_imm', UC, 1, 2, struct.pack('<QI', 0x5000, 9),
   sge(0x1000, 8, 1), 1, imm=7)
sq('rc_read', RC, 4, 2, struct.pack('<QI', 0x5000, 9), sge(0x1000, 64, 1), 1)
sq('rc_cas', RC, 5, 2, struct.pack('<QQQI', 0x5008, 1, 2, 9),
   sge(0x1000, 8, 1), 1)
sq('rc_faa', RC, 6, 2, struct.pack('<QQQI', 0x5008, 1, 0, 9),
   sge(0x1000, 8, 1), 1)
sq('rc_inline', RC, 2, 8 | 2, b'', b'hello inline', 0)
sq('ud_send', UD, 2, 2, struct.pack('<II', 0x42, 0x1111) + av,
   sge(0x1000, 256, 1), 1)
sq('gsi_send', GSI, 2, 2, struct.pack('<II', 1, 0x80010000) + av,
   sge(0x1000, 256, 1), 1)
write('wqe', 'rq_recv', bytes([1 | (RC << 1), 4]) + struct.pack('<H', 0) +
      struct.pack('<IIQ', 2, 0, 99) + sge(0x1000, 10, 1) +
      sge(0x3000, 20, 2))


# fuzz_rdma_mr_pt: [npages-1 u16][offset u16][shrink][flags][RAM @0x1000]
def mr_pt(name, npages, off, pages, flags=0x10):
    # L1 at 0x1000, L2 pages right after it, data pages elsewhere.
    n_l2 = (npages + 511) // 512
    l1 = b''.join(struct.pack('<Q', 0x2000 + 4096 * i) for i in range(n_l2))
    ram = bytearray(4096 * (1 + n_l2))
    ram[0:len(l1)] = l1
    for i, gpa in enumerate(pages):
        o = 4096 + 8 * i
        ram[o:o + 8] = struct.pack('<Q', gpa)
    write('mr_pt', name, struct.pack('<HHBB', npages - 1, off, 0, flags) +
          bytes(ram))


mr_pt('one_page', 1, 0x100, [0x100000])
mr_pt('contiguous', 8, 0, [0x100000 + 4096 * i for i in range(8)])
mr_pt('scattered', 6, 0x10, [0x100000, 0x101000, 0x200000, 0x300000,
                             0x301000, 0x50000])
mr_pt('two_l2', 600, 0, [0x400000 + 4096 * i for i in range(600)])
