#include "loader/series_names.h"

#include "base/files.h"
#include "loader/block.h"
#include "loader/nvmeof.h"

namespace nvmeof {

NvmeofSeriesNames::NvmeofSeriesNames(
    const Paths& paths, const std::vector<std::pair<std::uint64_t, std::string>>& names)
    : paths_(paths),
      names_(names.begin(), names.end()),
      have_nvmet_(IsDir(paths.configfs + "/nvmet/subsystems")) {}

NvmeofSeriesNames::Named NvmeofSeriesNames::Name(const nvmeof_series& k, Labels* labels,
                                                 std::string* transport) {
  if (k.role == NVMEOF_ROLE_HOST && k.detail == NVMEOF_DETAIL_CONTROLLER) {
    // A stage span of every namespace behind controller nvme<id>.
    const std::string ctrl = "nvme" + std::to_string(k.id);
    auto it = ctrl_transports_.find(k.id);  // one sysfs read per controller and scrape
    if (it == ctrl_transports_.end()) {
      it = ctrl_transports_
               .emplace(k.id, ReadFile(paths_.sysfs + "/class/nvme/" + ctrl + "/transport"))
               .first;
    }
    const auto& t = it->second;
    if (!t) {
      return Named::kGone;  // the controller went away (disconnect)
    }
    *transport = *t;
    *labels = {{"role", "host"},
               {"transport", *transport},
               {"op", std::string(BlockOpName(k.op))},
               {"controller", ctrl}};
  } else if (k.role == NVMEOF_ROLE_HOST) {
    auto name = names_.find(nvmeof_name_key(k.id, k.role));
    if (name != names_.end() && !name->second.empty() &&
        name->second.find('/') == std::string::npos &&
        !Exists(paths_.sysfs + "/block/" + name->second)) {
      return Named::kGone;  // not an error: the disk went away (disconnect)
    }
    auto it = hosts_.find(k.id);
    if (it == hosts_.end()) {
      it = hosts_
               .emplace(k.id, name == names_.end() ? std::nullopt
                                                   : IdentifyNvmeDisk(paths_.sysfs, name->second))
               .first;
    }
    if (!it->second) {
      return Named::kSkip;
    }
    *transport = it->second->transport;
    *labels = {{"role", "host"},
               {"transport", *transport},
               {"op", std::string(BlockOpName(k.op))},
               {"controller", it->second->controller},
               {"nvme_namespace", it->second->device}};
  } else {
    // The classic tracepoints (5.10) name a series by its namespace's device path, whose
    // subsystem and transport configfs gives, and have no port (nvmet_port "").
    const bool by_path = k.trtype == NVMEOF_TRTYPE_UNKNOWN;
    auto name = names_.find(nvmeof_name_key(k.id, k.role));
    if (name == names_.end() || name->second.empty() || (by_path && !have_nvmet_))
      return Named::kSkip;
    std::string nqn = name->second;
    if (by_path) {
      if (!device_paths_) device_paths_ = NvmetTargetsByDevicePath(paths_.configfs);
      auto target = device_paths_->find(nqn.substr(0, kNvmetTraceDiskLen));
      if (target == device_paths_->end()) return Named::kGone;  // the namespace was deleted
      nqn = target->second.nqn;
      *transport = target->second.transport;
    } else if (have_nvmet_ && nqn.find('/') == std::string::npos &&
               !Exists(paths_.configfs + "/nvmet/subsystems/" + nqn)) {
      return Named::kGone;  // the subsystem was deleted
    } else {
      *transport = NvmeofTransportName(k.trtype);
    }
    *labels = {{"role", "target"},
               {"transport", *transport},
               {"op", std::string(BlockOpName(k.op))},
               {"nqn", nqn}};
    if (k.detail != NVMEOF_DETAIL_CONTROLLER)
      labels->push_back({"nvmet_port", by_path ? "" : std::to_string(k.port)});
  }
  return Named::kOk;
}

}  // namespace nvmeof
