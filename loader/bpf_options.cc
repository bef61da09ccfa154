#include "loader/bpf_options.h"

#include <initializer_list>
#include <string_view>
#include <vector>

#include "base/files.h"
#include "base/yaml.h"
#include "bpf/nvmeof_maps.h"

namespace nvmeof {

namespace {

// "auto, fentry, kprobe, tp_btf, raw_tp" (errors) or "auto|fentry|..." (help).
std::string MechanismList(std::string_view sep) {
  std::string list;
  for (auto m : kBpfMechanisms) list += (list.empty() ? "" : std::string(sep)) + std::string(m);
  return list;
}

}  // namespace

bool ValidBpfMechanism(const std::string& m) {
  for (auto known : kBpfMechanisms) {
    if (m == known) return true;
  }
  return false;
}

const FlagSpec& BpfMechanismFlag() {
  static const std::string help = "Force one attach mechanism: " + MechanismList("|") + ".";
  static const FlagSpec flag = {"bpf.mechanism", FlagSpec::kValue, help.c_str(), 0, "M"};
  return flag;
}

const std::vector<FlagSpec>& BpfFlags() {
  static const std::vector<FlagSpec> flags = {
      BpfMechanismFlag(),
      {"bpf.transport-stages", FlagSpec::kSwitch,
       "NVMe-oF stages: add the transport tier (transport drivers' function hooks), which\n"
       "splits round_trip and residence into transport stages. Costs about as much again."},
      {"bpf.btf-path", FlagSpec::kValue,
       "External BTF file or directory for kernels/modules without BTF."},
  };
  return flags;
}

bool ApplyBpfFlags(const ParsedArgs& parsed, BpfOptions* bpf, std::string* error) {
  if (const std::string* v = parsed.Get("bpf.mechanism")) {
    if (!ValidBpfMechanism(*v)) {
      *error = "--bpf.mechanism: \"" + *v + "\" is not one of " + MechanismList(", ");
      return false;
    }
    bpf->mechanism = *v;
  }
  if (parsed.On("bpf.transport-stages")) bpf->transport_stages = true;
  if (const std::string* v = parsed.Get("bpf.btf-path")) {
    if (!Exists(*v)) {
      *error = "--bpf.btf-path: \"" + *v + "\" does not exist";
      return false;
    }
    bpf->btf_path = *v;
  }
  return true;
}

namespace {

// bpf.buckets: 1 to 200 increasing upper bounds in seconds.
bool ReadBuckets(const YAML::Node& b, std::vector<double>* buckets, std::string* error) {
  if (!b.IsSequence() || b.size() == 0 || b.size() > 200) {
    *error = "bpf.buckets: expected a list of 1 to 200 upper bounds in seconds";
    return false;
  }
  buckets->clear();
  for (size_t i = 0; i < b.size(); ++i) {
    double v = 0;
    if (!b[i].IsScalar() || !YAML::convert<double>::decode(b[i], v) || !(v > 0) ||
        (!buckets->empty() && v <= buckets->back())) {
      *error = "bpf.buckets[" + std::to_string(i) +
               "]: expected a positive number of seconds, larger than the one before";
      return false;
    }
    buckets->push_back(v);
  }
  return true;
}

// bpf.KEY, if given: one of `allowed`.
template <typename List>
bool ReadOneOf(const YAML::Node& node, const std::string& key, const List& allowed,
               std::string* out, std::string* error) {
  if (!node[key]) return true;
  if (!ReadScalar(node[key], "bpf." + key, out, error)) return false;
  std::string list;
  for (auto a : allowed) {
    if (*out == a) return true;
    list += (list.empty() ? "" : ", ") + std::string(a);
  }
  *error = "bpf." + key + ": \"" + *out + "\" is not one of " + list;
  return false;
}

}  // namespace

bool ParseBpfOptions(const YAML::Node& node, BpfOptions* bpf, std::string* error) {
  if (!CheckKeys(node, "bpf",
                 {"mechanism", "btf_path", "sample_every", "buckets", "enable_stats",
                  "block_devices", "size_classes", "protobuf_histograms", "stage_detail",
                  "command_detail", "map_memory_max", "hostnqn_limit", "transport_stages",
                  "flight_recorder_max_bytes", "flight_recorder_max_age"},
                 error)) {
    return false;
  }
  if (!ReadOneOf(node, "mechanism", kBpfMechanisms, &bpf->mechanism, error)) {
    return false;
  }
  if (node["btf_path"] && !ReadScalar(node["btf_path"], "bpf.btf_path", &bpf->btf_path, error)) {
    return false;
  }
  if (node["sample_every"]) {
    std::uint64_t v = 0;
    if (!ReadUint(node["sample_every"], "bpf.sample_every", 1, 1000000, &v, error)) return false;
    bpf->sample_every = static_cast<std::uint32_t>(v);
  }
  if (node["buckets"] && !ReadBuckets(node["buckets"], &bpf->buckets, error)) return false;
  if (!ReadOneOf(node, "protobuf_histograms",
                 std::initializer_list<std::string_view>{"native", "classic", "both"},
                 &bpf->protobuf_histograms, error) ||
      !ReadOneOf(node, "stage_detail",
                 std::initializer_list<std::string_view>{"namespace", "controller", "node"},
                 &bpf->stage_detail, error) ||
      !ReadOneOf(node, "command_detail",
                 std::initializer_list<std::string_view>{"namespace", "controller"},
                 &bpf->command_detail, error)) {
    return false;
  }
  if (node["map_memory_max"] && !ReadUint(node["map_memory_max"], "bpf.map_memory_max", 1ULL << 20,
                                          1ULL << 40, &bpf->map_memory_max, error)) {
    return false;
  }
  if (node["hostnqn_limit"]) {
    std::uint64_t v = 0;
    if (!ReadUint(node["hostnqn_limit"], "bpf.hostnqn_limit", 0, 100000, &v, error)) return false;
    bpf->hostnqn_limit = static_cast<std::uint32_t>(v);
  }
  if (node["flight_recorder_max_bytes"] &&
      !ReadUint(node["flight_recorder_max_bytes"], "bpf.flight_recorder_max_bytes", 0, 1ULL << 34,
                &bpf->flight_recorder_max_bytes, error)) {
    return false;
  }
  if (node["flight_recorder_max_age"]) {
    std::uint64_t v = 0;
    if (!ReadUint(node["flight_recorder_max_age"], "bpf.flight_recorder_max_age", 1, 86400, &v,
                  error))
      return false;
    bpf->flight_recorder_max_age = static_cast<std::uint32_t>(v);
  }
  if (node["enable_stats"] &&
      !ReadBool(node["enable_stats"], "bpf.enable_stats", &bpf->enable_stats, error)) {
    return false;
  }
  if (node["block_devices"] &&
      !ReadFilter(node["block_devices"], "bpf.block_devices", &bpf->block_devices, error)) {
    return false;
  }
  if (node["transport_stages"] &&
      !ReadBool(node["transport_stages"], "bpf.transport_stages", &bpf->transport_stages, error)) {
    return false;
  }
  if (node["size_classes"] &&
      !ReadBool(node["size_classes"], "bpf.size_classes", &bpf->size_classes, error)) {
    return false;
  }
  return true;
}

std::uint32_t HistMapEntries(std::uint64_t max_bytes, std::size_t key_size, std::size_t value_size,
                             int cpus, std::uint32_t floor, std::uint32_t ceiling) {
  const std::uint64_t per_entry =
      key_size + value_size * static_cast<std::uint64_t>(cpus > 0 ? cpus : 1);
  const std::uint64_t n = max_bytes / per_entry;
  return static_cast<std::uint32_t>(n < floor ? floor : n > ceiling ? ceiling : n);
}

std::uint8_t NvmeofStageDetail(const BpfOptions& bpf) {
  // node detail is controller detail in the kernel, summed over controllers by the collector.
  return bpf.stage_detail == "namespace" ? NVMEOF_DETAIL_NAMESPACE : NVMEOF_DETAIL_CONTROLLER;
}

bool NvmeofTotalInPaths(const BpfOptions& bpf) {
  // Only per-controller stages with per-namespace end to end need two identities per command.
  return NvmeofStageDetail(bpf) == NVMEOF_DETAIL_NAMESPACE || bpf.command_detail != "namespace";
}

}  // namespace nvmeof
