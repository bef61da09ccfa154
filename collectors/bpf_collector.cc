#include "collectors/bpf_collector.h"

#include "collectors/bpf_histogram.h"
#include "exporter/log.h"

namespace nvmeof {
namespace {

constexpr std::string_view kHelpStage =
    "Block-layer stage latency per request: queue = allocated to issued to the driver, "
    "device = issued to completed (sampled 1 in nvmeof_exporter_bpf_sample_every).";
constexpr std::string_view kHelpTotal =
    "Block-layer request latency, allocated to completed (sampled 1 in "
    "nvmeof_exporter_bpf_sample_every).";

class BpfCollector : public Collector {
 public:
  BpfCollector(const CollectorOptions& options, BlockLoad load)
      : options_(options),
        load_(std::move(load)),
        layout_(BucketLayout::Make(options.bpf.buckets)) {
    if (!load_.availability.ok) {
      LogWarn(
          "eBPF stage latency unavailable; other collectors unaffected",
          Kv("reason", load_.availability.reason) + " " + Kv("detail", load_.availability.detail));
    } else {
      for (const auto& h : load_.plan.hooks) {
        LogInfo("eBPF hook",
                Kv("hook", h.hook->name) + " " +
                    Kv("mechanism", h.chosen ? MechanismName(h.chosen->mechanism) : "none"));
      }
    }
  }

  std::string_view Name() const override { return "bpf"; }

  bool Collect(MetricSink& out) override {
    out.Gauge("nvmeof_exporter_bpf_available",
              "1 if eBPF stage latency is collected; else 0 and `reason` says why.",
              {{"reason", load_.availability.reason}}, load_.availability.ok ? 1 : 0);
    for (const auto& h : load_.plan.hooks) {
      out.Gauge("nvmeof_exporter_bpf_hook_attached",
                "1 if the eBPF hook is attached, with the mechanism used (none if missing).",
                {{"hook", std::string(h.hook->name)},
                 {"mechanism", std::string(h.chosen ? MechanismName(h.chosen->mechanism) : "none")},
                 {"required", h.hook->required ? "true" : "false"}},
                h.chosen && load_.source ? 1 : 0);
    }
    // Unavailable BPF is reported above, not a failed scrape: it would only alert twice.
    if (!load_.source) return true;

    BlockSnapshot snap;
    if (!load_.source->Read(&snap)) return false;
    out.Gauge("nvmeof_exporter_bpf_sample_every",
              "Latency is timed for 1 in this many requests; request counts are exact.", {},
              options_.bpf.sample_every ? options_.bpf.sample_every : 1);
    EmitBlock(snap, out);
    EmitSelf(snap, out);
    return true;
  }

 private:
  void EmitBlock(const BlockSnapshot& snap, MetricSink& out) {
    const auto& bounds = layout_.bounds();
    for (const auto& s : snap.series) {
      auto name = BlockDeviceName(options_.paths, s.dev);
      if (!name) {  // no disk (dev 0) or removed since
        out.Skip();
        continue;
      }
      if (!options_.bpf.block_devices.Allows(*name)) continue;
      const std::string op(BlockOpName(s.op));
      out.Counter("nvmeof_block_requests_total",
                  "Block requests completed, every one (not sampled).",
                  {{"device", *name}, {"op", op}}, static_cast<double>(s.hist.requests));
      for (std::uint32_t st : {NVMEOF_STAGE_QUEUE, NVMEOF_STAGE_DEVICE}) {
        if (!StageTimed(st)) continue;
        out.Histogram("nvmeof_block_stage_latency_seconds", kHelpStage,
                      {{"device", *name}, {"op", op}, {"stage", std::string(BlockStageName(st))}},
                      bounds, layout_.Cumulative(s.hist.buckets[st]), s.hist.count[st],
                      static_cast<double>(s.hist.sum_ns[st]) / 1e9);
      }
      out.Histogram("nvmeof_block_latency_seconds", kHelpTotal, {{"device", *name}, {"op", op}},
                    bounds, layout_.Cumulative(s.hist.buckets[NVMEOF_STAGE_TOTAL]),
                    s.hist.count[NVMEOF_STAGE_TOTAL],
                    static_cast<double>(s.hist.sum_ns[NVMEOF_STAGE_TOTAL]) / 1e9);
    }
  }

  // Queue and device need the issue hook; without it they merge into the total.
  bool StageTimed(std::uint32_t stage) const {
    if (stage == NVMEOF_STAGE_TOTAL) return true;
    const HookPlan* issue = load_.plan.Find(kHookBlockIssue);
    return issue && issue->chosen;
  }

  void EmitSelf(const BlockSnapshot& snap, MetricSink& out) {
    constexpr std::string_view kLost =
        "Events the eBPF programs could not record: inflight_evicted = an issue timestamp "
        "overwritten in a full in-flight set (that request untimed), map_full = a new "
        "(device, op) did not fit, recursion = program runs the kernel skipped.";
    out.Counter("nvmeof_exporter_bpf_lost_events_total", kLost, {{"reason", "inflight_evicted"}},
                static_cast<double>(snap.counters[NVMEOF_CTR_INFLIGHT_EVICTED]));
    out.Counter("nvmeof_exporter_bpf_lost_events_total", kLost, {{"reason", "map_full"}},
                static_cast<double>(snap.counters[NVMEOF_CTR_MAP_FULL]));
    std::uint64_t recursion = 0;
    for (const auto& p : snap.programs) recursion += p.stats.recursion_misses;
    out.Counter("nvmeof_exporter_bpf_lost_events_total", kLost, {{"reason", "recursion"}},
                static_cast<double>(recursion));
    if (snap.inflight_used) {
      out.Gauge("nvmeof_exporter_bpf_inflight_entries",
                "Requests holding an issue timestamp in the in-flight table.", {},
                static_cast<double>(*snap.inflight_used));
    } else {
      out.Skip();
    }
    out.Gauge("nvmeof_exporter_bpf_inflight_capacity",
              "Entries of the in-flight table (4-way set associative).", {},
              static_cast<double>(snap.inflight_capacity));
    if (!snap.program_run_stats) return;  // counters frozen: not a real 0
    for (const auto& p : snap.programs) {
      Labels labels = {{"hook", p.hook}, {"mechanism", std::string(MechanismName(p.mechanism))}};
      out.Counter("nvmeof_exporter_bpf_program_runs_total",
                  "Runs of the eBPF program (while BPF stats are enabled: bpf.enable_stats).",
                  labels, static_cast<double>(p.stats.run_count));
      out.Counter("nvmeof_exporter_bpf_program_run_seconds_total",
                  "CPU time spent in the eBPF program (while BPF stats are enabled).", labels,
                  static_cast<double>(p.stats.run_time_ns) / 1e9);
    }
  }

  CollectorOptions options_;
  BlockLoad load_;
  BucketLayout layout_;
};

}  // namespace

std::unique_ptr<Collector> NewBpfCollectorFrom(const CollectorOptions& options, BlockLoad load) {
  return std::make_unique<BpfCollector>(options, std::move(load));
}

std::unique_ptr<Collector> NewBpfCollector(const CollectorOptions& options) {
  return NewBpfCollectorFrom(options, LoadBlock(options, /*plan_only=*/false));
}

int RunProbe(const CollectorOptions& options, std::ostream& out) {
  BlockLoad load = LoadBlock(options, /*plan_only=*/true);
  PrintProbe(load.availability, load.plan, out);
  return load.availability.ok && load.plan.RequiredOk() ? 0 : 1;
}

}  // namespace nvmeof
