#include "profile/report_data.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <sstream>

#include "bpf/classes.h"
#include "loader/nvmeof.h"
#include "profile/text.h"

namespace nvmeof::profile {

namespace {

struct Span {
  int from, to;
  double seconds;
};

std::vector<Span> Spans(const Record& r) {
  std::vector<Span> out;
  int prev = -1;
  for (int p = 0; p < static_cast<int>(r.ts.size()); ++p) {
    if (!r.ts[static_cast<size_t>(p)]) continue;
    if (prev >= 0)
      out.push_back(
          {prev, p,
           static_cast<double>(r.ts[static_cast<size_t>(p)] - r.ts[static_cast<size_t>(prev)]) *
               1e-9});
    prev = p;
  }
  return out;
}

std::string DeviceOf(const Record& r) { return !r.device.empty() ? r.device : r.subsys; }

std::string GroupKey(const Record& r) {
  return std::string(r.role == NVMEOF_ROLE_HOST ? "host" : "target") + " " + r.transport + " " +
         r.op + " " + SizeClass(r.size) + " " + DeviceOf(r);
}

// Wall time a file covers (first point of any record to the last), in seconds.
double WallSeconds(const RecordFile& f) {
  std::uint64_t lo = std::numeric_limits<std::uint64_t>::max(), hi = 0;
  for (const auto& r : f.records)
    for (auto t : r.ts)
      if (t) lo = std::min(lo, t), hi = std::max(hi, t);
  return hi > lo ? static_cast<double>(hi - lo) * 1e-9 : 0;
}

// Collects components by name in path order (by the span's first point, then its last).
class GroupBuilder {
 public:
  Group& Get(const Record& r) {
    auto [it, inserted] = index_.try_emplace(GroupKey(r), groups_.size());
    if (inserted) {
      Group g;
      g.key = it->first;
      g.role = r.role == NVMEOF_ROLE_HOST ? "host" : "target";
      g.transport = r.transport;
      g.op = r.op;
      g.size = SizeClass(r.size);
      g.device = DeviceOf(r);
      g.end_to_end.name = "end_to_end";
      groups_.push_back(std::move(g));
      order_.emplace_back();
    }
    current_ = it->second;
    return groups_[it->second];
  }
  // Adds a value to component `name` of the current group; `order` sorts path order.
  void Add(const std::string& name, double order, double seconds) {
    Group& g = groups_[current_];
    auto& ord = order_[current_];
    auto it = std::find_if(g.components.begin(), g.components.end(),
                           [&](const Component& c) { return c.name == name; });
    if (it == g.components.end()) {
      g.components.push_back({});
      g.components.back().name = name;
      ord[name] = order;
      it = g.components.end() - 1;
    }
    it->values.push_back(seconds);
  }
  std::vector<Group> Finish(double wall, std::uint64_t sample_every) {
    for (size_t i = 0; i < groups_.size(); ++i) {
      Group& g = groups_[i];
      auto& ord = order_[i];
      std::stable_sort(
          g.components.begin(), g.components.end(),
          [&](const Component& a, const Component& b) { return ord[a.name] < ord[b.name]; });
      auto finish = [&](Component& c) {
        std::sort(c.values.begin(), c.values.end());
        c.sum = 0;
        for (double v : c.values) c.sum += v, c.hist.Add(v);
        c.mean = c.values.empty() ? 0 : c.sum / static_cast<double>(c.values.size());
        c.p50 = Percentile(c.values, 0.5);
        c.p99 = Percentile(c.values, 0.99);
        c.p999 = Percentile(c.values, 0.999);
        c.queue_depth = wall > 0 ? c.sum * static_cast<double>(sample_every) / wall : 0;
      };
      finish(g.end_to_end);
      g.n = g.end_to_end.values.size();
      for (auto& c : g.components) {
        finish(c);
        c.share = g.end_to_end.sum > 0 ? c.sum / g.end_to_end.sum : 0;
      }
    }
    std::stable_sort(groups_.begin(), groups_.end(), [](const Group& a, const Group& b) {
      return a.end_to_end.sum > b.end_to_end.sum;
    });
    return std::move(groups_);
  }

