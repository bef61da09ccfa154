// Which pod's CSI volume a block device is, from the node's own mount table and kubelet's
// directories (no API server): kubelet publishes every CSI volume a pod uses at a path that
// names the PersistentVolume and the pod's UID (pkg/volume/csi in kubernetes/kubernetes):
//   filesystem  <kubelet>/pods/<pod uid>/volumes/kubernetes.io~csi/<pv>/mount
//               a mount of the volume's filesystem: the device is the mount's major:minor;
//               vol_data.json beside it holds driverName
//   block       <kubelet>/plugins/kubernetes.io/csi/volumeDevices/<pv>/dev/<pod uid>
//               a bind mount of the device node out of devtmpfs (MapBlockVolume): major:minor
//               are devtmpfs's own, the mount's root names the node ("/nvme1n1");
//               driverName in volumeDevices/<pv>/data/vol_data.json
//   staging     <kubelet>/plugins/kubernetes.io/csi/<driver>/<sha256 of handle>/globalmount
//               (or, before Kubernetes 1.24, .../csi/pv/<pv>/globalmount): the node-wide mount
//               NodeStageVolume made; it names no pod. Kept only as a second source of the
//               driver name for a filesystem volume on the same device.
// <kubelet> is the kubelet root as the mount table shows it (--root-dir, /var/lib/kubelet by
// default; microk8s and k0s move it). Files are read at kubelet_dir: the same directory as this
// process sees it (under a --path.rootfs root in a container).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "readers/mountinfo.h"

namespace nvmeof {

enum class VolumeMode { kFilesystem, kBlock };

struct KubeletVolume {
  std::string persistent_volume;  // the directory's name, raw bytes
  std::string pod_uid;
  VolumeMode mode = VolumeMode::kFilesystem;
  // filesystem: the mounted device
  std::uint32_t major = 0;
  std::uint32_t minor = 0;
  // block: the device node's name under /dev ("nvme1n1", "nvme1c2n1")
  std::string device_name;
  std::string csi_driver;  // "" when vol_data.json cannot be read or has none
};

struct KubeletMounts {
  std::vector<KubeletVolume> volumes;
  // Driver of each staging mount named by <driver>/<hash>/globalmount, by its device.
  std::map<std::pair<std::uint32_t, std::uint32_t>, std::string> staging_drivers;
  std::size_t staging_mounts = 0;
};

// The pod volumes and staging mounts among `table`'s entries (mount points under kubelet_root;
// a trailing "/" is ignored). Reads each volume's vol_data.json under kubelet_dir.
KubeletMounts FindKubeletVolumes(const MountTable& table, std::string_view kubelet_root,
                                 const std::string& kubelet_dir);

// "driverName" of a vol_data.json text (a flat JSON object of strings); "" when absent or the
// text is not such an object. JSON escapes are undone (\uXXXX as UTF-8).
std::string ParseCsiDriverName(std::string_view json);

// Names block devices the way the kernel does in sysfs: by dev_t through
// <sysfs>/dev/block/MAJ:MIN, else through the dev files of <sysfs>/class/block/* (and
// <sysfs>/block/*), read once per instance. Make one per scrape: devices come and go.
class BlockDeviceNames {
 public:
  explicit BlockDeviceNames(std::string sysfs) : sysfs_(std::move(sysfs)) {}
  // The whole disk's name of a dev_t: a partition ("nvme1n1p1") gives its disk ("nvme1n1").
  std::optional<std::string> ByDevT(std::uint32_t major, std::uint32_t minor);
  // Whether sysfs knows a block device of this name (a device node's name under /dev).
  bool Known(const std::string& name) const;

 private:
  void Scan();
  std::string sysfs_;
  bool scanned_ = false;
  std::map<std::pair<std::uint32_t, std::uint32_t>, std::string> by_devt_;
};

}  // namespace nvmeof
