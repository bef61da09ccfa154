// Netdev attributes in sysfs class/net/<netdev> that decide whether RoCE works: the MTU, and
// the RoCE ECN switches per priority of Mellanox's mlx5_core as shipped in MLNX_OFED
// (ecn/roce_np/enable/<prio>, ecn/roce_rp/enable/<prio>; the in-tree driver has no such files).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "readers/netdev_stats.h"
#include "readers/sysfs_files.h"

namespace nvmeof {

// class/net/<netdev>/mtu into *mtu. kAbsent: no class/net/<netdev> (a GID table can name a
// netdev of another network namespace); kFailed: the directory is there but mtu is missing,
// unreadable or not a number. Read through `files`, which keeps it open between scrapes.
ReadStatus ReadNetdevMtu(SysfsFiles& files, const std::string& sysfs, const std::string& netdev,
                         std::uint64_t* mtu);

// One ecn/roce_<point>/enable/<priority> file. `point` is "np" (notification point: marks CNPs
// back to the sender) or "rp" (reaction point: slows down on CNPs). ok is false when the file is
// missing, unreadable or holds anything but 0 or 1.
struct EcnSwitch {
  std::string point;
  int priority = 0;
  bool ok = false;
  bool enabled = false;
};

// Both points, priorities 0-7, for each point whose enable/ directory exists; empty when the
// driver has no ECN files (not an error).
std::vector<EcnSwitch> ReadRoceEcn(const std::string& sysfs, const std::string& netdev);

}  // namespace nvmeof
