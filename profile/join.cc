#include "profile/join.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

namespace nvmeof::profile {

namespace {

constexpr std::int64_t kJoinWindowNs = 1'000'000'000;  // a partner is at most 1 s away

// First passed point among `points`, in order; -1 if none.
int FirstPassed(const Record& r, std::initializer_list<int> points) {
  for (int p : points)
    if (p < static_cast<int>(r.ts.size()) && r.ts[static_cast<size_t>(p)]) return p;
  return -1;
}

}  // namespace

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

namespace {

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
using KeyIndex = std::map<JoinKey, std::vector<size_t>>;  // record indexes per key

// The clocks' offset (target - host) from unambiguous pairs (one record per side); used only
// to choose among several candidates, never subtracted from a duration.
std::int64_t MedianOffset(const KeyIndex& hk, const KeyIndex& tk, const RecordFile& host,
                          const RecordFile& target) {
  std::vector<std::int64_t> offsets;
  for (const auto& [key, hs] : hk) {
    auto it = tk.find(key);
    if (hs.size() == 1 && it != tk.end() && it->second.size() == 1 &&
        SameCommand(host.records[hs[0]], target.records[it->second[0]]))
      offsets.push_back(StartNs(target.records[it->second[0]]) - StartNs(host.records[hs[0]]));
  }
  if (offsets.empty()) return 0;
  std::nth_element(offsets.begin(), offsets.begin() + static_cast<long>(offsets.size() / 2),
                   offsets.end());
  return offsets[offsets.size() / 2];
}

// Host wait - target residence of a joined pair, in ns.
std::int64_t NetworkNs(const Record& h, const Record& t) {
  int hf, ht, tf, tt;
  HostWait(h, &hf, &ht);
  TargetResidence(t, &tf, &tt);
  const auto at = [](const Record& r, int p) {
    return static_cast<std::int64_t>(r.ts[static_cast<size_t>(p)]);
  };
  return (at(h, ht) - at(h, hf)) - (at(t, tt) - at(t, tf));
}

}  // namespace

JoinResult Join(const RecordFile& host, const RecordFile& target) {
  JoinResult j;
  j.host_records = host.records.size();
  j.target_records = target.records.size();
  KeyIndex hk, tk;
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
  j.offset_ns = MedianOffset(hk, tk, host, target);
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
  for (const auto& [h, t] : j.pairs)
    if (NetworkNs(host.records[h], target.records[t]) < 0) ++j.negative_network;
  return j;
}

}  // namespace nvmeof::profile
