// STUB: replaced by the real collector.
#include "collectors/registry.h"

namespace nvmeof {
namespace {
class NvmeHostCollector : public Collector {
 public:
  std::string_view Name() const override { return "nvme_host"; }
  bool Collect(MetricSink&) override { return true; }
};
}  // namespace
std::unique_ptr<Collector> NewNvmeHostCollector(const CollectorOptions&) {
  return std::make_unique<NvmeHostCollector>();
}
}  // namespace nvmeof
