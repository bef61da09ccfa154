#include "readers/netdev_sysfs.h"

#include "base/files.h"

namespace nvmeof {

ReadStatus ReadNetdevMtu(SysfsFiles& files, const std::string& sysfs, const std::string& netdev,
                         std::uint64_t* mtu) {
  const std::string dir = sysfs + "/class/net/" + netdev;
  if (netdev.empty() || netdev.find('/') != std::string::npos || !files.HasDir(dir)) {
    return ReadStatus::kAbsent;
  }
  auto text = files.ReadAttribute(dir, "mtu");
  auto value = text ? ParseU64(*text) : std::nullopt;
  if (!value) return ReadStatus::kFailed;
  *mtu = *value;
  return ReadStatus::kOk;
}

std::vector<EcnSwitch> ReadRoceEcn(const std::string& sysfs, const std::string& netdev) {
  std::vector<EcnSwitch> out;
  if (netdev.empty() || netdev.find('/') != std::string::npos) return out;
  for (const char* point : {"np", "rp"}) {
    const std::string dir = sysfs + "/class/net/" + netdev + "/ecn/roce_" + point + "/enable";
    if (!IsDir(dir)) continue;
    // mlx5 creates all eight files; a missing one is a broken tree, not "disabled".
    for (int prio = 0; prio < 8; ++prio) {
      EcnSwitch s{point, prio};
      auto value = ReadU64(dir + "/" + std::to_string(prio));
      if (value && *value <= 1) {
        s.ok = true;
        s.enabled = *value == 1;
      }
      out.push_back(std::move(s));
    }
  }
  return out;
}

}  // namespace nvmeof
