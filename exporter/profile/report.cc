#include "exporter/profile/report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <sstream>

#include "collectors/bpf/nvmeof.h"
#include "exporter/profile/text.h"

namespace nvmeof::profile {

namespace {

constexpr std::int64_t kJoinWindowNs = 1'000'000'000;  // a partner is at most 1 s away

// First passed point among `points`, in order; -1 if none.
int FirstPassed(const Record& r, std::initializer_list<int> points) {
  for (int p : points)
    if (p < static_cast<int>(r.ts.size()) && r.ts[static_cast<size_t>(p)]) return p;
  return -1;
}

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
            s.from * 16 + s.to, s.seconds);
  }
  return b.Finish(WallSeconds(f), f.header.sample_every);
}

// Host wait: command posted (or set up) -> response received (or completed).
bool HostWait(const Record& h, int* from, int* to) {
  *from = FirstPassed(h, {NVMEOF_HP_POSTED, NVMEOF_HP_SETUP});
  *to = FirstPassed(h, {NVMEOF_HP_RESPONSE, NVMEOF_HP_COMPLETE});
  return *from >= 0 && *to > *from;
}

// Target residence: capsule received (or req_init) -> nvmet_req_complete, as the exporter's
// nqn:nvmeof_target_residence_seconds rule. The `response` stage after it (queued -> send
// completion: on RDMA the RDMA WRITE of read data, the response and the host's ACK) overlaps
// the host's wait, and counting it made the network negative per command.
bool TargetResidence(const Record& t, int* from, int* to) {
  *from = FirstPassed(t, {NVMEOF_TP_RECV, NVMEOF_TP_INIT});
  *to = FirstPassed(t, {NVMEOF_TP_DONE});
  return *from >= 0 && *to > *from;
}

std::int64_t StartNs(const Record& r) {
  int from = -1, to = -1;
  if (r.role == NVMEOF_ROLE_HOST ? HostWait(r, &from, &to) : TargetResidence(r, &from, &to))
    return static_cast<std::int64_t>(r.ts[static_cast<size_t>(from)]);
  return -1;
}

bool SameCommand(const Record& h, const Record& t) {
  if (h.cntlid && t.cntlid && h.cntlid != t.cntlid) return false;
  if (!h.subsys.empty() && !t.subsys.empty() && h.subsys != t.subsys) return false;
  if (!h.hostnqn.empty() && !t.hostnqn.empty() && h.hostnqn != t.hostnqn) return false;
  return true;
}

using JoinKey = std::tuple<std::uint32_t, std::uint32_t, std::uint64_t, std::uint32_t>;
JoinKey KeyOf(const Record& r) { return {r.qid, r.cid, r.slba, r.nlb}; }

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
  if (bytes <= 4096) return "4KiB";
  if (bytes <= 16384) return "16KiB";
  if (bytes <= 65536) return "64KiB";
  if (bytes <= 262144) return "256KiB";
  return "larger";
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

JoinResult Join(const RecordFile& host, const RecordFile& target) {
  JoinResult j;
  j.host_records = host.records.size();
  j.target_records = target.records.size();
  std::map<JoinKey, std::vector<size_t>> hk, tk;
  for (size_t i = 0; i < host.records.size(); ++i)
    if (StartNs(host.records[i]) >= 0) hk[KeyOf(host.records[i])].push_back(i);
  std::int64_t tlo = std::numeric_limits<std::int64_t>::max(), thi = -1;
  for (size_t i = 0; i < target.records.size(); ++i) {
    const std::int64_t s = StartNs(target.records[i]);
    if (s < 0) continue;
    tk[KeyOf(target.records[i])].push_back(i);
    tlo = std::min(tlo, s);
    thi = std::max(thi, s);
  }
  // The clocks' offset from unambiguous pairs (one record per side); used only to choose among
  // several candidates, never subtracted from a duration.
  std::vector<std::int64_t> offsets;
  for (const auto& [key, hs] : hk) {
    auto it = tk.find(key);
    if (hs.size() == 1 && it != tk.end() && it->second.size() == 1 &&
        SameCommand(host.records[hs[0]], target.records[it->second[0]]))
      offsets.push_back(StartNs(target.records[it->second[0]]) - StartNs(host.records[hs[0]]));
  }
  if (!offsets.empty()) {
    std::nth_element(offsets.begin(), offsets.begin() + static_cast<long>(offsets.size() / 2),
                     offsets.end());
    j.offset_ns = offsets[offsets.size() / 2];
  }
  std::vector<bool> host_matched(host.records.size(), false);
  for (const auto& [key, hs] : hk) {
    auto it = tk.find(key);
    if (it == tk.end()) continue;
    struct Candidate {
      std::int64_t distance;
      size_t h, t;
    };
    std::vector<Candidate> cands;
    for (size_t h : hs)
      for (size_t t : it->second) {
        if (!SameCommand(host.records[h], target.records[t])) continue;
        const std::int64_t d =
            StartNs(target.records[t]) - (StartNs(host.records[h]) + j.offset_ns);
        const std::int64_t ad = d < 0 ? -d : d;
        if (ad <= kJoinWindowNs) cands.push_back({ad, h, t});
      }
    std::sort(cands.begin(), cands.end(), [](const Candidate& a, const Candidate& b) {
      return std::tie(a.distance, a.h, a.t) < std::tie(b.distance, b.h, b.t);
    });
    std::vector<size_t> used_t;
    for (const auto& c : cands) {
      if (host_matched[c.h] || std::find(used_t.begin(), used_t.end(), c.t) != used_t.end())
        continue;
      host_matched[c.h] = true;
      used_t.push_back(c.t);
      j.pairs.push_back({c.h, c.t});
    }
  }
  std::sort(j.pairs.begin(), j.pairs.end());
  j.matched = j.pairs.size();
  for (const auto& [key, hs] : hk) {
    const bool key_seen = tk.count(key) > 0;
    for (size_t h : hs) {
      if (host_matched[h]) continue;
      if (key_seen) {
        ++j.unmatched_no_partner;
        continue;
      }
      const std::int64_t aligned = StartNs(host.records[h]) + j.offset_ns;
      if (thi < 0 || aligned < tlo - kJoinWindowNs || aligned > thi + kJoinWindowNs)
        ++j.unmatched_outside;
      else
        ++j.unmatched_no_key;
    }
  }
  // Host records without a wait (missing points) count as unmatched with no key.
  j.unmatched_no_key += host.records.size() - j.matched - j.unmatched_no_partner -
                        j.unmatched_outside - j.unmatched_no_key;
  for (const auto& [h, t] : j.pairs) {
    int hf, ht, tf, tt;
    HostWait(host.records[h], &hf, &ht);
    TargetResidence(target.records[t], &tf, &tt);
    const auto& hr = host.records[h];
    const auto& tr = target.records[t];
    const std::int64_t wait =
        static_cast<std::int64_t>(hr.ts[static_cast<size_t>(ht)] - hr.ts[static_cast<size_t>(hf)]);
    const std::int64_t res =
        static_cast<std::int64_t>(tr.ts[static_cast<size_t>(tt)] - tr.ts[static_cast<size_t>(tf)]);
    if (wait < res) ++j.negative_network;
  }
  return j;
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
