// The labels of the NVMe-oF collector's series: each series key the programs made (bpf/
// nvmeof_maps.h), named from what the programs kept (nv_names) and from sysfs and configfs. One
// per scrape: it learns each id, disk and controller once.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/collector.h"
#include "base/metric_sink.h"
#include "bpf/nvmeof_maps.h"
#include "readers/nvmeof_names.h"

namespace nvmeof {

class NvmeofSeriesNames {
 public:
  enum class Named { kOk, kSkip, kGone };

  // names: series id -> the name the programs kept (NvmeofSnapshot::names).
  NvmeofSeriesNames(const Paths& paths,
                    const std::vector<std::pair<std::uint64_t, std::string>>& names);

  // The labels of a series (without size and stage) and its transport: kGone when its disk,
  // controller or subsystem went away, kSkip when it cannot be named.
  Named Name(const nvmeof_series& k, Labels* labels, std::string* transport);

 private:
  const Paths& paths_;
  std::map<std::uint64_t, std::string> names_;
  std::map<std::uint64_t, std::optional<NvmeDiskIdentity>> hosts_;
  std::map<std::uint64_t, std::optional<std::string>> ctrl_transports_;
  bool have_nvmet_;
  // The classic tracepoint series' names -> subsystem and transport (once per scrape).
  std::optional<std::map<std::string, NvmetNamespaceTarget>> device_paths_;
};

}  // namespace nvmeof
