#!/usr/bin/env bash
# Installs what nvmeof_exporter needs to build and run (Debian 12). With --test, also what the
# tests need (a real Prometheus with promtool, fio, openssl, ...). Idempotent.
set -euo pipefail
[ "$(id -u)" = 0 ] || { echo "run as root (apt-get)" >&2; exit 1; }

BUILD=(cmake g++ make pkg-config git clang llvm bpftool libbpf-dev
  prometheus-cpp-dev libmicrohttpd-dev libgnutls28-dev libyaml-cpp-dev libmnl-dev zlib1g-dev
  libcrypt-dev libibverbs-dev rdma-core nlohmann-json3-dev
  libcurl4-openssl-dev  # top --from (profile/http_get.h: why not libcurl4-gnutls-dev)
  protobuf-compiler libprotobuf-dev golang-github-prometheus-client-model-dev  # protobuf exposition
  help2man dpkg-dev)  # the man page (optional: the build goes on without it); dpkg-shlibdeps for the .deb
TEST=(libgtest-dev libgmock-dev prometheus prometheus-alertmanager curl openssl apache2-utils python3 python3-prometheus-client iproute2 ethtool
  fio util-linux libbpf-tools rsync strace libcap2-bin systemd zstd
  libclang-rt-14-dev  # libFuzzer + ASan runtimes for tests/fuzz (clang is in BUILD)
  lintian  # tests/e2e/test_package.sh checks the .deb
  ccache)  # tests/run-all.sh: repeated builds (CI's clean clones) reuse object files

want=("${BUILD[@]}")
[ "${1:-}" = --test ] && want+=("${TEST[@]}")
missing=()
for p in "${want[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing: ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
