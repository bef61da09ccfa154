// STUB: replaced by the real collector.
#include "collectors/registry.h"

namespace nvmeof {
namespace {
class TcpCollector : public Collector {
 public:
  std::string_view Name() const override { return "tcp"; }
  bool Collect(MetricSink&) override { return true; }
};
}  // namespace
std::unique_ptr<Collector> NewTcpCollector(const CollectorOptions&) {
  return std::make_unique<TcpCollector>();
}
}  // namespace nvmeof
