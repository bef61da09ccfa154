#!/usr/bin/env bash
# Soak test (tests/soak/README.md): the exporter with eBPF on, under loop-disk and netns churn
# and 10 scrapes/s, for SECONDS (default 300; 0 or --forever: until Ctrl-C).
#   tests/soak/soak.sh EXPORTER [SECONDS|0|--forever] [--settle S]
# Exit 0 pass, 1 fail, 77 skip (not root, no eBPF, no loop-control, no network namespaces).
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: $0 EXPORTER [SECONDS|0|--forever] [--settle S]" >&2; exit 2; }
exec python3 "$(dirname "$0")/soak.py" "$@"
