// The eBPF attach layer, kernel-independent part: hooks and their variants, the per-hook
// choice of mechanism, and whether BPF is usable at all. The kernel is behind interfaces
// (VariantProber, the Paths roots) so tests run it against fakes and fixture trees.
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "base/collector.h"
#include "loader/bpf_options.h"

namespace nvmeof {

// kTracepoint: a classic tracepoint program reading the record at the offsets of its format
// file, for kernels whose module has no BTF (tp_btf and raw_tp programs read its types through
// CO-RE); last in a hook's variants, never forced by bpf.mechanism.
enum class Mechanism { kFentry, kKprobe, kTpBtf, kRawTp, kTracepoint };

std::string_view MechanismName(Mechanism m);  // fentry, kprobe, tp_btf, raw_tp, tracepoint
// "auto" (or empty) -> nullopt in *forced; false for an unknown name.
bool ParseMechanism(std::string_view text, std::optional<Mechanism>* forced);

// One way to attach a hook: a program of the skeleton and what it attaches to.
struct Variant {
  Mechanism mechanism;
  // A kernel function (fentry, kprobe), a tracepoint (tp_btf, raw_tp) or "system/event"
  // (tracepoint).
  std::string_view target;
  std::string_view program;  // program name in the skeleton
  // A kernel function the program calls, if any: the variant needs it in the kernel's BTF
  // (e.g. bpf_rdonly_cast, 6.2+).
  std::string_view kfunc = "";
  // tracepoint: the record's fields the program reads ("ctrl,qid,cid"): the variant needs each
  // in the event's format file.
  std::string_view fields = "";
  // A more exact point for the same hook that only some kernels have (block_io_done, 6.5+): a
  // kernel without it is no finding, the next variant serves. It fires only for requests the
  // kernel accounts, so it is planned only while every blk-mq disk has queue/iostats on.
  bool accounted = false;
};

// A point in the kernel a collector needs to see. Variants are in preference order: most
// detailed first (fentry, kprobe, then tracepoints), unless a tracepoint sits exactly at the
// event, which the hook table then lists first (see loader/block.cc).
struct HookSpec {
  std::string_view name;    // label value: block_rq_issue
  bool required;            // without it the collector cannot work; optional ones merge stages
  std::string_view module;  // "" for vmlinux, else the module whose BTF the target needs
  std::vector<Variant> variants;
  // The hook only matters while this module is loaded ("" = always): it is planned and
  // reported once the module is there, and attached then if it came later.
  std::string_view gate = "";
  // Of the transport tier (a transport driver's function): planned only with
  // bpf.transport_stages; the default tier is the kernel's tracepoints.
  bool transport_tier = false;
  // Stands in for hooks that read `module`'s types through CO-RE (a classic tracepoint's
  // record): planned only where that module has no BTF of its own (before 5.11), and neither
  // planned nor reported where it has, the CO-RE hooks serving there.
  bool without_module_btf = false;
  // Useless alone: attached only where this hook (of the same plan) attaches too, else
  // reported unattached with its mechanism and "needs <with>" (__nvme_find_path opens the
  // stalls nvme_requeue_work counts and closes; on 5.10 only the former loads).
  std::string_view with = "";
};

// Can this variant attach here? The real prober checks what it can statically (BTF, kprobe
// support, symbols) and then loads and attaches the one program; tests fake it.
class VariantProber {
 public:
  virtual ~VariantProber() = default;
  // Empty when attachable; otherwise a short reason ("EPERM", "no kprobe support", ...).
  virtual std::string Probe(const HookSpec& hook, const Variant& variant) = 0;
};

struct HookPlan {
  const HookSpec* hook = nullptr;
  std::optional<Variant> chosen;
  // Variants tried before (or instead of) the chosen one, with why they cannot attach.
  std::vector<std::pair<Mechanism, std::string>> rejected;
  // Not planned yet, and why ("module nvme_rdma not loaded"): attached once that changes.
  std::string waiting;
  // `probe` only: the variant that would attach, for a hook whose tier is off.
  bool tier_off = false;
};

struct AttachPlan {
  std::vector<HookPlan> hooks;
  bool RequiredOk() const;  // every required hook that is not waiting has a variant
  const HookPlan* Find(std::string_view hook) const;
  std::vector<std::string_view> Programs() const;  // the chosen programs
};

// Per hook, the first variant the prober accepts (only `forced` variants when set).
AttachPlan PlanAttach(const std::vector<HookSpec>& hooks, std::optional<Mechanism> forced,
                      VariantProber& prober);

// Is BPF usable at all? reason is a bounded label value:
// ok | disabled_at_build | no_capability | lockdown | no_btf | load_failed | required_hook_missing
struct Availability {
  bool ok = false;
  std::string reason;
  std::string detail;  // human text for the log and the probe output
};

// Capabilities from <procfs>/self/status (CapEff), lockdown from
// <sysfs>/kernel/security/lockdown, BTF from <sysfs>/kernel/btf/vmlinux or `btf_path`.
Availability CheckBpfAvailable(const Paths& paths, const BpfOptions& options);

// Whether modules get BTF of their own on this kernel (5.11+, CONFIG_DEBUG_INFO_BTF_MODULES):
// some loaded module has a file in kernel/btf, or none is loaded to tell. Programs that read
// nvme_core's or nvmet's types through CO-RE (the flight records) cannot load without it.
bool ModulesHaveBtf(const Paths& paths);

// The common start of loading a BPF collector part: is BPF usable, which mechanism is forced
// (bpf.mechanism), which BTF file CO-RE uses. !ok: the result says why (load_failed for an
// unknown mechanism).
Availability PrepareBpfLoad(const Paths& paths, const BpfOptions& options,
                            std::optional<Mechanism>* forced, std::string* btf_path);

// The BTF file CO-RE should use: "" for the running kernel's own; else options.btf_path, or
// for a directory <dir>/vmlinux, <dir>/<release>.btf or <dir>/<release>/vmlinux.
std::string ResolveBtfPath(const std::string& btf_path, std::string_view kernel_release);

// Run statistics of one loaded program. run_count/run_time_ns only move while BPF stats are
// on (BPF_ENABLE_STATS or sysctl kernel.bpf_stats_enabled); recursion_misses always counts runs
// the kernel skipped, i.e. lost events.
struct ProgramStats {
  std::uint64_t run_count = 0;
  std::uint64_t run_time_ns = 0;
  std::uint64_t recursion_misses = 0;
  // The kernel reports recursion_misses (bpf_prog_info grew it in 5.12). Before, a run the
  // kernel skipped because another tracing program was running on that CPU is counted nowhere.
  bool recursion_known = true;
};

// One loaded program's statistics, named by its hook and how it attached.
struct ProgramRun {
  std::string hook;
  Mechanism mechanism;
  ProgramStats stats;
};

// The most memory a loaded BPF map can take: max_entries x (key + value x CPUs for per-CPU maps);
// reserved at load unless the map allocates on demand (BPF_F_NO_PREALLOC). Charged to the memory
// cgroup (kernels >= 5.11), so it counts against the unit's MemoryMax.
struct MapSize {
  std::string name;
  std::uint64_t bytes = 0;               // ceiling: max_entries x (key + value [x CPUs])
  std::optional<std::uint64_t> entries;  // live entries, for the maps that allocate per series
};

// Sets the live entry count of map `name` in `maps`.
inline void SetMapEntries(std::vector<MapSize>& maps, std::string_view name, std::uint64_t n) {
  for (auto& m : maps) {
    if (m.name == name) m.entries = n;
  }
}

// The `probe` subcommand's table: hook, status, mechanism, required, and rejected variants.
void PrintProbe(const Availability& availability, const AttachPlan& plan, std::ostream& out);

}  // namespace nvmeof
