#include "exporter/profile/live.h"

#include <signal.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <time.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>

#include "collectors/base/fd.h"
#include "collectors/base/log.h"
#include "collectors/bpf/nvmeof.h"
#include "exporter/profile/cli.h"
#include "exporter/profile/report.h"

namespace nvmeof::profile {

namespace {

volatile sig_atomic_t g_stop = 0;
void OnStopSignal(int) { g_stop = 1; }

// SIGINT/SIGTERM end a recording cleanly (the end line is written); restored on scope exit.
class StopSignals {
 public:
  StopSignals() {
    g_stop = 0;
    struct sigaction sa {};
    sa.sa_handler = OnStopSignal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_int_);
    sigaction(SIGTERM, &sa, &old_term_);
  }
  ~StopSignals() {
    sigaction(SIGINT, &old_int_, nullptr);
    sigaction(SIGTERM, &old_term_, nullptr);
  }
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

 private:
  struct sigaction old_int_ {};
  struct sigaction old_term_ {};
};

// The largest size of each class of nvmeof_record_group.size (1-based, as record.bpf.c's
// size_class()), so SizeClass() names it as it names a record's bytes.
constexpr std::uint64_t kSizeClassBytes[] = {0, 4096, 16384, 65536, 262144, 262145};

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

// The mechanism of a role's frame hook (nvme_setup_cmd / nvmet_req_init), for the header.
std::string FrameMechanism(const AttachPlan& plan, bool host) {
  const HookPlan* h = plan.Find(host ? "nvme_setup_cmd" : "nvmet_req_init");
  return h && h->chosen ? std::string(MechanismName(h->chosen->mechanism)) : "";
}

}  // namespace

std::string OpName(std::uint8_t opcode) {
  switch (opcode) {
    case 0x02:
      return "read";
    case 0x01:
      return "write";
    case 0x00:
      return "flush";
    case 0x09:
      return "discard";
    default:
      return "other";
  }
}

Record FromKernel(const nvmeof_record& k, std::uint64_t* dropped) {
  Record r;
  r.role = k.role == NVMEOF_ROLE_HOST ? NVMEOF_ROLE_HOST : NVMEOF_ROLE_TARGET;
  r.transport = NvmeofTransportName(k.trtype);
  r.op = OpName(k.opcode);
  r.size = k.bytes;
  r.qid = k.qid;
  r.cid = k.cid;
  r.cntlid = k.cntlid;
  r.subsys = std::string(k.nqn, strnlen(k.nqn, sizeof k.nqn));
  r.device = std::string(k.disk, strnlen(k.disk, sizeof k.disk));
  r.slba = k.slba;
  r.nlb = k.nlb;
  const size_t points =
      r.role == NVMEOF_ROLE_HOST ? size_t{NVMEOF_HP_COUNT} : size_t{NVMEOF_TP_COUNT};
  std::uint64_t last = 0;
  for (size_t i = 0; i < points; ++i) {
    std::uint64_t t = k.ts[i];
    if (t && t < last) {
      t = 0;
      ++*dropped;
    }
    if (t) last = t;
    r.ts.push_back(t);
  }
  return r;
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
        OpName(k.opcode), k.size >= 1 && k.size <= 5 ? SizeClass(kSizeClassBytes[k.size]) : "",
        device)
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
    // Path order: by the span's first point, as report does (names sort by their points).
    const std::uint8_t role = g.role == "host" ? NVMEOF_ROLE_HOST : NVMEOF_ROLE_TARGET;
    const int points = role == NVMEOF_ROLE_HOST ? int{NVMEOF_HP_COUNT} : int{NVMEOF_TP_COUNT};
    for (auto& [rank, st] : stages) {
      rank = 1000;
      for (int from = 0; from < points && rank == 1000; ++from)
        for (int to = from + 1; to < points; ++to)
          if (NvmeofStageName(role, g.transport, static_cast<std::uint8_t>(from),
                              static_cast<std::uint8_t>(to)) == st.name) {
            rank = from * 16 + to;
            break;
          }
    }
    std::stable_sort(stages.begin(), stages.end(),
                     [](const auto& x, const auto& y) { return x.first < y.first; });
    for (auto& [rank, st] : stages) g.stages.push_back(st);
    if (a.commands <= 0 && a.e2e.empty()) continue;
    out.push_back(std::move(g));
  }
  std::stable_sort(out.begin(), out.end(), [](const TopGroup& x, const TopGroup& y) {
    return x.queue_depth > y.queue_depth;
  });
  return out;
}

