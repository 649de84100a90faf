#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The rdmagate SELinux modules inside the full reference policy.

Builds selinux/ (or takes the modules the build made), installs them with
Debian's reference policy (selinux-policy-default, every module it ships)
into a SCRATCH policy store under a temporary root (semodule -p ROOT;
expand-check on, so every neverallow of the reference policy is checked),
then queries the binary policy it built with sesearch and seinfo.  The
machine's own store (/var/lib/selinux) and loaded policy are never touched.

What holds is what the kernel would decide: an allow rule counts unless a
constraint of the policy vetoes it.  Every domain gets, from the reference
policy's `domain` attribute, the right to open the shared libraries,
/dev/null and friends and to create unix sockets; rdmagate_confine.cil
vetoes those for the worker's domains, and the checks below evaluate those
constraints rather than trusting them.

usage: test-selinux-policy.py SRCDIR [RDMAGATE_PP CONFINE_CIL]
Output: TAP.  Skips (plan 1..0 # SKIP) only when the SELinux tools or policy
packages are missing and cannot be installed.  RDMAGATE_SELINUX_KEEP=1 keeps the
scratch root.
"""
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

SANDBOX = 'rdmagate_worker_sandbox_t'
WORKER = 'rdmagate_worker_t'
BROKER = 'rdmagate_broker_t'
MUX = 'rdmagate_mux_t'
TRACE = 'rdmagate_trace_t'
DOMAINS = [BROKER, WORKER, SANDBOX, MUX, TRACE]
RDMA_DEV = 'infiniband_device_t'
UMAD_DEV = 'rdmagate_umad_device_t'

FILE_CLASSES = ['dir', 'file', 'lnk_file', 'chr_file', 'blk_file',
                'sock_file', 'fifo_file', 'anon_inode']
POLICY_DEFAULT = '/usr/share/selinux/default'
DEVEL = '/usr/share/selinux/devel'

# program or file -> Debian package
NEEDED = {
    'sesearch': 'setools',
    'seinfo': 'setools',
    'semodule': 'policycoreutils',
    'checkmodule': 'checkpolicy',
    'semodule_package': 'semodule-utils',
    'matchpathcon': 'selinux-utils',
    'make': 'make',
    'm4': 'm4',
    DEVEL + '/Makefile': 'selinux-policy-dev',
    POLICY_DEFAULT + '/base.pp.bz2': 'selinux-policy-default',
}

results = []


def tap(ok, what, detail=''):
    results.append(ok)
    print('%s %d - %s' % ('ok' if ok else 'not ok', len(results), what))
    if detail:
        for line in detail.rstrip().splitlines():
            print('#   ' + line)
    sys.stdout.flush()


def skip_all(why):
    # Meson's TAP protocol reads the plan; exit status 77 would be an error
    # there (as in tests/host/broker/test-broker.sh).
    print('1..0 # SKIP ' + why)
    sys.exit(0)


def have(thing):
    if thing.startswith('/'):
        return os.path.exists(thing)
    return shutil.which(thing) is not None


def ensure_packages():
    missing = sorted({pkg for thing, pkg in NEEDED.items()
                      if not have(thing)})
    if not missing:
        return
    if os.geteuid() != 0 or not shutil.which('apt-get'):
        skip_all('missing packages %s and cannot install them (not root '
                 'or no apt-get)' % ' '.join(missing))
    print('# installing ' + ' '.join(missing))
    env = dict(os.environ, DEBIAN_FRONTEND='noninteractive')
    r = subprocess.run(['apt-get', 'install', '-y', '-q',
                        '--no-install-recommends'] + missing,
                       env=env, capture_output=True, text=True)
    if r.returncode != 0:
        skip_all('missing packages %s; apt-get install failed: %s' %
                 (' '.join(missing), r.stderr.strip().splitlines()[-1:]))
    still = [t for t in NEEDED if not have(t)]
    if still:
        skip_all('still missing after apt-get: ' + ' '.join(still))


def run(cmd, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if r.returncode != 0:
        raise RuntimeError('%s failed (%d):\n%s%s' % (
            ' '.join(cmd), r.returncode, r.stdout[-4000:], r.stderr[-4000:]))
    return r.stdout


# ---- the policy ---------------------------------------------------------

class Policy:
    """One binary policy, read with a few sesearch/seinfo calls: its
    attributes, its constraints, and the allow rules of each source asked
    about (all of them, then filtered here)."""

    def __init__(self, path):
        self.path = path
        self._rules = {}
        self.members = self._read_attributes()
        self.attrs = {}
        for a, types in self.members.items():
            for t in types:
                self.attrs.setdefault(t, set()).add(a)
        self.constraints = self._read_constraints()

    def sesearch(self, *args):
        out = run(['sesearch', self.path] + list(args))
        return [parse_rule(line) for line in out.splitlines()
                if line.strip()]

    def _read_attributes(self):
        out = run(['seinfo', self.path, '-x', '-a'])
        members, cur = {}, None
        for line in out.splitlines():
            m = re.match(r'\s+attribute (\S+);', line)
            if m:
                cur = members.setdefault(m.group(1), [])
            elif cur is not None and line.strip():
                cur.append(line.strip())
        if len(members) < 50:
            raise RuntimeError('seinfo listed %d attributes' % len(members))
        return members

    def types_of(self, name):
        """The types a rule's source or target stands for."""
        return self.members.get(name, [name])

    def _read_constraints(self):
        out = run(['seinfo', self.path, '--constrain'])
        cons = []
        for line in out.splitlines():
            m = re.match(r'\s*constrain (\S+) (\{[^}]*\}|\S+) (\(.*\));\s*$',
                         line)
            if not m or 'rdmagate_' not in m.group(3):
                continue
            perms = m.group(2).strip('{} ').split()
            cons.append((m.group(1), set(perms), m.group(3),
                         parse_expr(m.group(3))))
        return cons

    def vetoed_by(self, src, tgt, cls, perm):
        """The constraint that forbids src->tgt:cls perm, or None."""
        for c_cls, c_perms, text, expr in self.constraints:
            if c_cls == cls and perm in c_perms and \
                    not eval_expr(expr, src, tgt, self):
                return text
        return None

    def rules(self, src):
        if src not in self._rules:
            self._rules[src] = [r for r in self.sesearch('-A', '-s', src)
                                if r['kind'] == 'allow']
        return self._rules[src]

    def granted(self, src, cls_perms, target=None):
        """(rule, target type, class, perm) of every allow rule giving src
        one of cls_perms ({class: perms}), constraints ignored."""
        out = []
        for rule in self.rules(src):
            want = cls_perms.get(rule['class'], set()) & rule['perms']
            if not want:
                continue
            tgts = [src] if rule['target'] == 'self' else \
                self.types_of(rule['target'])
            for t in tgts:
                if target and t != target:
                    continue
                out += [(rule['text'], t, rule['class'], p)
                        for p in sorted(want)]
        return out

    def effective(self, src, cls_perms, target=None):
        """What src really has: granted and not vetoed by a constraint."""
        return [g for g in self.granted(src, cls_perms, target)
                if not self.vetoed_by(src, g[1], g[2], g[3])]

    def vetoed(self, src, cls_perms):
        """How many grants the constraints take back."""
        return sum(1 for g in self.granted(src, cls_perms)
                   if self.vetoed_by(src, g[1], g[2], g[3]))

    def has(self, src, tgt, cls, perm):
        return bool(self.effective(src, {cls: {perm}}, target=tgt))


def parse_rule(line):
    text = line.strip()
    m = re.match(r'(\w+) (\S+) (\S+):(\S+) (\{[^}]*\}|[^;\s]+)( "[^"]*")?;',
                 text)
    if not m:
        raise RuntimeError('cannot parse sesearch output: ' + text)
    return {'kind': m.group(1), 'source': m.group(2), 'target': m.group(3),
            'class': m.group(4), 'perms': set(m.group(5).strip('{} ').split()),
            'text': text}


def parse_expr(text):
    """seinfo's constraint expression -> nested tuples.  Knows t1/t2
    against names, and, or, not: what rdmagate_confine.cil uses."""
    toks = re.findall(r'\(|\)|==|!=|\w+', text)
    pos = [0]

    def peek():
        return toks[pos[0]] if pos[0] < len(toks) else None

    def take():
        pos[0] += 1
        return toks[pos[0] - 1]

    def primary():
        if peek() == '(':
            take()
            e = disj()
            if take() != ')':
                raise ValueError('unbalanced: ' + text)
            return e
        if peek() == 'not':
            take()
            return ('not', primary())
        left, op, right = take(), take(), take()
        if left not in ('t1', 't2') or op not in ('==', '!='):
            raise ValueError('unsupported constraint term %s %s %s in %s'
                             % (left, op, right, text))
        return (op, left, right)

    def conj():
        e = primary()
        while peek() == 'and':
            take()
            e = ('and', e, primary())
        return e

    def disj():
        e = conj()
        while peek() == 'or':
            take()
            e = ('or', e, conj())
        return e

    e = disj()
    if peek() is not None:
        raise ValueError('trailing tokens in ' + text)
    return e


def eval_expr(e, t1, t2, pol):
    op = e[0]
    if op == 'and':
        return eval_expr(e[1], t1, t2, pol) and eval_expr(e[2], t1, t2, pol)
    if op == 'or':
        return eval_expr(e[1], t1, t2, pol) or eval_expr(e[2], t1, t2, pol)
    if op == 'not':
        return not eval_expr(e[1], t1, t2, pol)
    t = t1 if e[1] == 't1' else t2
    name = e[2]
    match = t == name or name in pol.attrs.get(t, ())
    return match if op == '==' else not match


# ---- the scratch store --------------------------------------------------

def build_modules(srcdir, root):
    out = os.path.join(root, 'modules')
    run([os.path.join(srcdir, 'build-module.sh'), srcdir, out],
        env=dict(os.environ, PYTHON=sys.executable))
    return (os.path.join(out, 'rdmagate.pp'),
            os.path.join(out, 'rdmagate_confine.cil'))


def install_store(root, pp, cil):
    os.makedirs(os.path.join(root, 'etc/selinux'))
    os.makedirs(os.path.join(root, 'var/lib/selinux'))
    with open(os.path.join(root, 'etc/selinux/semanage.conf'), 'w') as f:
        # expand-check: the reference policy's neverallows are checked
        f.write('module-store = direct\nexpand-check = 1\n')
    with open(os.path.join(POLICY_DEFAULT, '.modules')) as f:
        mods = [m for m in f.read().split() if m != 'base']
    args = ['semodule', '-n', '-p', root, '-s', 'default', '-X', '100',
            '-i', os.path.join(POLICY_DEFAULT, 'base.pp.bz2')]
    for m in mods:
        args += ['-i', os.path.join(POLICY_DEFAULT, m + '.pp.bz2')]
    args += ['-X', '400', '-i', pp, '-i', cil]
    run(args)
    pols = glob.glob(os.path.join(root, 'etc/selinux/default/policy/policy.*'))
    if len(pols) != 1:
        raise RuntimeError('no binary policy built in %s' % root)
    return pols[0], len(mods) + 1


# ---- the checks ---------------------------------------------------------

def fmt(found, limit=12):
    lines = ['%s:%s %s  (from: %s)' % (t, c, p, r) for r, t, c, p in found]
    more = len(lines) - limit
    return '\n'.join(lines[:limit] + (['... %d more' % more]
                                      if more > 0 else []))


def socket_classes(pol):
    out = run(['seinfo', pol.path, '-c'])
    return [c.strip() for c in out.splitlines()
            if c.strip().endswith('_socket')]


def check_sandbox(pol):
    S = SANDBOX
    files_open = {c: {'open'} for c in FILE_CLASSES}
    found = [f for f in pol.effective(S, files_open)
             if not (f[2] == 'chr_file' and f[1] == RDMA_DEV)]
    tap(not found and pol.has(S, RDMA_DEV, 'chr_file', 'open'),
        'sandbox: no open on any file class but its verbs device (%s; %d '
        'grants of the reference policy vetoed by rdmagate_confine)' %
        (RDMA_DEV, pol.vetoed(S, files_open)), fmt(found))

    change = {c: {'create', 'link', 'rename', 'unlink', 'setattr'}
              for c in FILE_CLASSES}
    change['dir'] |= {'add_name', 'remove_name', 'rmdir', 'reparent'}
    found = pol.effective(S, change)
    tap(not found, 'sandbox: no create/link/rename/unlink/setattr on any '
        'file class', fmt(found))

    socks = socket_classes(pol)
    found = pol.effective(S, {c: {'create'} for c in socks})
    tap(not found and len(socks) > 40,
        'sandbox: no create on any of the %d socket classes' % len(socks),
        fmt(found))

    exe = {'file': {'execute', 'execute_no_trans', 'entrypoint', 'execmod'}}
    exe.update({c: {'execute', 'execmod'} for c in FILE_CLASSES
                if c != 'file'})
    found = pol.effective(S, exe)
    tap(not found, 'sandbox: no execute, execute_no_trans, entrypoint or '
        'execmod on anything (%d reference grants vetoed)' %
        pol.vetoed(S, exe), fmt(found))

    found = pol.effective(S, {'process': {
        'transition', 'dyntransition', 'setexec', 'setcurrent',
        'setfscreate', 'setsockcreate', 'setkeycreate', 'ptrace', 'fork',
        'execmem', 'execstack', 'execheap', 'share'},
        'process2': {'nnp_transition', 'nosuid_transition'}})
    trans = [r['text'] for r in pol.sesearch('-T', '-s', S, '-c', 'process')]
    tap(not found and not trans, 'sandbox: no transition of any kind, no '
        'new context, no fork, no executable memory',
        fmt(found) + '\n'.join(trans))

    sig = pol.effective(S, {'process': {'signal', 'sigkill', 'sigstop',
                                        'signull'}})
    others = [f for f in sig if f[1] != S]
    tap(not others and any(f[1] == S and f[3] == 'sigkill' for f in sig),
        'sandbox: signals only its own type', fmt(others))

    caps = pol.effective(S, {'capability': {'chown', 'dac_override',
                                            'setuid', 'net_admin',
                                            'sys_admin', 'kill', 'ipc_lock',
                                            'sys_resource', 'net_raw'},
                             'capability2': {'bpf', 'perfmon', 'mac_admin'},
                             'cap_userns': {'sys_admin', 'net_admin'},
                             'bpf': {'map_create', 'prog_load'},
                             'perf_event': {'open'}})
    tap(not caps, 'sandbox: no capability, bpf or perf_event', fmt(caps))

    need = [(S, RDMA_DEV, 'chr_file', p) for p in
            ('ioctl', 'read', 'write', 'map', 'getattr')]
    need += [(S, WORKER, 'fd', 'use'), (S, BROKER, 'fd', 'use'),
             (S, BROKER, 'unix_stream_socket', 'accept'),
             (S, BROKER, 'unix_stream_socket', 'read'),
             (S, BROKER, 'unix_stream_socket', 'write'),
             (S, 'svirt_t', 'fd', 'use'),
             (S, 'svirt_tmpfs_t', 'file', 'map'),
             (S, 'svirt_tmpfs_t', 'file', 'write'),
             (S, 'anon_inodefs_t', 'file', 'read'),
             (S, 'unlabeled_t', 'infiniband_pkey', 'access')]
    missing = ['%s %s:%s %s' % n for n in need if not pol.has(*n)]
    tap(not missing, 'sandbox: still uses what it holds (uverbs ioctl/'
        'read/write/mmap, inherited and received fds, guest memfds, '
        'P_Keys)', '\n'.join(missing))


def check_worker(pol):
    W = WORKER
    found = pol.effective(W, {'chr_file': {'open'}, 'blk_file': {'open'}})
    tap(not found, 'worker: opens no device node (its sandbox opens the '
        'verbs device)', fmt(found))

    ok = pol.has(W, W, 'process', 'setcurrent') and \
        pol.has(W, SANDBOX, 'process', 'dyntransition')
    exec_trans = pol.effective(W, {'process': {'transition'}})
    tap(ok and not exec_trans, 'worker: may switch itself into the sandbox '
        '(setcurrent, dyntransition), executes into no domain',
        fmt(exec_trans))

    umad = [(d, p) for d in (W, SANDBOX)
            for p in ('open', 'read', 'write', 'ioctl')
            if pol.has(d, UMAD_DEV, 'chr_file', p)]
    tap(not umad, 'workers: no access to umad (%s)' % UMAD_DEV,
        '\n'.join('%s %s' % u for u in umad))

    mcs = set(run(['seinfo', pol.path, '-x', '-a',
                   'mcs_constrained_type']).split())
    relabel = [p for p in ('getattr', 'relabelfrom', 'relabelto')
               if not pol.has(BROKER, 'rdmagate_vm_runtime_t', 'sock_file',
                              p)]
    tap(SANDBOX in mcs and W not in mcs and not relabel,
        'MCS: the sandbox is mcs_constrained_type, the worker before it '
        'not; the broker relabels the VM socket files to their level',
        'broker lacks sock_file %s' % ' '.join(relabel) if relabel else '')


def check_network_admin(pol):
    have_cap = [d for d in DOMAINS
                if pol.effective(d, {'capability': {'net_admin'},
                                     'cap_userns': {'net_admin'}})]
    tap(have_cap == [BROKER], 'capability net_admin: the broker only '
        '(has it: %s)' % (' '.join(have_cap) or 'none'))
    have_nl = [d for d in DOMAINS
               if pol.effective(d, {'netlink_route_socket': {'nlmsg_write'}})]
    tap(have_nl == [BROKER], 'netlink_route_socket nlmsg_write (address '
        'changes): the broker only (has it: %s)' % (' '.join(have_nl) or
                                                    'none'))


def check_transitions(pol):
    B, W = BROKER, WORKER
    tt = pol.sesearch('-T', '-s', B, '-t', 'rdmagate_worker_exec_t', '-c',
                      'process')
    auto = any(r['perms'] == {W} for r in tt)
    need = [(B, W, 'process', 'transition'),
            (B, 'rdmagate_worker_exec_t', 'file', 'execute'),
            (W, 'rdmagate_worker_exec_t', 'file', 'entrypoint'),
            (B, W, 'process2', 'nnp_transition'),
            (B, W, 'process', 'rlimitinh'),
            (B, SANDBOX, 'process', 'sigkill'),
            (B, W, 'process', 'sigkill')]
    missing = ['%s %s:%s %s' % n for n in need if not pol.has(*n)]
    tap(auto and not missing, 'broker -> worker: exec transition '
        '(type_transition, under no_new_privs, RLIMIT_MEMLOCK kept), '
        'stop in both worker domains',
        ('no type_transition\n' if not auto else '') + '\n'.join(missing))

    tt = pol.sesearch('-T', '-s', 'init_t', '-t', 'rdmagate_broker_exec_t',
                      '-c', 'process')
    init_trans = [r for r in pol.sesearch('-A', '-s', 'init_t', '-t', B,
                                          '-c', 'process', '-p',
                                          'transition')]
    tap(any(r['perms'] == {B} for r in tt) and init_trans,
        'systemd (init_t) starts the broker in its domain')

    # the mux: umad, not uverbs
    M = MUX
    tap(pol.has(M, UMAD_DEV, 'chr_file', 'open') and
        pol.has(M, UMAD_DEV, 'chr_file', 'ioctl') and
        not pol.effective(M, {'chr_file': {'open', 'read', 'write',
                                           'ioctl'}}, target=RDMA_DEV),
        'mux: opens umad, not the verbs devices')

    T = TRACE
    need = [(T, T, 'bpf', 'prog_load'), (T, T, 'bpf', 'map_create'),
            (T, T, 'capability2', 'bpf'), (T, T, 'capability2', 'perfmon'),
            (T, T, 'perf_event', 'open'), (T, 'bpf_t', 'file', 'create')]
    missing = ['%s %s:%s %s' % n for n in need if not pol.has(*n)]
    tap(not missing, 'tracer: BPF programs, perf events, pins in bpffs',
        '\n'.join(missing))


def check_file_contexts(root):
    fc = os.path.join(root, 'etc/selinux/default/contexts/files/'
                      'file_contexts')
    want = [('/usr/sbin/rdmagate-broker', 'file', 'rdmagate_broker_exec_t'),
            ('/usr/local/sbin/rdmagate-broker', 'file',
             'rdmagate_broker_exec_t'),
            ('/usr/libexec/rdmagate/rdmagate-worker', 'file',
             'rdmagate_worker_exec_t'),
            ('/usr/local/libexec/rdmagate/rdmagate-worker', 'file',
             'rdmagate_worker_exec_t'),
            ('/usr/local/bin/rdmagate-mux', 'file', 'rdmagate_mux_exec_t'),
            ('/usr/lib/systemd/system/rdmagate-broker.service', 'file',
             'rdmagate_unit_t'),
            ('/usr/lib/x86_64-linux-gnu/rdmagate/rdmagate-worker', 'file',
             'rdmagate_worker_exec_t'),
            ('/usr/bin/rdmagate-mux', 'file', 'rdmagate_mux_exec_t'),
            ('/usr/bin/rdmagate-trace', 'file', 'rdmagate_trace_exec_t'),
            ('/etc/rdmagate/policy.conf', 'file', 'rdmagate_conf_t'),
            ('/run/rdmagate', 'dir', 'rdmagate_var_run_t'),
            ('/run/rdmagate/control', 'sock_file', 'rdmagate_var_run_t'),
            ('/run/rdmagate/vm/vm-a.sock', 'sock_file',
             'rdmagate_vm_runtime_t'),
            ('/dev/infiniband/umad0', 'chr_file', UMAD_DEV),
            ('/dev/infiniband/uverbs0', 'chr_file', RDMA_DEV),
            ('/dev/infiniband/rdma_cm', 'chr_file', RDMA_DEV)]
    bad = []
    for path, kind, typ in want:
        r = subprocess.run(['matchpathcon', '-f', fc, '-m', kind, path],
                           capture_output=True, text=True)
        got = r.stdout.split()[-1] if r.stdout.split() else r.stderr.strip()
        if ':%s:' % typ not in got + ':':
            bad.append('%s (%s): %s, want %s' % (path, kind, got, typ))
    tap(not bad, 'file contexts of the binaries, /etc/rdmagate, '
        '/run/rdmagate, /dev/infiniband (%d paths)' % len(want),
        '\n'.join(bad))


def main():
    if len(sys.argv) not in (2, 4):
        sys.exit(__doc__.strip().splitlines()[-6])
    srcdir = os.path.abspath(sys.argv[1])
    t0 = time.monotonic()
    ensure_packages()
    root = tempfile.mkdtemp(prefix='rdmagate-selinux-')
    try:
        if len(sys.argv) == 4:
            pp, cil = sys.argv[2], sys.argv[3]
        else:
            pp, cil = build_modules(srcdir, root)
        t1 = time.monotonic()
        path, nmods = install_store(root, pp, cil)
        t2 = time.monotonic()
        listed = run(['semodule', '-p', root, '-s', 'default', '-l']).split()
        tap('rdmagate' in listed and 'rdmagate_confine' in listed,
            'scratch store %s: rdmagate and rdmagate_confine installed with '
            'the %d modules of selinux-policy-default, neverallows checked '
            '(%.1f s)' % (root, nmods, t2 - t1))
        pol = Policy(path)
        check_sandbox(pol)
        check_worker(pol)
        check_network_admin(pol)
        check_transitions(pol)
        check_file_contexts(root)
        print('# policy %s: build %.1f s, store and policy %.1f s, '
              'queries %.1f s' % (os.path.basename(path), t1 - t0, t2 - t1,
                                  time.monotonic() - t2))
    except RuntimeError as e:
        tap(False, 'building or querying the scratch policy', str(e))
    finally:
        if os.environ.get('RDMAGATE_SELINUX_KEEP'):
            print('# kept ' + root)
        else:
            shutil.rmtree(root, ignore_errors=True)
    print('1..%d' % len(results))
    return 0 if all(results) else 1


if __name__ == '__main__':
    sys.exit(main())
