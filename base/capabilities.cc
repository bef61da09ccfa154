#include "base/capabilities.h"

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <iterator>

namespace nvmeof {

namespace {

// capsh --decode's names, four a line, by number.
// clang-format off
constexpr std::string_view kCapNames[] = {
    "cap_chown",           "cap_dac_override",    "cap_dac_read_search", "cap_fowner",
    "cap_fsetid",          "cap_kill",            "cap_setgid",          "cap_setuid",
    "cap_setpcap",         "cap_linux_immutable", "cap_net_bind_service", "cap_net_broadcast",
    "cap_net_admin",       "cap_net_raw",         "cap_ipc_lock",        "cap_ipc_owner",
    "cap_sys_module",      "cap_sys_rawio",       "cap_sys_chroot",      "cap_sys_ptrace",
    "cap_sys_pacct",       "cap_sys_admin",       "cap_sys_boot",        "cap_sys_nice",
    "cap_sys_resource",    "cap_sys_time",        "cap_sys_tty_config",  "cap_mknod",
    "cap_lease",           "cap_audit_write",     "cap_audit_control",   "cap_setfcap",
    "cap_mac_override",    "cap_mac_admin",       "cap_syslog",          "cap_wake_alarm",
    "cap_block_suspend",   "cap_audit_read",      "cap_perfmon",         "cap_bpf",
    "cap_checkpoint_restore"};
// clang-format on

static_assert(kCapNames[kCapSetpcap] == "cap_setpcap" &&
              kCapNames[kCapNetAdmin] == "cap_net_admin" &&
              kCapNames[kCapSysAdmin] == "cap_sys_admin" &&
              kCapNames[kCapPerfmon] == "cap_perfmon" && kCapNames[kCapBpf] == "cap_bpf");

}  // namespace

std::string CapNames(CapMask mask) {
  std::string out;
  for (int c = 0; c < 64; ++c) {
    if (!(mask & CapBit(c))) continue;
    if (!out.empty()) out += ",";
    out += c < static_cast<int>(std::size(kCapNames)) ? std::string(kCapNames[c])
                                                      : "cap_" + std::to_string(c);
  }
  return out;
}

std::optional<CapMask> ParseCapLine(std::string_view status, std::string_view key) {
  for (size_t at = 0; at < status.size();) {
    size_t end = status.find('\n', at);
    if (end == std::string_view::npos) end = status.size();
    std::string_view line = status.substr(at, end - at);
    at = end + 1;
    if (line.size() <= key.size() || line.substr(0, key.size()) != key || line[key.size()] != ':')
      continue;
    line.remove_prefix(key.size() + 1);
    while (!line.empty() && (line.front() == '\t' || line.front() == ' ')) line.remove_prefix(1);
    const std::string hex(line);
    if (hex.empty() || hex.size() > 16 || !std::isxdigit(static_cast<unsigned char>(hex[0])))
      return std::nullopt;
    char* stop = nullptr;
    errno = 0;
    const unsigned long long v = std::strtoull(hex.c_str(), &stop, 16);
    if (errno || *stop) return std::nullopt;
    return CapMask{v};
  }
  return std::nullopt;
}

}  // namespace nvmeof
