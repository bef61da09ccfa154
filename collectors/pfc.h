// The pfc collector: PFC (802.1Qbb) and link-level (802.3x) pause frames and pause time per
// priority and direction, pause storms and physical discards of the RDMA netdevs, from the
// drivers' ethtool statistics (mlx5_core, ice, bnxt_en) and from DCB netlink (any DCB driver);
// and the RoCE ECN switches per priority from sysfs (mlx5: class/net/<netdev>/ecn/).
//
// Where the numbers come from is behind NetdevStatsSource, so tests run on `ethtool -S` text
// fixtures and production on the ioctl and netlink.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/collector.h"
#include "readers/netdev_stats.h"

namespace YAML {
class Node;
}

namespace nvmeof {

struct CollectorOptions;  // collectors/collector_options.h

// Config section `pfc:`. The RDMA netdevs are those of the devices rdma.devices admits.
struct PfcOptions {
  NameFilter netdevs;  // netdevs beyond the RDMA ones (include) and ones to skip (exclude)
  // Testing (--testing.ethtool-dir): read "ethtool -S" style text files from here instead of
  // the SIOCETHTOOL ioctl (see NewFixtureNetdevStatsSource). Empty in production.
  std::string ethtool_fixture_dir;
};

// The `pfc:` section on top of *options. Errors name the key: `pfc.netdevs.include: ...`.
bool ParsePfcOptions(const YAML::Node& section, PfcOptions* options, std::string* error);

// The collector with an explicit source (NewPfcCollector picks one from the options).
std::unique_ptr<Collector> NewPfcCollectorWithSource(const CollectorOptions& options,
                                                     std::unique_ptr<NetdevStatsSource> source);

// The collector --collector.pfc names.
std::unique_ptr<Collector> NewPfcCollector(const CollectorOptions& options);

}  // namespace nvmeof
