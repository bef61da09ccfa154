#include "collectors/bpf.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <optional>
#include <set>
#include <tuple>

#include "base/files.h"
#include "base/log.h"
#include "collectors/bpf_series.h"
#include "collectors/collector_options.h"
#include "loader/histogram.h"
#include "loader/series_names.h"
#include "readers/block_queues.h"
#include "readers/nvmeof_names.h"

namespace nvmeof {
namespace {

constexpr std::string_view kHelpStage =
    "Block-layer stage latency per request: queue = allocated to issued to the driver, "
    "device = issued to completed (sampled 1 in nvmeof_exporter_bpf_sample_every).";
constexpr std::string_view kHelpTotal =
    "Block-layer request latency, allocated to completed (sampled 1 in "
    "nvmeof_exporter_bpf_sample_every).";

constexpr std::string_view kHelpNvStage =
    "NVMe-oF command latency per stage on this node (role host or target; stages in "
    "docs/metrics.md; a+b = stages merged where a hook is missing). Sampled 1 in "
    "nvmeof_exporter_bpf_sample_every.";
constexpr std::string_view kHelpNvTotal =
    "NVMe-oF command latency on this node, first to last point it saw (sampled 1 in "
    "nvmeof_exporter_bpf_sample_every).";
constexpr std::string_view kHelpNvCommands = "NVMe-oF I/O commands completed, every one.";
constexpr std::string_view kHelpLost =
    "Events the eBPF programs could not record: inflight_evicted = a block issue timestamp "
    "overwritten in a full in-flight set (that request untimed), map_full = a new (device, op) "
    "did not fit, nvmeof_inflight_full = a sampled NVMe-oF command found the in-flight table "
    "full (untimed), nvmeof_map_full = a new NVMe-oF series did not fit, recursion = program "
    "runs the kernel skipped.";

// Sums of series that get the same labels (e.g. stage spans that name the same stage).
struct HistSum {
  std::uint64_t count = 0;
  std::uint64_t sum_ns = 0;
  unsigned long long buckets[NVMEOF_HIST_BUCKETS] = {};
};

class BpfCollector : public Collector {
 public:
  BpfCollector(const CollectorOptions& options, BlockLoad load, NvmeofLoad nvmeof,
               LifecycleLoad lifecycle)
      : options_(options),
        load_(std::move(load)),
        nvmeof_(std::move(nvmeof)),
        lifecycle_(std::move(lifecycle)),
        layout_(options.bpf.buckets.empty() ? BucketLayout::Default()
                                            : BucketLayout::Make(options.bpf.buckets)) {
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

  // Every counter and histogram here counts from the programs' load (a series that appears
  // later had counted nothing before): that is their created timestamp, in protobuf (the
  // command latency's in OpenMetrics too, CollectNvmeof).
  bool Collect(MetricSink& out) override {
    const bool ok = CollectParts(out);
    out.CreatedForAll(loaded_at_);
    return ok;
  }

 private:
  bool CollectParts(MetricSink& out) {
    out.Gauge("nvmeof_exporter_bpf_available",
              "1 if eBPF stage latency is collected; else 0 and `reason` says why.",
              {{"reason", load_.availability.reason}}, load_.availability.ok ? 1 : 0);
    EmitHooks(load_.plan, load_.source != nullptr, out);
    bool ok = true;
    if (nvmeof_.source) ok = CollectNvmeof(out);
    if (lifecycle_.source) ok = CollectLifecycle(out) && ok;
    const std::set<std::string>& iostats_off = IostatsOff();
    for (const auto& disk : iostats_off) {
      out.Gauge("nvmeof_exporter_bpf_disk_iostats_off",
                "1 for a blk-mq disk whose queue/iostats is 0 while requests end at "
                "block_io_done: the kernel does not report its requests there, so its block "
                "series are skipped and its NVMe-oF host commands are not timed.",
                {{"disk", disk}}, 1);
    }
    // Unavailable BPF is reported above, not a failed scrape: it would only alert twice.
    if (!load_.source) return ok;

    BlockSnapshot snap;
    if (!load_.source->Read(&snap)) {
      out.Fail("reading the block-layer maps failed");
      return false;
    }
    out.Gauge("nvmeof_exporter_bpf_sample_every",
              "Latency is timed for 1 in this many requests; request counts are exact.", {},
              options_.bpf.sample_every ? options_.bpf.sample_every : 1);
    EmitBlock(snap, iostats_off, out);
    EmitSelf(snap, out);
    return ok;
  }

  // Requests end at block_io_done (6.5+, planned while every blk-mq disk had iostats on): a
  // disk whose iostats went off since (a udev rule, a tuning script) is no longer reported
  // there. Looked at every 30 s; each disk that went off is logged once.
  const std::set<std::string>& IostatsOff() {
    auto accounted = [](const HookPlan* h) { return h && h->chosen && h->chosen->accounted; };
    const auto now = std::chrono::steady_clock::now();
    if (iostats_checked_ && now - *iostats_checked_ < kIostatsEvery) return iostats_off_;
    iostats_checked_ = now;
    std::set<std::string> off;  // stays empty where requests end at block_rq_complete
    if ((load_.source && accounted(load_.plan.Find(kHookBlockComplete))) ||
        (nvmeof_.source && accounted(nvmeof_.source->Plan().Find(kHookNvmeRqEnd)))) {
      for (auto& disk : DisksWithoutIostats(options_.paths.sysfs)) {
        if (!iostats_off_.count(disk)) {
          LogWarn(
              "queue/iostats is 0: the kernel no longer reports this disk's requests at "
              "block_io_done; its block series are skipped; restart the exporter to end "
              "requests at block_rq_complete",
              Kv("disk", disk));
        }
        off.insert(std::move(disk));
      }
    }
    iostats_off_ = std::move(off);
    return iostats_off_;
  }

  void EmitBlock(const BlockSnapshot& snap, const std::set<std::string>& iostats_off,
                 MetricSink& out) {
    const auto& bounds = layout_.bounds();
    DiskNames disks(options_.paths, snap.disk_is_seq);
    std::vector<nvmeof_block_key> gone;
    for (const auto& s : snap.series) {
      auto name = disks.Name(s.disk);
      if (!name && snap.disk_is_seq && s.disk) {  // removed: its diskseq never comes back
        gone.push_back({s.disk, s.op});
        continue;
      }
      if (!name || iostats_off.count(*name)) {  // no disk, removed (dev_t), or unreported
        out.Skip();
        continue;
      }
      if (!options_.bpf.block_devices.Allows(*name)) continue;
      // Timed by the NVMe-oF host series; these would be 8 series per disk that no shipped
      // rule, alert or panel needs (docs/fleet.md "What the defaults serve").
      if (nvmeof_.source &&
          BlockSeriesLeftOut(options_.paths.sysfs, options_.bpf.block_devices, *name))
        continue;
      const std::string op(BlockOpName(s.op));
      out.Counter("nvmeof_block_requests_total",
                  "Block requests completed, every one (not sampled).",
                  {{"disk", *name}, {"op", op}}, static_cast<double>(s.hist.requests));
      for (std::uint32_t st : {NVMEOF_STAGE_QUEUE, NVMEOF_STAGE_DEVICE}) {
        if (!StageTimed(st)) continue;
        out.Histogram("nvmeof_block_stage_latency_seconds", kHelpStage,
                      {{"disk", *name}, {"op", op}, {"stage", std::string(BlockStageName(st))}},
                      bounds, layout_.Cumulative(s.hist.buckets[st]), s.hist.count[st],
                      static_cast<double>(s.hist.sum_ns[st]) / 1e9, Native(s.hist.buckets[st]));
      }
      out.Histogram("nvmeof_block_latency_seconds", kHelpTotal, {{"disk", *name}, {"op", op}},
                    bounds, layout_.Cumulative(s.hist.buckets[NVMEOF_STAGE_TOTAL]),
                    s.hist.count[NVMEOF_STAGE_TOTAL],
                    static_cast<double>(s.hist.sum_ns[NVMEOF_STAGE_TOTAL]) / 1e9,
                    Native(s.hist.buckets[NVMEOF_STAGE_TOTAL]));
    }
    load_.source->Forget(gone);
  }

  // The native buckets protobuf scrapes get (bpf.protobuf_histograms), or none for classic.
  std::shared_ptr<const NativeHistogram> Native(const unsigned long long* fine) const {
    const auto& mode = options_.bpf.protobuf_histograms;
    if (mode == "classic") return nullptr;
    return NativeFromFine(fine, mode == "both");
  }

  // Queue and device need the issue hook; without it they merge into the total.
  bool StageTimed(std::uint32_t stage) const {
    if (stage == NVMEOF_STAGE_TOTAL) return true;
    const HookPlan* issue = load_.plan.Find(kHookBlockIssue);
    return issue && issue->chosen;
  }

  void EmitSelf(const BlockSnapshot& snap, MetricSink& out) {
    constexpr std::string_view kLost = kHelpLost;
    out.Counter("nvmeof_exporter_bpf_lost_events_total", kLost, {{"reason", "inflight_evicted"}},
                static_cast<double>(snap.counters[NVMEOF_CTR_INFLIGHT_EVICTED]));
    out.Counter("nvmeof_exporter_bpf_lost_events_total", kLost, {{"reason", "map_full"}},
                static_cast<double>(snap.counters[NVMEOF_CTR_MAP_FULL]));
    std::uint64_t recursion = 0;
    bool known = true;
    for (const auto& p : snap.programs) {
      recursion += p.stats.recursion_misses;
      known &= p.stats.recursion_known;
    }
    if (known) {
      out.Counter("nvmeof_exporter_bpf_lost_events_total", kLost, {{"reason", "recursion"}},
                  static_cast<double>(recursion));
    } else {
      out.Skip();  // before 5.12 the kernel does not count them: no false 0
    }
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
    if (snap.program_run_stats) EmitProgramRuns(snap.programs, out);  // else frozen, not 0
    EmitMapSizes("block", snap.maps, out);
  }

  // Connection lifecycle counters (loader/lifecycle.cc); hooks of loaded modules.
  bool CollectLifecycle(MetricSink& out) {
    EmitHooks(lifecycle_.source->Plan(), true, out);  // every lifecycle hook is optional
    LifecycleSnapshot snap;
    if (!lifecycle_.source->Read(&snap)) {
      out.Fail("reading the connection lifecycle maps failed");
      return false;
    }
    const std::string subsystems = options_.paths.configfs + "/nvmet/subsystems/";
    EmitLifecycle(
        snap, hostnqns_, [&](const std::string& nqn) { return IsDir(subsystems + nqn); }, out);
    return true;
  }

  // NVMe-oF stages: hooks (of loaded modules), commands, stage and end-to-end histograms.
  bool CollectNvmeof(MetricSink& out) {
    using Named = NvmeofSeriesNames::Named;
    NvmeofSnapshot snap;
    bool ok = nvmeof_.source->Read(&snap);
    EmitHooks(nvmeof_.source->Plan(), true, out);
    if (!ok) {
      out.Fail("reading the NVMe-oF stage maps failed");
      return false;
    }
    std::map<Labels, HistSum> stages, totals, commands;
    NvmeofSeriesNames names(options_.paths, snap.names);
    std::vector<std::uint64_t> gone;  // disks and subsystems removed: their nvmeof_name_key
    for (const auto& s : snap.series) {
      const auto& k = s.key;
      Labels labels;
      std::string transport;
      const Named named = names.Name(k, &labels, &transport);
      if (named == Named::kGone) gone.push_back(nvmeof_name_key(k.id, k.role));  // not an error
      if (named == Named::kSkip) out.Skip();
      if (named != Named::kOk) continue;
      if (k.size) labels.push_back({"size", std::string(SizeClassName(k.size))});
      std::map<Labels, HistSum>* into = &commands;
      if (k.kind == NVMEOF_KIND_STAGE) {
        if (stage_per_node_) {  // summed over controllers and subsystems (bpf.stage_detail)
          std::erase_if(labels, [](const auto& l) {
            return l.name == "controller" || l.name == "nvme_namespace" || l.name == "nqn" ||
                   l.name == "nvmet_port";
          });
        }
        labels.push_back({"stage", NvmeofStageName(k.role, transport, k.from, k.to)});
        into = &stages;
      } else if (k.kind == NVMEOF_KIND_TOTAL) {
        if (command_per_controller_) {  // summed over namespaces and ports (bpf.command_detail)
          std::erase_if(labels, [](const auto& l) {
            return l.name == "nvme_namespace" || l.name == "nvmet_port";
          });
        }
        into = &totals;
      }
      HistSum& sum = (*into)[labels];
      sum.count += s.hist.count;
      sum.sum_ns += s.hist.sum_ns;
      for (int b = 0; b < NVMEOF_HIST_BUCKETS; ++b) sum.buckets[b] += s.hist.buckets[b];
    }
    std::sort(gone.begin(), gone.end());
    gone.erase(std::unique(gone.begin(), gone.end()), gone.end());
    nvmeof_.source->Forget(gone);
    for (const auto& [labels, c] : commands)
      out.Counter("nvmeof_commands_total", kHelpNvCommands, labels, static_cast<double>(c.count));
    const auto slowest = SlowestRecorded();
    for (const auto* family : {&stages, &totals}) {
      for (const auto& [labels, h] : *family) {
        out.Histogram(
            family == &stages ? "nvmeof_stage_latency_seconds" : "nvmeof_command_latency_seconds",
            family == &stages ? kHelpNvStage : kHelpNvTotal, labels, layout_.bounds(),
            layout_.Cumulative(h.buckets), h.count, static_cast<double>(h.sum_ns) / 1e9,
            Native(h.buckets));
        if (family != &totals) continue;
        out.Created(loaded_at_);
        if (auto e = slowest.find(ExemplarKey(labels)); e != slowest.end())
          out.Exemplars({e->second});
      }
    }
    out.Counter("nvmeof_exporter_bpf_lost_events_total", kHelpLost,
                {{"reason", "nvmeof_inflight_full"}},
                static_cast<double>(snap.counters[NVMEOF_NCTR_INFLIGHT_FULL]));
    out.Counter("nvmeof_exporter_bpf_lost_events_total", kHelpLost, {{"reason", "nvmeof_map_full"}},
                static_cast<double>(snap.counters[NVMEOF_NCTR_MAP_FULL]));
    if (options_.flight) EmitFlightRecorder(snap.counters[NVMEOF_NCTR_FLIGHT_LOST], out);
    constexpr std::string_view kSampled =
        "NVMe-oF commands picked for timing (about 1 in bpf.sample_every, by a hash of each "
        "command's own fields), counted where picked: host at setup, target at init.";
    out.Counter("nvmeof_exporter_bpf_sampled_commands_total", kSampled, {{"role", "host"}},
                static_cast<double>(snap.counters[NVMEOF_NCTR_SAMPLED_HOST]));
    out.Counter("nvmeof_exporter_bpf_sampled_commands_total", kSampled, {{"role", "target"}},
                static_cast<double>(snap.counters[NVMEOF_NCTR_SAMPLED_TARGET]));
    if (snap.program_run_stats) EmitProgramRuns(snap.programs, out);
    EmitMapSizes("nvmeof", snap.maps, out);
    return true;
  }

  // The flight recorder's intake and holding (collectors/collector_options.h `flight`).
  void EmitFlightRecorder(std::uint64_t lost, MetricSink& out) {
    out.Counter("nvmeof_exporter_bpf_lost_events_total", kHelpLost,
                {{"reason", "flight_ring_full"}}, static_cast<double>(lost));
    const FlightStats flight = options_.flight->Stats();
    out.Counter("nvmeof_exporter_flight_recorder_records_total",
                "Sampled NVMe-oF commands the flight recorder took in (GET /api/v1/commands).", {},
                static_cast<double>(flight.added));
    out.Counter("nvmeof_exporter_flight_recorder_evicted_total",
                "Flight records dropped for age or size (bpf.flight_recorder_max_age, "
                "bpf.flight_recorder_max_bytes).",
                {}, static_cast<double>(flight.evicted));
    out.Gauge("nvmeof_exporter_flight_recorder_held_records", "Flight records held now.", {},
              static_cast<double>(flight.records));
    out.Gauge("nvmeof_exporter_flight_recorder_bytes",
              "Memory the held flight records take (records x entry size, plus names).", {},
              static_cast<double>(flight.bytes));
  }

  // The series of nvmeof_command_latency_seconds a flight record belongs to, as far as its
  // labels tell: role, op, and the host controller or the target subsystem (at command_detail
  // namespace, an exemplar is the controller's slowest, from any of its namespaces).
  using ExemplarKeyT = std::tuple<std::string, std::string, std::string>;
  static ExemplarKeyT ExemplarKey(const Labels& labels) {
    ExemplarKeyT key;
    for (const auto& l : labels) {
      if (l.name == "role") std::get<0>(key) = l.value;
      if (l.name == "op") std::get<1>(key) = l.value;
      if (l.name == "controller" || l.name == "nqn") std::get<2>(key) = l.value;
    }
    return key;
  }

  // Per series, the slowest command the flight recorder holds that ended since the scrape
  // before (at least the last kExemplarWindow), as an exemplar that names it: a panel's point
  // leads to the command (GET /api/v1/commands?ref=, `explain`).
  std::map<ExemplarKeyT, Exemplar> SlowestRecorded() {
    std::map<ExemplarKeyT, Exemplar> slowest;
    if (!options_.flight) return slowest;
    const auto now = std::chrono::system_clock::now();
    const auto since = std::min(last_exemplar_scan_, now - kExemplarWindow);
    last_exemplar_scan_ = now;
    const auto since_ns = static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(since.time_since_epoch()).count());
    for (std::uint8_t role : {NVMEOF_ROLE_HOST, NVMEOF_ROLE_TARGET}) {
      const std::string role_name = role == NVMEOF_ROLE_HOST ? "host" : "target";
      options_.flight->ForEachSince(role, since_ns, [&](const FlightEntry& e) {
        ExemplarKeyT key{role_name, e.op,
                         role == NVMEOF_ROLE_HOST ? e.identity->controller : e.identity->subsys};
        const double seconds = static_cast<double>(e.e2e_ns) / 1e9;
        auto [it, added] = slowest.try_emplace(key);
        if (!added && it->second.value >= seconds) return;
        it->second =
            Exemplar{{{"command", CommandRef(e)}}, seconds, static_cast<double>(e.time_ns) / 1e9};
      });
    }
    return slowest;
  }

