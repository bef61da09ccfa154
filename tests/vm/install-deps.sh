#!/bin/bash
# Installs what the VM harness needs on a Debian 12 host: QEMU, the two kernels of the test
# matrix (bookworm's 6.1 and bookworm-backports' 6.12) and the guest userland (busybox, kmod,
# nvme-cli, fio, rdma-core, iproute2). Idempotent: does nothing when all of it is present.
# Usage: tests/vm/install-deps.sh [6.1] [6.12]   (default: both kernels)
set -euo pipefail
. "$(dirname "$0")/lib.sh"
KERNELS=${*:-6.1 6.12}
SUDO=; [ "$(id -u)" = 0 ] || SUDO=sudo

# Binaries the initramfs copies from the host, plus the host-side tools: promtool lints every
# scrape, protoc with client_model's metrics.proto decodes the protobuf ones (check.py).
need_cmds=(qemu-system-x86_64 /bin/busybox cpio /usr/bin/kmod /usr/sbin/nvme /usr/bin/fio
  /usr/bin/rdma /usr/bin/ip /usr/bin/ibv_devinfo /usr/sbin/bpftool /usr/sbin/biolatency python3 zstd timeout promtool protoc)
PKGS="qemu-system-x86 busybox-static cpio kmod nvme-cli fio rdma-core ibverbs-utils iproute2 \
bpftool libbpf-tools python3 zstd coreutils prometheus protobuf-compiler golang-github-prometheus-client-model-dev"

have_kernel() { [ -n "$(kernel_of "$1")" ]; }
missing=0
for c in "${need_cmds[@]}"; do command -v "$c" >/dev/null 2>&1 || missing=1; done
for k in $KERNELS; do have_kernel "$k" || missing=1; done
[ -f /usr/lib/x86_64-linux-gnu/libibverbs/librxe-rdmav34.so ] || missing=1
[ -f /usr/share/gocode/src/github.com/prometheus/client_model/io/prometheus/client/metrics.proto ] || missing=1
if [ "$missing" = 0 ]; then echo "vm deps: all present"; exit 0; fi

export DEBIAN_FRONTEND=noninteractive
# The kernel packages' postinst builds a host initramfs we never use; skip that work.
export INITRD=No
$SUDO apt-get update -qq
# shellcheck disable=SC2086
$SUDO apt-get install -y -qq --no-install-recommends $PKGS
for k in $KERNELS; do
  have_kernel "$k" && continue
  # 6.1 is bookworm's own kernel; 6.12 comes as the linux-image-6.12-amd64 metapackage, which
  # bookworm-security carries today and bookworm-backports carried first.
  pkg=linux-image-$k-amd64; [ "$k" = 6.1 ] && pkg=linux-image-amd64
  if [ -z "$(apt-cache policy "$pkg" 2>/dev/null | awk '/Candidate:/ && $2 != "(none)"')" ]; then
    echo "deb http://deb.debian.org/debian bookworm-backports main" |
      $SUDO tee /etc/apt/sources.list.d/bookworm-backports.list >/dev/null
    $SUDO apt-get update -qq
  fi
  $SUDO apt-get install -y -qq --no-install-recommends "$pkg"
  have_kernel "$k" || { echo "kernel $k did not install into /boot" >&2; exit 1; }
done
echo "vm deps: installed"
