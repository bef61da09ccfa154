// The layout of a classic tracepoint's record, from its tracefs format file
// (events/<system>/<event>/format): what a BPF program attached to the tracepoint reads without
// BTF. The eBPF collector's target hooks use it where the kernel has no module BTF (5.10).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

namespace nvmeof {

struct TracepointField {
  std::uint16_t offset = 0;
  std::uint16_t size = 0;
};

// "field:int qid;\toffset:48;\tsize:4;\tsigned:1;" lines -> {"qid": {48, 4}}; an array field
// ("char disk[32]") by its name. Lines of any other form (name, ID, print fmt) are skipped.
std::map<std::string, TracepointField> ParseTracepointFormat(std::string_view text);

// The format of `event` ("nvmet/nvmet_req_init") under <sysfs>/kernel/tracing, else
// <sysfs>/kernel/debug/tracing; empty with *error set when neither has it.
std::map<std::string, TracepointField> ReadTracepointFormat(const std::string& sysfs,
                                                            std::string_view event,
                                                            std::string* error);

}  // namespace nvmeof
