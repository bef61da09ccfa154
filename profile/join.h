// The per-command join of a host record file with a target record file: network = host wait -
// target residence, durations only (no clock is subtracted across machines).
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "loader/record_file.h"

namespace nvmeof::profile {

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

// Host wait: command posted (or set up) -> response received (or completed). False if the
// record lacks either point.
bool HostWait(const Record& h, int* from, int* to);
// Target residence: capsule received (or req_init) -> nvmet_req_complete.
bool TargetResidence(const Record& t, int* from, int* to);

}  // namespace nvmeof::profile
