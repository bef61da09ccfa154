#!/usr/bin/env python3
"""Helpers for test_deploy.sh (python3 stdlib only).

  deploy_check.py unit-caps UNIT            setpriv flags for the unit's capability set and user
  deploy_check.py syscalls UNIT EXE LOG...  syscalls EXE made (strace -f logs, after its execve)
                                            that the unit's SystemCallFilter would refuse, and
                                            files it opened for writing (ProtectSystem=strict,
                                            readOnlyRootFilesystem)
  deploy_check.py k8s MANIFEST DOCKERFILE UNIT
                                            the DaemonSet is non-root, read-only, drops all
                                            capabilities and adds exactly the unit's; the image
                                            sets the same file capabilities; prints its args
"""
import re
import subprocess
import sys


def unit_values(unit, key):
    out = []
    for line in open(unit):
        m = re.match(rf"\s*{key}=(.*)$", line)
        if m:
            out.append(m.group(1).strip())
    return out


def unit_caps(unit):
    bounding = " ".join(unit_values(unit, "CapabilityBoundingSet")).split()
    ambient = " ".join(unit_values(unit, "AmbientCapabilities")).split()
    return bounding, ambient


def setpriv_caps(caps):
    return ",".join(["-all"] + ["+" + c.lower().removeprefix("cap_") for c in caps])


def cmd_unit_caps(unit):
    bounding, ambient = unit_caps(unit)
    if not bounding:
        sys.exit(f"{unit}: no CapabilityBoundingSet")
    if set(ambient) - set(bounding):
        sys.exit(f"{unit}: ambient capabilities outside the bounding set")
    dynamic = any(v.lower() in ("yes", "true", "1") for v in unit_values(unit, "DynamicUser"))
    user = (unit_values(unit, "User") or [""])[-1]
    nnp = any(v.lower() in ("yes", "true", "1") for v in unit_values(unit, "NoNewPrivileges"))
    flags = [f"--bounding-set={setpriv_caps(bounding)}", f"--inh-caps={setpriv_caps(ambient)}",
             f"--ambient-caps={setpriv_caps(ambient)}"]
    if dynamic or (user and user != "root"):
        flags += ["--reuid=65534", "--regid=65534", "--clear-groups"]  # a stand-in unprivileged uid
    if nnp:
        flags.append("--no-new-privs")
    print(" ".join(flags))


def expand_filter(unit):
    """The set of syscalls the unit's SystemCallFilter lines allow (allow-list semantics)."""
    groups, current = {}, None
    listing = subprocess.run(["systemd-analyze", "syscall-filter"], capture_output=True,
                             text=True, check=True).stdout
    for line in listing.splitlines():
        s = line.strip()
        if not s or s.startswith("#"):
            continue
        if line.startswith("@"):  # a group header; indented @names are members
            current = groups.setdefault(s.split()[0], [])
        elif current is not None:
            current.append(s.split()[0])

    def expand(item, seen=()):
        if item.startswith("@"):
            out = set()
            for member in groups.get(item, []):
                if member not in seen:
                    out |= expand(member, seen + (item,))
            return out
        return {item}

    allowed = None
    for value in unit_values(unit, "SystemCallFilter"):
        deny = value.startswith("~")
        items = set()
        for tok in value.lstrip("~").split():
            items |= expand(tok)
        if allowed is None:
            if deny:
                sys.exit("the unit's first SystemCallFilter must be an allow list")
            allowed = items
        elif deny:
            allowed -= items
        else:
            allowed |= items
    # systemd itself needs these to start the service; they are always allowed.
    return (allowed or set()) | {"execve", "exit", "exit_group", "rt_sigreturn", "getrlimit",
                                 "arch_prctl"}


def cmd_syscalls(unit, exe, *strace_logs):
    allowed = expand_filter(unit)
    used, writes = {}, set()
    for strace_log in strace_logs:
        started = False
        for line in open(strace_log):
            line = re.sub(r"^\d+\s+", "", line)
            if not started:
                if re.match(rf'execve\("{re.escape(exe)}"', line) and "= 0" in line:
                    started = True
                continue
            m = re.match(r"(?:<\.\.\. )?([a-z0-9_]+)[( ]", line)
            if not m:
                continue
            name = m.group(1)
            used[name] = used.get(name, 0) + 1
            w = re.match(r'openat\([^,]+, "([^"]+)", ([A-Z_|]+)', line)
            if w and re.search(r"O_WRONLY|O_RDWR|O_CREAT", w.group(2)) and re.search(
                    r"=\s*\d+\s*$", line):
                writes.add(w.group(1))
        if not started:
            sys.exit(f"no successful execve of {exe} in {strace_log}")
    refused = sorted(set(used) - allowed)
    print(f"syscalls used: {len(used)}: {' '.join(sorted(used))}")
    problems = []
    if refused:
        problems.append("outside the unit's SystemCallFilter: " + " ".join(refused))
    writes = {w for w in writes if not w.startswith("/dev/null")}
    if writes:
        problems.append("files opened for writing: " + " ".join(sorted(writes)))
    for p in problems:
        print("FAIL: " + p, file=sys.stderr)
    sys.exit(1 if problems else 0)


def cmd_k8s(manifest, image_script, unit):
    text = open(manifest).read()
    problems = []
    for needle, why in [
        (r"runAsNonRoot:\s*true", "runAsNonRoot: true"),
        (r"runAsUser:\s*[1-9]\d*", "a non-zero runAsUser"),
        (r"readOnlyRootFilesystem:\s*true", "readOnlyRootFilesystem: true"),
        (r"allowPrivilegeEscalation:\s*false", "allowPrivilegeEscalation: false"),
        (r"drop:\s*\[\s*ALL\s*\]", "capabilities drop [ALL]"),
        (r"automountServiceAccountToken:\s*false", "no service account token"),
        (r"readOnly:\s*true", "read-only host mounts"),
        (r"mountPath:\s*/host/var/lib/kubelet\s*\n\s*readOnly:\s*true\s*\n\s*"
         r"mountPropagation:\s*HostToContainer", "the kubelet root read-only, HostToContainer"),
    ]:
        if not re.search(needle, text):
            problems.append(f"{manifest}: missing {why}")
    if re.search(r"privileged:\s*true", text):
        problems.append(f"{manifest}: privileged container")
    m = re.search(r"add:\s*\[([^\]]*)\]", text)
    k8s_caps = sorted("CAP_" + c.strip() for c in (m.group(1).split(",") if m else []) if c.strip())
    bounding, ambient = unit_caps(unit)
    if k8s_caps != sorted(bounding) or sorted(ambient) != sorted(bounding):
        problems.append(f"capabilities differ: DaemonSet {k8s_caps}, unit bounding "
                        f"{sorted(bounding)} ambient {sorted(ambient)}")
    m = re.search(r"^setcap\s+(\S+)=ep", open(image_script).read(), re.M)
    image_caps = sorted(c.upper() for c in m.group(1).split(",")) if m else []
    if image_caps != sorted(bounding):
        problems.append(f"image file capabilities {image_caps} differ from {sorted(bounding)}")
    args = re.findall(r"^\s*- (--[a-z.\-]+=\S+)\s*$", text, re.M)
    if not args:
        problems.append(f"{manifest}: no exporter args found")
    for p in problems:
        print("FAIL: " + p, file=sys.stderr)
    if problems:
        sys.exit(1)
    print("\n".join(args))


if __name__ == "__main__":
    cmd, rest = sys.argv[1], sys.argv[2:]
    {"unit-caps": cmd_unit_caps, "syscalls": cmd_syscalls, "k8s": cmd_k8s}[cmd](*rest)
