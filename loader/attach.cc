#include "loader/attach.h"

#include <sys/utsname.h>

#include <iomanip>
#include <sstream>

#include "base/capabilities.h"
#include "base/files.h"

namespace nvmeof {

std::string_view MechanismName(Mechanism m) {
  switch (m) {
    case Mechanism::kFentry:
      return "fentry";
    case Mechanism::kKprobe:
      return "kprobe";
    case Mechanism::kTpBtf:
      return "tp_btf";
    case Mechanism::kRawTp:
      return "raw_tp";
    case Mechanism::kTracepoint:
      return "tracepoint";
  }
  return "unknown";
}

bool ParseMechanism(std::string_view text, std::optional<Mechanism>* forced) {
  if (text.empty() || text == "auto") {
    forced->reset();
    return true;
  }
  for (Mechanism m :
       {Mechanism::kFentry, Mechanism::kKprobe, Mechanism::kTpBtf, Mechanism::kRawTp}) {
    if (text == MechanismName(m)) {
      *forced = m;
      return true;
    }
  }
  return false;
}

bool AttachPlan::RequiredOk() const {
  for (const auto& h : hooks) {
    if (h.hook->required && !h.chosen && h.waiting.empty()) return false;
  }
  return true;
}

const HookPlan* AttachPlan::Find(std::string_view hook) const {
  for (const auto& h : hooks) {
    if (h.hook->name == hook) return &h;
  }
  return nullptr;
}

std::vector<std::string_view> AttachPlan::Programs() const {
  std::vector<std::string_view> out;
  for (const auto& h : hooks) {
    if (h.chosen && !h.tier_off) out.push_back(h.chosen->program);
  }
  return out;
}

AttachPlan PlanAttach(const std::vector<HookSpec>& hooks, std::optional<Mechanism> forced,
                      VariantProber& prober) {
  AttachPlan plan;
  for (const auto& hook : hooks) {
    HookPlan hp;
    hp.hook = &hook;
    for (const auto& v : hook.variants) {
      if (forced && v.mechanism != *forced) continue;
      std::string why = prober.Probe(hook, v);
      if (why.empty()) {
        hp.chosen = v;
        break;
      }
      // A variant that needs a kfunc is a cheaper form of the same mechanism's next one, which
      // says whatever else is wrong: its refusal (e.g. a kernel before 6.2) is no finding.
      // So is a kernel without an `accounted` variant's tracepoint (KernelProber logs why).
      if (v.kfunc.empty() && !v.accounted) hp.rejected.emplace_back(v.mechanism, std::move(why));
    }
    if (!hp.chosen && forced && hp.rejected.empty()) {
      hp.rejected.emplace_back(*forced, "hook has no such variant");
    }
    plan.hooks.push_back(std::move(hp));
  }
  for (auto& hp : plan.hooks) {
    if (hp.hook->with.empty() || !hp.chosen) continue;
    const HookPlan* partner = plan.Find(hp.hook->with);
    if (partner && partner->chosen) continue;
    hp.rejected.emplace_back(hp.chosen->mechanism, "needs " + std::string(hp.hook->with));
    hp.chosen.reset();
  }
  return plan;
}

namespace {

// Effective capability set from /proc/self/status ("CapEff:\t000001ffffffffff").
std::optional<CapMask> EffectiveCaps(const Paths& paths) {
  auto status = ReadFile(paths.procfs + "/self/status");
  return status ? ParseCapLine(*status, "CapEff") : std::nullopt;
}

}  // namespace

std::string ResolveBtfPath(const std::string& btf_path, std::string_view kernel_release) {
  if (btf_path.empty() || !IsDir(btf_path)) return btf_path;
  const std::string release(kernel_release);
  for (const std::string& candidate : {btf_path + "/vmlinux", btf_path + "/" + release + ".btf",
                                       btf_path + "/" + release + "/vmlinux"}) {
    if (Exists(candidate) && !IsDir(candidate)) return candidate;
  }
  return btf_path + "/vmlinux";  // does not exist: the caller reports it
}

Availability CheckBpfAvailable(const Paths& paths, const BpfOptions& options) {
  Availability a;
  auto caps = EffectiveCaps(paths);
  auto has = [&](int cap) { return caps && ((*caps >> cap) & 1); };
  if (!has(kCapSysAdmin) && !(has(kCapBpf) && has(kCapPerfmon))) {
    a.reason = "no_capability";
    a.detail = caps ? "needs CAP_BPF and CAP_PERFMON (or CAP_SYS_ADMIN on kernels before 5.8)"
                    : "cannot read CapEff from " + paths.procfs + "/self/status";
    return a;
  }
  if (auto lockdown = ReadFile(paths.sysfs + "/kernel/security/lockdown");
      lockdown && lockdown->find("[confidentiality]") != std::string::npos) {
    a.reason = "lockdown";
    a.detail = "kernel lockdown=confidentiality forbids BPF reads of kernel memory";
    return a;
  }
  if (!options.btf_path.empty()) {
    struct utsname u {};
    uname(&u);
    std::string path = ResolveBtfPath(options.btf_path, u.release);
    if (!Exists(path)) {
      a.reason = "no_btf";
      a.detail = "BTF file " + path + " (from bpf.btf_path) does not exist";
      return a;
    }
  } else if (!Exists(paths.sysfs + "/kernel/btf/vmlinux")) {
    a.reason = "no_btf";
    a.detail = "kernel has no BTF (" + paths.sysfs +
               "/kernel/btf/vmlinux missing, CONFIG_DEBUG_INFO_BTF=n); give one with "
               "--bpf.btf-path";
    return a;
  }
  a.ok = true;
  a.reason = "ok";
  return a;
}

Availability PrepareBpfLoad(const Paths& paths, const BpfOptions& options,
                            std::optional<Mechanism>* forced, std::string* btf_path) {
  Availability a = CheckBpfAvailable(paths, options);
  if (!a.ok) return a;
  if (!ParseMechanism(options.mechanism, forced)) {
    return {false, "load_failed", "unknown bpf.mechanism \"" + options.mechanism + "\""};
  }
  struct utsname u {};
  uname(&u);
  *btf_path = ResolveBtfPath(options.btf_path, u.release);
  return a;
}

void PrintProbe(const Availability& availability, const AttachPlan& plan, std::ostream& out) {
  out << "bpf: " << (availability.ok ? "available" : "unavailable") << " (" << availability.reason
      << ")";
  if (!availability.detail.empty()) out << ": " << availability.detail;
  out << "\n";
  if (plan.hooks.empty()) return;
  out << std::left << std::setw(32) << "HOOK" << std::setw(9) << "STATUS" << std::setw(11)
      << "MECHANISM" << std::setw(10) << "REQUIRED" << std::setw(11) << "TIER"
      << "NOTES\n";
  for (const auto& h : plan.hooks) {
    std::string notes = h.tier_off ? "off: bpf.transport_stages is false" : h.waiting;
    if (h.chosen && h.chosen->accounted && !h.tier_off) {
      notes = "at " + std::string(h.chosen->target) + " (the kernel's accounted done)";
    }
    for (const auto& [m, why] : h.rejected) {
      if (!notes.empty()) notes += "; ";
      notes += std::string(MechanismName(m)) + ": " + why;
    }
    std::ostringstream line;
    line << std::left << std::setw(32) << h.hook->name << std::setw(9)
         << (h.chosen            ? (h.tier_off ? "off" : "ok")
             : h.waiting.empty() ? "missing"
                                 : "waiting")
         << std::setw(11) << (h.chosen ? MechanismName(h.chosen->mechanism) : "-") << std::setw(10)
         << (h.hook->required ? "yes" : "no") << std::setw(11)
         << (h.hook->transport_tier ? "transport" : "default") << notes;
    std::string text = line.str();
    text.erase(text.find_last_not_of(' ') + 1);
    out << text << "\n";
  }
  out << (plan.RequiredOk() ? "result: ok\n" : "result: a required hook cannot attach\n");
}

bool ModulesHaveBtf(const Paths& paths) {
  for (const auto& name : ListDir(paths.sysfs + "/kernel/btf")) {
    if (name != "vmlinux") return true;
  }
  for (const auto& name : ListDir(paths.sysfs + "/module")) {
    if (Exists(paths.sysfs + "/module/" + name + "/initstate")) return false;  // loaded, no BTF
  }
  return true;
}

}  // namespace nvmeof
