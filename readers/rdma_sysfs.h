// The RDMA devices of sysfs class/infiniband and the netdevs their ports are bound to.
#pragma once

#include <string>
#include <vector>

#include "base/collector.h"
#include "readers/sysfs_files.h"

namespace nvmeof {

// Netdevs named by a port's GID table (<port_dir>/gid_attrs/ndevs/N), deduplicated, sorted.
// Tables are large (rxe: 1024 slots, mlx5: 256) and mostly unused: an unused slot fails with
// EINVAL. The kernel fills slots from 0, so the scan stops after 32 unused slots in a row;
// reading all of them cost 1-2 s per scrape under emulation. Read through `files`, which keeps
// them open between scrapes.
std::vector<std::string> PortNetdevs(SysfsFiles& files, const std::string& port_dir);

// The netdevs RDMA ports are bound to: /sys/class/infiniband/DEV/ports/N/gid_attrs/ndevs/*.
struct RdmaNetdev {
  std::string device;
  std::string netdev;
};
std::vector<RdmaNetdev> ListRdmaNetdevs(const Paths& paths, const NameFilter& devices);

}  // namespace nvmeof
