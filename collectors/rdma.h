// The rdma collector: RDMA devices, ports, port counters and hw_counters from sysfs.
#pragma once

#include <memory>
#include <string>

#include "base/collector.h"

namespace YAML {
class Node;
}

namespace nvmeof {

struct CollectorOptions;  // collectors/collector_options.h

// Config section `rdma:`.
struct RdmaOptions {
  // RDMA devices (mlx5_0, rxe0). Also selects the devices of pfc (via their netdevs) and
  // rdma_netlink, which have no device filter of their own.
  NameFilter devices;
  // Traffic breakdowns no shipped panel, rule or alert reads: the PMA counters' unicast and
  // multicast packet split, and the driver-neutral names of the driver's packet counts and
  // responder op mix (nvmeof_rdma_{transmit,receive}_packets_total,
  // nvmeof_rdma_received_{write,read,atomic}_requests_total). Off by default (docs/fleet.md);
  // the raw driver counters stay in nvmeof_rdma_hw_counters_total either way.
  bool traffic_detail = false;
};

// The `rdma:` section on top of *options. Errors name the key: `rdma.devices.include: ...`,
// `rdma.traffic_detail: ...`.
bool ParseRdmaOptions(const YAML::Node& section, RdmaOptions* options, std::string* error);

// The collector --collector.rdma names.
std::unique_ptr<Collector> NewRdmaCollector(const CollectorOptions& options);

}  // namespace nvmeof
