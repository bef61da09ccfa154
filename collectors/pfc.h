// The pfc collector: PFC (802.1Qbb) and link-level (802.3x) pause frames and pause time per
// priority and direction, pause storms and physical discards of the RDMA netdevs, from the
// drivers' ethtool statistics (mlx5_core, ice, bnxt_en) and from DCB netlink (any DCB driver).
//
// Where the numbers come from is behind NetdevStatsSource, so tests run on `ethtool -S` text
// fixtures and production on the ioctl and netlink.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "collectors/base/collector.h"
#include "collectors/kernel/netdev_stats.h"

namespace nvmeof {

// The collector with an explicit source (NewPfcCollector picks one from the options).
std::unique_ptr<Collector> NewPfcCollectorWithSource(const CollectorOptions& options,
                                                     std::unique_ptr<NetdevStatsSource> source);

}  // namespace nvmeof
