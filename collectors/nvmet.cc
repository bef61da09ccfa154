// nvmet: NVMe target (nvmet) configuration from configfs, <configfs>/nvmet
// (drivers/nvme/target/configfs.c):
//   subsystems/<nqn>/attr_{allow_any_host,serial,model,version,...}
//   subsystems/<nqn>/namespaces/<nsid>/{device_path,device_uuid,enable,ana_grpid,...}
//   subsystems/<nqn>/allowed_hosts/<hostnqn>   symlinks to hosts/<hostnqn>
//   ports/<id>/addr_{trtype,traddr,trsvcid,adrfam,treq,tsas}
//   ports/<id>/subsystems/<nqn>                symlinks: the subsystem is exported on the port
//   ports/<id>/ana_groups/<grpid>/ana_state
//   hosts/<hostnqn>/dhchap_*                   secrets: never read
// Only names and small attributes are read, so this is cheap even with many subsystems.
#include "collectors/nvmet.h"

#include <string>
#include <vector>

#include "base/files.h"
#include "base/yaml.h"
#include "collectors/collector_options.h"

namespace nvmeof {
namespace {

// nvmet_ana_state[] in configfs.c.
constexpr StateName kAnaStates[] = {{"optimized", "optimized"},
                                    {"non-optimized", "non-optimized"},
                                    {"inaccessible", "inaccessible"},
                                    {"persistent-loss", "persistent-loss"},
                                    {"change", "change"}};

std::vector<std::string> NoNames() { return {}; }

bool AllDigits(const std::string& s) {
  return !s.empty() && s.find_first_not_of("0123456789") == std::string::npos;
}

class NvmetCollector : public Collector {
 public:
  explicit NvmetCollector(const CollectorOptions& options)
      : root_(options.paths.configfs + "/nvmet"), inventory_(options.nvmet.inventory) {}

  std::string_view Name() const override { return "nvmet"; }

  bool Collect(MetricSink& out) override {
    // No nvmet directory: the module is not loaded (or configfs not mounted). Not an error.
    if (!IsDir(root_)) return true;
    CollectSubsystems(out);
    CollectPorts(out);
    return true;
  }

 private:
  void CollectSubsystems(MetricSink& out) {
    const std::string root = root_ + "/subsystems";
    for (const auto& nqn : ListDir(root)) {
      const std::string dir = root + "/" + nqn;
      if (!IsDir(dir)) continue;
      if (inventory_) EmitSubsystemInfo(out, dir, nqn);
      for (const auto& nsid : ListDir(dir + "/namespaces")) {
        if (AllDigits(nsid)) EmitNamespace(out, dir + "/namespaces/" + nsid, nqn, nsid);
      }
      if (!inventory_) continue;
      for (const auto& host : ListDir(dir + "/allowed_hosts")) {
        out.Gauge("nvmeof_target_allowed_host",
                  "Host NQN allowed to connect to the subsystem (allowed_hosts); value 1. "
                  "See allow_any_host in nvmeof_target_subsystem_info",
                  {{"nqn", nqn}, {"hostnqn", host}}, 1);
      }
    }
  }

  static void EmitSubsystemInfo(MetricSink& out, const std::string& dir, const std::string& nqn) {
    out.Gauge("nvmeof_target_subsystem_info",
              "NVMe target subsystem configured in nvmet (configfs); value 1",
              {{"nqn", nqn},
               {"serial", ReadFileOr(dir + "/attr_serial")},
               {"model", ReadFileOr(dir + "/attr_model")},
               {"version", ReadFileOr(dir + "/attr_version")},
               {"allow_any_host", ReadFileOr(dir + "/attr_allow_any_host")}},
              1);
  }

  void EmitNamespace(MetricSink& out, const std::string& ns, const std::string& nqn,
                     const std::string& nsid) {
    std::string device_path = ReadFileOr(ns + "/device_path");
    if (device_path == "(null)") device_path.clear();  // printed when never set
    out.Gauge("nvmeof_target_namespace_info",
              "Namespace of a target subsystem and its backing device; value 1",
              {{"nqn", nqn},
               {"nsid", nsid},
               {"device_path", device_path},
               {"device_uuid", ReadFileOr(ns + "/device_uuid")},
               {"ana_grpid", ReadFileOr(ns + "/ana_grpid")}},
              1);
    if (!inventory_) return;
    auto enabled = ReadU64(ns + "/enable");
    if (enabled && *enabled <= 1) {
      out.Gauge("nvmeof_target_namespace_enabled",
                "1 if the namespace is enabled (served to hosts), 0 if disabled",
                {{"nqn", nqn}, {"nsid", nsid}}, static_cast<double>(*enabled));
    } else {
      out.Skip();
    }
  }

  void CollectPorts(MetricSink& out) {
    const std::string root = root_ + "/ports";
    for (const auto& port : ListDir(root)) {
      const std::string dir = root + "/" + port;
      if (!AllDigits(port) || !IsDir(dir)) continue;
      out.Gauge("nvmeof_target_port_info",
                "NVMe target port (listener): transport and address; value 1",
                {{"nvmet_port", port},
                 {"trtype", ReadFileOr(dir + "/addr_trtype")},
                 {"traddr", ReadFileOr(dir + "/addr_traddr")},
                 {"trsvcid", ReadFileOr(dir + "/addr_trsvcid")},
                 {"adrfam", ReadFileOr(dir + "/addr_adrfam")}},
                1);
      for (const auto& nqn : inventory_ ? ListDir(dir + "/subsystems") : NoNames()) {
        out.Gauge("nvmeof_target_port_subsystem",
                  "Subsystem exported on a target port (ports/<id>/subsystems link); value 1",
                  {{"nvmet_port", port}, {"nqn", nqn}}, 1);
      }
      for (const auto& group : ListDir(dir + "/ana_groups")) {
        if (!AllDigits(group)) continue;
        out.OneHot("nvmeof_target_ana_group_state",
                   "ANA state the target reports for an ANA group on a port, one-hot",
                   {{"nvmet_port", port}, {"group", group}}, kAnaStates,
                   ReadFile(dir + "/ana_groups/" + group + "/ana_state"));
      }
    }
  }

  std::string root_;
  bool inventory_;
};

}  // namespace

bool ParseNvmetOptions(const YAML::Node& section, NvmetOptions* options, std::string* error) {
  if (!CheckKeys(section, "nvmet", {"inventory"}, error)) return false;
  return !section["inventory"] ||
         ReadBool(section["inventory"], "nvmet.inventory", &options->inventory, error);
}

std::unique_ptr<Collector> NewNvmetCollector(const CollectorOptions& options) {
  return std::make_unique<NvmetCollector>(options);
}

}  // namespace nvmeof
