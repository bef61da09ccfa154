// Every collector the exporter knows, with its factory and the parser of its config section:
// the one place to look up a name.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "collectors/collector_options.h"

namespace YAML {
class Node;
}

namespace nvmeof {

struct CollectorInfo {
  std::string_view name;
  bool enabled_by_default;
  std::string_view help;
  std::unique_ptr<Collector> (*make)(const CollectorOptions&);
  // Applies the collector's config section (the top-level key `name`) to *options; nullptr
  // when the collector has no section. Errors name the key, e.g. `rdma.devices: ...`.
  bool (*parse)(const YAML::Node& section, CollectorOptions* options, std::string* error);
};

const std::vector<CollectorInfo>& AllCollectors();
const CollectorInfo* FindCollector(std::string_view name);

}  // namespace nvmeof
