// `nvmeof_exporter top`: its command line, --from (two scrapes of /metrics, top_frame.h) and
// the live mode on its own record programs (live.h).
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <thread>

#include "loader/record.h"
#include "profile/cli.h"
#include "profile/commands.h"
#include "profile/http_get.h"
#include "profile/live.h"
#include "profile/top_frame.h"
#include "profile/top_render.h"

namespace nvmeof::profile {

namespace {

struct TopArgs {
  std::string from;
  HttpClientOptions client;
  bool once = false, json = false;
  double interval = 2;
  std::uint64_t sample_every = 8;
  BpfOptions bpf;  // --bpf.mechanism
};

const std::vector<FlagSpec>& TopFlags() {
  static const std::vector<FlagSpec> flags = [] {
    std::vector<FlagSpec> f = {
        {"from", FlagSpec::kValue,
         "Read two scrapes of a running exporter's /metrics (http:// or https://) per frame\n"
         "instead of loading eBPF programs; needs no privileges.",
         0, "URL"},
        {"once", FlagSpec::kSwitch, "Print one frame and exit."},
        {"interval", FlagSpec::kValue, "Seconds per frame, in (0, 3600]. Default 2.", 0, "SECONDS"},
        {"format", FlagSpec::kValue, "text, or json: one JSON object per frame. Default text.", 0,
         "FORMAT"},
        {"sample-every", FlagSpec::kValue, "Without --from: time 1 in N commands. Default 8.", 's',
         "N"},
        BpfMechanismFlag(),
        kHelpFlag,
    };
    // --from.*, after --from (the help's order).
    f.insert(f.begin() + 1, HttpClientFlags().begin(), HttpClientFlags().end());
    return f;
  }();
  return flags;
}

// -1 to go on; else the exit status (0 after --help, 2 for bad usage).
int ParseTopArgs(const std::vector<std::string>& args, TopArgs* t, std::ostream& out,
                 std::ostream& err) {
  static const std::string usage =
      Usage("top [--from=URL] [flags]",
            "A live per-group stage view: commands/s, end-to-end mean/p50/p99 and each stage's\n"
            "mean, share and queue depth. Without --from it loads its own eBPF programs (root).",
            TopFlags());
  ParsedArgs p;
  if (int rc = ParseCommand("top", args, TopFlags(), usage, 0, &p, out, err); rc >= 0) return rc;
  std::string e;
  if (!GetSampleEvery(p, &t->sample_every, &e) || !ApplyBpfFlags(p, &t->bpf, &e) ||
      !GetFormatJson(p, &t->json, &e))
    return UsageError("top", e, err);
  if (auto v = p.Get("from")) {
    t->from = *v;
    if (v->rfind("http://", 0) != 0 && v->rfind("https://", 0) != 0)
      return UsageError("top", "--from: \"" + *v + "\" is not an http:// or https:// URL", err);
  }
  if (!GetHttpClientOptions(p, &t->client, &e)) return UsageError("top", e, err);
  t->once = p.On("once");
  if (auto v = p.Get("interval")) {
    char* end = nullptr;
    t->interval = std::strtod(v->c_str(), &end);
    if (v->empty() || *end || !(t->interval > 0) || t->interval > 3600) {
      return UsageError("top", "--interval: \"" + *v + "\" is not a number of seconds in (0, 3600]",
                        err);
    }
  }
  return -1;
}

// `top` on its own record object: interval, once and json as RunTop's; sample_every 1 in N.
int RunTopLive(double interval, bool once, bool json, std::uint32_t sample_every,
               const BpfOptions& bpf, std::ostream& out, std::ostream& err) {
  RecordOptions ro;
  ro.sample_every = sample_every;
  RecordLoad load = LoadRecord(Paths{}, bpf, ro);
  if (!load.source) {
    err << "nvmeof_exporter top: cannot load the record eBPF programs (" << load.availability.reason
        << ": " << load.availability.detail << "); --from=URL reads a running exporter instead\n";
    return 1;
  }
  // A role that cannot be shown: said once, and its rows stay absent (5.10: no module BTF).
  if (auto missing = MissingFrame(load.plan, true, true); !missing.empty()) {
    err << "nvmeof_exporter top: " << missing << ": its commands are not shown\n";
  }
  using Clock = std::chrono::steady_clock;
  std::vector<RecordGroupCount> before;
  std::vector<std::pair<std::uint64_t, std::string>> names;
  load.source->Groups(&before, &names);
  auto t0 = Clock::now();
  StopSignals signals;
  std::uint64_t dropped = 0;
  while (!StopRequested()) {
    std::vector<Record> records;
    const auto deadline = t0 + std::chrono::duration<double>(interval);
    while (!StopRequested() && Clock::now() < deadline) {
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
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    PrintFrame(LiveFrame(records, before, after, names, seconds), seconds, json, once, out,
               static_cast<double>(ts.tv_sec) + ts.tv_nsec * 1e-9);
    if (once) return 0;
    before = std::move(after);
    t0 = t1;
  }
  return 0;
}

}  // namespace

int RunTop(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  TopArgs t;
  if (int rc = ParseTopArgs(args, &t, out, err); rc >= 0) return rc;
  if (t.from.empty()) {
    return RunTopLive(t.interval, t.once, t.json, static_cast<std::uint32_t>(t.sample_every), t.bpf,
                      out, err);
  }
  const std::string& from = t.from;
  HttpClient client(t.client);  // one connection for every frame's scrape
  const bool once = t.once, json = t.json;
  const double interval = t.interval;
  auto scrape = [&](std::vector<Sample>* samples) {
    std::string body, error;
    if (!client.Get(from, &body, &error) || !ParseExposition(body, samples, &error)) {
      err << "nvmeof_exporter top: " << from << ": " << error << "\n";
      return false;
    }
    return true;
  };
  using Clock = std::chrono::steady_clock;
  std::vector<Sample> before;
  if (!scrape(&before)) return 1;
  auto t0 = Clock::now();
  for (;;) {
    std::this_thread::sleep_for(std::chrono::duration<double>(interval));
    std::vector<Sample> after;
    if (!scrape(&after)) return 1;
    const auto t1 = Clock::now();
    const double seconds = std::chrono::duration<double>(t1 - t0).count();
    PrintFrame(TopFrame(before, after, seconds), seconds, json, once, out);
    if (once) return 0;
    before = std::move(after);
    t0 = t1;
  }
}

}  // namespace nvmeof::profile
