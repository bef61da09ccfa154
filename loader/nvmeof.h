// NVMe-oF per-stage latency: the hook table of bpf/nvmeof.bpf.c, the stage names of its point
// spans, what the collector reads each scrape (NvmeofSnapshot), and the loader. Hooks of
// modules loaded after start are attached by a background thread of the kernel source (a
// load can take seconds; scrapes never wait for it).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/collector.h"
#include "bpf/nvmeof_maps.h"
#include "loader/attach.h"
#include "loader/block.h"

struct nvmeof_bpf;  // bpftool's skeleton of bpf/nvmeof.bpf.c (nvmeof.skel.h)

namespace nvmeof {

class FlightRecorder;  // loader/flight_recorder.h

// Host: nvme_setup_cmd, nvme_complete_rq and nvme_rq_end are required (the frame); the driver
// hooks are optional and merge stages when missing. Target: nvmet_req_init and
// nvmet_req_complete are required. Each is gated on its module (nvme_core, nvmet, ...).
const std::vector<HookSpec>& NvmeofHooks();
// The same without the classic tracepoint variants, which only bpf/nvmeof.bpf.c has: `record`
// (bpf/record.bpf.c) reads the target's types, so it needs module BTF.
const std::vector<HookSpec>& RecordNvmeofHooks();

// The record fields the classic tracepoint variants of nvmet_req_init and nvmet_req_complete
// read (bpf/nvmeof.bpf.c, kernels without module BTF), by the names in their format files.
inline constexpr std::string_view kTpInitFields = "ctrl,qid,cid,opcode,cdw10";
inline constexpr std::string_view kTpDoneFields = "ctrl,qid,cid,disk";

// Sets the classic tracepoint programs' field offsets in an opened object's rodata, from the
// format files (loader/nvmet_tracepoints.cc; NVMEOF_BPF builds).
void SetNvmetTracepointFields(const Paths& paths, ::nvmeof_bpf* skel);

// Which argument of nvmet_req_init() is its struct nvmet_sq *, counted from 0, as the fentry and
// kprobe variants of the target's init hook read it (bpf/nvmeof_hooks.bpf.h, nvmet_init_sq_arg):
// 2 until Linux 6.15, (req, cq, sq, ops); 1 from the kernels that dropped the cq argument,
// (req, sq, ops), such as Debian's 7.2. Read from nvmet's BTF under `sysfs`/kernel/btf; 2 where
// there is none (5.10: no module BTF, and the old argument list).
int NvmetReqInitSqArg(const std::string& sysfs);

// Those programs know a command by what both records hold (controller, queue, command id), the
// other variants by its struct nvmet_req: a plan with one of each would never end a command, so
// the tracepoint one is dropped (rejected, saying which mechanism its pair has).
void PairNvmetTracepoints(AttachPlan* plan);

// The target's response-sent hooks per transport (bit NVMEOF_TRTYPE_* of nvmeof_config).
inline constexpr std::string_view kHookNvmeSetupCmd = "nvme_setup_cmd";
inline constexpr std::string_view kHookNvmeRqEnd = "nvme_rq_end";
inline constexpr std::string_view kHookNvmetRdmaReleaseRsp = "nvmet_rdma_release_rsp";
inline constexpr std::string_view kHookNvmetTcpSendResponse = "nvmet_try_send_response";

// Bit NVMEOF_TRTYPE_* set for each transport whose target response-sent hook the plan attached
// (nvmeof_config.target_sent_hooked): target commands end there only on those transports.
std::uint32_t TargetSentHooked(const AttachPlan& plan);

// The stage a span of points covers: "network_and_target", or for a span across points whose
// hooks are missing, the covered stages joined by '+' ("driver_submit+network_and_target").
// The default tier's spans, over every transport point, have names of their own: the host's
// "round_trip" (nvme_setup_cmd -> nvme_complete_rq; "device" on PCIe) and the target's
// "residence" (nvmet_req_init -> nvmet_req_complete).
// transport: "rdma", "tcp", "pcie", ...
std::string NvmeofStageName(std::uint8_t role, std::string_view transport, std::uint8_t from,
                            std::uint8_t to);

// Path order of spans: by their first point, then their last.
constexpr int NvmeofSpanRank(int from, int to) { return from * 16 + to; }

// The path-order rank (NvmeofSpanRank) of the span that NvmeofStageName names `stage` for this
// role and transport; 1000, after all, for a name no span has. One order for `top` and `report`.
int NvmeofStageRank(std::uint8_t role, std::string_view transport, std::string_view stage);

// The `size` label of a size class (bpf/classes.h nvmeof_size_class): 4KiB 16KiB 64KiB 256KiB
// larger; "" for 0 (not classed), "unknown" past the last.
std::string_view SizeClassName(std::uint8_t size_class);

// The `transport` label of an NVMF_TRTYPE_* value: rdma, fc, tcp, loop; 0 (a host's local
// controller, as record.bpf.c reports it) is pcie; anything else unknown.
std::string_view NvmeofTransportName(std::uint8_t trtype);

struct NvmeofSeries {
  nvmeof_series key{};
  nvmeof_hist hist{};  // summed over CPUs
};

// to += from (count, sum and every bucket).
void AddHist(nvmeof_hist* to, const nvmeof_hist& from);

// nv_paths entries (each summed over CPUs) as stage series: slot i - 1 of an entry is the span
// from the previous point in its `points` to point i. Entries of different point sets that
// share a span (an RDMA command with and without the send completion both have setup ->
// posted) are summed into one series;
// and each entry's end to end (`total`, where kept there) as the series of kind
// NVMEOF_KIND_TOTAL from its first point to its last, with the entry's identity.
std::vector<NvmeofSeries> PathSpans(
    const std::vector<std::pair<nvmeof_series, nvmeof_path_hists>>& entries);

struct NvmeofSnapshot {
  std::vector<NvmeofSeries> series;
  // Series id -> name: host disk address -> disk name, target subsystem address -> NQN.
  std::vector<std::pair<std::uint64_t, std::string>> names;
  std::uint64_t counters[NVMEOF_NCTR_COUNT] = {};
  std::vector<ProgramRun> programs;
  bool program_run_stats = false;
  std::vector<MapSize> maps;  // sizes, fixed at load
};

class NvmeofSource {
 public:
  virtual ~NvmeofSource() = default;
  virtual bool Read(NvmeofSnapshot* out) = 0;
  // Hooks whose module is loaded (or that need none), with the mechanism each one uses.
  virtual AttachPlan Plan() const = 0;
  // Drops the series (and name) of these ids: disks and subsystems that are gone, so their
  // addresses can be reused by new ones without inheriting their name or counts.
  virtual void Forget(const std::vector<std::uint64_t>& ids) = 0;
};

struct NvmeofLoad {
  Availability availability;
  AttachPlan plan;                       // for `probe`; the source keeps its own live plan
  std::unique_ptr<NvmeofSource> source;  // null unless loaded
};

// Never throws and never exits. plan_only: probe which variants attach (hooks of modules not
// loaded are listed as missing with that reason) without keeping anything loaded.
// block: the loaded block collector; where its programs set up and end NVMe-oF host commands
// (BlockSource::NvmeofEnd), the nvme_rq_end hook is its completion program and nvme_setup_cmd
// its issue program where attached (shown with their variants), and the stage maps are its.
// flight: where the sampled commands' records go (bpf.flight_recorder_max_bytes > 0); null: none.
NvmeofLoad LoadNvmeof(const Paths& paths, const BpfOptions& options, bool plan_only,
                      const BlockLoad* block = nullptr,
                      std::shared_ptr<FlightRecorder> flight = nullptr);

// Is the module loaded? (<sysfs>/module/<name> exists; built-in modules have it too)
bool ModuleLoaded(const Paths& paths, std::string_view module);

// The host transport ("rdma", "tcp") of a host driver module whose hooks the exporter holds only
// while a controller of that transport exists; "" for any other module. A hooked module cannot
// be unloaded (fentry pins it, kernel 6.0+), and `nvme disconnect-all; rmmod nvme_rdma`, as in a
// driver update, must not need the exporter stopped.
std::string_view ReleasableTransport(std::string_view module);

// Does <sysfs>/class/nvme list a controller of this transport? One that is reconnecting or
// being deleted counts.
bool HasHostController(const Paths& paths, std::string_view transport);

// Why the hooks gated on module `gate` are not wanted now, "" when they are: the module is not
// loaded, or (release_idle) it is a releasable host transport with no controller.
std::string WhyNotHooked(const Paths& paths, std::string_view gate, bool release_idle);

}  // namespace nvmeof
