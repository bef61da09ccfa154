#include "loader/nvmeof_plan.h"

#include <algorithm>
#include <cerrno>

#include <bpf/libbpf.h>

#include "loader/flight_reader.h"

namespace nvmeof {

Skeleton<nvmeof_bpf> OpenNvmeof(const Paths& paths, const std::string& btf_path,
                                const BpfOptions& bpf, std::string* error) {
  Skeleton<nvmeof_bpf> skel = OpenSkeleton<nvmeof_bpf>(btf_path, error);
  if (!skel) return skel;
  skel->rodata->sample_every_hash_limit = nvmeof_sample_every_hash_limit(bpf.sample_every);
  skel->rodata->size_classes = bpf.size_classes;
  skel->rodata->stage_detail = NvmeofStageDetail(bpf);
  skel->rodata->total_in_paths = NvmeofTotalInPaths(bpf);
  skel->rodata->transport_stages = bpf.transport_stages;
  // Without module BTF (5.10) the records' reads of module types cannot load: none are kept.
  skel->rodata->flight_records = bpf.flight_recorder_max_bytes > 0 && ModulesHaveBtf(paths);
  if (!skel->rodata->flight_records) ShrinkFlightRing(skel->obj);
  SetNvmetTracepointFields(paths, skel.get());
  skel->rodata->nvmet_init_sq_arg = NvmetReqInitSqArg(paths.sysfs);
  SizeNvmeofStageMaps(skel->obj, bpf);
  return skel;
}

// The hooks a releasable host transport module gates load as an object of their own, so that
// releasing them frees just their programs, and with them the module reference (kernel 6.4+
// holds it for the program's life, 6.0-6.3 for the link's). "" groups every other hook.
std::string_view GroupOf(const HookSpec& h) {
  return ReleasableTransport(h.gate).empty() ? std::string_view() : h.gate;
}

// Plans the hooks of `group` that are wanted (WhyNotHooked) and not yet in `attached`; the
// others are listed as waiting with the reason. Trial loads go to fresh objects (own maps).
// trial_loads: after the static checks, load and attach each variant alone to be sure (slow:
// a load each); without, the static checks decide and the caller's final load tells.
// group: nullopt plans every hook. release_idle: the gates whose hooks are not wanted while no
// controller of theirs exists (empty for `probe`). in_block: hooks that are the block
// collector's programs (LoadNvmeof), not planned here. all_tiers: the transport tier's hooks
// too, where bpf.transport_stages is off (`probe` shows both tiers; HookPlan::tier_off).
AttachPlan PlanNvmeof(const Paths& paths, const BpfOptions& options, const std::string& btf_path,
                      std::optional<Mechanism> forced, const std::vector<std::string>& attached,
                      bool trial_loads, std::optional<std::string_view> group,
                      const std::set<std::string_view>& release_idle, const InBlock& in_block,
                      bool all_tiers, const Poller* watcher) {
  std::vector<HookSpec> candidates;
  std::vector<std::pair<const HookSpec*, std::string>> waiting;
  for (const auto& h : NvmeofHooks()) {
    if (group && GroupOf(h) != *group) continue;
    if (h.transport_tier && !options.transport_stages && !all_tiers) continue;
    if (in_block.count(h.name)) continue;
    if (std::find(attached.begin(), attached.end(), h.name) != attached.end()) continue;
    std::string why = WhyNotHooked(paths, h.gate, release_idle.count(h.gate) > 0);
    if (why.empty()) {
      candidates.push_back(h);
    } else {
      waiting.emplace_back(&h, std::move(why));
    }
  }
  KernelProber prober(paths, [&](const Variant& v, std::string* error) {
    if (!trial_loads) return 0;
    if (watcher && watcher->stopping()) return -ECANCELED;  // the exporter is stopping
    Skeleton<nvmeof_bpf> trial = OpenNvmeof(paths, btf_path, options, error);
    if (!trial) return -EINVAL;
    const auto& m = trial->maps;  // a trial needs no room
    for (bpf_map* map : {m.nv_inflight, m.nv_hists, m.nv_paths, m.nv_names, m.nv_commands,
                         m.nv_count_slots, m.nv_ctrl, m.nv_tp_cmds, m.nv_hostnqns})
      bpf_map__set_max_entries(map, 1);
    ShrinkFlightRing(trial->obj);
    return LoadAndAttach(trial->skeleton, {v.program}, error);
  });
  AttachPlan plan = PlanAttach(candidates, forced, prober);
  PairNvmetTracepoints(&plan);
  // PlanAttach points into `candidates`; repoint at the static table.
  for (auto& hp : plan.hooks) {
    for (const auto& h : NvmeofHooks()) {
      if (h.name == hp.hook->name) hp.hook = &h;
    }
    hp.tier_off = hp.hook->transport_tier && !options.transport_stages;
  }
  for (auto& [h, why] : waiting) plan.hooks.push_back({h, std::nullopt, {}, std::move(why)});
  return plan;
}

}  // namespace nvmeof
