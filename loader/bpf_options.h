// Options of the eBPF loaders, which the bpf collector, `probe`, `record` and `top` all pass down:
// the struct, its config section `bpf:` and its --bpf.* flags, in one place. They live with the
// loaders because the loaders consume them; collectors/registry.cc registers the section.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "base/collector.h"
#include "base/flags.h"

namespace YAML {
class Node;
}

namespace nvmeof {

// bpf.mechanism's values: auto, or one mechanism forced for every hook. The one list.
inline constexpr std::array<std::string_view, 5> kBpfMechanisms = {"auto", "fentry", "kprobe",
                                                                   "tp_btf", "raw_tp"};

struct BpfOptions {
  std::string mechanism = "auto";  // one of kBpfMechanisms
  // The transport tier: the transport drivers' function hooks, which split the default tier's
  // round_trip and residence into transport stages (docs/metrics.md "NVMe-oF stages"). Off by
  // default: they cost about as much again per command as the tracepoints (tests/bench).
  bool transport_stages = false;
  std::string btf_path;  // external BTF file or directory, for kernels without BTF
  // Time 1 in sample_every commands and block requests; counts stay exact. The programs get it
  // as a derived hash limit (bpf/sample.h); why 32: tests/bench/README.md.
  std::uint32_t sample_every = 32;
  std::vector<double> buckets;  // classic upper bounds in seconds; empty = the default 16
  // What protobuf scrapes carry for latency histograms: native (schema-3 sparse buckets, count,
  // sum), classic (the classic buckets, as text scrapes) or both (for scrape_classic_histograms).
  std::string protobuf_histograms = "native";
  bool enable_stats = false;  // turn on BPF_ENABLE_STATS for per-program run time
  NameFilter block_devices;   // disks to time (sda, vda, nvme0n1, loop0)
  bool size_classes = false;  // NVMe-oF stages: add a `size` label (5 I/O size classes)
  // How much identity NVMe-oF stage series keep: namespace (per disk; target per subsystem and
  // port), controller (host per controller, target per subsystem) or node (per role, transport,
  // op). Command counts keep full detail at every setting; the end-to-end histogram follows
  // command_detail.
  std::string stage_detail = "controller";
  // How much identity the end-to-end histogram (nvmeof_command_latency_seconds) keeps:
  // controller (host per controller, target per subsystem: what the recording rules, alerts
  // and panels read) or namespace (host per namespace, target per subsystem and port: a
  // namespace's own latency distribution, for a drill-down). nvmeof_commands_total keeps full
  // detail at both. The kernel counts per namespace either way; the collector sums.
  std::string command_detail = "controller";
  // Ceiling of each part's (block, nvmeof) latency histogram map in bytes: its entries are
  // this over (key + value x possible CPUs). Entries are allocated on first use, so the memory
  // a node uses follows its series (docs/histograms.md).
  std::uint64_t map_memory_max = 64ULL << 20;
  // Distinct host NQNs nvmeof_target_controllers names; later ones are hostnqn="other".
  std::uint32_t hostnqn_limit = 64;
  // The flight recorder (loader/flight_recorder.h, GET /api/v1/commands, exemplars): the sampled
  // commands of the last flight_recorder_max_age seconds or flight_recorder_max_bytes, whichever
  // is reached first. 0 bytes turns it off (the endpoint answers 404, no exemplars).
  std::uint64_t flight_recorder_max_bytes = 16ULL << 20;
  std::uint32_t flight_recorder_max_age = 30;
};

// What both BPF objects' stage maps are loaded with (rodata of bpf/nvmeof_inflight.bpf.h): the
// kernel's stage_detail, and
std::uint8_t NvmeofStageDetail(const BpfOptions& bpf);
// whether a command's end to end is kept in its stages' nv_paths entry (bpf/nvmeof_maps.h).
bool NvmeofTotalInPaths(const BpfOptions& bpf);

// Entries of a per-CPU histogram map whose memory stays within bpf.map_memory_max:
// max_bytes / (key + value x cpus), between `floor` and `ceiling`.
std::uint32_t HistMapEntries(std::uint64_t max_bytes, std::size_t key_size, std::size_t value_size,
                             int cpus, std::uint32_t floor, std::uint32_t ceiling);

// One of kBpfMechanisms (bpf.mechanism, --bpf.mechanism).
bool ValidBpfMechanism(const std::string& mechanism);

// The --bpf.* flags of the exporter and `probe`: --bpf.mechanism, --bpf.transport-stages and
// --bpf.btf-path.
const std::vector<FlagSpec>& BpfFlags();
// --bpf.mechanism alone, as `record` and `top` take it.
const FlagSpec& BpfMechanismFlag();
// Applies the --bpf.* flags given over *options (flags win over the config file). Errors name
// the flag: `--bpf.mechanism: ...`.
bool ApplyBpfFlags(const ParsedArgs& parsed, BpfOptions* options, std::string* error);

// The `bpf:` section on top of *options. Errors name the key: `bpf.sample_every: ...`.
bool ParseBpfOptions(const YAML::Node& section, BpfOptions* options, std::string* error);

}  // namespace nvmeof
