#include "profile/join.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string_view>
#include <tuple>
#include <unordered_map>

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

using JoinKey = std::tuple<std::uint32_t, std::uint32_t, std::uint64_t, std::uint32_t>;
JoinKey KeyOf(const Record& r) { return {r.qid, r.cid, r.slba, r.nlb}; }

// The subsystem and host NQNs of both sides as numbers, equal where the strings are (0 = not
// known): the join compares them per candidate pair, in key order, which is far from file
// order, and a string compare there is a cache miss into each record's heap string.
class Names {
 public:
  // `last`: the id this field had on the record before, which it mostly has again.
  std::uint32_t Id(const std::string& s, std::pair<std::string_view, std::uint32_t>* last) {
    if (s.empty()) return 0;
    if (s == last->first) return last->second;
    const auto id = ids_.try_emplace(s, static_cast<std::uint32_t>(ids_.size() + 1)).first->second;
    *last = {s, id};
    return id;
  }

 private:
  std::unordered_map<std::string_view, std::uint32_t> ids_;  // views of the records' strings
};

constexpr std::uint32_t kNone = ~std::uint32_t{0};
constexpr size_t kNoPartner = ~size_t{0};

// One record that has a start, with what the join compares; `next`: the next record of its key
// on its side, in file order.
struct Item {
  std::int64_t start;  // StartNs
  std::uint32_t index, next = kNone;
  std::uint32_t cntlid, subsys, hostnqn;
};

// The records of one key: a chain per side.
struct Group {
  JoinKey key;
  std::uint32_t host = kNone, host_last = kNone, target = kNone, target_last = kNone;
  std::uint32_t hosts = 0, targets = 0;
};

// Both sides grouped by key in a hash table (open addressing): no sort, no node per key.
// `explain` joins a few hundred thousand records per side (tests/bench/explain_bench.cc).
class Groups {
 public:
  Groups(const RecordFile& host, const RecordFile& target) {
    size_t size = 16;
    while (size < 2 * (host.records.size() + target.records.size())) size *= 2;
    table_.assign(size, kNone);
    Names names;
    Add(host, &names, &hosts_, &Group::host, &Group::host_last, &Group::hosts);
    Add(target, &names, &targets_, &Group::target, &Group::target_last, &Group::targets);
  }
  const std::vector<Group>& groups() const { return groups_; }
  const Item& host(std::uint32_t i) const { return hosts_[i]; }
  const Item& target(std::uint32_t i) const { return targets_[i]; }

 private:
  static std::uint64_t HashOf(const JoinKey& k) {
    std::uint64_t h = std::get<2>(k) * 0x9e3779b97f4a7c15ull;
    h ^= (std::uint64_t{std::get<0>(k)} << 32 | std::get<1>(k)) * 0xbf58476d1ce4e5b9ull;
    h ^= std::get<3>(k) * 0x94d049bb133111ebull;
    return h ^ (h >> 29);
  }
  Group& Of(const JoinKey& key) {
    const size_t mask = table_.size() - 1;
    for (size_t b = HashOf(key) & mask;; b = (b + 1) & mask) {
      std::uint32_t& g = table_[b];
      if (g == kNone) {
        g = static_cast<std::uint32_t>(groups_.size());
        return groups_.emplace_back(Group{key});
      }
      if (groups_[g].key == key) return groups_[g];
    }
  }
  using Chain = std::uint32_t Group::*;
  void Add(const RecordFile& f, Names* names, std::vector<Item>* items, Chain first, Chain last,
           Chain count) {
    items->reserve(f.records.size());
    std::pair<std::string_view, std::uint32_t> subsys, hostnqn;
    for (size_t i = 0; i < f.records.size(); ++i) {
      const Record& r = f.records[i];
      const std::int64_t start = StartNs(r);
      if (start < 0) continue;
      const auto at = static_cast<std::uint32_t>(items->size());
      items->push_back({start, static_cast<std::uint32_t>(i), kNone, r.cntlid,
                        names->Id(r.subsys, &subsys), names->Id(r.hostnqn, &hostnqn)});
      Group& g = Of(KeyOf(r));
      if (g.*last == kNone) {
        g.*first = at;
      } else {
        (*items)[g.*last].next = at;
      }
      g.*last = at;
      ++(g.*count);
    }
  }

