// The nvmet collector's options (config section `nvmet:`).
#pragma once

#include <memory>
#include <string>

#include "base/collector.h"

namespace YAML {
class Node;
}

namespace nvmeof {

struct CollectorOptions;  // collectors/collector_options.h

struct NvmetOptions {
  // Inventory no shipped panel, rule or alert reads: nvmeof_target_subsystem_info (serial,
  // model, version, allow_any_host), nvmeof_target_namespace_enabled,
  // nvmeof_target_allowed_host (one series per subsystem and allowed host NQN) and
  // nvmeof_target_port_subsystem. Off by default (docs/fleet.md); the namespace, port and ANA
  // series the rules join on are always served.
  bool inventory = false;
};

// The `nvmet:` section on top of *options. Errors name the key: `nvmet.inventory: ...`.
bool ParseNvmetOptions(const YAML::Node& section, NvmetOptions* options, std::string* error);

// The collector --collector.nvmet names.
std::unique_ptr<Collector> NewNvmetCollector(const CollectorOptions& options);

}  // namespace nvmeof
