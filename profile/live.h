// The live side of `record` and `top` without --from: both load bpf/record.bpf.c
// (loader/record.h) and read its per-command records. The conversion from the
// kernel's record and the live frame are pure and unit-tested.
#pragma once

#include <signal.h>

#include <cstdint>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "bpf/record_maps.h"
#include "loader/attach.h"
#include "loader/record.h"
#include "loader/record_file.h"
#include "profile/top_frame.h"

namespace nvmeof::profile {

// read, write, flush, discard, other: as the `op` label of /metrics.
std::string OpName(std::uint8_t opcode);

// A kernel record as format v1's Record, into *out (whose strings keep their capacity: `record`
// converts one per sampled command beside the load). Points that go back in time (a hook seen
// out of order) are dropped, so the file stays readable; *dropped counts them.
void FromKernel(const nvmeof_record& k, Record* out, std::uint64_t* dropped);
inline Record FromKernel(const nvmeof_record& k, std::uint64_t* dropped) {
  Record r;
  FromKernel(k, &r, dropped);
  return r;
}

// One live frame: the records of an interval and the exact per-group command counts before and
// after it (RecordSource::Groups), `seconds` apart. Groups as `top --from`'s: role, transport,
// op, size class, device (host disk) or subsystem NQN (target); sorted by time spent.
std::vector<TopGroup> LiveFrame(const std::vector<Record>& records,
                                const std::vector<RecordGroupCount>& before,
                                const std::vector<RecordGroupCount>& after,
                                const std::vector<std::pair<std::uint64_t, std::string>>& names,
                                double seconds);

// SIGINT/SIGTERM end a recording or a live `top` cleanly (record writes its end line);
// restored on scope exit. StopRequested() says whether one came since construction.
class StopSignals {
 public:
  StopSignals();
  ~StopSignals();
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

 private:
  struct sigaction old_int_ {};
  struct sigaction old_term_ {};
};
bool StopRequested();

// The mechanism of a role's frame hook (nvme_setup_cmd / nvmet_req_init), for record headers.
std::string FrameMechanism(const AttachPlan& plan, bool host);

// "the target hook nvmet_req_init did not attach" for the first wanted role whose module is
// loaded but whose frame hook did not attach (5.10: no module BTF); "" when none.
std::string MissingFrame(const AttachPlan& plan, bool want_host, bool want_target);

}  // namespace nvmeof::profile
