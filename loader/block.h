// Block-layer stage latency: the hook table, what the collector reads from the kernel each
// scrape (BlockSnapshot), and the loader that checks, plans, loads and attaches
// bpf/block.bpf.c. The kernel side is a BlockSource so tests run the collector on fakes.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/collector.h"
#include "bpf/block_maps.h"
#include "loader/attach.h"

struct bpf_object;

namespace nvmeof {

inline constexpr std::string_view kHookBlockIssue = "block_rq_issue";
inline constexpr std::string_view kHookBlockComplete = "block_rq_complete";

// block_rq_issue (optional: without it queue and device merge into end to end) and
// block_rq_complete (required).
const std::vector<HookSpec>& BlockHooks();

struct BlockSeries {
  std::uint32_t disk = 0;    // nvmeof_block_key.disk: diskseq, or dev_t before 5.15; 0: none
  std::uint32_t op = 0;      // enum nvmeof_block_op
  nvmeof_block_hist hist{};  // summed over CPUs
};

struct BlockSnapshot {
  std::vector<BlockSeries> series;
  bool disk_is_seq = false;  // BlockSeries::disk is the disk's diskseq (5.15+), else its dev_t
  std::uint64_t counters[NVMEOF_CTR_COUNT] = {};
  std::optional<std::uint64_t> inflight_used;  // ways holding an issue timestamp
  std::uint64_t inflight_capacity = 0;
  std::vector<ProgramRun> programs;
  bool program_run_stats = false;  // run_count/run_time_ns are live (stats enabled)
  std::vector<MapSize> maps;       // sizes, fixed at load
};

class BlockSource {
 public:
  virtual ~BlockSource() = default;
  virtual bool Read(BlockSnapshot* out) = 0;
  // Drops the entries of disks that are gone (diskseq keys only: a diskseq never returns), so
  // the maps hold the disks that exist, however many come and go.
  virtual void Forget(const std::vector<nvmeof_block_key>& keys) { (void)keys; }
  // The loaded object whose programs also set up and end NVMe-oF host commands, for LoadNvmeof
  // to share its stage maps (bpf/nvmeof_inflight.bpf.h); null when they do not.
  virtual const bpf_object* NvmeofHost() const { return nullptr; }
};

struct BlockLoad {
  Availability availability;
  AttachPlan plan;
  std::unique_ptr<BlockSource> source;  // null unless loaded and attached
};

// Never throws and never exits: on any failure `source` is null and `availability` says why.
// plan_only: probe which variants attach (trial loads) without keeping anything loaded.
// nvmeof_host: the issue and completion programs also set up and end NVMe-oF host commands (the
// NVMe-oF collector loads next and shares the maps: LoadNvmeof): one program on each of
// block_rq_issue and block_rq_complete instead of two.
BlockLoad LoadBlock(const Paths& paths, const BpfOptions& options, bool plan_only,
                    bool nvmeof_host = false);

std::string_view BlockOpName(std::uint32_t op);        // read write flush discard other
std::string_view BlockStageName(std::uint32_t stage);  // queue device total

// Disk names by their block series key (BlockSeries::disk) for one scrape, each source read
// once, on the first lookup that needs it. nullopt: the disk is gone (or the key is 0).
//   diskseq (5.15+): <sysfs>/class/block/*/diskseq, which lists hidden disks too (a native
//     multipath path, nvme0c1n1);
//   dev_t (MAJ << 20 | MIN): <sysfs>/dev/block/MAJ:MIN/uevent (DEVNAME=), else
//     <procfs>/diskstats, since before 5.15 a hidden disk has no /sys/dev/block entry, yet the
//     block programs count its requests.
class DiskNames {
 public:
  DiskNames(const Paths& paths, bool by_seq) : paths_(paths), by_seq_(by_seq) {}
  std::optional<std::string> Name(std::uint32_t disk);

 private:
  const Paths& paths_;
  bool by_seq_;
  std::optional<std::map<std::uint32_t, std::string>> listed_;  // by diskseq or from diskstats
};

// An NVMe-oF host namespace's disk (nvme1n1, its path nvme0c1n1, or a multipath head whose
// subsystem has an rdma, tcp, fc or loop controller) that bpf.block_devices.include does not name:
// with the NVMe-oF stages loaded, its block series are left out (the NVMe-oF host series time the
// same requests), and the block programs need not time it (NVMEOF_CTRL_UNTIMED_BLOCK).
bool BlockSeriesLeftOut(const std::string& sysfs, const NameFilter& block_devices,
                        const std::string& disk);

}  // namespace nvmeof
