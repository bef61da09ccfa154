// What `report` computes: per-group stage tables from one record file and, with a target file,
// the joined per-command view (join.h). Stage names are NvmeofStageName's, as on /metrics. Pure
// userspace; everything here is unit-tested (tests/unit/profile_test.cc).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "loader/record_file.h"
#include "profile/join.h"

namespace nvmeof::profile {

// Nearest-rank percentile of sorted values (q in [0, 1]); 0 for none.
double Percentile(const std::vector<double>& sorted, double q);

// Size class of a command, as the `size` label of /metrics (bpf/classes.h, SizeClassName).
std::string SizeClass(std::uint64_t bytes);

// Log2 histogram of durations in seconds: bucket 0 holds < 1 us (and negatives counted
// apart), bucket i holds [2^(i-1), 2^i) us.
struct TextHistogram {
  std::uint64_t negative = 0;
  std::vector<std::uint64_t> buckets;
  void Add(double seconds);
};

struct Component {
  std::string name;            // a /metrics stage name, "end_to_end", or "network" (joined)
  std::vector<double> values;  // seconds, sorted once Finish() ran
  double sum = 0;
  double mean = 0, p50 = 0, p99 = 0, p999 = 0;
  double queue_depth = 0;  // Little's law: sum * sample_every / wall time
  double share = 0;        // of the group's end-to-end sum
  TextHistogram hist;
};

struct Group {
  std::string key;  // "role transport op size device"
  std::string role, transport, op, size, device;
  std::vector<Component> components;  // path order
  Component end_to_end;
  std::size_t n = 0;
};

struct Report {
  RecordHeader host_header;
  std::optional<RecordHeader> target_header;
  std::uint64_t lost = 0, target_lost = 0;
  std::vector<Group> groups;         // the first file's groups (sorted by time spent)
  std::vector<Group> target_groups;  // the target file's own groups, when joined
  std::optional<JoinResult> join;
  std::vector<Group> joined;  // per host group: host stages, network, target stages
};

// first: the host file (or a single file of either role); second: the target file.
Report BuildReport(const RecordFile& first, const RecordFile* second);

}  // namespace nvmeof::profile
