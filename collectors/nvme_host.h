// The nvme_host collector: NVMe host controllers, paths and namespaces from sysfs.
#pragma once

#include <string>

#include "collectors/base/collector.h"

namespace YAML {
class Node;
}

namespace nvmeof {

// Config section `nvme_host:`.
struct NvmeHostOptions {
  NameFilter controllers;  // nvme0, nvme1, ...
};

// The `nvme_host:` section on top of *options. Errors name the key: `nvme_host.controllers...`.
bool ParseNvmeHostOptions(const YAML::Node& section, NvmeHostOptions* options, std::string* error);

}  // namespace nvmeof
