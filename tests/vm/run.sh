#!/bin/bash
# Runs one VM scenario: boots a Debian kernel under QEMU with an initramfs holding the guest tools,
# the kernel's modules and the freshly built exporter, runs tests/vm/guest/scenarios/NAME.sh inside,
# brings the results back through 9p and checks them on the host with check.py.
#
#   tests/vm/run.sh --kernel 5.10|6.1|6.12|7.2|<release> --scenario NAME (guest/scenarios/NAME.sh)
#                   [--exporter PATH] [--out DIR] [--timeout SEC] [--accel auto|kvm|tcg]
#
# Exit status: 0 when the guest scenario and the host checks passed; non-zero otherwise, with the
# VM's console log printed. Knobs (environment): FIO_RUNTIME (s, default 3), VM_MEM (MiB, 2048),
# VM_CPUS (2), TCG_THREAD (multi|single), EXPORTER_ARGS (extra flags for the exporter in the
# guest), TRANSPORT (rdma|tcp for hotload and pathfault; rdma for explain), NVMEOF_VM_CACHE, ICOUNT=1 (single-
# threaded TCG with `-icount shift=0,sleep=off`: the guest clock counts guest instructions),
# ICOUNT_IOS, ICOUNT_PATHS, ICOUNT_RWS, ICOUNT_MODES (scenario icount), SOAK_SECONDS,
# ROUND_SECONDS (scenario soak), HOSTFWD=HOSTPORT:GUESTPORT (a virtio NIC on QEMU's user network,
# restrict=on: nothing reaches it but 127.0.0.1:HOSTPORT forwarded to the guest's GUESTPORT).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.sh"

usage() { awk 'NR > 1 && !/^#/ {exit} NR > 1 {sub(/^# ?/, ""); print}' "$0"; exit 2; }
KERNEL_ARG=6.1 SCENARIO='' EXPORTER='' OUT='' TIMEOUT='' ACCEL=auto
while [ $# -gt 0 ]; do
  case $1 in
    --kernel) KERNEL_ARG=$2; shift 2 ;;
    --scenario) SCENARIO=$2; shift 2 ;;
    --exporter) EXPORTER=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    --timeout) TIMEOUT=$2; shift 2 ;;
    --accel) ACCEL=$2; shift 2 ;;
    -h | --help) usage ;;
    *) echo "unknown argument: $1" >&2; usage ;;
  esac
done
[ -n "$SCENARIO" ] || usage
[ -f "$HERE/guest/scenarios/$SCENARIO.sh" ] || { echo "no scenario '$SCENARIO' in $HERE/guest/scenarios" >&2; exit 2; }
EXPORTER=${EXPORTER:-${NVMEOF_EXPORTER:-$HERE/../../build/nvmeof_exporter}}
[ -x "$EXPORTER" ] || { echo "exporter binary not found: $EXPORTER (build it, or pass --exporter)" >&2; exit 2; }
EXPORTER=$(realpath "$EXPORTER")
KV=$(kernel_of "$KERNEL_ARG")
[ -n "$KV" ] || { echo "no kernel $KERNEL_ARG in /boot or $(vm_cache_dir)/kernels: run tests/vm/install-deps.sh $KERNEL_ARG" >&2; exit 2; }
# Installed (/) or fetched into the cache by install-deps.sh (5.10, 7.2): boot/vmlinuz-KV, lib/modules/KV.
KROOT=$(kernel_dir "$KV")
[ -n "$KROOT" ] || { echo "kernel $KV has no vmlinuz or modules.dep: run tests/vm/install-deps.sh $KERNEL_ARG" >&2; exit 2; }
KROOT=${KROOT%/}
for c in qemu-system-x86_64 cpio python3 zstd /bin/busybox; do
  command -v "$c" >/dev/null || { echo "missing $c: run tests/vm/install-deps.sh" >&2; exit 2; }
done

[ "${ICOUNT:-0}" = 1 ] && ACCEL=icount
if [ "$ACCEL" = auto ]; then
  # A PVM-type nested KVM (kvm_pvm) cannot run a stock guest kernel: it hangs in early boot.
  if [ -w /dev/kvm ] && [ ! -d /sys/module/kvm_pvm ]; then ACCEL=kvm; else ACCEL=tcg; fi
