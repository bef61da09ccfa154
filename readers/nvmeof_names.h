// What sysfs and configfs say of the ids the eBPF programs key NVMe-oF series by: a host disk's
// namespace, controller and transport; a target namespace's subsystem and transport, by its
// device path (nvmet's classic tracepoints, on kernels without module BTF, record that path,
// not the subsystem). The eBPF collector turns them into labels (collectors/bpf.cc).
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>

namespace nvmeof {

struct NvmeDiskIdentity {
  std::string device;      // the namespace as users see it: nvme0n1 (also for a path nvme0c1n1)
  std::string controller;  // nvme1
  std::string transport;   // rdma, tcp, pcie, ...
};

// A host disk's names, from <sysfs>/block and class/nvme: nullopt if it is gone or not an NVMe
// namespace.
std::optional<NvmeDiskIdentity> IdentifyNvmeDisk(const std::string& sysfs, const std::string& disk);

// nvmet's trace records keep a device path's first 32 bytes (DISK_NAME_LEN).
inline constexpr std::size_t kNvmetTraceDiskLen = 32;

struct NvmetNamespaceTarget {
  std::string nqn;
  std::string transport;  // addr_trtype of the ports exporting the subsystem; "unknown" unless one
};

// Each namespace's device_path (its first kNvmetTraceDiskLen bytes) -> its subsystem and
// transport; a path two subsystems share keeps the first in name order. Empty without nvmet.
std::map<std::string, NvmetNamespaceTarget> NvmetTargetsByDevicePath(const std::string& configfs);

}  // namespace nvmeof
