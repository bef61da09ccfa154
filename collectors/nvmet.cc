// STUB: replaced by the real collector.
#include "collectors/registry.h"

namespace nvmeof {
namespace {
class NvmetCollector : public Collector {
 public:
  std::string_view Name() const override { return "nvmet"; }
  bool Collect(MetricSink&) override { return true; }
};
}  // namespace
std::unique_ptr<Collector> NewNvmetCollector(const CollectorOptions&) {
  return std::make_unique<NvmetCollector>();
}
}  // namespace nvmeof
