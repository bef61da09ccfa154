// The flight recorder: this node's recent sampled NVMe-oF commands, kept in memory so that the
// slow ones can be explained while the incident lasts (`GET /api/v1/commands`, exemplars on the
// latency histograms, `nvmeof_exporter explain`).
//
// The kernel side (bpf/nvmeof_inflight.bpf.h, nv_flight) writes one record per sampled command
// when it ends on this node; the loader's reader thread turns each into a Record (record_file.h,
// the same record as `record` writes) and adds it here. The ring keeps the last `max_age` or
// `max_bytes`, whichever is reached first, evicting the oldest. It is owned apart from the
// collectors and the web server (shared_ptr), so a failed scrape, a hung collector or a module
// unloaded under the reader leaves what it holds.
//
// Memory: each record costs kStoredBytes (its times, wire fields and a shared identity); each
// distinct identity (device, subsystem, host NQN, transport) is kept once.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "loader/record_file.h"

namespace nvmeof {

// Which records a query returns. Times are CLOCK_REALTIME ns (Record::time_ns).
struct FlightQuery {
  std::uint8_t role = NVMEOF_ROLE_HOST;  // enum nvmeof_role
  std::uint64_t since_ns = 0;            // ended at or after (0: any)
  std::uint64_t min_ns = 0;              // end to end on this node at least (0: any)
  std::string controller;                // host: controller name ("nvme1"); "" = any
  std::string nqn;                       // subsystem NQN; "" = any
  std::string ref;                       // one record by its CommandRef; "" = any
  std::size_t limit = 1000;              // at most this many, the newest
};

struct FlightStats {
  std::uint64_t added = 0;    // records added since start
  std::uint64_t evicted = 0;  // records dropped for age or size
  std::uint64_t records = 0;  // held now
  std::uint64_t bytes = 0;    // held now, by the formula above
};

// What the commands of one device (host) or controller (target) share, kept once.
struct FlightIdentity {
  std::string transport;   // rdma, tcp, ...
  std::string subsys;      // subsystem NQN ("" = not known)
  std::string hostnqn;     // "" = not known
  std::string device;      // host: disk name (nvme0c1n1); target: ""
  std::string controller;  // host: ControllerOfDisk(device); target: ""
};

// One held command: a Record (record_file.h) with its strings shared.
struct FlightEntry {
  std::uint64_t ts[NVMEOF_POINTS] = {};  // as Record::ts, CLOCK_MONOTONIC ns
  std::uint64_t time_ns = 0;             // wall clock of its end
  std::uint64_t e2e_ns = 0;              // EndToEnd
  std::uint64_t slba = 0;
  std::uint32_t size = 0;
  std::uint16_t qid = 0, cid = 0, cntlid = 0, nlb = 0;
  std::uint8_t role = NVMEOF_ROLE_HOST;
  const char* op = "other";  // a static string: read, write, flush, discard, other
  std::shared_ptr<const FlightIdentity> identity;  // never null
};

Record ToRecord(const FlightEntry& e);

// A record's handle, unique on its node: role ("h" or "t"), '-', its last point's timestamp
// (CLOCK_MONOTONIC ns). Exemplars carry it (label `command`); the endpoint resolves it (`ref=`).
std::string CommandRef(const FlightEntry& e);
// The host controller of a disk name: "nvme1" for nvme0c1n1 (a multipath path) or nvme1n1;
// "" when the name is neither.
std::string ControllerOfDisk(std::string_view disk);

class FlightRecorder {
 public:
  struct Limits {
    std::size_t max_bytes = 16u << 20;
    std::chrono::seconds max_age{30};
  };
  static constexpr std::size_t kStoredBytes = sizeof(FlightEntry);

  explicit FlightRecorder(Limits limits);
  FlightRecorder(const FlightRecorder&) = delete;
  FlightRecorder& operator=(const FlightRecorder&) = delete;

  // Adds finished commands, in the order they ended; time_ns must be set (wall clock of the
  // end), identity too.
  void Add(std::vector<FlightEntry> entries);
  // The shared identity equal to `id` (one allocation per distinct identity).
  std::shared_ptr<const FlightIdentity> Intern(FlightIdentity id);
  // The newest records that match, oldest first; *truncated when `limit` cut some.
  std::vector<Record> Query(const FlightQuery& q, bool* truncated) const;
  // Calls fn for every entry of `role` that ended at or after since_ns (wall clock), oldest
  // first, under the lock: fn must be short (exemplar choice).
  void ForEachSince(std::uint8_t role, std::uint64_t since_ns,
                    const std::function<void(const FlightEntry&)>& fn) const;
  FlightStats Stats() const;
  const Limits& limits() const { return limits_; }

 private:
  void EvictLocked(std::uint64_t newest_ns);
  bool Matches(const FlightEntry& e, const FlightQuery& q) const;

  Limits limits_;
  mutable std::mutex mu_;
  std::deque<FlightEntry> ring_;  // oldest first
  std::vector<std::shared_ptr<const FlightIdentity>> identities_;
  FlightStats stats_;
};

}  // namespace nvmeof
