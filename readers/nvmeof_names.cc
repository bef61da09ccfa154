#include "readers/nvmeof_names.h"

#include <regex>
#include <set>

#include "base/files.h"

namespace nvmeof {

std::optional<NvmeDiskIdentity> IdentifyNvmeDisk(const std::string& sysfs,
                                                 const std::string& disk) {
  if (disk.empty() || disk.find('/') != std::string::npos || disk[0] == '.') return std::nullopt;
  NvmeDiskIdentity id;
  id.device = disk;
  // A multipath path disk nvme<subsys>c<ctrl>n<ns> belongs to the namespace nvme<subsys>n<ns>.
  static const std::regex kPath("nvme([0-9]+)c[0-9]+n([0-9]+)");
  std::smatch m;
  if (std::regex_match(disk, m, kPath)) id.device = "nvme" + m[1].str() + "n" + m[2].str();
  auto ctrl = ReadLinkBase(sysfs + "/block/" + disk + "/device");
  if (!ctrl || ctrl->rfind("nvme", 0) != 0) return std::nullopt;
  id.controller = *ctrl;
  auto transport = ReadFile(sysfs + "/class/nvme/" + *ctrl + "/transport");
  if (!transport) return std::nullopt;
  id.transport = *transport;
  return id;
}

std::map<std::string, NvmetNamespaceTarget> NvmetTargetsByDevicePath(const std::string& configfs) {
  const std::string root = configfs + "/nvmet";
  std::map<std::string, std::set<std::string>> transports;  // nqn -> its ports' addr_trtype
  for (const auto& port : ListDir(root + "/ports")) {
    const std::string trtype = ReadFileOr(root + "/ports/" + port + "/addr_trtype");
    for (const auto& nqn : ListDir(root + "/ports/" + port + "/subsystems"))
      transports[nqn].insert(trtype);
  }
  std::map<std::string, NvmetNamespaceTarget> out;
  for (const auto& nqn : ListDir(root + "/subsystems")) {
    const auto& t = transports[nqn];
    const std::string transport = t.size() == 1 && !t.begin()->empty() ? *t.begin() : "unknown";
    for (const auto& ns : ListDir(root + "/subsystems/" + nqn + "/namespaces")) {
      const std::string path =
          ReadFileOr(root + "/subsystems/" + nqn + "/namespaces/" + ns + "/device_path");
      if (!path.empty())
        out.emplace(path.substr(0, kNvmetTraceDiskLen), NvmetNamespaceTarget{nqn, transport});
    }
  }
  return out;
}

}  // namespace nvmeof
