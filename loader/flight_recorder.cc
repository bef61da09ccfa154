#include "loader/flight_recorder.h"

#include <algorithm>
#include <charconv>

namespace nvmeof {

std::string ControllerOfDisk(std::string_view disk) {
  // nvme<subsys>c<ctrl>n<ns> (a path of a multipath head) or nvme<ctrl>n<ns>.
  const int instance = nvmeof_ctrl_instance(std::string(disk).c_str());
  return instance < 0 ? std::string() : "nvme" + std::to_string(instance);
}

namespace {

std::uint64_t LastPoint(const FlightEntry& e) {
  std::uint64_t last = 0;
  for (auto t : e.ts) last = std::max(last, t);
  return last;
}

// A CommandRef as the role and last point it names; false if `ref` is not one.
bool ParseRef(const std::string& ref, std::uint8_t* role, std::uint64_t* last) {
  if (ref.size() < 3 || (ref[0] != 'h' && ref[0] != 't') || ref[1] != '-') return false;
  *role = ref[0] == 'h' ? NVMEOF_ROLE_HOST : NVMEOF_ROLE_TARGET;
  const char* end = ref.data() + ref.size();
  auto [ptr, ec] = std::from_chars(ref.data() + 2, end, *last);
  return ec == std::errc() && ptr == end;
}

}  // namespace

std::string CommandRef(const FlightEntry& e) {
  const std::uint64_t last = LastPoint(e);
  char digits[24];
  std::string ref(e.role == NVMEOF_ROLE_HOST ? "h-" : "t-");
  ref.append(digits, std::to_chars(digits, digits + sizeof digits, last).ptr);
  return ref;
}

Record ToRecord(const FlightEntry& e) {
  Record r;
  r.role = e.role;
  r.transport = e.identity->transport;
  r.op = e.op;
  r.size = e.size;
  r.qid = e.qid;
  r.cid = e.cid;
  r.cntlid = e.cntlid;
  r.subsys = e.identity->subsys;
  r.hostnqn = e.identity->hostnqn;
  r.device = e.identity->device;
  r.slba = e.slba;
  r.nlb = e.nlb;
  const size_t points =
      e.role == NVMEOF_ROLE_HOST ? size_t{NVMEOF_HP_COUNT} : size_t{NVMEOF_TP_COUNT};
  r.ts.assign(e.ts, e.ts + points);
  r.time_ns = e.time_ns;
  r.ref = CommandRef(e);
  return r;
}

FlightRecorder::FlightRecorder(Limits limits) : limits_(limits) {}

std::shared_ptr<const FlightIdentity> FlightRecorder::Intern(FlightIdentity id) {
  std::lock_guard lock(mu_);
  for (const auto& known : identities_) {
    if (known->transport == id.transport && known->subsys == id.subsys &&
        known->hostnqn == id.hostnqn && known->device == id.device)
      return known;
  }
  // Identities no held record uses any more go first: controllers come and go.
  std::erase_if(identities_, [](const auto& p) { return p.use_count() == 1; });
  identities_.push_back(std::make_shared<const FlightIdentity>(std::move(id)));
  return identities_.back();
}

void FlightRecorder::Add(std::vector<FlightEntry> entries) {
  if (entries.empty()) return;
  std::lock_guard lock(mu_);
  std::uint64_t newest = 0;
  for (auto& e : entries) {
    newest = std::max(newest, e.time_ns);
    ring_.push_back(std::move(e));
  }
  stats_.added += entries.size();
  EvictLocked(newest);
}

void FlightRecorder::EvictLocked(std::uint64_t newest_ns) {
  const std::uint64_t age_ns =
      static_cast<std::uint64_t>(std::chrono::nanoseconds(limits_.max_age).count());
  const size_t max_records = std::max<size_t>(1, limits_.max_bytes / kStoredBytes);
  while (!ring_.empty() &&
         (ring_.size() > max_records || ring_.front().time_ns + age_ns < newest_ns)) {
    ring_.pop_front();
    ++stats_.evicted;
  }
}

bool FlightRecorder::Matches(const FlightEntry& e, const FlightQuery& q) const {
  if (e.role != q.role || e.time_ns < q.since_ns || e.e2e_ns < q.min_ns) return false;
  if (!q.controller.empty() && e.identity->controller != q.controller) return false;
  if (!q.nqn.empty() && e.identity->subsys != q.nqn) return false;
  if (!q.ref.empty()) {  // compared as numbers: no string built per record
    std::uint8_t role = 0;
    std::uint64_t last = 0;
    if (!ParseRef(q.ref, &role, &last) || e.role != role || LastPoint(e) != last) return false;
  }
  return true;
}

std::vector<Record> FlightRecorder::Query(const FlightQuery& q, bool* truncated) const {
  std::vector<Record> out;
  *truncated = false;
  std::lock_guard lock(mu_);
  // Newest first, so `limit` keeps the newest; then put back in time order.
  for (auto it = ring_.rbegin(); it != ring_.rend(); ++it) {
    if (it->time_ns < q.since_ns) break;  // the ring is in time order
    if (!Matches(*it, q)) continue;
    if (out.size() == q.limit) {
      *truncated = true;
      break;
    }
    out.push_back(ToRecord(*it));
  }
  std::reverse(out.begin(), out.end());
  return out;
}

void FlightRecorder::ForEachSince(std::uint8_t role, std::uint64_t since_ns,
                                  const std::function<void(const FlightEntry&)>& fn) const {
  std::lock_guard lock(mu_);
  auto it = std::partition_point(ring_.begin(), ring_.end(),
                                 [&](const FlightEntry& e) { return e.time_ns < since_ns; });
  for (; it != ring_.end(); ++it) {
    if (it->role == role) fn(*it);
  }
}

FlightStats FlightRecorder::Stats() const {
  std::lock_guard lock(mu_);
  FlightStats s = stats_;
  s.records = ring_.size();
  s.bytes = ring_.size() * kStoredBytes;
  for (const auto& id : identities_) {
    s.bytes += sizeof(FlightIdentity) + id->transport.capacity() + id->subsys.capacity() +
               id->hostnqn.capacity() + id->device.capacity() + id->controller.capacity();
  }
  return s;
}

}  // namespace nvmeof
