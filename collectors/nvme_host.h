// The nvme_host collector: NVMe host controllers, paths and namespaces from sysfs.
#pragma once

#include <memory>
#include <string>

#include "base/collector.h"

namespace YAML {
class Node;
}

namespace nvmeof {

struct CollectorOptions;  // collectors/collector_options.h

// Config section `nvme_host:`.
struct NvmeHostOptions {
  NameFilter controllers;  // nvme0, nvme1, ...
  // Inventory and settings no shipped panel, rule or alert reads: nvmeof_subsystem_info (model,
  // serial, firmware, iopolicy), nvmeof_namespace_size_bytes, and each controller's queues and
  // timeouts (nvmeof_controller_{queues,keep_alive_timeout_seconds,reconnect_delay_seconds,
  // loss_timeout_seconds,fast_io_fail_timeout_seconds}). Off by default (docs/fleet.md).
  bool inventory = false;
};

// The `nvme_host:` section on top of *options. Errors name the key: `nvme_host.controllers...`,
// `nvme_host.inventory: ...`.
bool ParseNvmeHostOptions(const YAML::Node& section, NvmeHostOptions* options, std::string* error);

// The collector --collector.nvme_host names.
std::unique_ptr<Collector> NewNvmeHostCollector(const CollectorOptions& options);

}  // namespace nvmeof
