// The rdma collector: RDMA devices, ports, port counters and hw_counters from sysfs.
#pragma once

#include <string>

#include "collectors/base/collector.h"

namespace YAML {
class Node;
}

namespace nvmeof {

// Config section `rdma:`.
struct RdmaOptions {
  // RDMA devices (mlx5_0, rxe0). Also selects the devices of pfc (via their netdevs) and
  // rdma_netlink, which have no device filter of their own.
  NameFilter devices;
};

// The `rdma:` section on top of *options. Errors name the key: `rdma.devices.include: ...`.
bool ParseRdmaOptions(const YAML::Node& section, RdmaOptions* options, std::string* error);

}  // namespace nvmeof
