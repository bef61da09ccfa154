// `nvmeof_exporter record` and `top` without --from: both load bpf/record.bpf.c
// (collectors/bpf/record_source.h) and read its per-command records. The conversion from the
// kernel's record and the live frame are pure and unit-tested; the Run* functions need BPF.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "bpf/record.h"
#include "collectors/bpf/record_source.h"
#include "exporter/profile/record.h"
#include "exporter/profile/top.h"

namespace nvmeof::profile {

// read, write, flush, discard, other: as the `op` label of /metrics.
std::string OpName(std::uint8_t opcode);

// A kernel record as format v1's Record. Points that go back in time (a hook seen out of
// order) are dropped, so the file stays readable; *dropped counts them.
Record FromKernel(const nvmeof_record& k, std::uint64_t* dropped);

// One live frame: the records of an interval and the exact per-group command counts before and
// after it (RecordSource::Groups), `seconds` apart. Groups as `top --from`'s: role, transport,
// op, size class, device (host disk) or subsystem NQN (target); sorted by time spent.
std::vector<TopGroup> LiveFrame(const std::vector<Record>& records,
                                const std::vector<RecordGroupCount>& before,
                                const std::vector<RecordGroupCount>& after,
                                const std::vector<std::pair<std::uint64_t, std::string>>& names,
                                double seconds);

// `record -o FILE [-s N] [--duration=S] [--role=host|target|both] [--ring-size=MiB]
// [--bpf.mechanism=M]` (args exclude "record"; flags as `record --help` lists them). With
// --role=both, FILE is a prefix: FILE.host.jsonl and FILE.target.jsonl. Exit 0 (also after
// --help, on `out`), 1 when BPF cannot load, 2 for bad usage (one line on `err`).
int RunRecord(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

// `top` on its own record object: interval, once and json as RunTop's; sample_every 1 in N.
int RunTopLive(double interval, bool once, bool json, std::uint32_t sample_every,
               const std::string& mechanism, std::ostream& out, std::ostream& err);

}  // namespace nvmeof::profile