  std::vector<std::uint32_t> table_;  // group per slot, kNone = empty
  std::vector<Group> groups_;
  std::vector<Item> hosts_, targets_;
};

// cntlid, subsystem and host NQN equal where both sides know them.
bool SameCommand(const Item& h, const Item& t) {
  if (h.cntlid && t.cntlid && h.cntlid != t.cntlid) return false;
  if (h.subsys && t.subsys && h.subsys != t.subsys) return false;
  if (h.hostnqn && t.hostnqn && h.hostnqn != t.hostnqn) return false;
  return true;
}

// The clocks' offset (target - host) from unambiguous pairs (one record per side); used only
// to choose among several candidates, never subtracted from a duration.
std::int64_t MedianOffset(const Groups& gs) {
  std::vector<std::int64_t> offsets;
  for (const Group& g : gs.groups()) {
    if (g.hosts != 1 || g.targets != 1) continue;
    const Item &h = gs.host(g.host), &t = gs.target(g.target);
    if (SameCommand(h, t)) offsets.push_back(t.start - h.start);
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

struct Candidate {
  std::int64_t distance;
  size_t h, t;
  bool operator<(const Candidate& o) const {
    return std::tie(distance, h, t) < std::tie(o.distance, o.h, o.t);
  }
};

}  // namespace

JoinResult Join(const RecordFile& host, const RecordFile& target) {
  JoinResult j;
  j.host_records = host.records.size();
  j.target_records = target.records.size();
  const Groups gs(host, target);
  std::int64_t tlo = std::numeric_limits<std::int64_t>::max(), thi = -1;
  for (const Group& g : gs.groups())
    for (std::uint32_t t = g.target; t != kNone; t = gs.target(t).next) {
      tlo = std::min(tlo, gs.target(t).start);
      thi = std::max(thi, gs.target(t).start);
    }
  j.offset_ns = MedianOffset(gs);
  std::vector<size_t> partner(host.records.size(), kNoPartner);  // target index per host record
  std::vector<Candidate> cands;
  std::vector<size_t> used_t;
  for (const Group& g : gs.groups()) {
    cands.clear();
    for (std::uint32_t a = g.host; a != kNone; a = gs.host(a).next)
      for (std::uint32_t b = g.target; b != kNone; b = gs.target(b).next) {
        const Item &h = gs.host(a), &t = gs.target(b);
        if (!SameCommand(h, t)) continue;
        const std::int64_t d = t.start - (h.start + j.offset_ns);
        const std::int64_t ad = d < 0 ? -d : d;
        if (ad <= kJoinWindowNs) cands.push_back({ad, h.index, t.index});
      }
    std::sort(cands.begin(), cands.end());
    used_t.clear();
    for (const auto& c : cands) {
      if (partner[c.h] != kNoPartner ||
          std::find(used_t.begin(), used_t.end(), c.t) != used_t.end())
        continue;
      partner[c.h] = c.t;
      used_t.push_back(c.t);
    }
    for (std::uint32_t a = g.host; a != kNone; a = gs.host(a).next) {
      const Item& h = gs.host(a);
      if (partner[h.index] != kNoPartner) continue;
      if (g.targets) {
        ++j.unmatched_no_partner;
        continue;
      }
      const std::int64_t aligned = h.start + j.offset_ns;
      if (thi < 0 || aligned < tlo - kJoinWindowNs || aligned > thi + kJoinWindowNs)
        ++j.unmatched_outside;
      else
        ++j.unmatched_no_key;
    }
  }
  for (size_t h = 0; h < partner.size(); ++h)  // in host order
    if (partner[h] != kNoPartner) j.pairs.push_back({h, partner[h]});
  j.matched = j.pairs.size();
  // Host records without a wait (missing points) count as unmatched with no key.
  j.unmatched_no_key += host.records.size() - j.matched - j.unmatched_no_partner -
                        j.unmatched_outside - j.unmatched_no_key;
  for (const auto& [h, t] : j.pairs)
    if (NetworkNs(host.records[h], target.records[t]) < 0) ++j.negative_network;
  return j;
}

}  // namespace nvmeof::profile
