// `explain`'s arithmetic: the join of every host source with every target source, the split of
// each host command and the tail summary (explain.h).
#include "profile/explain.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "profile/join.h"
#include "profile/report_data.h"

namespace nvmeof::profile {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

double Seconds(const Record& r, int from, int to) {
  return static_cast<double>(r.ts[static_cast<size_t>(to)] - r.ts[static_cast<size_t>(from)]) *
         1e-9;
}

// Drive time: the target's backing I/O issued -> nvmet_req_complete; NaN without both points.
double DriveSeconds(const Record& t) {
  if (t.ts.size() <= NVMEOF_TP_DONE) return kNaN;
  const std::uint64_t exec = t.ts[NVMEOF_TP_EXEC], done = t.ts[NVMEOF_TP_DONE];
  return exec && done >= exec ? static_cast<double>(done - exec) * 1e-9 : kNaN;
}

ExplainCommand Split(const Record& h, const Record* t, size_t host_source, int target_source) {
  ExplainCommand c;
  c.host = &h;
  c.target = t;
  c.host_source = host_source;
  c.target_source = target_source;
  c.e2e = static_cast<double>(EndToEnd(h)) * 1e-9;
  std::fill(std::begin(c.parts), std::end(c.parts), kNaN);
  int hf, ht;
  if (!HostWait(h, &hf, &ht)) return c;  // no wait: nothing to split
  const double wait = Seconds(h, hf, ht);
  c.parts[kHostPart] = c.e2e - wait;
  int tf, tt;
  if (!t || !TargetResidence(*t, &tf, &tt)) {
    c.parts[kNetworkTarget] = wait;
    return c;
  }
  const double residence = Seconds(*t, tf, tt);
  c.parts[kNetwork] = wait - residence;
  c.parts[kDrive] = DriveSeconds(*t);
  c.parts[kTargetPart] = std::isnan(c.parts[kDrive]) ? residence : residence - c.parts[kDrive];
  return c;
}

// For each record of host source `h`: (target source, record index) of its joined partner, or
// (-1, 0). With several target sources the first to join a command keeps it (a command is
// joined in one at most: the join compares the subsystem and host NQNs).
std::vector<std::pair<int, size_t>> JoinAll(const RecordFile& host,
                                            const std::vector<ExplainSource>& targets) {
  std::vector<std::pair<int, size_t>> partner(host.records.size(), {-1, 0});
  for (size_t t = 0; t < targets.size(); ++t) {
    if (!targets[t].ok || targets[t].file.records.empty()) continue;
    const JoinResult j = Join(host, targets[t].file);
    for (const auto& [hi, ti] : j.pairs)
      if (partner[hi].first < 0) partner[hi] = {static_cast<int>(t), ti};
  }
  return partner;
}

// The components the tail is told in.
std::vector<int> TailComponents(bool joined, bool drive_known) {
  if (!joined) return {kHostPart, kNetworkTarget};
  if (drive_known) return {kHostPart, kNetwork, kTargetPart, kDrive};
  return {kHostPart, kNetwork, kTargetPart};
}

// A joined tail command's value of `component` in the tail's terms: without the drive split,
// target holds the whole residence (drive included where it was known).
double TailValue(const ExplainCommand& c, int component, bool joined, bool drive_known) {
  if (joined && !drive_known && component == kTargetPart && !std::isnan(c.parts[kDrive]))
    return c.parts[kTargetPart] + c.parts[kDrive];
  return c.parts[component];
}

TailSummary Summarize(const std::vector<ExplainCommand>& all, double threshold, bool by_min) {
  TailSummary s;
  s.by_min = by_min;
  s.threshold = threshold;
  std::vector<const ExplainCommand*> tail;
  for (const auto& c : all)
    if (c.e2e >= threshold) tail.push_back(&c);
  s.commands = tail.size();
  s.drive_known = true;
  for (const auto* c : tail) {
    if (!c->target) continue;
    s.joined = true;
    if (std::isnan(c->parts[kDrive])) s.drive_known = false;
  }
  if (!s.joined) s.drive_known = false;
  const std::vector<int> comps = TailComponents(s.joined, s.drive_known);
  for (int k : comps) s.parts.push_back(TailPart{k});
  double total = 0;
  for (const auto* c : tail) {
    if (std::isnan(c->parts[kHostPart]) || (s.joined && !c->target)) continue;
    ++s.split;
    total += c->e2e;
    size_t largest = 0;
    double largest_value = -std::numeric_limits<double>::infinity();
    for (size_t i = 0; i < comps.size(); ++i) {
      const double v = TailValue(*c, comps[i], s.joined, s.drive_known);
      s.parts[i].seconds += v;
      if (v > largest_value) largest_value = v, largest = i;
    }
    ++s.parts[largest].largest_in;
  }
  for (auto& p : s.parts) p.share = total > 0 ? p.seconds / total : 0;
  std::stable_sort(s.parts.begin(), s.parts.end(),
                   [](const TailPart& a, const TailPart& b) { return a.seconds > b.seconds; });
  s.clear = s.split > 0 && s.parts[0].share >= 0.5;
  return s;
}

}  // namespace

