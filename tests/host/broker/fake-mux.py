#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# A stand-in for rdmagate-mux's control socket (common/mux_proto.h) that
# answers the broker and logs every request, one line each ("link N TYPE
# id"), and drops the link, unanswered, at the first WORKER_DETACH of a
# worker it attached on that link: the broker must then converge on the
# next link.  Usage: fake-mux.py SOCKET LOG
import socket
import struct
import sys

VERSION = 1
NAMES = {2: "HELLO", 4: "PORT_ADD", 6: "WORKER_ATTACH", 8: "WORKER_DETACH",
         10: "GID_ADD", 12: "GID_DEL"}
path, log_path = sys.argv[1], sys.argv[2]
log = open(log_path, "w", buffering=1)
srv = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
srv.bind(path)
srv.listen(4)


def status(code, text=b""):
    return struct.pack("<i256s", code, text)


def reply(conn, rtype, payload):
    conn.send(struct.pack("<III", VERSION, rtype, len(payload)) + payload)


link = 0
while True:
    conn, _ = srv.accept()
    link += 1
    attached = set()
    while True:
        try:
            data, anc, _, _ = conn.recvmsg(4096, socket.CMSG_SPACE(4 * 4))
        except OSError:
            break
        if not data:
            break
        for level, kind, fds in anc:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                for fd in struct.unpack("%di" % (len(fds) // 4), fds):
                    socket.close(fd)
        _, rtype, _ = struct.unpack_from("<III", data)
        body = data[12:]
        wid = struct.unpack_from("<I", body)[0] if len(body) >= 4 else 0
        if rtype == 4:  # PORT_ADD: no worker id
            wid = 0
        log.write("link %d %s %d\n" % (link, NAMES.get(rtype, rtype), wid))
        if rtype == 2:
            reply(conn, 3, status(0, b"fake mux") + struct.pack("<I", VERSION))
        elif rtype == 6:
            attached.add(wid)
            reply(conn, 7, status(0))
        elif rtype == 8 and wid in attached:
            log.write("link %d dropped\n" % link)
            break
        elif rtype == 8:
            reply(conn, 9, status(2, b"not attached"))
        else:
            reply(conn, rtype + 1, status(0))
    conn.close()
