// The layout of a classic tracepoint's record, from its tracefs format file
// (events/<system>/<event>/format): what a BPF program attached to the tracepoint reads without
// BTF. The eBPF collector's target hooks and the lifecycle counters use it where the kernel has
// no module BTF (5.10).
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>

#include "bpf/tp_field.h"

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

// A record field a BPF program reads ("nvmet/nvmet_req_init", "qid"), and the program's rodata
// slot for its offset and size.
struct TracepointSlot {
  std::string_view event;
  std::string_view field;
  volatile nvmeof_tp_field* to;
};

// Fills the slots from the format files under <sysfs>/kernel/tracing (each file read once). A
// missing event or field leaves its slot 0: KernelProber::Probe does not plan the program that
// reads it (Variant::fields), and says why.
void SetTracepointFields(const std::string& sysfs, std::span<const TracepointSlot> slots);

}  // namespace nvmeof
