# shellcheck shell=bash
# Host-side helpers shared by the VM harness scripts (sourced, not run).
#
# A kernel is either installed on the machine (/boot/vmlinuz-KV, /lib/modules/KV: 6.1, 6.12) or
# fetched into the cache by kernel_fetch (5.10, 7.2): $(vm_cache_dir)/kernels/KV/ then holds
# boot/vmlinuz-KV and lib/modules/KV/ (with modules.dep), the same layout under another root, so
# `modprobe -S KV -d ROOT` and `depmod -b ROOT KV` read it. kernel_dir KV names that root.

# The cache for fetched kernels, extracted vmlinux images and initramfs bases. Everything in it is
# derived from packages and this directory's scripts, and is keyed by both, so it is safe to delete
# any time (fetched kernels are then fetched again).
vm_cache_dir() {
  if [ -n "${NVMEOF_VM_CACHE:-}" ]; then echo "$NVMEOF_VM_CACHE"
  elif [ -n "${XDG_CACHE_HOME:-}" ]; then echo "$XDG_CACHE_HOME/nvmeof-exporter-vm"
  elif [ -w /var/cache ]; then echo /var/cache/nvmeof-exporter-vm
  else echo "$HOME/.cache/nvmeof-exporter-vm"; fi
}

# kernel_of SERIES: the newest generic-flavour kernel release of a series, installed or fetched
# ("6.1" -> 6.1.0-57-amd64, "6.12" -> 6.12.117+deb12-amd64, "7.2" -> 7.2.13+deb14-amd64); a full
# release is returned as it is when present.
kernel_of() {
  local c; c=$(vm_cache_dir)/kernels
  if [ -f "/boot/vmlinuz-$1" ] || [ -f "$c/$1/boot/vmlinuz-$1" ]; then echo "$1"; return; fi
  { ls /boot/vmlinuz-"$1".* "$c"/"$1".*/boot/vmlinuz-"$1".* 2>/dev/null || true; } |
    sed 's|^.*/vmlinuz-||' | grep -v -e '-rt-' -e '-cloud-' | grep -E -- "^$1[.][0-9].*-amd64\$" |
    sort -uV | tail -1 || true
}

# kernel_dir RELEASE: the root that holds boot/vmlinuz-RELEASE and lib/modules/RELEASE/: / for an
# installed kernel, else the cache's copy; nothing when neither is there.
kernel_dir() {
  local d; d=$(vm_cache_dir)/kernels/$1
  if [ -f "/boot/vmlinuz-$1" ] && [ -f "/lib/modules/$1/modules.dep" ]; then echo /
  elif [ -f "$d/boot/vmlinuz-$1" ] && [ -f "$d/lib/modules/$1/modules.dep" ]; then echo "$d"; fi
}

# kernel_fetch_spec SERIES: "PACKAGE|SUITE..." for the kernels the harness fetches itself (never
# through the machine's apt sources). PACKAGE is the image package or a metapackage naming one.
# Pinned to what the suites offer today; NVMEOF_VM_KERNEL_PKG_<series with _ for .> overrides it
# (e.g. NVMEOF_VM_KERNEL_PKG_7_2=linux-image-7.2.14+deb14-amd64), NVMEOF_VM_KERNEL_MIRROR the mirror
# (e.g. a snapshot.debian.org URL once a suite has moved on).
kernel_fetch_spec() {
  local v=NVMEOF_VM_KERNEL_PKG_${1//./_} pkg suites
  case $1 in
    5.10) pkg=linux-image-5.10.0-32-amd64 suites="bullseye bullseye-security" ;;
    6.1) pkg=linux-image-6.1.0-57-amd64 suites="bookworm bookworm-security" ;;
    6.12) pkg=linux-image-6.12-amd64 suites="bookworm-security bookworm-backports" ;;
    7.2) pkg=linux-image-7.2.13+deb14-amd64 suites="sid" ;;
    *) return 1 ;;
  esac
  echo "${!v:-$pkg}|$suites"
}

