// The Collector interface: one per data source, metrics built fresh on every scrape.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <regex>
#include <string>
#include <string_view>
#include <vector>

#include "base/metric_sink.h"

namespace nvmeof {

// Roots of the kernel's virtual filesystems; injectable so every collector runs on fixtures.
struct Paths {
  std::string sysfs = "/sys";
  std::string procfs = "/proc";
  std::string configfs = "/sys/kernel/config";
  // The host's / (--path.rootfs): where host paths that are no kernel filesystem are read, e.g.
  // the kubelet root. "/host" in a container that mounts the host's directories there.
  std::string rootfs = "/";
};

// include/exclude by regular expression (ECMAScript, full match). Empty include admits all.
// Read from YAML by ReadFilter (base/yaml.h).
struct NameFilter {
  std::optional<std::regex> include;
  std::optional<std::regex> exclude;

  bool Allows(std::string_view name) const;
};

class Collector {
 public:
  virtual ~Collector() = default;
  virtual std::string_view Name() const = 0;
  // Appends this scrape's series to `out`. Returns false when the source failed as a whole
  // (reported as nvmeof_exporter_collector_success 0); series it could read are still kept.
  // A missing source (no RDMA devices, no nvmet loaded) is success with no series.
  virtual bool Collect(MetricSink& out) = 0;
};

}  // namespace nvmeof
