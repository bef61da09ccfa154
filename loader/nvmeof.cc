#include "loader/nvmeof.h"

#include <algorithm>
#include <cstring>
#include <map>

#include "base/files.h"

namespace nvmeof {

namespace {
using M = Mechanism;
// The host driver hooks' first variants read the struct request they reach by container_of
// with plain loads through bpf_rdonly_cast (6.2+), where the others call
// bpf_probe_read_kernel (bpf/nvmeof_common.bpf.h rq_cast).
constexpr std::string_view kRdonlyCast = "bpf_rdonly_cast";
}  // namespace

// size-exception: the hook table, one entry per hook with its variants in preference order.
const std::vector<HookSpec>& NvmeofHooks() {
  // Frame hooks list their tracepoints first, like the block hooks: the tracepoints are stable
  // across kernels and sit exactly at the event. Driver hooks are functions: fentry, then kprobe.
  // fentry pins the driver's module (kernel 6.0+): the host transports' hooks are released while
  // no controller uses them (ReleasableTransport), so `rmmod nvme_rdma` works after a disconnect.
  // kprobes first would not pin, but tearing them down under I/O panicked the 6.1 and 6.12 VM
  // kernels (docs/metrics.md "NVMe-oF stages"). Driver hooks are the transport tier: planned only
  // with bpf.transport_stages (DESIGN "The stage model").
  static const std::vector<HookSpec> hooks = {
      // host
      {.name = kHookNvmeSetupCmd,
       .required = true,
       .module = "nvme_core",
       .variants = {{M::kTpBtf, "nvme_setup_cmd", "nv_setup_tp_btf"},
                    {M::kRawTp, "nvme_setup_cmd", "nv_setup_raw_tp"},
                    {M::kFentry, "nvme_setup_cmd", "nv_setup_fentry"},
                    {M::kKprobe, "nvme_setup_cmd", "nv_setup_kprobe"}},
       .gate = "nvme_core"},
      {.name = "nvme_rdma_post_send",
       .required = false,
       .module = "nvme_rdma",
       .variants = {{M::kFentry, "nvme_rdma_post_send", "nv_rdma_post_cast", kRdonlyCast},
                    {M::kFentry, "nvme_rdma_post_send", "nv_rdma_post_fentry"},
                    {M::kKprobe, "nvme_rdma_post_send", "nv_rdma_post_kprobe"}},
       .gate = "nvme_rdma",
       .transport_tier = true},
      {.name = "nvme_rdma_send_done",
       .required = false,
       .module = "nvme_rdma",
       .variants = {{M::kFentry, "nvme_rdma_send_done", "nv_rdma_sent_cast", kRdonlyCast},
                    {M::kFentry, "nvme_rdma_send_done", "nv_rdma_sent_fentry"},
                    {M::kKprobe, "nvme_rdma_send_done", "nv_rdma_sent_kprobe"}},
       .gate = "nvme_rdma",
       .transport_tier = true},
      {.name = "nvme_tcp_try_send_cmd_pdu",
       .required = false,
       .module = "nvme_tcp",
       .variants = {{M::kFentry, "nvme_tcp_try_send_cmd_pdu", "nv_tcp_post_cast", kRdonlyCast},
                    {M::kFentry, "nvme_tcp_try_send_cmd_pdu", "nv_tcp_post_fentry"},
                    {M::kKprobe, "nvme_tcp_try_send_cmd_pdu", "nv_tcp_post_kprobe"}},
       .gate = "nvme_tcp",
       .transport_tier = true},
      {.name = "blk_mq_complete_request_remote",
       .required = false,
       .module = "",
       .variants = {{M::kFentry, "blk_mq_complete_request_remote", "nv_response_fentry"},
                    {M::kKprobe, "blk_mq_complete_request_remote", "nv_response_kprobe"}},
       .gate = "nvme_core",
       .transport_tier = true},
      {.name = "nvme_complete_rq",
       .required = true,
       .module = "nvme_core",
       .variants = {{M::kTpBtf, "nvme_complete_rq", "nv_complete_tp_btf"},
                    {M::kRawTp, "nvme_complete_rq", "nv_complete_raw_tp"},
                    {M::kFentry, "nvme_complete_rq", "nv_complete_fentry"},
                    {M::kKprobe, "nvme_complete_rq", "nv_complete_kprobe"}},
       .gate = "nvme_core"},
      {.name = kHookNvmeRqEnd,
       .required = true,
       .module = "",
       .variants = {{.mechanism = M::kTpBtf,
                     .target = "block_io_done",
                     .program = "nv_end_done_tp_btf",
                     .accounted = true},
                    {.mechanism = M::kRawTp,
                     .target = "block_io_done",
                     .program = "nv_end_done_raw_tp",
                     .accounted = true},
                    {M::kTpBtf, "block_rq_complete", "nv_end_tp_btf"},
                    {M::kRawTp, "block_rq_complete", "nv_end_raw_tp"},
                    {M::kFentry, "blk_update_request", "nv_end_fentry"},
                    {M::kKprobe, "blk_update_request", "nv_end_kprobe"}},
       .gate = "nvme_core"},
      // target
      {.name = "nvmet_rdma_recv_done",
       .required = false,
       .module = "nvmet_rdma",
       .variants = {{M::kFentry, "nvmet_rdma_recv_done", "nv_t_rdma_recv_fentry"},
                    {M::kKprobe, "nvmet_rdma_recv_done", "nv_t_rdma_recv_kprobe"}},
       .gate = "nvmet_rdma",
       .transport_tier = true},
      {.name = "nvmet_tcp_data_ready",
       .required = false,
       .module = "nvmet_tcp",
       .variants = {{M::kFentry, "nvmet_tcp_data_ready", "nv_t_tcp_recv_fentry"},
                    {M::kKprobe, "nvmet_tcp_data_ready", "nv_t_tcp_recv_kprobe"}},
       .gate = "nvmet_tcp",
       .transport_tier = true},
      {.name = "nvmet_req_init",
       .required = true,
       .module = "nvmet",
       .variants = {{M::kTpBtf, "nvmet_req_init", "nv_t_init_tp_btf"},
                    {M::kRawTp, "nvmet_req_init", "nv_t_init_raw_tp"},
                    {M::kFentry, "nvmet_req_init", "nv_t_init_fentry"},
                    {M::kKprobe, "nvmet_req_init", "nv_t_init_kprobe"},
                    {.mechanism = M::kTracepoint,
                     .target = "nvmet/nvmet_req_init",
                     .program = "nv_t_init_tp",
                     .fields = kTpInitFields}},
       .gate = "nvmet"},
      {.name = "nvmet_rdma_read_data_done",
       .required = false,
       .module = "nvmet_rdma",
       .variants = {{M::kFentry, "nvmet_rdma_read_data_done", "nv_t_rdma_data_fentry"},
                    {M::kKprobe, "nvmet_rdma_read_data_done", "nv_t_rdma_data_kprobe"}},
       .gate = "nvmet_rdma",
       .transport_tier = true},
      {.name = "nvmet_bdev_execute_rw",
       .required = false,
       .module = "nvmet",
       .variants = {{M::kFentry, "nvmet_bdev_execute_rw", "nv_t_bdev_exec_fentry"},
                    {M::kKprobe, "nvmet_bdev_execute_rw", "nv_t_bdev_exec_kprobe"}},
       .gate = "nvmet",
       .transport_tier = true},
      {.name = "nvmet_file_execute_rw",
       .required = false,
       .module = "nvmet",
       .variants = {{M::kFentry, "nvmet_file_execute_rw", "nv_t_file_exec_fentry"},
                    {M::kKprobe, "nvmet_file_execute_rw", "nv_t_file_exec_kprobe"}},
       .gate = "nvmet",
       .transport_tier = true},
      {.name = "nvmet_req_complete",
       .required = true,
       .module = "nvmet",
       .variants = {{M::kTpBtf, "nvmet_req_complete", "nv_t_done_tp_btf"},
                    {M::kRawTp, "nvmet_req_complete", "nv_t_done_raw_tp"},
                    {M::kFentry, "nvmet_req_complete", "nv_t_done_fentry"},
                    {M::kKprobe, "nvmet_req_complete", "nv_t_done_kprobe"},
                    {.mechanism = M::kTracepoint,
                     .target = "nvmet/nvmet_req_complete",
                     .program = "nv_t_done_tp",
                     .fields = kTpDoneFields}},
       .gate = "nvmet"},
      {.name = kHookNvmetRdmaReleaseRsp,
       .required = false,
       .module = "nvmet_rdma",
       .variants = {{M::kFentry, "nvmet_rdma_release_rsp", "nv_t_rdma_sent_fentry"},
                    {M::kKprobe, "nvmet_rdma_release_rsp", "nv_t_rdma_sent_kprobe"}},
       .gate = "nvmet_rdma",
       .transport_tier = true},
      {.name = kHookNvmetTcpSendResponse,
       .required = false,
       .module = "nvmet_tcp",
       .variants = {{M::kFentry, "nvmet_try_send_response", "nv_t_tcp_sent_fentry"},
                    {M::kKprobe, "nvmet_try_send_response", "nv_t_tcp_sent_kprobe"}},
       .gate = "nvmet_tcp",
       .transport_tier = true},
  };
  return hooks;
}

namespace {

// The stage that ends at each point (index = point); [0] has none.
constexpr std::string_view kHostStages[NVMEOF_HP_COUNT] = {"",
                                                           "block_submit",
                                                           "driver_submit",
                                                           "command_send",
                                                           "target_and_response",
                                                           "host_receive",
                                                           "block_complete"};
constexpr std::string_view kTargetStages[NVMEOF_TP_COUNT] = {"",       "receive", "data_transfer",
                                                             "submit", "storage", "response"};

}  // namespace

std::string NvmeofStageName(std::uint8_t role, std::string_view transport, std::uint8_t from,
                            std::uint8_t to) {
  const bool host = role == NVMEOF_ROLE_HOST;
  const int points = host ? int{NVMEOF_HP_COUNT} : int{NVMEOF_TP_COUNT};
  if (from >= to || to >= points) return "invalid";
  std::vector<std::string_view> parts;
  for (int p = from + 1; p <= to; ++p) parts.push_back(host ? kHostStages[p] : kTargetStages[p]);
  // Points that a command may legitimately skip do not rename the span they sit in.
  auto collapse = [&](std::string_view a, std::string_view b, std::string_view as) {
    for (size_t i = 0; i + 1 < parts.size(); ++i) {
      if (parts[i] == a && parts[i + 1] == b) {
        parts[i] = as;
        parts.erase(parts.begin() + static_cast<long>(i) + 1);
      }
    }
  };
  if (host) {
    // No send completion before the response (TCP; or RDMA when the response is polled first).
    collapse("command_send", "target_and_response", "network_and_target");
    // PCIe has no network: setup to response is the drive.
    if (transport == "pcie") collapse("driver_submit", "network_and_target", "device");
  } else {
    collapse("data_transfer", "submit", "submit");  // no data to pull (reads, inline writes)
  }
  // A span over the whole frame between two tracepoints has a name of its own: it is what the
  // default tier (tracepoints only) serves, so a dashboard reads "round_trip", not a chain.
  using Parts = std::vector<std::string_view>;
  if (host && parts == Parts{"driver_submit", "network_and_target", "host_receive"})
    return "round_trip";  // nvme_setup_cmd -> nvme_complete_rq
  if (host && parts == Parts{"device", "host_receive"}) return "device";  // PCIe: the drive
  if (!host && parts == Parts{"submit", "storage"}) return "residence";   // init -> complete
  std::string name;
  for (auto p : parts) {
    if (!name.empty()) name += '+';
    name += p;
  }
  return name;
}

const std::vector<HookSpec>& RecordNvmeofHooks() {
  static const std::vector<HookSpec> hooks = [] {
    std::vector<HookSpec> out = NvmeofHooks();
    for (auto& h : out)
      std::erase_if(h.variants,
                    [](const Variant& v) { return v.mechanism == Mechanism::kTracepoint; });
    return out;
  }();
  return hooks;
}

void PairNvmetTracepoints(AttachPlan* plan) {
  // AttachPlan::Find on a plan this function may change.
  auto* init = const_cast<HookPlan*>(plan->Find("nvmet_req_init"));
  auto* done = const_cast<HookPlan*>(plan->Find("nvmet_req_complete"));
  auto classic = [](const HookPlan* hp) { return hp->chosen->mechanism == Mechanism::kTracepoint; };
  if (!init || !done || !init->chosen || !done->chosen || classic(init) == classic(done)) return;
  HookPlan* tp = classic(init) ? init : done;
  const HookPlan* other = classic(init) ? done : init;
  tp->rejected.emplace_back(Mechanism::kTracepoint,
                            std::string(other->hook->name) + " attaches through " +
                                std::string(MechanismName(other->chosen->mechanism)));
  tp->chosen.reset();
}

std::uint32_t TargetSentHooked(const AttachPlan& plan) {
  std::uint32_t bits = 0;
  for (const auto& h : plan.hooks) {
    if (!h.chosen) continue;
    if (h.hook->name == kHookNvmetRdmaReleaseRsp) bits |= 1U << NVMEOF_TRTYPE_RDMA;
    if (h.hook->name == kHookNvmetTcpSendResponse) bits |= 1U << NVMEOF_TRTYPE_TCP;
  }
  return bits;
}

int NvmeofStageRank(std::uint8_t role, std::string_view transport, std::string_view stage) {
  const int points = role == NVMEOF_ROLE_HOST ? int{NVMEOF_HP_COUNT} : int{NVMEOF_TP_COUNT};
  for (int from = 0; from < points; ++from)
    for (int to = from + 1; to < points; ++to)
      if (NvmeofStageName(role, transport, static_cast<std::uint8_t>(from),
                          static_cast<std::uint8_t>(to)) == stage)
        return NvmeofSpanRank(from, to);
  return 1000;
}

std::string_view SizeClassName(std::uint8_t size_class) {
  static constexpr std::string_view kNames[NVMEOF_SIZE_CLASSES + 1] = {"",      "4KiB",   "16KiB",
                                                                       "64KiB", "256KiB", "larger"};
  return size_class <= NVMEOF_SIZE_CLASSES ? kNames[size_class] : "unknown";
}

void AddHist(nvmeof_hist* to, const nvmeof_hist& from) {
  to->count += from.count;
  to->sum_ns += from.sum_ns;
  for (int b = 0; b < NVMEOF_HIST_BUCKETS; ++b) to->buckets[b] += from.buckets[b];
}

std::vector<NvmeofSeries> PathSpans(
    const std::vector<std::pair<nvmeof_series, nvmeof_path_hists>>& entries) {
  auto less = [](const nvmeof_series& a, const nvmeof_series& b) {
    return std::memcmp(&a, &b, sizeof(a)) < 0;
  };
  std::map<nvmeof_series, nvmeof_hist, decltype(less)> spans(less);
  for (const auto& [key, hists] : entries) {
    int first = -1, prev = -1;
    for (int i = 0; i < NVMEOF_POINTS; ++i) {
      if (!(key.points & (1U << i))) continue;
      if (prev >= 0) {
        nvmeof_series k = key;
        k.points = 0;
        k.from = static_cast<unsigned char>(prev);
        k.to = static_cast<unsigned char>(i);
        AddHist(&spans[k], hists.stage[i - 1]);
      } else {
        first = i;
      }
      prev = i;
    }
    if (hists.total.count == 0 || first < 0) continue;  // in nv_hists (total_in_paths)
    nvmeof_series k = key;
    k.kind = NVMEOF_KIND_TOTAL;
    k.points = 0;
    k.from = static_cast<unsigned char>(first);
    k.to = static_cast<unsigned char>(prev);
    AddHist(&spans[k], hists.total);
  }
  std::vector<NvmeofSeries> out;
  for (const auto& [k, h] : spans) out.push_back({k, h});
  return out;
}

std::string_view NvmeofTransportName(std::uint8_t trtype) {
  switch (trtype) {
    case 0:
      return "pcie";
    case NVMEOF_TRTYPE_RDMA:
      return "rdma";
    case NVMEOF_TRTYPE_FC:
      return "fc";
    case NVMEOF_TRTYPE_TCP:
      return "tcp";
    case NVMEOF_TRTYPE_LOOP:
      return "loop";
    default:
      return "unknown";
  }
}

bool ModuleLoaded(const Paths& paths, std::string_view module) {
  return module.empty() || IsDir(paths.sysfs + "/module/" + std::string(module));
}

std::string_view ReleasableTransport(std::string_view module) {
  if (module == "nvme_rdma") return "rdma";
  if (module == "nvme_tcp") return "tcp";
  return "";
}

bool HasHostController(const Paths& paths, std::string_view transport) {
  const std::string root = paths.sysfs + "/class/nvme";
  for (const auto& ctrl : ListDir(root)) {
    if (ReadFile(root + "/" + ctrl + "/transport").value_or("") == transport) return true;
  }
  return false;
}

std::string WhyNotHooked(const Paths& paths, std::string_view gate, bool release_idle) {
  if (!ModuleLoaded(paths, gate)) return "module " + std::string(gate) + " not loaded";
  const std::string_view transport = ReleasableTransport(gate);
  if (!release_idle || transport.empty() || HasHostController(paths, transport)) return "";
  return "no " + std::string(transport) + " controller (released so that " + std::string(gate) +
         " can be unloaded)";
}

}  // namespace nvmeof
