#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The man-pages test (suite unit, run by meson from man/meson.build), TAP.

For each page: groff lints it (-ww: every warning; any output fails);
for a page given with its program (PAGE=PROGRAM), every option the built
program's --help prints must appear in the page as rendered text; for the
policy file's page, its keys must be exactly the keys docs/policy.md's
tables list (one truth, two renderings).

Usage: check-man.py POLICY_MD PAGE[=PROGRAM]...
"""
import os
import re
import subprocess
import sys

n = 0
failed = 0


def result(ok, what, detail=""):
    global n, failed
    n += 1
    if not ok:
        failed += 1
    print(("ok" if ok else "not ok") + " %d - %s" % (n, what))
    for line in detail.splitlines():
        print("# " + line)


def groff(args, page):
    env = dict(os.environ, GROFF_NO_SGR="1", LC_ALL="C.UTF-8")
    return subprocess.run(["groff", "-man"] + args + [page],
                          capture_output=True, text=True, env=env)


def render(page):
    """The page as plain ASCII text, lines wide enough not to break options."""
    r = groff(["-Tascii", "-rLL=250n", "-rHY=0", "-P-b", "-P-o", "-P-u"],
              page)
    text = re.sub(r"-\n\s*", "-", r.stdout)
    return text


OPT_LONG = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")
OPT_SHORT = re.compile(r"(?<![\w-])-[A-Za-z?](?![\w-])")


def help_options(program):
    r = subprocess.run([program, "--help"], capture_output=True, text=True,
                       timeout=30)
    out = r.stdout + r.stderr
    return r.returncode, sorted(set(OPT_LONG.findall(out)) |
                                set(OPT_SHORT.findall(out)))


def has_token(text, tok):
    return re.search(r"(?<![\w-])" + re.escape(tok) + r"(?![\w-])", text)


def policy_doc_keys(path):
    keys = set()
    for line in open(path, encoding="utf-8"):
        m = re.match(r"^\| `([a-z_]+)` \|", line)
        if m:
            keys.add(m.group(1))
    return keys


def page_keys(page):
    keys = set()
    for line in open(page, encoding="utf-8"):
        m = re.match(r'^\.BI ([a-z_]+) " = ', line)
        if m:
            keys.add(m.group(1))
    return keys


def main():
    if len(sys.argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    policy_md = sys.argv[1]
    for arg in sys.argv[2:]:
        page, _, program = arg.partition("=")
        name = os.path.basename(page)

        r = groff(["-ww", "-z"], page)
        result(r.returncode == 0 and not r.stderr.strip(),
               "%s: groff -man -ww -z is silent" % name, r.stderr)
        text = render(page)
        result(re.search(r"^NAME\n", text, re.M) and
               re.search(r"^SEE ALSO\n", text, re.M),
               "%s: has NAME and SEE ALSO" % name)

        if program:
            rc, opts = help_options(program)
            result(rc == 0 and len(opts) > 0,
                   "%s --help: exit 0, %d options" %
                   (os.path.basename(program), len(opts)))
            missing = [o for o in opts if not has_token(text, o)]
            result(not missing,
                   "%s: documents every option of %s --help (%s)" %
                   (name, os.path.basename(program), " ".join(opts)),
                   "missing: " + " ".join(missing) if missing else "")

        if name.endswith(".5"):
            doc = policy_doc_keys(policy_md)
            man = page_keys(page)
            result(len(doc) > 10 and doc == man,
                   "%s: the keys of %s (%d) are the page's (%d)" %
                   (name, os.path.basename(policy_md), len(doc), len(man)),
                   "only in the doc: %s\nonly in the page: %s" %
                   (" ".join(sorted(doc - man)), " ".join(sorted(man - doc))))
            missing = [k for k in sorted(doc) if not has_token(text, k)]
            result(not missing, "%s: every key appears in the text" % name,
                   " ".join(missing))
    print("1..%d" % n)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
