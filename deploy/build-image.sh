#!/usr/bin/env bash
# Builds the Debian package (Release) and an OCI container image from it, with no registry:
#
#   deploy/build-image.sh            # as root on Debian 12
#
# 1. build-image/deb/nvmeof-exporter_<version>_<arch>.deb   (Release, dpkg-buildflags, cpack)
# 2. a minimal Debian 12 root (mmdebstrap, from the Debian mirror in this machine's apt sources,
#    essential packages only, no apt) with the .deb and the runtime libraries it Depends on;
#    the binary gets file capabilities cap_bpf,cap_perfmon (the only way a non-root container
#    process gets them: Kubernetes sets no ambient capabilities); documentation is left out
# 3. build-image/nvmeof-exporter_<version>.oci.tar: that root as one layer, committed by
#    buildah, user 65534, entrypoint the exporter; also in local container storage as
#    localhost/nvmeof-exporter:<version>. Push: README.md "Install".
#
# Not part of tests/run-all.sh (it downloads and builds a root filesystem: minutes).
# deploy/README.md ("Container image") has what was checked with it and the numbers.
set -euo pipefail
cd "$(dirname "$0")/.."
[ "$(id -u)" = 0 ] || { echo "run as root (apt-get, mmdebstrap, buildah)" >&2; exit 1; }
OUT=build-image
BUILD=$OUT/build
JOBS=${JOBS:-2}

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
(cd "$BUILD" && cpack -B "$PWD/../deb" >/dev/null)
VERSION=$(cat "$BUILD/generated/nvmeof_version.txt")
DEB=$(readlink -f "$OUT/deb/nvmeof-exporter_${VERSION}_$(dpkg --print-architecture).deb")
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
IMAGE=localhost/nvmeof-exporter:$VERSION
ARCHIVE=$OUT/nvmeof-exporter_${VERSION}.oci.tar
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
