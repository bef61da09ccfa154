#include "profile/live.h"

#include <signal.h>

#include <algorithm>
#include <cstring>
#include <map>

#include "bpf/classes.h"
#include "loader/block.h"
#include "loader/nvmeof.h"
#include "profile/report_data.h"

namespace nvmeof::profile {

namespace {

volatile sig_atomic_t g_stop = 0;
void OnStopSignal(int) { g_stop = 1; }

std::string GroupKeyOf(const std::string& role, const std::string& transport, const std::string& op,
                       const std::string& size, const std::string& device) {
  return role + " " + transport + " " + op + " " + size + " " + device;
}

struct LiveAcc {
  TopGroup g;
  double commands = 0;
  std::vector<double> e2e;
  std::map<std::string, std::pair<double, double>> stages;  // count, sum
};

// A group's row: commands/s from the exact counts, the rest from its sampled records.
TopGroup FinishGroup(LiveAcc& a, double seconds) {
  TopGroup g = a.g;
  g.commands_per_second = seconds > 0 ? a.commands / seconds : 0;
  std::sort(a.e2e.begin(), a.e2e.end());
  g.sampled = static_cast<double>(a.e2e.size());
  double sum = 0;
  for (double v : a.e2e) sum += v;
  g.mean = a.e2e.empty() ? 0 : sum / g.sampled;
  g.p50 = Percentile(a.e2e, 0.5);
  g.p99 = Percentile(a.e2e, 0.99);
  g.queue_depth = g.commands_per_second * g.mean;
  std::vector<std::pair<int, TopStage>> stages;
  for (const auto& [name, cs] : a.stages) {
    TopStage st;
    st.name = name;
    st.mean = cs.first > 0 ? cs.second / cs.first : 0;
    st.share = sum > 0 ? cs.second / sum : 0;
    st.queue_depth = g.commands_per_second * st.mean;
    stages.emplace_back(0, st);
  }
  // Path order, as report and top --from have it.
  const std::uint8_t role = g.role == "host" ? NVMEOF_ROLE_HOST : NVMEOF_ROLE_TARGET;
  for (auto& [rank, st] : stages) rank = NvmeofStageRank(role, g.transport, st.name);
  std::stable_sort(stages.begin(), stages.end(),
                   [](const auto& x, const auto& y) { return x.first < y.first; });
  for (auto& [rank, st] : stages) g.stages.push_back(st);
  return g;
}

}  // namespace

StopSignals::StopSignals() {
  g_stop = 0;
  struct sigaction sa {};
  sa.sa_handler = OnStopSignal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, &old_int_);
  sigaction(SIGTERM, &sa, &old_term_);
}

StopSignals::~StopSignals() {
  sigaction(SIGINT, &old_int_, nullptr);
  sigaction(SIGTERM, &old_term_, nullptr);
}

bool StopRequested() { return g_stop != 0; }

std::string FrameMechanism(const AttachPlan& plan, bool host) {
  const HookPlan* h = plan.Find(host ? "nvme_setup_cmd" : "nvmet_req_init");
  return h && h->chosen ? std::string(MechanismName(h->chosen->mechanism)) : "";
}

std::string MissingFrame(const AttachPlan& plan, bool want_host, bool want_target) {
  for (const bool is_host : {true, false}) {
    if (!(is_host ? want_host : want_target) || !FrameMechanism(plan, is_host).empty()) continue;
    if (!ModuleLoaded(Paths{}, is_host ? "nvme_core" : "nvmet")) continue;  // attached once loaded
    return std::string("the ") + (is_host ? "host" : "target") + " hook " +
           (is_host ? "nvme_setup_cmd" : "nvmet_req_init") + " did not attach";
  }
  return "";
}

std::string OpName(std::uint8_t opcode) { return std::string(BlockOpName(nvme_op(opcode))); }

