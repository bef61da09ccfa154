#!/bin/bash
# fetch_prometheus.sh VERSION: prints the directory that holds the `prometheus` and `promtool`
# binaries of that Prometheus version, fetching them first when needed. Exit 77 (with the reason on
# stderr) when that version cannot be had here, so callers skip visibly instead of passing.
#
#   2.42  Debian 12's installed package (/usr/bin), as the tests always used.
#   3.5   Prometheus 3.5 LTS: Debian unstable's `prometheus` 3.5.x+ds .deb (it needs only libc,
#         so it runs on Debian 12). Fetched with `apt-get download` under a private apt state
#         folder (its own sources.list, lists and cache: the machine's apt sources are never
#         touched), unpacked with `dpkg-deb -x`, and kept in
#         ${NVMEOF_PROMETHEUS_CACHE:-/var/cache/nvmeof-exporter-prometheus}/3.5 between runs.
#
# Environment: NVMEOF_PROMETHEUS_CACHE (cache folder), NVMEOF_PROMETHEUS_MIRROR (Debian mirror,
# default http://deb.debian.org/debian), NVMEOF_PROMETHEUS_SUITE (default sid).
set -euo pipefail

VERSION=${1:?usage: $0 2.42|3.5}
skip() { echo "fetch_prometheus.sh: Prometheus $VERSION unavailable: $*" >&2; exit 77; }

# version_of DIR: the x.y.z of DIR/prometheus, or nothing.
version_of() {
  "$1/prometheus" --version 2>/dev/null | sed -n '1s/^prometheus, version \([0-9.]*\).*/\1/p'
}

case $VERSION in
  2.42)
    dir=/usr/bin
    [ -x $dir/prometheus ] && [ -x $dir/promtool ] ||
      skip "no $dir/prometheus or $dir/promtool (apt-get install prometheus)"
    v=$(version_of $dir)
    case $v in 2.42.*) ;; *) skip "$dir/prometheus is version '${v:-unknown}', not 2.42" ;; esac
    echo $dir
    exit 0 ;;
  3.5) ;;
  *) echo "usage: $0 2.42|3.5" >&2; exit 2 ;;
esac

CACHE=${NVMEOF_PROMETHEUS_CACHE:-/var/cache/nvmeof-exporter-prometheus}
DEST=$CACHE/$VERSION
cached() {
  [ -x "$DEST/prometheus" ] && [ -x "$DEST/promtool" ] || return 1
  case $(version_of "$DEST") in 3.5.*) return 0 ;; *) return 1 ;; esac
}
if cached; then echo "$DEST"; exit 0; fi

for tool in apt-get apt-cache dpkg-deb flock; do
  command -v $tool >/dev/null || skip "$tool not found"
done
mkdir -p "$CACHE" 2>/dev/null && [ -w "$CACHE" ] || skip "cache folder $CACHE is not writable (set NVMEOF_PROMETHEUS_CACHE)"

# One fetch at a time per cache: a second caller waits, then finds the cache filled.
exec 9>"$CACHE/.lock"
flock 9
if cached; then echo "$DEST"; exit 0; fi

TMP=$(mktemp -d "$CACHE/.fetch.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
MIRROR=${NVMEOF_PROMETHEUS_MIRROR:-http://deb.debian.org/debian}
SUITE=${NVMEOF_PROMETHEUS_SUITE:-sid}
KEYRING=/usr/share/keyrings/debian-archive-keyring.gpg
mkdir -p "$TMP/lists/partial" "$TMP/cache/archives/partial" "$TMP/deb" "$TMP/root"
if [ -r $KEYRING ]; then
  echo "deb [signed-by=$KEYRING] $MIRROR $SUITE main" >"$TMP/sources.list"
else
  echo "deb $MIRROR $SUITE main" >"$TMP/sources.list"
fi
APT_OPTS=(-o Dir::Etc::SourceList="$TMP/sources.list" -o Dir::Etc::SourceParts=/dev/null
  -o Dir::State::Lists="$TMP/lists" -o Dir::Cache="$TMP/cache"
  -o Acquire::Languages=none -o APT::Sandbox::User=root -qq)

echo "fetch_prometheus.sh: fetching Prometheus $VERSION from $MIRROR $SUITE into $DEST" >&2
apt-get "${APT_OPTS[@]}" update >"$TMP/update.log" 2>&1 ||
  skip "apt-get update of $MIRROR $SUITE failed: $(tail -n 3 "$TMP/update.log" | tr '\n' ' ')"
ls "$TMP"/lists/*_Packages* >/dev/null 2>&1 ||
  skip "apt-get update got no package list from $MIRROR $SUITE: $(tail -n 3 "$TMP/update.log" | tr '\n' ' ')"
# The 3.5.x version that suite offers, of both packages (sid splits promtool out of prometheus).
pkgs=()
for pkg in prometheus promtool; do
  ver=$(apt-cache "${APT_OPTS[@]}" show $pkg 2>/dev/null |
    sed -n 's/^Version: \(3\.5\.[^ ]*\)$/\1/p' | sort -V | tail -n 1)
  [ -n "$ver" ] || skip "$SUITE offers no $pkg 3.5.x (set NVMEOF_PROMETHEUS_SUITE or NVMEOF_PROMETHEUS_MIRROR, e.g. a snapshot.debian.org URL)"
  pkgs+=("$pkg=$ver")
done
pkgver=${pkgs[0]#*=}
(cd "$TMP/deb" && apt-get "${APT_OPTS[@]}" download "${pkgs[@]}") >"$TMP/download.log" 2>&1 ||
  skip "apt-get download ${pkgs[*]} failed: $(tail -n 3 "$TMP/download.log" | tr '\n' ' ')"
for deb in "$TMP"/deb/*.deb; do
  [ -f "$deb" ] || skip "apt-get download left no .deb"
  dpkg-deb -x "$deb" "$TMP/root" || skip "dpkg-deb -x $deb failed"
done
mkdir "$TMP/out"
for b in prometheus promtool; do
  [ -x "$TMP/root/usr/bin/$b" ] || skip "the .debs ${pkgs[*]} hold no usr/bin/$b"
  mv "$TMP/root/usr/bin/$b" "$TMP/out/$b"
done
echo "$pkgver" >"$TMP/out/VERSION"
v=$(version_of "$TMP/out")
case $v in 3.5.*) ;; *) skip "the unpacked prometheus reports version '${v:-unknown}' (does it run here?)" ;; esac
rm -rf "$DEST"
mv "$TMP/out" "$DEST"
echo "fetch_prometheus.sh: Prometheus $v ($pkgver) in $DEST" >&2
echo "$DEST"