fi
# `stages` starts the exporter three times and runs 12 fio jobs: 200-280 s of VM time under TCG.
# `faults` starts it twice and loads hooks a third time; on a loaded host that passes 280 s.
SCALE=1
[ "$SCENARIO" = stages ] && SCALE=3
[ "$SCENARIO" = faults ] && SCALE=2
[ "$SCENARIO" = record ] && SCALE=2  # an exporter, two recordings and top: 70-260 s
[ "$SCENARIO" = lifecycle ] && SCALE=2  # a path fault, 15 s without a link, reconnects, rmmod
case $SCENARIO in explain*) SCALE=2 ;; esac  # three fio phases (80-100 s), fetches and explains: 130-190 s
# `faults` detaches BPF trampolines (the SIGKILL) while the other vCPU runs the patched
# functions. Under multi-threaded TCG that vCPU ran a stale int3 of the kernel's text_poke_bp
# ("Oops: int3" at nvmet_rdma_send_done+0x5, and with kprobes NULL calls) in about 1 of 4 runs,
# most likely MTTCG's (the same teardown under load is what every bpftrace Ctrl-C does on
# hardware). Single-threaded TCG runs both vCPUs in turn on one host thread: still 2 guest CPUs.
[ "$SCENARIO" = faults ] && TCG_THREAD=${TCG_THREAD:-single}
# shellcheck disable=SC2054 # the commas belong to the option values
case $ACCEL in
  kvm) ACCEL_ARGS=(-accel kvm -cpu host); TIMEOUT=${TIMEOUT:-$((120 * SCALE))} ;;
  tcg) ACCEL_ARGS=(-accel "tcg,thread=${TCG_THREAD:-multi}" -cpu max,la57=off)
       TIMEOUT=${TIMEOUT:-$((300 * SCALE))} ;;
  icount) ACCEL_ARGS=(-accel tcg,thread=single -icount shift=0,sleep=off -cpu max,la57=off)
       TIMEOUT=${TIMEOUT:-$((300 * SCALE))} ;;
  *) echo "bad --accel $ACCEL" >&2; exit 2 ;;
esac
OUT=${OUT:-/tmp/nvmeof-vm/$KERNEL_ARG/$SCENARIO}
CACHE=$(vm_cache_dir)
mkdir -p "$OUT" "$CACHE"
OUT=$(realpath "$OUT")
rm -rf "$OUT/guest" "$OUT/console.log" "$OUT/check.log" "$OUT/initrd.cpio" "$OUT/layer"
mkdir -p "$OUT/guest"

t0=$EPOCHREALTIME
el() { awk -v a="$1" -v b="$EPOCHREALTIME" 'BEGIN{printf "%.1f", b-a}'; }
say() { echo "[vm $KERNEL_ARG/$SCENARIO +$(el "$t0")s] $*"; }

# ---- initramfs: a cached base (tools, libraries, modules) + a fresh layer (exporter, scripts) ----
MODULES="configfs virtio_pci 9pnet_virtio 9p veth null_blk rdma_rxe ib_uverbs rdma_ucm \
nvmet nvmet_rdma nvmet_tcp nvme_rdma nvme_tcp nvme_fabrics nvme_core inet_diag tcp_diag \
crc32c_generic crc32c_intel crc32_generic crc32_pclmul crc32_cryptoapi crc32c_cryptoapi ext4 \
dm_delay sch_prio sch_netem cls_u32"
# (a module a kernel lacks or builds in is skipped: 7.x has crc32*_cryptoapi, not crc32_generic)
[ -z "${HOSTFWD:-}" ] || MODULES="$MODULES virtio_net"
BINS="/usr/bin/kmod /usr/sbin/nvme /usr/bin/fio /usr/bin/rdma /usr/bin/ip /usr/bin/ibv_devinfo \
/usr/sbin/bpftool /usr/sbin/biolatency /usr/sbin/mkfs.ext4 /usr/sbin/tc /usr/sbin/dmsetup"
BASE_FORMAT=1 # bump when the base layout changes in a way the hash below cannot see

