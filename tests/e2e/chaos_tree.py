#!/usr/bin/env python3
"""Builds one chaos tree: copies of the fixture trees with a random fifth of the files replaced by
garbage, plus a symlink loop and a dangling link in directories the collectors walk, and the odd
layouts of tests/fixtures/layouts: a namespace without a multipath head shown under its
subsystem as well as its controller (served once, never twice), and a phys_state whose number
and name disagree.

    chaos_tree.py FIXTURES OUT SEED

writes OUT/{sysfs,procfs,configfs,ethtool} and prints one line per changed file
("kind path") to OUT/chaos.txt. The same SEED always gives the same tree.
"""
import os
import random
import shutil
import sys

TREES = ("sysfs", "procfs", "configfs", "ethtool")
# Directories the collectors list, so a loop or dangling link there is walked, not ignored.
LINK_DIRS = (
    "sysfs/class/infiniband",
    "sysfs/class/nvme",
    "sysfs/class/nvme-subsystem",
    "sysfs/class/net",
    "sysfs/block",
    "configfs/nvmet/subsystems",
    "configfs/nvmet/ports",
    "ethtool",
)

INVALID_UTF8 = [
    b"\xff", b"\xfe", b"\x80", b"\xbf",  # never valid; stray continuation bytes
    b"\xc0\xaf", b"\xc1\xbf", b"\xe0\x80\xaf", b"\xf0\x80\x80\xaf",  # overlong
    b"\xed\xa0\x80", b"\xed\xbf\xbf",  # UTF-16 surrogates
    b"\xf4\x90\x80\x80", b"\xf5\x80\x80\x80",  # above U+10FFFF
    b"\xe2\x82", b"\xf0\x9f\x98",  # truncated
]
NUMBERS = [
    b"18446744073709551616", b"99999999999999999999999999999999999999", b"-1", b"-42",
    b"-9223372036854775809", b"NaN", b"nan", b"-nan", b"inf", b"-inf", b"Infinity", b"1e400",
    b"-1e400", b"0x7fffffff", b"1.5", b"-0", b"4294967296", b"+7", b" 12 ", b"12abc",
]


def mix(rng, original, pieces):
    """The original content with a few garbage pieces inserted at random offsets."""
    data = bytearray(original.rstrip(b"\n") or b"x")
    for _ in range(rng.randint(1, 4)):
        at = rng.randint(0, len(data))
        data[at:at] = rng.choice(pieces)
    return bytes(data) + (b"\n" if rng.random() < 0.7 else b"")


def garbage(rng, original):
    kind = rng.choice(["utf8", "nul", "number", "empty", "long", "control", "random"])
    if kind == "utf8":
        return kind, mix(rng, original, INVALID_UTF8)
    if kind == "nul":
        return kind, mix(rng, original, [b"\x00", b"\x00\x00", b"\x00\xff\xfe"])
    if kind == "number":
        return kind, rng.choice(NUMBERS) + b"\n"
    if kind == "empty":
        return kind, b""
    if kind == "long":
        line = (original.rstrip(b"\n") or b"A") * (100 * 1024 // max(1, len(original)) + 1)
        return kind, line[: 100 * 1024] + b"\n"
    if kind == "control":
        return kind, mix(rng, original, [b"\t", b"\r", b"\x1b[31m", b"\x7f", b"\x01", b"\xc2\x85"])
    return kind, bytes(rng.randrange(256) for _ in range(rng.randint(1, 300)))


def odd_layouts(out, log):
    """Before the garbage, so the copies may be garbled too (then their labels differ)."""
    nvme = os.path.join(out, "sysfs/class/nvme")
    subsystems = os.path.join(out, "sysfs/class/nvme-subsystem")
    for sub in sorted(os.listdir(subsystems)) if os.path.isdir(subsystems) else []:
        sub_dir = os.path.join(subsystems, sub)
        for ctrl in sorted(os.listdir(sub_dir)):
            ctrl_dir = os.path.join(nvme, ctrl)
            if not ctrl.startswith("nvme") or not os.path.isdir(ctrl_dir):
                continue
            for ns in sorted(os.listdir(ctrl_dir)):
                # nvmeXnY (not nvmeXcYnZ: a path) under the controller, not yet in the subsystem
                head, _, rest = ns[4:].partition("n")
                if not ns.startswith("nvme") or not head.isdigit() or not rest.isdigit():
                    continue
                if os.path.exists(os.path.join(sub_dir, ns)):
                    continue
                shutil.copytree(os.path.join(ctrl_dir, ns), os.path.join(sub_dir, ns),
                                symlinks=True)
                log.append(f"twice {os.path.relpath(os.path.join(sub_dir, ns), out)}")
    ib = os.path.join(out, "sysfs/class/infiniband")
    for dev in sorted(os.listdir(ib)) if os.path.isdir(ib) else []:
        phys = os.path.join(ib, dev, "ports/1/phys_state")
        if os.path.isfile(phys):
            with open(phys, "w") as f:
                f.write("4: ACTIVE\n")  # the port state's name for phys_state 4
            log.append(f"mismatch {os.path.relpath(phys, out)}")
            break


def main():
    fixtures, out, seed = sys.argv[1], sys.argv[2], int(sys.argv[3])
    rng = random.Random(seed)
    os.makedirs(out, exist_ok=True)
    files, log = [], []
    for tree in TREES:
        shutil.copytree(os.path.join(fixtures, tree), os.path.join(out, tree), symlinks=True)
    odd_layouts(out, log)
    for tree in TREES:
        dst = os.path.join(out, tree)
        for root, dirs, names in os.walk(dst):
            dirs.sort()
            for n in sorted(names):
                p = os.path.join(root, n)
                if os.path.isfile(p) and not os.path.islink(p):
                    files.append(p)
    for p in rng.sample(files, len(files) // 5):
        with open(p, "rb") as f:
            original = f.read()
        kind, data = garbage(rng, original)
        with open(p, "wb") as f:
            f.write(data)
        log.append(f"{kind} {os.path.relpath(p, out)}")
    # One symlink loop (a <-> b) and one dangling link, each in a directory the collectors list.
    dirs = [d for d in LINK_DIRS if os.path.isdir(os.path.join(out, d))]
    for what in ("loop", "dangling"):
        d = os.path.join(out, rng.choice(dirs))
        if what == "loop":
            os.symlink("chaos_loop_b", os.path.join(d, "chaos_loop_a"))
            os.symlink("chaos_loop_a", os.path.join(d, "chaos_loop_b"))
        else:
            os.symlink("/nonexistent/chaos", os.path.join(d, "chaos_dangling"))
        log.append(f"{what} {os.path.relpath(d, out)}")
    with open(os.path.join(out, "chaos.txt"), "w") as f:
        f.write("\n".join(log) + "\n")


if __name__ == "__main__":
    main()
