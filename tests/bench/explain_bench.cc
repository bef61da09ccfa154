// `explain`'s cost on a busy window: a host and a target flight recorder answer (record files
// as GET /api/v1/commands writes them) of N commands each, read (profile/record_scan.h), joined
// with report's join, split and summarized (profile/explain.h BuildExplanation).
//
//   explain_bench [N [ROUNDS]]     N commands per side (default 375000: 120 s at 100k IOPS
//                                  sampled 1 in 32), best of ROUNDS (default 3)
//
// Prints the bytes per side and the seconds of each step; the budget is 1 s for all of them
// (tests/bench/README.md "explain"). `--slow` also times the general reader (ReadRecords).
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <string>

#include "loader/record_file.h"
#include "profile/explain.h"
#include "profile/join.h"
#include "profile/record_scan.h"

using namespace nvmeof;
using namespace nvmeof::profile;

namespace {

using Clock = std::chrono::steady_clock;

double Since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// CPU seconds of this process (user + system): on a shared machine the wall time of a step
// also holds other processes' time slices.
double CpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// N commands 120 s / N apart over 4 controllers of 8 queues each; 1 in 100 has 3 ms more
// network. Host clock from 10 s; the target's clock 7 s ahead.
void Generate(std::size_t n, std::string* host, std::string* target) {
  std::ostringstream h, t;
  RecordHeader hh, th;
  hh.hostname = "bench-host";
  th.hostname = "bench-target";
  th.role = "target";
  hh.sample_every = th.sample_every = 32;
  WriteHeader(hh, h);
  WriteHeader(th, t);
  const std::uint64_t gap = 120'000'000'000ull / n, wall = 1'700'000'000'000'000'000ull;
  std::uint64_t rng = 88172645463325252ull;
  for (std::size_t i = 0; i < n; ++i) {
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    const unsigned ctrl = i % 4;
    Record r;
    r.transport = "tcp";
    r.op = rng % 3 ? "read" : "write";
    r.size = 4096;
    r.qid = 1 + static_cast<std::uint32_t>(rng >> 20) % 8;
    r.cid = static_cast<std::uint32_t>(i / 4) % 4096;
    r.cntlid = ctrl + 1;
    r.subsys = "nqn.2024-06.io.example:pool-" + std::to_string(ctrl);
    r.hostnqn = "nqn.2014-08.org.nvmexpress:uuid:4c4c4544-0035-4b10-8044-b4c04f4d3232";
    r.device = "nvme" + std::to_string(ctrl) + "c" + std::to_string(ctrl) + "n1";
    r.slba = (rng >> 24) % (1ull << 30) * 8;
    r.nlb = 7;
    const std::uint64_t s = 10'000'000'000ull + i * gap, jitter = (rng >> 40) % 20'000;
    const std::uint64_t net = 30'000 + jitter + (i % 100 == 42 ? 3'000'000 : 0);
    const std::uint64_t residence = 40'000 + jitter;
    const std::uint64_t posted = s + 8'000, response = posted + net + residence;
    r.ts = {s, s + 2'000, posted, 0, response, response + 3'000, response + 9'000};
    r.time_ns = wall + r.ts.back();
    r.ref = "h-" + std::to_string(r.ts.back());
    WriteRecord(r, h);
    const std::uint64_t recv = posted + net / 2 + 7'000'000'000ull;
    r.role = NVMEOF_ROLE_TARGET;
    r.device = "";
    r.ts = {recv, recv + 1'000, 0, 0, recv + residence, recv + residence + 4'000};
    r.time_ns = wall + r.ts.back() - 7'000'000'000ull;
    r.ref = "t-" + std::to_string(r.ts.back());
    WriteRecord(r, t);
  }
  WriteEnd(n, 0, h);
  WriteEnd(n, 0, t);
  *host = h.str();
  *target = t.str();
}

}  // namespace

int main(int argc, char** argv) {
  bool slow = false;
  std::vector<const char*> args;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--slow") == 0) {
      slow = true;
    } else {
      args.push_back(argv[i]);
    }
  }
  const std::size_t n = args.size() > 0 ? std::strtoull(args[0], nullptr, 10) : 375000;
  const int rounds = args.size() > 1 ? std::atoi(args[1]) : 3;
  if (n == 0 || rounds <= 0) {
    std::fprintf(stderr, "usage: explain_bench [N [ROUNDS]] [--slow]\n");
    return 2;
  }
  std::string host, target;
  Generate(n, &host, &target);
  std::printf("explain_bench: %zu commands per side, host %.1f MB, target %.1f MB\n", n,
              static_cast<double>(host.size()) / 1e6, static_cast<double>(target.size()) / 1e6);
  for (const std::string* body : {&host, &target}) {  // the fast path reads them, one at a time
    RecordFile f;
    std::string error;
    bool fast = false;
    const auto t0 = Clock::now();
    if (!ReadRecordBody(*body, &f, &error, &fast) || !fast || f.records.size() != n) {
      std::fprintf(stderr, "explain_bench: not read by the fast path: %s\n", error.c_str());
      return 1;
    }
    std::printf("read the %s side alone: %.3f s\n", body == &host ? "host" : "target", Since(t0));
  }
  double best[5] = {1e9, 1e9, 1e9, 1e9, 1e9};
  for (int round = 0; round < rounds; ++round) {
    std::vector<ExplainSource> hosts(1), targets(1);
    hosts[0].role = "host";
    targets[0].role = "target";
    std::vector<FetchedBody> bodies = {{&hosts[0], host}, {&targets[0], target}};  // not timed
    const double cpu0 = CpuSeconds();
    auto t0 = Clock::now();
    ReadBodies(&bodies);  // as explain reads its answers: all at once, a thread per core
    const double read = Since(t0);
    if (!hosts[0].ok || !targets[0].ok)
      return std::fprintf(stderr, "%s%s\n", hosts[0].error.c_str(), targets[0].error.c_str()), 1;
    t0 = Clock::now();
    const Explanation x = BuildExplanation(std::move(hosts), std::move(targets), 10, 0);
    const double build = Since(t0), cpu = CpuSeconds() - cpu0, total = read + build;
    if (x.joined != n || !x.tail || x.tail->parts[0].component != kNetwork) {
      std::fprintf(stderr, "explain_bench: wrong result: joined %zu of %zu\n", x.joined, n);
      return 1;
    }
    // The join alone, on the files just read (not in the total).
    t0 = Clock::now();
    const JoinResult alone = Join(x.hosts[0].file, x.targets[0].file);
    const double join = Since(t0);
    if (alone.matched != n) return std::fprintf(stderr, "join: %zu of %zu\n", alone.matched, n), 1;
    std::printf(
        "round %d: read both %.3f s, join+split+summary %.3f s (the join alone %.3f s), "
        "total %.3f s, CPU %.3f s (tail: %zu commands, network %.1f%%)\n",
        round + 1, read, build, join, total, cpu, x.tail->commands, x.tail->parts[0].share * 100);
    const double now[5] = {read, build, join, total, cpu};
    for (int i = 0; i < 5; ++i) best[i] = std::min(best[i], now[i]);
  }
  std::printf(
      "best: read both %.3f s, join+split+summary %.3f s (the join alone %.3f s), total "
      "%.3f s, CPU %.3f s\n",
      best[0], best[1], best[2], best[3], best[4]);
  if (slow) {
    RecordFile f;
    std::string error;
    std::istringstream in(host);
    const auto t0 = Clock::now();
    ReadRecords(in, &f, &error);
    std::printf("ReadRecords (the general reader) on the host side: %.3f s\n", Since(t0));
  }
  return 0;
}
