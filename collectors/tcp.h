// The tcp collector's options (config section `tcp:`).
#pragma once

#include <memory>
#include <string>

#include "base/collector.h"

namespace YAML {
class Node;
}

namespace nvmeof {

struct CollectorOptions;  // collectors/collector_options.h

struct TcpOptions {
  // Node-wide TCP/IP counters from procfs snmp/netstat/snmp6
  // (nvmeof_tcp_retransmitted_segments_total,
  // ...). node_exporter's netstat collector serves the same numbers, so they are off by default;
  // the per-connection NVMe/TCP series (sock_diag) are always served.
  bool node_counters = false;
};

// The `tcp:` section on top of *options. Errors name the key: `tcp.node_counters: ...`.
bool ParseTcpOptions(const YAML::Node& section, TcpOptions* options, std::string* error);

// The collector --collector.tcp names.
std::unique_ptr<Collector> NewTcpCollector(const CollectorOptions& options);

}  // namespace nvmeof