  CollectorOptions options_;
  // When the programs were loaded: every series' created timestamp (their counts start there;
  // one born later, a controller connected since, counted nothing before). In OpenMetrics on
  // the end-to-end histograms only: a Prometheus without created-timestamp ingestion (2.x)
  // stores each `_created` there as a series of its own.
  const double loaded_at_ =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  static constexpr std::chrono::seconds kExemplarWindow{15};
  std::chrono::system_clock::time_point last_exemplar_scan_{};
  bool stage_per_node_ = options_.bpf.stage_detail == "node";
  bool command_per_controller_ = options_.bpf.command_detail == "controller";
  BlockLoad load_;
  NvmeofLoad nvmeof_;
  LifecycleLoad lifecycle_;
  HostnqnFolder hostnqns_{options_.bpf.hostnqn_limit};
  BucketLayout layout_;
  static constexpr std::chrono::seconds kIostatsEvery{30};
  std::optional<std::chrono::steady_clock::time_point> iostats_checked_;
  std::set<std::string> iostats_off_;
};

}  // namespace

std::unique_ptr<Collector> NewBpfCollectorFrom(const CollectorOptions& options, BlockLoad load,
                                               NvmeofLoad nvmeof, LifecycleLoad lifecycle) {
  return std::make_unique<BpfCollector>(options, std::move(load), std::move(nvmeof),
                                        std::move(lifecycle));
}

std::unique_ptr<Collector> NewBpfCollector(const CollectorOptions& options) {
  // The block completion program also ends NVMe-oF host commands (one program on the
  // tracepoint instead of two); the NVMe-oF part shares its maps.
  BlockLoad block = LoadBlock(options.paths, options.bpf, /*plan_only=*/false,
                              /*nvmeof_host=*/true);
  NvmeofLoad nvmeof;
  LifecycleLoad lifecycle;
  if (block.availability.ok) {
    nvmeof = LoadNvmeof(options.paths, options.bpf, /*plan_only=*/false, &block, options.flight);
    lifecycle = LoadLifecycle(options.paths, options.bpf);
  }
  return NewBpfCollectorFrom(options, std::move(block), std::move(nvmeof), std::move(lifecycle));
}

int RunProbe(const CollectorOptions& options, std::ostream& out) {
  BlockLoad load = LoadBlock(options.paths, options.bpf, /*plan_only=*/true);
  PrintProbe(load.availability, load.plan, out);
  int rc = load.availability.ok && load.plan.RequiredOk() ? 0 : 1;
  if (!load.availability.ok) return rc;
  NvmeofLoad nv = LoadNvmeof(options.paths, options.bpf, /*plan_only=*/true);
  out << "\nNVMe-oF stages (hooks of modules not loaded are attached when they load):\n";
  PrintProbe(nv.availability, nv.plan, out);
  return nv.plan.RequiredOk() ? rc : 1;
}

}  // namespace nvmeof
