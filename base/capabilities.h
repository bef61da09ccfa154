// Linux capabilities by number and by name, and the Cap* lines of /proc/.../status: one home for
// the exporter's privilege drop (exporter/privileges.cc) and the BPF availability check
// (loader/attach.cc).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace nvmeof {

using CapMask = std::uint64_t;  // bit N = capability N (linux/capability.h numbering)

// As in linux/capability.h; spelled out because older uapi headers lack CAP_PERFMON and CAP_BPF.
inline constexpr int kCapSetpcap = 8;
inline constexpr int kCapNetAdmin = 12;
inline constexpr int kCapSysAdmin = 21;
inline constexpr int kCapPerfmon = 38;
inline constexpr int kCapBpf = 39;

constexpr CapMask CapBit(int cap) { return CapMask{1} << cap; }

// "cap_bpf,cap_perfmon" (capsh's names, lowest bit first); "" for none.
std::string CapNames(CapMask mask);

// The mask of a "KEY:\t000001ffffffffff" line (CapEff, CapPrm, CapAmb, ...) of a status file's
// text; nullopt when the line is missing or not hex.
std::optional<CapMask> ParseCapLine(std::string_view status, std::string_view key);

}  // namespace nvmeof
