#!/usr/bin/env bash
# Builds the Debian package (Release) and an OCI container image from it, with no registry:
#
#   deploy/build-image.sh            # as root on Debian 12
#   deploy/build-image.sh --check    # then also: install the .deb into a fresh Debian 12 root
#                                    # (apt), serve /metrics there, remove and purge it; run
#                                    # the image under podman (or unshare) and scrape it
#
# 1. build-image/deb/nvmeof-exporter_<version>_<arch>.deb   (Release, dpkg-buildflags, cpack)
# 2. a minimal Debian 12 root (mmdebstrap, from the Debian mirror in this machine's apt sources,
#    essential packages only, no apt) with the .deb and the runtime libraries it Depends on;
#    the binary gets file capabilities cap_bpf,cap_perfmon (the only way a non-root container
#    process gets them: Kubernetes sets no ambient capabilities); documentation is left out
# 3. build-image/nvmeof-exporter_<tag>.oci.tar: that root as one layer, committed by buildah,
#    user 65534, entrypoint the exporter; also in local container storage as
#    localhost/nvmeof-exporter:<tag> (<tag>: the version with "+" as "-", e.g. 0.1.0).
#    Push: README.md "Install".
#
# Not part of tests/run-all.sh (it downloads and builds a root filesystem: minutes).
# deploy/README.md ("Container image") has what was checked with it and the numbers.
set -euo pipefail
cd "$(dirname "$0")/.."
[ "$(id -u)" = 0 ] || { echo "run as root (apt-get, mmdebstrap, buildah)" >&2; exit 1; }
OUT=build-image
BUILD=$OUT/build
JOBS=${JOBS:-2}
CHECK=0
[ "${1:-}" = --check ] && CHECK=1
PORT=${PORT:-10499}

deploy/install-deps.sh
for tool in mmdebstrap buildah; do
  command -v $tool >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
    --no-install-recommends $tool >/dev/null
done

# --- 1. the package, with Debian's hardening flags (_FORTIFY_SOURCE, stack protector, relro,
# bindnow, PIE). CMake reads no CPPFLAGS, so they go into the compiler flags.
eval "$(DEB_BUILD_MAINT_OPTIONS=hardening=+all dpkg-buildflags --export=sh)"
export CFLAGS="$CFLAGS $CPPFLAGS" CXXFLAGS="$CXXFLAGS $CPPFLAGS"
cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DNVMEOF_BUILD_TESTS=OFF >/dev/null
cmake --build "$BUILD" -j"$JOBS"
rm -rf "$OUT/deb"
(cd "$BUILD" && cpack -B "$PWD/../deb" >/dev/null)
DEB=$(readlink -f "$(ls "$OUT"/deb/nvmeof-exporter_*.deb)")
VERSION=$(dpkg-deb -f "$DEB" Version)
echo "package: $DEB ($(du -k "$DEB" | cut -f1) KiB)"

