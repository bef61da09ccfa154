// STUB: replaced by the real collector.
#include "collectors/registry.h"

namespace nvmeof {
namespace {
class RdmaCollector : public Collector {
 public:
  std::string_view Name() const override { return "rdma"; }
  bool Collect(MetricSink&) override { return true; }
};
}  // namespace
std::unique_ptr<Collector> NewRdmaCollector(const CollectorOptions&) {
  return std::make_unique<RdmaCollector>();
}
}  // namespace nvmeof
