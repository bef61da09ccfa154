// `nvmeof_exporter report`: per-group stage tables from one record file, and the per-command
// join of a host file with a target file (network = host wait - target residence, durations
// only: no clock is subtracted across machines). Stage names are NvmeofStageName's, as on
// /metrics. Pure userspace; everything here is unit-tested (tests/unit/profile_test.cc).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "exporter/profile/record.h"

namespace nvmeof::profile {

// Nearest-rank percentile of sorted values (q in [0, 1]); 0 for none.
double Percentile(const std::vector<double>& sorted, double q);

// Size class of a command, as the `size` label of /metrics: 4KiB 16KiB 64KiB 256KiB larger.
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

struct JoinResult {
  std::size_t host_records = 0, target_records = 0, matched = 0;
  std::size_t unmatched_no_key = 0;      // no target record has its (qid, cid, slba, nlb)
  std::size_t unmatched_outside = 0;     // ... and it lies outside the target file's time span
  std::size_t unmatched_no_partner = 0;  // key seen, but no free target record within the window
  std::size_t negative_network = 0;
  std::int64_t offset_ns = 0;  // target clock - host clock, estimated; used to pair only
  std::vector<std::pair<std::size_t, std::size_t>> pairs;  // (host index, target index)
};

// Pairs host and target records of the same command: same qid, cid, slba, nlb (and cntlid and
// subsystem NQN where both sides know them); among several (cid reuse, duplicates) the nearest
// in time after aligning the two clocks by the median offset of unambiguous pairs, within 1 s.
JoinResult Join(const RecordFile& host, const RecordFile& target);

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

void PrintReportText(const Report& report, bool detail, std::ostream& out);
void PrintReportJson(const Report& report, std::ostream& out);
// Per group and component present in both: the mean's change; names the component that moved
// most (by absolute change of mean) per group and overall.
void PrintComparison(const Report& baseline, const Report& now, bool json, std::ostream& out);

// `report [--detail] [--format=text|json] [--baseline=OLD[,OLD_TARGET]] FILE [FILE]`
// (args exclude "report"). Exit 0, or 2 with a message on err for bad usage or files.
int RunReport(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace nvmeof::profile