# kernel_fetch SERIES: downloads the series' kernel packages with `apt-get download` under a
# private apt state folder (own sources.list, lists and cache: the machine's apt sources are never
# touched), unpacks them with `dpkg-deb -x` into $(vm_cache_dir)/kernels/RELEASE/, moves the
# files into the layout above (7.x ships usr/lib/modules/KV/vmlinuz in linux-binary-KV, modules
# in linux-modules-KV, System.map/config/modules.* in linux-base-KV; the image package is empty)
# and runs depmod there. Prints the release. Kept between runs; a second caller waits on the lock.
kernel_fetch() {
  local series=$1 spec pkg suites cache tmp s deb kv mirror key
  spec=$(kernel_fetch_spec "$series") || { echo "kernel_fetch: no package known for kernel $series" >&2; return 1; }
  pkg=${spec%%|*} suites=${spec#*|}
  cache=$(vm_cache_dir)/kernels
  mkdir -p "$cache" || return 1
  (
    flock 8
    kv=$(kernel_of "$series")
    if [ -n "$kv" ] && [ -n "$(kernel_dir "$kv")" ]; then echo "$kv"; exit 0; fi
    tmp=$(mktemp -d "$cache/.fetch.XXXXXX") || exit 1
    trap 'rm -rf "$tmp"' EXIT
    mirror=${NVMEOF_VM_KERNEL_MIRROR:-http://deb.debian.org/debian}
    key=/usr/share/keyrings/debian-archive-keyring.gpg
    [ -r $key ] && key="[signed-by=$key] " || key=
    mkdir -p "$tmp/lists/partial" "$tmp/cache/archives/partial" "$tmp/deb" "$tmp/root"
    for s in $suites; do
      case $s in
        *-security) echo "deb $key${NVMEOF_VM_KERNEL_SECURITY_MIRROR:-${mirror%/debian}/debian-security} $s main" ;;
        *) echo "deb $key$mirror $s main" ;;
      esac
    done >"$tmp/sources.list"
    local apt=(-o Dir::Etc::SourceList="$tmp/sources.list" -o Dir::Etc::SourceParts=/dev/null
      -o Dir::State::Lists="$tmp/lists" -o Dir::Cache="$tmp/cache"
      -o Acquire::Languages=none -o APT::Sandbox::User=root -qq)
    echo "kernel_fetch: $series: $pkg from $mirror ($suites) into $cache" >&2
    apt-get "${apt[@]}" update >"$tmp/update.log" 2>&1 ||
      { echo "kernel_fetch: apt-get update failed: $(tail -n 3 "$tmp/update.log")" >&2; exit 1; }
    deps() { apt-cache "${apt[@]}" show "$1" 2>/dev/null | sed -n 's/^Depends: //p' | tr ',|' '\n\n' |
      sed 's/ *(.*//; s/^ *//' | sort -u; }
    # A metapackage (linux-image-6.12-amd64) depends on the image of one release.
    local image=$pkg d
    d=$(deps "$pkg" | grep -E "^linux-image-$series[.][0-9].*-amd64\$" | sort -V | tail -1)
    [ -n "$d" ] && image=$d
    kv=${image#linux-image-}
    apt-cache "${apt[@]}" show "$image" >/dev/null 2>&1 ||
      { echo "kernel_fetch: $suites offer no $image (set NVMEOF_VM_KERNEL_PKG_${series//./_} or NVMEOF_VM_KERNEL_MIRROR)" >&2; exit 1; }
    # 7.x splits the image: linux-binary-KV, linux-modules-KV, linux-base-KV.
    local pkgs=("$image")
    for d in $(deps "$image" | grep -E "^linux-(binary|modules|base)-${kv//+/[+]}\$"); do pkgs+=("$d"); done
    (cd "$tmp/deb" && apt-get "${apt[@]}" download "${pkgs[@]}") >"$tmp/download.log" 2>&1 ||
      { echo "kernel_fetch: apt-get download ${pkgs[*]} failed: $(tail -n 3 "$tmp/download.log")" >&2; exit 1; }
    for deb in "$tmp"/deb/*.deb; do
      dpkg-deb -x "$deb" "$tmp/root" || exit 1
      echo "$(dpkg-deb -f "$deb" Package)=$(dpkg-deb -f "$deb" Version)" >>"$tmp/root/packages"
    done
    local r=$tmp/root
    if [ -d "$r/usr/lib/modules/$kv" ] && [ ! -d "$r/lib/modules/$kv" ]; then
      mkdir -p "$r/lib/modules" && mv "$r/usr/lib/modules/$kv" "$r/lib/modules/$kv"
    fi
    mkdir -p "$r/boot"
    [ -f "$r/boot/vmlinuz-$kv" ] || mv "$r/lib/modules/$kv/vmlinuz" "$r/boot/vmlinuz-$kv" 2>/dev/null
    [ -f "$r/boot/vmlinuz-$kv" ] || { echo "kernel_fetch: ${pkgs[*]} hold no vmlinuz for $kv" >&2; exit 1; }
    rm -rf "$r/usr/share"
    depmod -b "$r" "$kv" || { echo "kernel_fetch: depmod -b for $kv failed" >&2; exit 1; }
    rm -rf "${cache:?}/$kv"
    mv "$r" "$cache/$kv"
    echo "kernel_fetch: $kv ready in $cache/$kv ($(paste -sd' ' "$cache/$kv/packages"))" >&2
    echo "$kv"
  ) 8>"$cache/.lock"
}
