#!/usr/bin/env python3
"""The include rule of docs/development.md "Layout": each top-level folder is one layer, and a
file includes only its own layer and the layers below it. Fails, naming file, line and include,
when one points up or sideways; also when a layer folder is missing or a new top-level folder
with C or C++ sources is not a layer here (then add it, and to docs/development.md).

usage: check_layers.py REPO_ROOT"""
import os
import re
import sys

# layer -> the layers its files may include (besides its own). bpf/ holds the kernel-side
# programs and the plain headers userspace shares with them: it includes nothing of userspace.
ALLOWED = {
    'bpf': set(),
    'base': set(),
    'readers': {'base', 'bpf'},
    'loader': {'base', 'readers', 'bpf'},
    'collectors': {'base', 'readers', 'loader', 'bpf'},
    'profile': {'base', 'readers', 'loader', 'bpf'},
    'exporter': {'base', 'readers', 'loader', 'collectors', 'bpf'},
}
# The binary's entry point dispatches to the subcommands: the one include across the two
# front ends.
EXCEPTIONS = {('exporter/main.cc', 'profile/commands.h')}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
SOURCES = ('.c', '.cc', '.h')


def layer_of(include, here):
    """The layer an include names: its first path part, or for a bare "x.h" the including
    file's own folder (bpf/ includes its neighbours so)."""
    if '/' not in include:
        return here
    return include.split('/', 1)[0]


def main(root):
    errors = []
    for layer in ALLOWED:
        if not os.path.isdir(os.path.join(root, layer)):
            errors.append(f'{layer}/: a layer of this check, but no such folder')
    for entry in sorted(os.listdir(root)):
        path = os.path.join(root, entry)
        if entry.startswith('.') or entry.startswith('build') or not os.path.isdir(path):
            continue
        if entry in ALLOWED or entry == 'tests':
            continue
        for dirpath, _, files in os.walk(path):
            if any(f.endswith(SOURCES) for f in files):
                errors.append(f'{entry}/: C/C++ sources in a folder that is no layer')
                break
    for layer, allowed in ALLOWED.items():
        for dirpath, _, files in os.walk(os.path.join(root, layer)):
            for name in sorted(files):
                if not name.endswith(SOURCES):
                    continue
                rel = os.path.relpath(os.path.join(dirpath, name), root)
                with open(os.path.join(root, rel), encoding='utf-8') as f:
                    for n, line in enumerate(f, 1):
                        m = INCLUDE.match(line)
                        if not m:
                            continue
                        inc = m.group(1)
                        target = layer_of(inc, layer)
                        if target not in ALLOWED:
                            continue  # generated (skeletons, vmlinux.h, version.h)
                        if target == layer or target in allowed or (rel, inc) in EXCEPTIONS:
                            continue
                        errors.append(f'{rel}:{n}: includes "{inc}": {layer}/ may include '
                                      f'only {", ".join(sorted(allowed | {layer}))}')
    for e in errors:
        print('check_layers:', e, file=sys.stderr)
    if errors:
        return 1
    print(f'check_layers: {len(ALLOWED)} layers, every include points down')
    return 0


if __name__ == '__main__':
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    sys.exit(main(sys.argv[1]))