const char* ComponentName(int component, bool drive_known) {
  switch (component) {
    case kHostPart:
      return "host";
    case kNetwork:
      return "network";
    case kTargetPart:
      return drive_known ? "target" : "target (incl. drive)";
    case kDrive:
      return "drive";
    default:
      return "network+target";
  }
}

const char* ComponentKey(int component) {
  static const char* const keys[kComponents] = {"host", "network", "target", "drive",
                                                "network_target"};
  return component >= 0 && component < kComponents ? keys[component] : "?";
}

int ExplainCommand::Largest() const {
  int best = -1;
  for (int k = 0; k < kComponents; ++k)
    if (!std::isnan(parts[k]) && (best < 0 || parts[k] > parts[best])) best = k;
  return best;
}

Explanation BuildExplanation(std::vector<ExplainSource> hosts, std::vector<ExplainSource> targets,
                             std::size_t slowest, double min_seconds) {
  Explanation x;
  x.hosts = std::move(hosts);
  x.targets = std::move(targets);
  for (const auto& t : x.targets) {
    if (!t.ok) continue;
    x.targets_answered = true;
    x.target_records += t.file.records.size();
  }
  std::vector<ExplainCommand> all;
  size_t records = 0;
  for (const auto& h : x.hosts) records += h.ok ? h.file.records.size() : 0;
  all.reserve(records);
  for (size_t h = 0; h < x.hosts.size(); ++h) {
    if (!x.hosts[h].ok) continue;
    const RecordFile& file = x.hosts[h].file;
    x.host_records += file.records.size();
    const auto partner = JoinAll(file, x.targets);
    for (size_t i = 0; i < file.records.size(); ++i) {
      const auto [ts, ti] = partner[i];
      const Record* t = ts >= 0 ? &x.targets[static_cast<size_t>(ts)].file.records[ti] : nullptr;
      all.push_back(Split(file.records[i], t, h, ts));
      const ExplainCommand& c = all.back();
      if (std::isnan(c.parts[kHostPart])) ++x.without_wait;
      if (t) {
        ++x.joined;
        if (!std::isnan(c.parts[kDrive])) x.drive_known = true;
      } else {
        ++x.unmatched;
      }
    }
  }
  if (all.empty()) return x;
  std::vector<double> e2e;
  e2e.reserve(all.size());
  for (const auto& c : all) e2e.push_back(c.e2e);
  std::sort(e2e.begin(), e2e.end());
  x.p99 = Percentile(e2e, 0.99);
  x.tail = Summarize(all, min_seconds > 0 ? min_seconds : x.p99, min_seconds > 0);
  const size_t n = std::min(slowest, all.size());
  std::partial_sort(all.begin(), all.begin() + static_cast<long>(n), all.end(),
                    [](const ExplainCommand& a, const ExplainCommand& b) { return a.e2e > b.e2e; });
  x.slowest.assign(all.begin(), all.begin() + static_cast<long>(n));
  return x;
}

}  // namespace nvmeof::profile
