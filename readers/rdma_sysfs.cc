#include "readers/rdma_sysfs.h"

#include <algorithm>
#include <set>

#include "base/files.h"

namespace nvmeof {

std::vector<std::string> PortNetdevs(SysfsFiles& files, const std::string& port_dir) {
  const std::string ndevs = port_dir + "/gid_attrs/ndevs";
  std::vector<std::uint64_t> slots;
  for (const auto& name : files.List(ndevs)) {
    if (auto n = ParseU64(name)) slots.push_back(*n);
  }
  std::sort(slots.begin(), slots.end());
  constexpr int kMaxUnusedRun = 32;
  std::set<std::string> found;
  int unused_run = 0;
  for (auto slot : slots) {
    auto name = files.ReadAttribute(ndevs, std::to_string(slot));
    if (!name || name->empty()) {
      if (++unused_run >= kMaxUnusedRun) break;
      continue;
    }
    unused_run = 0;
    found.insert(*name);
  }
  return {found.begin(), found.end()};
}

std::vector<RdmaNetdev> ListRdmaNetdevs(const Paths& paths, const NameFilter& devices) {
  std::vector<RdmaNetdev> out;
  SysfsFiles files;  // one listing: nothing to keep between calls
  const std::string root = paths.sysfs + "/class/infiniband";
  for (const auto& dev : ListDir(root)) {
    if (!devices.Allows(dev)) continue;
    for (const auto& port : ListDir(root + "/" + dev + "/ports")) {
      for (auto& netdev : PortNetdevs(files, root + "/" + dev + "/ports/" + port)) {
        out.push_back({dev, std::move(netdev)});
      }
    }
  }
  return out;
}

}  // namespace nvmeof
