#!/usr/bin/env bash
# The Debian package and the install layout: CPack builds the .deb from the build tree of the
# binary under test (into a scratch directory); its file list, Depends (from the shared libraries),
# conffiles, unit and version are checked, and lintian finds no error or warning (deploy/README.md
# "Debian package" explains what it still notes). `cmake --install --prefix` lays out the same
# tree anywhere.
source "$(dirname "$0")/lib.sh"
REPO=$(cd "$E2E_DIR/../.." && pwd)
BUILD=$(cd "$(dirname "$(readlink -f "$EXPORTER")")" && pwd)
[ -f "$BUILD/CPackConfig.cmake" ] || skip "no CPackConfig.cmake next to $EXPORTER (not a CMake build tree)"
require -m "cmake, dpkg-dev" cpack dpkg-deb dpkg-shlibdeps

VERSION=$("$EXPORTER" --version | sed -n 's/^nvmeof_exporter \([^ ]*\) (revision .*/\1/p')
[ -n "$VERSION" ] || fail "cannot parse --version: $("$EXPORTER" --version)"
HAVE_BPF=0
"$EXPORTER" --help 2>&1 | grep -q '^ *bpf (default' && HAVE_BPF=1
HAVE_MAN=0
[ -f "$BUILD/nvmeof_exporter.1.gz" ] && HAVE_MAN=1

# --- the package, built into the scratch directory (the build tree gets no new .deb)
(cd "$WORK" && cpack --config "$BUILD/CPackConfig.cmake" -B "$WORK/pkg") >"$WORK/cpack.log" 2>&1 ||
  fail "cpack: $(tail -5 "$WORK/cpack.log")"
DEB=$(ls "$WORK"/pkg/nvmeof-exporter_*.deb 2>/dev/null | head -n 1)
[ -f "$DEB" ] || fail "no .deb: $(tail -5 "$WORK/cpack.log")"
pass "built $(basename "$DEB") ($(du -k "$DEB" | cut -f1) KiB)"

field() { dpkg-deb -f "$DEB" "$1"; }
[ "$(field Package)" = nvmeof-exporter ] || fail "Package: $(field Package)"
[ "$(field Version)" = "$VERSION" ] || fail "package Version $(field Version) != --version $VERSION"
[ "$(field Architecture)" = "$(dpkg --print-architecture)" ] || fail "Architecture: $(field Architecture)"

# File list: exactly these files (directories aside).
dpkg-deb -c "$DEB" | awk '$1 !~ /^d/ {print $6}' | sed 's#^\./#/#' | sort >"$WORK/files"
{
  echo /usr/bin/nvmeof_exporter
  echo /lib/systemd/system/nvmeof_exporter.service
  echo /etc/nvmeof_exporter/config.yml
  echo /usr/share/doc/nvmeof-exporter/copyright
  echo /usr/share/doc/nvmeof-exporter/changelog.gz
  echo /usr/share/doc/nvmeof-exporter/CHANGELOG.md.gz
  [ $HAVE_MAN = 1 ] && echo /usr/share/man/man1/nvmeof_exporter.1.gz
  for f in "$REPO"/dashboards/*.json; do echo "/usr/share/nvmeof-exporter/dashboards/${f##*/}"; done
  for f in "$REPO"/deploy/prometheus/*.rules.yml; do echo "/usr/share/nvmeof-exporter/rules/${f##*/}"; done
} | sort >"$WORK/want"
diff "$WORK/want" "$WORK/files" >"$WORK/files.diff" || fail "file list (- missing, + extra): $(cat "$WORK/files.diff")"
[ $HAVE_MAN = 1 ] || echo "SKIP: built without help2man: the package has no man page"
pass "file list: $(wc -l <"$WORK/files") files as expected"

# Depends: computed by dpkg-shlibdeps from the binary's libraries.
DEPENDS=$(field Depends)
# (GnuTLS comes through libmicrohttpd12: the binary itself calls none of it. prometheus-cpp is
# headers only at run time: its metric model types; the writers are our own.)
want=(libc6 libstdc++6 libgcc-s1 libmicrohttpd12 libyaml-cpp0.7 libmnl0 zlib1g libcrypt1)
[ $HAVE_BPF = 1 ] && want+=(libbpf1)
names=$(sed 's/ *([^)]*)//g; s/, */\n/g' <<<"$DEPENDS")
for p in "${want[@]}"; do
  grep -qxF "$p" <<<"$names" || fail "Depends lacks $p: $DEPENDS"
