# shellcheck shell=bash
# Host-side helpers shared by the VM harness scripts (sourced, not run).

# kernel_of SERIES: the newest installed generic-flavour kernel release of a series ("6.1" ->
# 6.1.0-57-amd64, "6.12" -> 6.12.117+deb12-amd64); a full release is returned when installed.
kernel_of() {
  if [ -f "/boot/vmlinuz-$1" ]; then echo "$1"; return; fi
  ls /boot/vmlinuz-"$1".* 2>/dev/null | sed 's|^/boot/vmlinuz-||' |
    grep -v -e '-rt-' -e '-cloud-' | grep -E -- "^$1[.][0-9].*-amd64\$" | sort -V | tail -1
}

# The cache for extracted kernels and initramfs bases. Everything in it is derived from installed
# packages and this directory's scripts, and is keyed by both, so it is safe to delete any time.
vm_cache_dir() {
  if [ -n "${NVMEOF_VM_CACHE:-}" ]; then echo "$NVMEOF_VM_CACHE"
  elif [ -n "${XDG_CACHE_HOME:-}" ]; then echo "$XDG_CACHE_HOME/nvmeof-exporter-vm"
  elif [ -w /var/cache ]; then echo /var/cache/nvmeof-exporter-vm
  else echo "$HOME/.cache/nvmeof-exporter-vm"; fi
}
