// Per-command records (bpf/record.bpf.c): the loader of `record` and of `top` without --from.
// Its own object and maps beside the exporter's; the hooks are NvmeofHooks()' (same program
// names), planned the same way. Built with NVMEOF_BPF (record_loader.cc); disabled.cc otherwise.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "base/collector.h"
#include "bpf/record_maps.h"
#include "loader/attach.h"
#include "loader/bpf_options.h"

namespace nvmeof {

struct RecordOptions {
  std::uint32_t sample_every = 1;                         // deterministic, see record.bpf.c
  std::uint32_t ring_bytes = NVMEOF_RECORD_RING_DEFAULT;  // power of 2, >= page size
  bool host = true;                                       // attach the host's hooks
  bool target = true;                                     // attach the target's hooks
};

struct RecordGroupCount {
  nvmeof_record_group key{};
  std::uint64_t commands = 0;  // summed over CPUs, since load
};

class RecordSource {
 public:
  virtual ~RecordSource() = default;
  // Waits up to timeout_ms for records and hands each to fn. Returns how many, or -errno.
  virtual int Poll(int timeout_ms, const std::function<void(const nvmeof_record&)>& fn) = 0;
  // The counters of record.h (NVMEOF_RCTR_*), summed over CPUs.
  virtual bool Counters(std::uint64_t out[NVMEOF_RCTR_COUNT]) = 0;
  // Exact command counts per group, and the groups' names (id -> disk name or NQN).
  virtual bool Groups(std::vector<RecordGroupCount>* groups,
                      std::vector<std::pair<std::uint64_t, std::string>>* names) = 0;
};

struct RecordLoad {
  Availability availability;
  AttachPlan plan;
  std::unique_ptr<RecordSource> source;  // null unless loaded
};

// Never throws. Plans the hooks of NvmeofHooks() for the roles asked whose module is loaded
// now; at least one must be. Hooks of modules loaded later attach within a second of Poll()
// (say nvmet_tcp once the target's port comes up). bpf.mechanism forces one mechanism, as for
// the exporter.
RecordLoad LoadRecord(const Paths& paths, const BpfOptions& bpf, const RecordOptions& options);

}  // namespace nvmeof