# --- 2. the root filesystem. The Debian entries of this machine's apt sources (its mirror).
SOURCES=$OUT/debian.sources
{
  [ -f /etc/apt/sources.list ] && grep -h '^deb .*debian' /etc/apt/sources.list || true
  for f in /etc/apt/sources.list.d/*.sources; do
    [ -f "$f" ] && grep -q 'debian' "$f" && { cat "$f"; echo; }
  done
  for f in /etc/apt/sources.list.d/*.list; do
    [ -f "$f" ] && grep -h '^deb .*debian' "$f"
  done
} >"$SOURCES" || true
[ -s "$SOURCES" ] || echo "deb http://deb.debian.org/debian bookworm main" >"$SOURCES"

ROOT=$OUT/rootfs
rm -rf "$ROOT"
# --variant=essential: Essential: yes packages only (no apt); the .deb's Depends are added by name
# (mmdebstrap resolves them with the host's apt); --dpkgopt path-exclude: no docs, man pages or
# locales in the image.
DEPENDS=$(dpkg-deb -f "$DEB" Depends | sed 's/([^)]*)//g; s/ //g')
mmdebstrap --variant=essential --include="$DEPENDS" \
  --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-include=/usr/share/doc/*/copyright' \
  --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/locale/*' \
  --dpkgopt='path-exclude=/usr/share/info/*' \
  --customize-hook="copy-in $DEB /tmp" \
  --customize-hook='chroot "$1" dpkg -i /tmp/'"$(basename "$DEB")" \
  --customize-hook='rm -f "$1"/tmp/*.deb "$1"/var/cache/apt/*.bin; rm -rf "$1"/var/lib/apt/lists/*' \
  bookworm "$ROOT" "$SOURCES"
setcap cap_bpf,cap_perfmon=ep "$ROOT/usr/bin/nvmeof_exporter"
echo "root filesystem: $(du -sh "$ROOT" | cut -f1)"

# --- 3. the image
TAG=${VERSION//+/-}  # an image tag may not contain "+"
IMAGE=localhost/nvmeof-exporter:$TAG
ARCHIVE=$OUT/nvmeof-exporter_${TAG}.oci.tar
ctr=$(buildah from scratch)
trap 'buildah rm "$ctr" >/dev/null 2>&1 || true' EXIT
mnt=$(buildah mount "$ctr")
# tar keeps the security.capability xattr (buildah commit records it in the layer).
tar -C "$ROOT" --xattrs --xattrs-include='security.capability' -cf - . |
  tar -C "$mnt" --xattrs --xattrs-include='security.capability' -xpf -
buildah umount "$ctr" >/dev/null
buildah config --user 65534:65534 --port 10420/tcp --entrypoint '["/usr/bin/nvmeof_exporter"]' \
  --workingdir / --label org.opencontainers.image.title=nvmeof-exporter \
  --label org.opencontainers.image.version="$VERSION" \
  --label org.opencontainers.image.licenses=Apache-2.0 "$ctr"
buildah commit --rm "$ctr" "$IMAGE" >/dev/null
trap - EXIT
rm -f "$ARCHIVE"
buildah push "$IMAGE" "oci-archive:$ARCHIVE:$IMAGE" >/dev/null
echo "image: $IMAGE ($(buildah images --format '{{.Size}}' "$IMAGE")); archive: $ARCHIVE ($(du -h "$ARCHIVE" | cut -f1))"

[ $CHECK = 1 ] || exit 0

scrape_ok() {  # scrape_ok WHAT: /metrics answers, every collector succeeds, eBPF is available
  local m
  for _ in $(seq 50); do m=$(curl -fsS "http://127.0.0.1:$PORT/metrics" 2>/dev/null) && break; sleep 0.2; done
  [ -n "${m:-}" ] || { echo "FAIL: $1: no /metrics" >&2; return 1; }
  echo "$1: $(grep -c '^nvmeof_' <<<"$m") nvmeof_* samples; $(grep '^nvmeof_exporter_build_info' <<<"$m")"
  grep '^nvmeof_exporter_collector_success' <<<"$m" | grep -v ' 1$' && { echo "FAIL: $1: a collector failed" >&2; return 1; }
  grep '^nvmeof_exporter_bpf_available' <<<"$m"
}

# --- the .deb in a fresh Debian 12 root: apt pulls in the dependencies
CR=$OUT/check-root
rm -rf "$CR"
mmdebstrap --variant=apt bookworm "$CR" "$SOURCES"
cp "$DEB" "$CR/tmp/"
cp /etc/resolv.conf "$CR/etc/resolv.conf"
mount --bind /proc "$CR/proc"; mount --rbind /sys "$CR/sys"; mount --bind /dev "$CR/dev"
cleanup_root() { umount -R "$CR/sys" "$CR/proc" "$CR/dev" 2>/dev/null || true; }
trap cleanup_root EXIT
chroot "$CR" apt-get update -qq
before=$(chroot "$CR" dpkg-query -W | wc -l)
DEBIAN_FRONTEND=noninteractive chroot "$CR" apt-get install -y -qq "/tmp/$(basename "$DEB")" >/dev/null
echo "fresh root: apt-get install ./$(basename "$DEB"): $(( $(chroot "$CR" dpkg-query -W | wc -l) - before )) packages installed"
chroot "$CR" nvmeof_exporter --version
chroot "$CR" nvmeof_exporter --config.file=/etc/nvmeof_exporter/config.yml --config.check
chroot "$CR" nvmeof_exporter --config.file=/etc/nvmeof_exporter/config.yml \
  --web.listen-address=127.0.0.1:$PORT >"$OUT/check-root.log" 2>&1 &
xpid=$!
scrape_ok "fresh root, host /sys and /proc" || { cat "$OUT/check-root.log"; kill $xpid; exit 1; }
kill $xpid; wait $xpid || true
chroot "$CR" apt-get remove -y -qq nvmeof-exporter >/dev/null
echo "after remove: state $(chroot "$CR" dpkg-query -W -f='${db:Status-Abbrev}' nvmeof-exporter);" \
  "files left: $(cd "$CR" && find etc/nvmeof_exporter usr/bin/nvmeof_exporter lib/systemd/system/nvmeof_exporter.service usr/share/nvmeof-exporter usr/share/doc/nvmeof-exporter 2>/dev/null | tr '\n' ' ')"
chroot "$CR" apt-get purge -y -qq nvmeof-exporter >/dev/null
echo "after purge: state '$(chroot "$CR" dpkg-query -W -f='${db:Status-Abbrev}' nvmeof-exporter 2>/dev/null)';" \
  "files left: '$(cd "$CR" && find etc/nvmeof_exporter usr/bin/nvmeof_exporter lib/systemd/system/nvmeof_exporter.service usr/share/nvmeof-exporter usr/share/doc/nvmeof-exporter 2>/dev/null | tr '\n' ' ')'"
cleanup_root; trap - EXIT

# --- the image, as the DaemonSet runs it: non-root, only CAP_BPF + CAP_PERFMON, no_new_privs,
# read-only root and read-only /sys, host network.
ARGS=(--web.listen-address=127.0.0.1:$PORT --path.sysfs=/host/sys)
# A root given with --path.* must exist: configfs only where it is mounted.
[ -d /sys/kernel/config/nvmet ] && ARGS+=(--path.configfs=/host/sys/kernel/config)
if command -v podman >/dev/null &&
   podman run -d --name nvmeof-exporter-check --replace --network host --read-only \
     --cap-drop ALL --cap-add BPF,PERFMON --security-opt no-new-privileges \
     -v /sys:/host/sys:ro "$IMAGE" "${ARGS[@]}" >"$OUT/podman.log" 2>&1; then
  scrape_ok "podman" || { podman logs nvmeof-exporter-check; podman rm -f nvmeof-exporter-check; exit 1; }
  podman exec nvmeof-exporter-check grep -E '^(Uid|CapEff|NoNewPrivs)' /proc/1/status || true
  podman rm -f nvmeof-exporter-check >/dev/null
else
  echo "podman cannot run the image here: $(cat "$OUT/podman.log")"
  echo "fallback: the image's root with unshare (new mount and PID namespaces), same privileges"
  mkdir -p "$ROOT/host/sys"
  unshare --mount --pid --fork --kill-child bash -c '
    root=$1; shift
    mount --bind "$root" "$root" && mount -o remount,bind,ro "$root" &&
    mount -t proc proc "$root/proc" &&  # this PID namespace'"'"'s, as a container has
    mount --rbind /sys "$root/sys" && mount -o remount,bind,ro "$root/sys" &&  # as a runtime does
    mount --rbind /sys "$root/host/sys" && mount -o remount,bind,ro "$root/host/sys" &&
    exec chroot "$root" setpriv --reuid=65534 --regid=65534 --clear-groups \
      --bounding-set=-all,+bpf,+perfmon --inh-caps=-all --no-new-privs \
      /usr/bin/nvmeof_exporter "$@"' bash "$(readlink -f "$ROOT")" "${ARGS[@]}" >"$OUT/unshare.log" 2>&1 &
  upid=$!
  # The exporter is PID 1 of the new namespace, unshare's child; setpriv's uid change clears
  # --kill-child's death signal, so end it by its parent.
  stop_ns() { pkill -P "$upid" || true; wait "$upid" || true; }
  scrape_ok "unshare" || { cat "$OUT/unshare.log"; stop_ns; exit 1; }
  pid=$(pgrep -P "$upid")
  grep -E '^(Uid|CapEff|NoNewPrivs)' "/proc/$pid/status"
  stop_ns
fi
