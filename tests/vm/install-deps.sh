#!/bin/bash
# Installs what the VM harness needs on a Debian 12 host: QEMU, the kernels of the test matrix
# and the guest userland (busybox, kmod, nvme-cli, fio, rdma-core, iproute2). Idempotent: does
# nothing when all of it is present.
#   6.1, 6.12  installed as packages of the machine's own suites (bookworm, bookworm-security);
#              where its sources lack one, fetched like the others
#   5.10, 7.2  fetched (lib.sh kernel_fetch): `apt-get download` under a private apt state folder
#              from bullseye(-security) and sid, unpacked with dpkg-deb -x into
#              $(vm_cache_dir)/kernels/RELEASE/ and kept there; the machine's apt sources are never
#              touched
# Usage: tests/vm/install-deps.sh [5.10] [6.1] [6.12] [7.2]   (default: 6.1 6.12)
set -euo pipefail
. "$(dirname "$0")/lib.sh"
KERNELS=${*:-6.1 6.12}
SUDO=; [ "$(id -u)" = 0 ] || SUDO=sudo

# Binaries the initramfs copies from the host, plus the host-side tools: promtool lints every
# scrape, protoc with client_model's metrics.proto decodes the protobuf ones (check.py).
need_cmds=(qemu-system-x86_64 /bin/busybox cpio /usr/bin/kmod /usr/sbin/nvme /usr/bin/fio
  /usr/bin/rdma /usr/bin/ip /usr/bin/ibv_devinfo /usr/sbin/bpftool /usr/sbin/biolatency /usr/sbin/mkfs.ext4 /usr/sbin/tc /usr/sbin/dmsetup
  python3 zstd timeout promtool protoc)
PKGS="qemu-system-x86 busybox-static cpio kmod nvme-cli fio rdma-core ibverbs-utils iproute2 e2fsprogs dmsetup \
bpftool libbpf-tools python3 zstd coreutils prometheus protobuf-compiler golang-github-prometheus-client-model-dev"

have_kernel() { local kv; kv=$(kernel_of "$1") && [ -n "$kv" ] && [ -n "$(kernel_dir "$kv")" ]; }
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
  # bookworm-security carries today (bookworm-backports carried it first). Others, and these
  # where the machine's sources lack them, are fetched into the cache.
  pkg=; case $k in 6.1) pkg=linux-image-amd64 ;; 6.12) pkg=linux-image-6.12-amd64 ;; esac
  if [ -n "$pkg" ] && [ -n "$(apt-cache policy "$pkg" 2>/dev/null | awk '/Candidate:/ && $2 != "(none)"')" ]; then
    $SUDO apt-get install -y -qq --no-install-recommends "$pkg"
  else
    kernel_fetch "$k" >/dev/null || { echo "kernel $k: fetching failed" >&2; exit 1; }
  fi
  have_kernel "$k" || { echo "kernel $k is neither in /boot nor in $(vm_cache_dir)/kernels" >&2; exit 1; }
done
echo "vm deps: installed"