namespace {

struct RecordArgs {
  std::uint64_t every = 1, duration = 0, ring_mib = NVMEOF_RECORD_RING_DEFAULT >> 20;
  std::string role = "host", output;
  BpfOptions bpf;
};

const std::vector<FlagSpec>& RecordFlags() {
  static const std::vector<FlagSpec> flags = {
      {"output", FlagSpec::kValue,
       "Write the records to FILE (required); --role=both writes FILE.host.jsonl and\n"
       "FILE.target.jsonl.",
       'o', "FILE"},
      {"sample-every", FlagSpec::kValue,
       "Record 1 in N commands, chosen on (slba, cid): host and target with the same N keep\n"
       "the same commands. Default 1.",
       's', "N"},
      {"duration", FlagSpec::kValue,
       "Stop after SECONDS, in [1, 86400]. Default: at Ctrl-C or SIGTERM.", 0, "SECONDS"},
      {"role", FlagSpec::kValue, "host, target or both. Default host.", 0, "ROLE"},
      {"ring-size", FlagSpec::kValue,
       "BPF ring buffer in MiB, a power of 2 in [1, 1024]. Default 16.", 0, "MIB"},
      kMechanismFlag,
      kHelpFlag,
  };
  return flags;
}

// -1 to go on; else the exit status (0 after --help, 2 for bad usage).
int ParseRecordArgs(const std::vector<std::string>& args, RecordArgs* r, std::ostream& out,
                    std::ostream& err) {
  static const std::string usage =
      Usage("record -o FILE [flags]",
            "Records sampled NVMe-oF commands, one JSON line each, until --duration or Ctrl-C\n"
            "(root; docs/profiling.md).",
            RecordFlags());
  ParsedArgs p;
  if (int rc = ParseCommand("record", args, RecordFlags(), usage, 0, &p, out, err); rc >= 0)
    return rc;
  std::string e;
  if (!GetSampleEvery(p, &r->every, &e) || !GetMechanism(p, &r->bpf.mechanism, &e))
    return UsageError("record", e, err);
  if (auto v = p.Get("duration"); v && !ParseCount(*v, 86400, &r->duration)) {
    return UsageError("record",
                      "--duration: \"" + *v + "\" is not a number of seconds in [1, 86400]", err);
  }
  if (auto v = p.Get("role")) {
    r->role = *v;
    if (r->role != "host" && r->role != "target" && r->role != "both")
      return UsageError("record", "--role: \"" + *v + "\" is not host, target or both", err);
  }
  // A power of 2 (the kernel's rule for ring buffers), 1 MiB to 1 GiB.
  if (auto v = p.Get("ring-size");
      v && (!ParseCount(*v, 1024, &r->ring_mib) || (r->ring_mib & (r->ring_mib - 1)))) {
    return UsageError("record", "--ring-size: \"" + *v + "\" is not a power of 2 MiB in [1, 1024]",
                      err);
  }
  if (auto v = p.Get("output")) r->output = *v;
  if (r->output.empty()) return UsageError("record", "-o FILE is required (see --help)", err);
  return -1;
}

}  // namespace