 private:
  std::map<std::string, size_t> index_;
  std::vector<Group> groups_;
  std::vector<std::map<std::string, double>> order_;
  size_t current_ = 0;
};

std::vector<Group> Groups(const RecordFile& f) {
  GroupBuilder b;
  for (const auto& r : f.records) {
    const auto spans = Spans(r);
    if (spans.empty()) continue;
    b.Get(r).end_to_end.values.push_back(static_cast<double>(EndToEnd(r)) * 1e-9);
    for (const auto& s : spans)
      b.Add(NvmeofStageName(r.role, r.transport, static_cast<std::uint8_t>(s.from),
                            static_cast<std::uint8_t>(s.to)),
            NvmeofSpanRank(s.from, s.to), s.seconds);
  }
  return b.Finish(WallSeconds(f), f.header.sample_every);
}

}  // namespace

double Percentile(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return 0;
  q = std::clamp(q, 0.0, 1.0);
  const auto n = static_cast<double>(sorted.size());
  auto rank = static_cast<size_t>(std::ceil(q * n));
  if (rank < 1) rank = 1;
  return sorted[std::min(rank, sorted.size()) - 1];
}

std::string SizeClass(std::uint64_t bytes) {
  return std::string(SizeClassName(nvmeof_size_class(bytes)));
}

void TextHistogram::Add(double seconds) {
  if (seconds < 0) {
    ++negative;
    return;
  }
  const double us = seconds * 1e6;
  size_t i = 0;
  while (i < 40 && us >= static_cast<double>(1ull << i)) ++i;
  if (buckets.size() <= i) buckets.resize(i + 1);
  ++buckets[i];
}

Report BuildReport(const RecordFile& first, const RecordFile* second) {
  Report rep;
  const RecordFile* host = &first;
  const RecordFile* target = second;
  if (second && first.header.role == "target") std::swap(host, target);
  rep.host_header = host->header;
  rep.lost = host->lost;
  rep.groups = Groups(*host);
  if (!target) return rep;
  rep.target_header = target->header;
  rep.target_lost = target->lost;
  rep.target_groups = Groups(*target);
  rep.join = Join(*host, *target);
  GroupBuilder b;
  for (const auto& [hi, ti] : rep.join->pairs) {
    const Record& h = host->records[hi];
    const Record& t = target->records[ti];
    int hf, ht, tf, tt;
    HostWait(h, &hf, &ht);
    TargetResidence(t, &tf, &tt);
    b.Get(h).end_to_end.values.push_back(static_cast<double>(EndToEnd(h)) * 1e-9);
    // Path order: host stages before the wait, the network, the target's stages, host after.
    for (const auto& s : Spans(h)) {
      if (s.to > hf && s.from < ht) continue;  // inside the wait: replaced by the join
      b.Add(NvmeofStageName(h.role, h.transport, static_cast<std::uint8_t>(s.from),
                            static_cast<std::uint8_t>(s.to)),
            s.from < hf ? s.from : 1000 + s.from, s.seconds);
    }
    const double wait =
        static_cast<double>(h.ts[static_cast<size_t>(ht)] - h.ts[static_cast<size_t>(hf)]) * 1e-9;
    const double res =
        static_cast<double>(t.ts[static_cast<size_t>(tt)] - t.ts[static_cast<size_t>(tf)]) * 1e-9;
    b.Add("network", 100, wait - res);
    for (const auto& s : Spans(t)) {
      if (s.from < tf || s.to > tt) continue;
      b.Add("target:" + NvmeofStageName(t.role, t.transport, static_cast<std::uint8_t>(s.from),
                                        static_cast<std::uint8_t>(s.to)),
            200 + s.from, s.seconds);
    }
  }
  rep.joined = b.Finish(WallSeconds(*host), host->header.sample_every);
  return rep;
}

}  // namespace nvmeof::profile