done
pass "Depends: $DEPENDS"

# Control files: the config is a conffile; maintainer scripts do not enable the unit.
dpkg-deb -e "$DEB" "$WORK/control"
[ "$(cat "$WORK/control/conffiles")" = /etc/nvmeof_exporter/config.yml ] ||
  fail "conffiles: $(cat "$WORK/control/conffiles")"
grep -v '^ *#' "$WORK"/control/{postinst,prerm,postrm} | grep -qE 'enable|start' &&
  fail "a maintainer script enables the unit"
pass "conffiles: /etc/nvmeof_exporter/config.yml; unit not enabled by the maintainer scripts"

# Contents: the packaged binary's version, the unit's paths, the example config is valid.
dpkg-deb -x "$DEB" "$WORK/root"
PKG_VERSION=$("$WORK/root/usr/bin/nvmeof_exporter" --version)
[ "$PKG_VERSION" = "$("$EXPORTER" --version)" ] || fail "packaged binary says $PKG_VERSION"
grep -qx 'ExecStart=/usr/bin/nvmeof_exporter --config.file=/etc/nvmeof_exporter/config.yml $NVMEOF_EXPORTER_ARGS' \
  "$WORK/root/lib/systemd/system/nvmeof_exporter.service" ||
  fail "unit ExecStart: $(grep ExecStart "$WORK/root/lib/systemd/system/nvmeof_exporter.service")"
grep -q '@NVMEOF_' "$WORK/root/lib/systemd/system/nvmeof_exporter.service" && fail "unit template not filled in"
"$EXPORTER" --config.file="$WORK/root/etc/nvmeof_exporter/config.yml" --config.check >"$WORK/check.log" 2>&1 ||
  fail "example config: $(cat "$WORK/check.log")"
if [ $HAVE_MAN = 1 ]; then
  zcat "$WORK/root/usr/share/man/man1/nvmeof_exporter.1.gz" | grep -qF 'web.listen\-address' ||
    fail "man page lacks the flags"
  zcat "$WORK/root/usr/share/man/man1/nvmeof_exporter.1.gz" | grep -qF "$VERSION" || fail "man page lacks the version"
fi
pass "packaged binary: $PKG_VERSION; unit runs /usr/bin/nvmeof_exporter with the conffile; config valid"

# lintian: no errors or warnings (the remaining informational tags: deploy/README.md).
if command -v lintian >/dev/null; then
  lintian --fail-on error,warning --tag-display-limit 0 "$DEB" >"$WORK/lintian.log" 2>&1 ||
    fail "lintian: $(grep -v 'root privileges' "$WORK/lintian.log")"
  pass "lintian: no errors or warnings"
else
  echo "SKIP: lintian not installed: package not linted (deploy/install-deps.sh --test)"
fi

# --- cmake --install under an arbitrary prefix
PREFIX="$WORK/prefix"
cmake --install "$BUILD" --prefix "$PREFIX" >"$WORK/install.log" 2>&1 || fail "cmake --install: $(tail -5 "$WORK/install.log")"
for f in bin/nvmeof_exporter lib/systemd/system/nvmeof_exporter.service etc/nvmeof_exporter/config.yml \
  share/nvmeof-exporter/dashboards/nvmeof-latency.json share/nvmeof-exporter/rules/nvmeof-alerts.rules.yml; do
  [ -f "$PREFIX/$f" ] || fail "cmake --install --prefix: no $f"
done
[ $HAVE_MAN = 1 ] && { [ -f "$PREFIX/share/man/man1/nvmeof_exporter.1.gz" ] || fail "cmake --install: no man page"; }
grep -q "^ExecStart=$PREFIX/bin/nvmeof_exporter --config.file=$PREFIX/etc/nvmeof_exporter/config.yml " \
  "$PREFIX/lib/systemd/system/nvmeof_exporter.service" ||
  fail "unit under $PREFIX: $(grep ExecStart "$PREFIX/lib/systemd/system/nvmeof_exporter.service")"
echo "# edited" >>"$PREFIX/etc/nvmeof_exporter/config.yml"
cmake --install "$BUILD" --prefix "$PREFIX" >"$WORK/install2.log" 2>&1 || fail "second cmake --install"
grep -q '^# edited' "$PREFIX/etc/nvmeof_exporter/config.yml" || fail "a second install overwrote the config"
pass "cmake --install --prefix: bin, unit (ExecStart under the prefix), config (kept on reinstall), man, dashboards, rules"
