// kubernetes: which pod's PersistentVolume an NVMe namespace block device is, from the node's
// own mount table (<procfs>/1/mountinfo: the host's, with hostPID) and the kubelet's directory
// (readers/kubelet_volumes.h), never from the API server. One info series per (disk, PV, pod):
// built fresh each scrape, so a series goes when its mount does. A node without a kubelet
// directory serves nothing, not even an error: most NVMe-oF hosts are not Kubernetes nodes.
#include "collectors/kubernetes.h"

#include <optional>
#include <set>
#include <string>
#include <tuple>

#include "base/files.h"
#include "base/log.h"
#include "base/yaml.h"
#include "collectors/collector_options.h"
#include "readers/kubelet_volumes.h"
#include "readers/mountinfo.h"

namespace nvmeof {
namespace {

// <rootfs><kubelet_root> without a doubled slash ("/" + "/var/lib/kubelet").
std::string UnderRoot(const std::string& root, const std::string& path) {
  std::string out = root;
  while (!out.empty() && out.back() == '/') out.pop_back();
  if (path.empty() || path.front() != '/') out.push_back('/');
  return out + path;
}

class KubernetesCollector : public Collector {
 public:
  explicit KubernetesCollector(const CollectorOptions& options)
      : mountinfo_(options.paths.procfs + "/1/mountinfo"),
        sysfs_(options.paths.sysfs),
        kubelet_root_(options.kubernetes.kubelet_root),
        kubelet_dir_(UnderRoot(options.paths.rootfs, options.kubernetes.kubelet_root)) {
    while (kubelet_root_.size() > 1 && kubelet_root_.back() == '/') kubelet_root_.pop_back();
  }

  std::string_view Name() const override { return "kubernetes"; }

  bool Collect(MetricSink& out) override {
    if (!IsDir(kubelet_dir_)) {
      if (!said_absent_) LogDebug("kubernetes: no kubelet directory", Kv("dir", kubelet_dir_));
      said_absent_ = true;
      return true;
    }
    said_absent_ = false;
    auto text = ReadMountInfoFile(mountinfo_);
    if (!text) {
      // A kubelet directory but no mount table: the pod series would silently vanish.
      out.Fail(mountinfo_ + ": cannot be read");
      return false;
    }
    // Only mounts under the kubelet root are built into entries: a node's table can hold
    // thousands (tests/bench/README.md "Mount table").
    const MountTable table = ParseMountInfo(*text, kubelet_root_ + "/");
    if (table.skipped_lines > 0) {
      LogDebug("kubernetes: mountinfo lines skipped",
               Kv("path", mountinfo_) + " " + Kv("lines", std::to_string(table.skipped_lines)));
    }
    Emit(out, FindKubeletVolumes(table, kubelet_root_, kubelet_dir_));
    return true;
  }

 private:
  void Emit(MetricSink& out, const KubeletMounts& mounts) {
    BlockDeviceNames names(sysfs_);
    // One series per (disk, PV, pod, mode): a mount seen twice (propagated, or stacked at the
    // same point) is one volume.
    std::set<std::tuple<std::string, std::string, std::string, VolumeMode>> seen;
    for (const auto& v : mounts.volumes) {
      std::optional<std::string> disk;
      if (v.mode == VolumeMode::kBlock) {
        if (names.Known(v.device_name)) disk = v.device_name;
      } else {
        disk = names.ByDevT(v.major, v.minor);
      }
      // Only NVMe namespaces (heads nvmeXnY, paths nvmeXcYnZ): other volumes are not ours.
      if (!disk || !disk->starts_with("nvme")) continue;
      if (!seen.emplace(*disk, v.persistent_volume, v.pod_uid, v.mode).second) continue;
      std::string driver = v.csi_driver;
      if (driver.empty() && v.mode == VolumeMode::kFilesystem) {
        // vol_data.json is 0640 under 0750 directories: an exporter without
        // CAP_DAC_READ_SEARCH reads the driver from the staging mount's path instead.
        auto it = mounts.staging_drivers.find({v.major, v.minor});
        if (it != mounts.staging_drivers.end()) driver = it->second;
      }
      out.Gauge("nvmeof_kubernetes_volume_info",
                "A pod's CSI PersistentVolume on an NVMe namespace block device (kubelet "
                "mounts in the node's mount table); value 1",
                {{"disk", *disk},
                 {"persistentvolume", v.persistent_volume},
                 {"uid", v.pod_uid},
                 {"volume_mode", v.mode == VolumeMode::kBlock ? "block" : "filesystem"},
                 {"csi_driver", driver}},
                1);
    }
  }

  std::string mountinfo_;
  std::string sysfs_;
  std::string kubelet_root_;
  std::string kubelet_dir_;
  bool said_absent_ = false;
};

}  // namespace

bool ParseKubernetesOptions(const YAML::Node& section, KubernetesOptions* options,
                            std::string* error) {
  if (!CheckKeys(section, "kubernetes", {"kubelet_root"}, error)) return false;
  if (!section["kubelet_root"]) return true;
  std::string root;
  if (!ReadScalar(section["kubelet_root"], "kubernetes.kubelet_root", &root, error)) return false;
  if (root.empty() || root.front() != '/') {
    *error = "kubernetes.kubelet_root: \"" + root + "\" is not an absolute path";
    return false;
  }
  options->kubelet_root = root;
  return true;
}

std::unique_ptr<Collector> NewKubernetesCollector(const CollectorOptions& options) {
  return std::make_unique<KubernetesCollector>(options);
}

}  // namespace nvmeof