void FromKernel(const nvmeof_record& k, Record* out, std::uint64_t* dropped) {
  Record& r = *out;
  r.role = k.role == NVMEOF_ROLE_HOST ? NVMEOF_ROLE_HOST : NVMEOF_ROLE_TARGET;
  r.transport = NvmeofTransportName(k.trtype);
  r.op = BlockOpName(nvme_op(k.opcode));
  r.size = k.bytes;
  r.qid = k.qid;
  r.cid = k.cid;
  r.cntlid = k.cntlid;
  r.subsys.assign(k.nqn, strnlen(k.nqn, sizeof k.nqn));
  r.hostnqn.assign(k.hostnqn, strnlen(k.hostnqn, sizeof k.hostnqn));
  r.device.assign(k.disk, strnlen(k.disk, sizeof k.disk));
  r.slba = k.slba;
  r.nlb = k.nlb;
  const size_t points =
      r.role == NVMEOF_ROLE_HOST ? size_t{NVMEOF_HP_COUNT} : size_t{NVMEOF_TP_COUNT};
  r.ts.resize(points);
  std::uint64_t last = 0;
  for (size_t i = 0; i < points; ++i) {
    std::uint64_t t = k.ts[i];
    if (t && t < last) {
      t = 0;
      ++*dropped;
    }
    if (t) last = t;
    r.ts[i] = t;
  }
}

std::vector<TopGroup> LiveFrame(const std::vector<Record>& records,
                                const std::vector<RecordGroupCount>& before,
                                const std::vector<RecordGroupCount>& after,
                                const std::vector<std::pair<std::uint64_t, std::string>>& names,
                                double seconds) {
  std::map<std::string, LiveAcc> acc;
  auto get = [&](const std::string& role, const std::string& transport, const std::string& op,
                 const std::string& size, const std::string& device) -> LiveAcc& {
    LiveAcc& a = acc[GroupKeyOf(role, transport, op, size, device)];
    if (a.g.role.empty()) {
      a.g.role = role;
      a.g.transport = transport;
      a.g.op = op;
      a.g.size = size;
      a.g.device = device;
    }
    return a;
  };
  auto same = [](const nvmeof_record_group& a, const nvmeof_record_group& b) {
    return a.id == b.id && a.role == b.role && a.trtype == b.trtype && a.opcode == b.opcode &&
           a.size == b.size;
  };
  for (const auto& now : after) {
    double old = 0;
    for (const auto& b : before)
      if (same(b.key, now.key)) old = static_cast<double>(b.commands);
    const double delta = static_cast<double>(now.commands) - old;
    if (delta <= 0) continue;
    std::string device;
    for (const auto& [id, name] : names)
      if (id == now.key.id) device = name;
    const auto& k = now.key;
    get(k.role == NVMEOF_ROLE_HOST ? "host" : "target", std::string(NvmeofTransportName(k.trtype)),
        OpName(k.opcode), std::string(SizeClassName(k.size)), device)
        .commands += delta;
  }
  for (const auto& r : records) {
    const std::uint64_t e2e = EndToEnd(r);
    if (!e2e) continue;
    LiveAcc& a = get(r.role == NVMEOF_ROLE_HOST ? "host" : "target", r.transport, r.op,
                     SizeClass(r.size), r.device.empty() ? r.subsys : r.device);
    a.e2e.push_back(static_cast<double>(e2e) * 1e-9);
    int prev = -1;
    for (int p = 0; p < static_cast<int>(r.ts.size()); ++p) {
      if (!r.ts[static_cast<size_t>(p)]) continue;
      if (prev >= 0) {
        auto& st = a.stages[NvmeofStageName(r.role, r.transport, static_cast<std::uint8_t>(prev),
                                            static_cast<std::uint8_t>(p))];
        st.first += 1;
        st.second +=
            static_cast<double>(r.ts[static_cast<size_t>(p)] - r.ts[static_cast<size_t>(prev)]) *
            1e-9;
      }
      prev = p;
    }
  }
  std::vector<TopGroup> out;
  for (auto& [key, a] : acc) {
    if (a.commands <= 0 && a.e2e.empty()) continue;
    out.push_back(FinishGroup(a, seconds));
  }
  std::stable_sort(out.begin(), out.end(), [](const TopGroup& x, const TopGroup& y) {
    return x.queue_depth > y.queue_depth;
  });
  return out;
}

}  // namespace nvmeof::profile
