// Built instead of the loaders when NVMEOF_BPF=OFF: the bpf collector reports why it is off.
#include "loader/block.h"
#include "loader/lifecycle.h"
#include "loader/nvmeof.h"
#include "loader/record.h"

namespace nvmeof {
namespace {

Availability DisabledAtBuild() {
  return {false, "disabled_at_build", "built with -DNVMEOF_BPF=OFF"};
}

}  // namespace

BlockLoad LoadBlock(const Paths&, const BpfOptions&, bool, bool) {
  return {DisabledAtBuild(), {}, nullptr};
}

NvmeofLoad LoadNvmeof(const Paths&, const BpfOptions&, bool, const BlockLoad*,
                      std::shared_ptr<FlightRecorder>) {
  return {DisabledAtBuild(), {}, nullptr};
}

LifecycleLoad LoadLifecycle(const Paths&, const BpfOptions&) {
  return {DisabledAtBuild(), nullptr};
}

RecordLoad LoadRecord(const Paths&, const BpfOptions&, const RecordOptions&) {
  return {DisabledAtBuild(), {}, nullptr};
}

}  // namespace nvmeof