int RunRecord(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  RecordArgs r;
  if (int rc = ParseRecordArgs(args, &r, out, err); rc >= 0) return rc;
  const std::uint64_t every = r.every, duration = r.duration, ring_mib = r.ring_mib;
  const std::string &role = r.role, &output = r.output;
  const BpfOptions& bpf = r.bpf;
  const bool want_host = role != "target", want_target = role != "host";
  const std::string host_path = role == "both" ? output + ".host.jsonl" : output;
  const std::string target_path = role == "both" ? output + ".target.jsonl" : output;
  RecordOptions ro;
  ro.sample_every = static_cast<std::uint32_t>(every);
  ro.ring_bytes = static_cast<std::uint32_t>(ring_mib << 20);
  ro.host = want_host;
  ro.target = want_target;
  RecordLoad load = LoadRecord(Paths{}, bpf, ro);
  if (!load.source) {
    err << "nvmeof_exporter record: cannot load the record eBPF programs: "
        << load.availability.reason << ": " << load.availability.detail << "\n";
    return 1;
  }
  for (const auto& h : load.plan.hooks) {
    err << "record: hook " << h.hook->name << ": "
        << (h.chosen ? std::string(MechanismName(h.chosen->mechanism)) : "missing") << "\n";
  }
  RecordHeader header;
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  header.hostname = host;
  struct utsname u {};
  if (uname(&u) == 0) header.kernel = u.release;
  header.sample_every = every;
  header.clock = "CLOCK_MONOTONIC";
  std::ofstream host_out, target_out;
  auto open = [&](std::ofstream& f, const std::string& path, const char* r, bool is_host) {
    f.open(path, std::ios::binary | std::ios::trunc);
    if (!f) {
      err << "nvmeof_exporter record: cannot write " << path << "\n";
      return false;
    }
    RecordHeader h = header;
    h.role = r;
    h.mechanism = FrameMechanism(load.plan, is_host);
    WriteHeader(h, f);
    return true;
  };
  if (want_host && !open(host_out, host_path, "host", true)) return 1;
  if (want_target && !open(target_out, target_path, "target", false)) return 1;

  std::uint64_t start[NVMEOF_RCTR_COUNT] = {};
  load.source->Counters(start);
  std::uint64_t host_records = 0, target_records = 0, dropped = 0;
  auto on_record = [&](const nvmeof_record& k) {
    const bool is_host = k.role == NVMEOF_ROLE_HOST;
    if (is_host ? !want_host : !want_target) return;
    WriteRecord(FromKernel(k, &dropped), is_host ? host_out : target_out);
    ++(is_host ? host_records : target_records);
  };
  err << "record: recording" << (duration ? " for " + std::to_string(duration) + " s" : "")
      << " (1 in " << every << " commands); Ctrl-C ends\n";
  const auto t0 = std::chrono::steady_clock::now();
  {
    StopSignals signals;
    while (!g_stop) {
      if (duration && std::chrono::steady_clock::now() - t0 >= std::chrono::seconds(duration))
        break;
      const int n = load.source->Poll(100, on_record);
      if (n < 0 && n != -EINTR) {
        err << "nvmeof_exporter record: ring buffer: " << ErrnoName(n) << "\n";
        return 1;
      }
    }
  }
  while (load.source->Poll(0, on_record) > 0) {
  }
  std::uint64_t end[NVMEOF_RCTR_COUNT] = {};
  load.source->Counters(end);
  // Records the kernel could not keep (ring full, in-flight table full), on this node: when
  // both roles are recorded together the count is the node's, written to both files.
  const std::uint64_t lost = end[NVMEOF_RCTR_LOST] - start[NVMEOF_RCTR_LOST] +
                             end[NVMEOF_RCTR_INFLIGHT_FULL] - start[NVMEOF_RCTR_INFLIGHT_FULL];
  const std::uint64_t host_cmds = end[NVMEOF_RCTR_HOST_COMMANDS] - start[NVMEOF_RCTR_HOST_COMMANDS];
  const std::uint64_t target_cmds =
      end[NVMEOF_RCTR_TARGET_COMMANDS] - start[NVMEOF_RCTR_TARGET_COMMANDS];
  if (want_host) WriteEnd(host_records, lost, host_out, host_cmds);
  if (want_target) WriteEnd(target_records, lost, target_out, target_cmds);
  host_out.close();
  target_out.close();
  if ((want_host && !host_out) || (want_target && !target_out)) {
    err << "nvmeof_exporter record: write error\n";
    return 1;
  }
  if (want_host)
    err << "record: " << host_path << ": " << host_records << " host records of " << host_cmds
        << " commands, " << lost << " lost\n";
  if (want_target)
    err << "record: " << target_path << ": " << target_records << " target records of "
        << target_cmds << " commands, " << lost << " lost\n";
  if (dropped) err << "record: " << dropped << " out-of-order points dropped\n";
  return 0;
}

int RunTopLive(double interval, bool once, bool json, std::uint32_t sample_every,
               const std::string& mechanism, std::ostream& out, std::ostream& err) {
  BpfOptions bpf;
  bpf.mechanism = mechanism;
  RecordOptions ro;
  ro.sample_every = sample_every;
  RecordLoad load = LoadRecord(Paths{}, bpf, ro);
  if (!load.source) {
    err << "nvmeof_exporter top: cannot load the record eBPF programs (" << load.availability.reason
        << ": " << load.availability.detail << "); --from=URL reads a running exporter instead\n";
    return 1;
  }
  using Clock = std::chrono::steady_clock;
  std::vector<RecordGroupCount> before;
  std::vector<std::pair<std::uint64_t, std::string>> names;
  load.source->Groups(&before, &names);
  auto t0 = Clock::now();
  StopSignals signals;
  std::uint64_t dropped = 0;
  while (!g_stop) {
    std::vector<Record> records;
    const auto deadline = t0 + std::chrono::duration<double>(interval);
    while (!g_stop && Clock::now() < deadline) {
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
      load.source->Poll(
          static_cast<int>(std::clamp<long long>(left, 0, 100)),
          [&](const nvmeof_record& k) { records.push_back(FromKernel(k, &dropped)); });
    }
    std::vector<RecordGroupCount> after;
    names.clear();
    load.source->Groups(&after, &names);
    const auto t1 = Clock::now();
    const double seconds = std::chrono::duration<double>(t1 - t0).count();
    const auto frame = LiveFrame(records, before, after, names, seconds);
    if (json) {
      timespec ts{};
      clock_gettime(CLOCK_MONOTONIC, &ts);
      PrintTopJson(frame, seconds, out, static_cast<double>(ts.tv_sec) + ts.tv_nsec * 1e-9);
    } else {
      if (!once) out << "\x1b[H\x1b[2J";
      PrintTopText(frame, seconds, out);
    }
    out.flush();
    if (once) return 0;
    before = std::move(after);
    t0 = t1;
  }
  return 0;
}

}  // namespace nvmeof::profile
