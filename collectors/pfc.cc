// STUB: replaced by the real collector.
#include "collectors/registry.h"

namespace nvmeof {
namespace {
class PfcCollector : public Collector {
 public:
  std::string_view Name() const override { return "pfc"; }
  bool Collect(MetricSink&) override { return true; }
};
}  // namespace
std::unique_ptr<Collector> NewPfcCollector(const CollectorOptions&) {
  return std::make_unique<PfcCollector>();
}
}  // namespace nvmeof