copy_file() { # SRC DST-in-ROOT (dereferenced; first copy wins)
  local dst=$ROOT$2
  mkdir -p "$(dirname "$dst")"
  [ -e "$dst" ] || cp -L "$1" "$dst"
}
copy_bin() { # SRC [DST]: the binary and the shared libraries ldd finds for it
  local b=$1 dst=${2:-$1}
  copy_file "$b" "$dst"
  { ldd "$b" 2>/dev/null || true; } |
    awk '/=>/ && $3 ~ /^\// {print $3} /^\t\/.*ld-linux/ {print $1}' |
    while read -r lib; do lib=${lib#/usr}; copy_file "$lib" "/usr$lib"; done
}
build_base() { # -> $1 (cpio)
  rm -rf "$ROOT"
  mkdir -p "$ROOT"/usr/{bin,sbin,lib/x86_64-linux-gnu,lib64} "$ROOT"/{etc,proc,sys,dev,tmp,run,mnt/host,opt,root}
  for d in bin sbin lib lib64; do ln -s usr/$d "$ROOT/$d"; done
  for b in $BINS; do copy_bin "$b"; done
  for l in modprobe insmod rmmod lsmod modinfo depmod; do ln -sf ../bin/kmod "$ROOT/usr/sbin/$l"; done
  copy_file /etc/libibverbs.d/rxe.driver /etc/libibverbs.d/rxe.driver
  copy_bin /usr/lib/x86_64-linux-gnu/libibverbs/librxe-rdmav34.so
  cp /bin/busybox "$ROOT/usr/bin/busybox"
  /bin/busybox --list-full | while read -r a; do
    a=${a#usr/}; n=${a##*/}
    # Never shadow a real binary (iproute2's ip, kmod's modprobe) with a busybox applet.
    [ -e "$ROOT/usr/bin/$n" ] || [ -e "$ROOT/usr/sbin/$n" ] || ln -s /usr/bin/busybox "$ROOT/usr/$a"
  done
  local m
  for m in $MODULES; do
    modprobe -S "$KV" -d "${KROOT:-/}" --show-depends "$m" 2>/dev/null | awk '$1=="insmod"{print $2}' || true
  done | sort -u | while read -r ko; do copy_file "$ko" "${ko#"$KROOT"}"; done
  cp "$KROOT/lib/modules/$KV"/modules.{order,builtin,builtin.modinfo} "$ROOT/lib/modules/$KV/"
  depmod -b "$ROOT" "$KV"
  printf '/usr/lib/x86_64-linux-gnu\n/usr/lib\n' >"$ROOT/etc/ld.so.conf"
  ldconfig -r "$ROOT" 2>/dev/null || true
  mkdir -p "$ROOT/etc/nvme"
  echo "nqn.2014-08.org.nvmexpress:uuid:7c1a3e0e-4f3b-4c8e-9d55-0a1b2c3d4e5f" >"$ROOT/etc/nvme/hostnqn"
  echo "7c1a3e0e-4f3b-4c8e-9d55-0a1b2c3d4e5f" >"$ROOT/etc/nvme/hostid"
  echo "root:x:0:0:root:/root:/bin/sh" >"$ROOT/etc/passwd"
  echo "root:x:0:" >"$ROOT/etc/group"
  (cd "$ROOT" && find . -print0 | cpio --null -o -H newc --quiet) >"$1"
}
# The base depends only on the kernel, the host packages it copies from and build_base itself.
base_key() {
  {
    echo "$BASE_FORMAT $KV $MODULES $BINS"
    declare -f build_base copy_bin copy_file
    dpkg-query -W busybox-static kmod nvme-cli fio iproute2 rdma-core ibverbs-utils libc6 bpftool e2fsprogs \
      "linux-image-$KV" 2>/dev/null || true
    cat "$KROOT/packages" 2>/dev/null || true  # a fetched kernel's package versions
  } | sha256sum | cut -c1-16
}
BASE=$CACHE/base-$KV-$(base_key).cpio
exec 9>"$CACHE/.lock"
flock 9 # parallel runs (ctest -j) share the cache
if [ ! -s "$BASE" ]; then
  say "building initramfs base for $KV"
  ROOT=$(mktemp -d "$CACHE/root.XXXXXX")
  build_base "$BASE.tmp"
  rm -rf "$ROOT"
  rm -f "$CACHE"/base-"$KV"-*.cpio
  mv "$BASE.tmp" "$BASE"
fi
# PVH direct boot of the uncompressed vmlinux skips SeaBIOS and the decompressor (~6 s under TCG).
VMLINUZ=$KROOT/boot/vmlinuz-$KV
VMLINUX=$CACHE/vmlinux-$KV-$(sha256sum "$VMLINUZ" | cut -c1-16)
if [ ! -s "$VMLINUX" ]; then
  say "extracting vmlinux from $VMLINUZ"
  rm -f "$CACHE"/vmlinux-"$KV"-*
  python3 - "$VMLINUZ" "$VMLINUX.tmp" <<'PY'
# The bzImage setup header locates the compressed payload; its last 4 bytes are the size.
import lzma, struct, subprocess, sys, zlib
d = open(sys.argv[1], 'rb').read()
start = ((d[0x1f1] or 4) + 1) * 512
offset, length = struct.unpack_from('<II', d, 0x248)
payload = d[start + offset:start + offset + length - 4]
if payload[:6] == b'\xfd7zXZ\x00':
    out = lzma.LZMADecompressor(format=lzma.FORMAT_XZ).decompress(payload)
elif payload[:3] == b'\x1f\x8b\x08':
    out = zlib.decompressobj(31).decompress(payload)
elif payload[:4] == b'\x28\xb5\x2f\xfd':  # zstd (Debian's 6.12): no zstd in python's stdlib
    out = subprocess.run(['zstd', '-dc'], input=payload, capture_output=True, check=True).stdout
else:
    sys.exit('unknown kernel compression %s' % payload[:4].hex())
assert out[:4] == b'\x7fELF', 'not an ELF image'
open(sys.argv[2], 'wb').write(out)
PY
  mv "$VMLINUX.tmp" "$VMLINUX"
fi
flock -u 9

# Fresh layer, rebuilt every run: the exporter under test (with its libraries), init and scripts.
# The kernel unpacks concatenated cpio archives in order, so this layer sits on top of the base.
ROOT=$OUT/layer
mkdir -p "$ROOT/opt/nvmeof" "$ROOT/opt/vm"
copy_bin "$EXPORTER" /opt/nvmeof/nvmeof_exporter
install -m755 "$HERE/guest/init" "$ROOT/init"
cp -r "$HERE/guest/lib.sh" "$HERE/guest/stages.yml" "$HERE/guest/scenarios" "$ROOT/opt/vm/"
(cd "$ROOT" && find . -print0 | cpio --null -o -H newc --quiet) >"$OUT/layer.cpio"
cat "$BASE" "$OUT/layer.cpio" >"$OUT/initrd.cpio"
rm -rf "$ROOT" "$OUT/layer.cpio"

# ---- boot ----
FIO_RUNTIME=${FIO_RUNTIME:-3}
APPEND="console=ttyS0 panic=-1 quiet mitigations=off rdinit=/init SCENARIO=$SCENARIO \
FIO_RUNTIME=$FIO_RUNTIME GUEST_TIMEOUT=$((TIMEOUT - 20))"
# The kernel hands unknown key=value parameters to init as environment variables.
[ -z "${EXPORTER_ARGS:-}" ] || APPEND="$APPEND EXPORTER_ARGS=\"$EXPORTER_ARGS\""
[ -z "${TRANSPORT:-}" ] || APPEND="$APPEND TRANSPORT=$TRANSPORT" # hotload, pathfault, explain
[ -z "${MECHANISMS:-}" ] || APPEND="$APPEND MECHANISMS=\"$MECHANISMS\"" # stages
for v in ICOUNT_IOS ICOUNT_PATHS ICOUNT_RWS ICOUNT_MODES SOAK_SECONDS ROUND_SECONDS; do # icount, soak
  [ -z "${!v:-}" ] || APPEND="$APPEND $v=\"${!v}\""
done
# Multi-threaded TCG can also run a stale int3 while the kernel patches its own text at boot
# ("Oops: int3" in sched_clock_cpu, PID 1 swapper, before /init). Nothing of ours has run then, so
# such a boot is retried once; the retry is printed and kept in boot-retries.
NIC=(-nic none)
[ -z "${HOSTFWD:-}" ] || NIC=(-nic "user,model=virtio-net-pci,restrict=on,hostfwd=tcp:127.0.0.1:${HOSTFWD%%:*}-:${HOSTFWD#*:}")
boot() {
  say "booting $KV ($ACCEL${TCG_THREAD:+ thread=$TCG_THREAD}, timeout ${TIMEOUT}s), exporter $EXPORTER"
  tb=$EPOCHREALTIME
  set +e
  # -nic none unless HOSTFWD: nothing leaves the VM; the scenario's addresses live on a veth pair in it.
  timeout -k 10 "$TIMEOUT" qemu-system-x86_64 "${ACCEL_ARGS[@]}" -m "${VM_MEM:-2048}" -smp "${VM_CPUS:-2}" \
    -display none -no-reboot "${NIC[@]}" -monitor none -serial stdio \
    -kernel "$VMLINUX" -initrd "$OUT/initrd.cpio" -append "$APPEND" \
    -virtfs local,path="$OUT/guest",mount_tag=host0,security_model=none,id=host0 \
    </dev/null 2>&1 | while IFS= read -r line; do
      printf '[%6.1f] %s\n' "$(el "$tb")" "$line"
    done >"$OUT/console.log"
  qrc=${PIPESTATUS[0]}
  set -e
}
rm -f "$OUT/boot-retries" "$OUT/console-failed-boot.log"
boot
if ! grep -q 'init: up at' "$OUT/console.log" && grep -qE 'Oops|Kernel panic' "$OUT/console.log"; then
  why=$(grep -m1 -E 'Oops|Kernel panic' "$OUT/console.log"; grep -m1 'RIP:' "$OUT/console.log" || true)
  say "guest kernel crashed before /init, booting again: $why"
  printf '%s\n' "$why" >>"$OUT/boot-retries"
  cp "$OUT/console.log" "$OUT/console-failed-boot.log"
  rm -rf "$OUT/guest" && mkdir -p "$OUT/guest"
  boot
fi
rm -f "$OUT/initrd.cpio"
vm_wall=$(el "$tb")
grc=$(cat "$OUT/guest/exit-code" 2>/dev/null || echo none)
note=; [ "$qrc" = 124 ] && note=" (killed after ${TIMEOUT}s)"
say "qemu rc=$qrc$note, guest rc=$grc, vm ${vm_wall}s"

# Checked even when the guest failed or timed out: the checks say what was still right.
crc=1
if [ -s "$OUT/guest/scenario.env" ]; then
  set +e
  python3 "$HERE/check.py" --scenario "$SCENARIO" "$OUT/guest" >"$OUT/check.log" 2>&1
  crc=$?
  set -e
fi
status=PASS
[ "$qrc" = 0 ] && [ "$grc" = 0 ] && [ "$crc" = 0 ] || status=FAIL
printf '%s kernel=%s scenario=%s vm=%ss total=%ss qemu_rc=%s guest_rc=%s check_rc=%s\n' \
  "$status" "$KV" "$SCENARIO" "$vm_wall" "$(el "$t0")" "$qrc" "$grc" "$crc" | tee "$OUT/result"
if [ "$status" = FAIL ]; then
  echo "===== VM console log ($OUT/console.log) ====="
  cat "$OUT/console.log"
  if [ -s "$OUT/check.log" ]; then echo "===== host checks ($OUT/check.log) ====="; cat "$OUT/check.log"; fi
  echo "===== results in $OUT/guest ====="
  exit 1
fi
echo "  $(grep -c '^ok' "$OUT/check.log") checks passed ($OUT/check.log); results in $OUT/guest"
# Checks this kernel cannot run pass only by naming why: shown as skips, never folded into passes.
grep '^ok   SKIP' "$OUT/check.log" | sed 's/^ok   /  /' || true
