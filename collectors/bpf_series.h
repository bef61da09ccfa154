// The bpf collector's series that are not stage latencies: the attach layer's self-metrics
// (hooks, maps, program runs) and the connection lifecycle's families, built from what the
// loaders read (loader/attach.h, loader/lifecycle.h).
#pragma once

#include <cstdint>
#include <functional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "base/metric_sink.h"
#include "loader/attach.h"
#include "loader/lifecycle.h"

namespace nvmeof {

// The self-metrics every part (block, NVMe-oF, lifecycle) serves the same way:
// nvmeof_exporter_bpf_hook_attached per planned hook (attached only when `loaded`);
void EmitHooks(const AttachPlan& plan, bool loaded, MetricSink& out);
// nvmeof_exporter_bpf_map_bytes (and _map_entries for the maps that allocate per series);
void EmitMapSizes(std::string_view part, const std::vector<MapSize>& maps, MetricSink& out);
// run counts and CPU time per program, for the caller to emit only while BPF stats are on.
void EmitProgramRuns(const std::vector<ProgramRun>& programs, MetricSink& out);

// Host NQN labels up to a limit: the first `limit` distinct host NQNs keep their name for the
// process's life; later ones fold into "other" (one warning, then counted).
class HostnqnFolder {
 public:
  explicit HostnqnFolder(std::uint32_t limit) : limit_(limit) {}
  std::string Label(const std::string& hostnqn);
  std::uint64_t folded() const { return folded_.size(); }

 private:
  std::uint32_t limit_;
  std::set<std::string> kept_, folded_;
};

// Writes the lifecycle families of one snapshot. subsystem_exists bounds NQN labels: an NQN
// that is no subsystem of this target (a host asking for one that does not exist) is "other".
void EmitLifecycle(const LifecycleSnapshot& snap, HostnqnFolder& folder,
                   const std::function<bool(const std::string&)>& subsystem_exists,
                   MetricSink& out);

}  // namespace nvmeof
