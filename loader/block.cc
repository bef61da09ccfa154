#include "loader/block.h"

#include <regex>
#include <sstream>

#include "base/files.h"

namespace nvmeof {

const std::vector<HookSpec>& BlockHooks() {
  // Tracepoints first here, against the general fentry > kprobe > tracepoint order: the block
  // tracepoints sit exactly at the events, cost the same as fentry, and block_rq_complete also
  // fires for batched completions (blk_mq_end_request_batch -> blk_complete_request, inlined),
  // which a probe on blk_update_request misses. fentry/kprobe remain for kernels whose
  // tracepoints cannot be attached (or when forced with --bpf.mechanism).
  static const std::vector<HookSpec> hooks = {
      {.name = kHookBlockIssue,
       .required = false,
       .module = "",
       .variants = {{Mechanism::kTpBtf, "block_rq_issue", "nvf_iss_tp_btf"},
                    {Mechanism::kRawTp, "block_rq_issue", "nvf_iss_raw_tp"},
                    {Mechanism::kFentry, "blk_mq_start_request", "nvf_iss_fentry"},
                    {Mechanism::kKprobe, "blk_mq_start_request", "nvf_iss_kprobe"}}},
      {.name = kHookBlockComplete,
       .required = true,
       .module = "",
       // block_io_done (6.5+) where the kernel ends its own accounting, else block_rq_complete
       // (bpf/block.bpf.c says why).
       .variants = {{.mechanism = Mechanism::kTpBtf,
                     .target = "block_io_done",
                     .program = "nvf_done_tp_btf",
                     .accounted = true},
                    {.mechanism = Mechanism::kRawTp,
                     .target = "block_io_done",
                     .program = "nvf_done_raw_tp",
                     .accounted = true},
                    {Mechanism::kTpBtf, "block_rq_complete", "nvf_cpl_tp_btf"},
                    {Mechanism::kRawTp, "block_rq_complete", "nvf_cpl_raw_tp"},
                    {Mechanism::kFentry, "blk_update_request", "nvf_cpl_fentry"},
                    {Mechanism::kKprobe, "blk_update_request", "nvf_cpl_kprobe"}}},
  };
  return hooks;
}

std::string_view BlockOpName(std::uint32_t op) {
  static constexpr std::string_view kNames[] = {"read", "write", "flush", "discard", "other"};
  return op < NVMEOF_OP_COUNT ? kNames[op] : "other";
}

std::string_view BlockStageName(std::uint32_t stage) {
  static constexpr std::string_view kNames[] = {"queue", "device", "total"};
  return stage < NVMEOF_STAGE_COUNT ? kNames[stage] : "unknown";
}

std::optional<std::string> DiskNames::Name(std::uint32_t disk) {
  if (disk == 0) return std::nullopt;
  if (by_seq_) {
    if (!listed_) {
      listed_.emplace();
      const std::string dir = paths_.sysfs + "/class/block/";
      for (auto& name : ListDir(dir)) {  // partitions have no diskseq
        auto seq = ReadU64(dir + name + "/diskseq");
        if (seq) listed_->emplace(static_cast<std::uint32_t>(*seq), std::move(name));
      }
    }
  } else {
    const std::uint32_t major = disk >> 20, minor = disk & 0xfffff;
    if (auto uevent = ReadFile(paths_.sysfs + "/dev/block/" + std::to_string(major) + ":" +
                               std::to_string(minor) + "/uevent")) {
      std::istringstream in(*uevent);
      std::string line;
      while (std::getline(in, line)) {
        if (line.rfind("DEVNAME=", 0) == 0 && line.size() > 8) return line.substr(8);
      }
    }
    if (!listed_) {  // "   259       1 nvme0c0n1 400 0 3200 ..." per disk and partition
      listed_.emplace();
      std::istringstream in(ReadFile(paths_.procfs + "/diskstats", 16 << 20).value_or(""));
      std::string line, name;
      while (std::getline(in, line)) {
        std::istringstream fields(line);
        std::uint32_t ma = 0, mi = 0;
        if (fields >> ma >> mi >> name && ma < (1u << 12) && mi <= 0xfffff)
          listed_->emplace(ma << 20 | mi, name);
      }
    }
  }
  auto it = listed_->find(disk);
  if (it == listed_->end()) return std::nullopt;
  return it->second;
}

namespace {

// nvme0, nvme12: a controller's name; not a namespace's (nvme0n1) nor an attribute's.
bool ControllerName(const std::string& name) {
  return name.size() > 4 && name.rfind("nvme", 0) == 0 &&
         name.find_first_not_of("0123456789", 4) == std::string::npos;
}

bool FabricController(const std::string& dir) {
  auto transport = ReadFile(dir + "/transport");
  return transport && *transport != "pcie" && !transport->empty();
}

}  // namespace

bool BlockSeriesLeftOut(const std::string& sysfs, const NameFilter& block_devices,
                        const std::string& disk) {
  if (disk.rfind("nvme", 0) != 0 || disk.find('/') != std::string::npos) return false;
  if (block_devices.include && std::regex_match(disk, *block_devices.include)) return false;
  auto parent = ReadLinkBase(sysfs + "/block/" + disk + "/device");
  if (!parent) return false;
  // A multipath head's parent is its subsystem: judged by the controllers it has now.
  if (parent->rfind("nvme-subsys", 0) == 0) {
    const std::string subsys = sysfs + "/class/nvme-subsystem/" + *parent + "/";
    for (const auto& ctrl : ListDir(subsys)) {
      if (ControllerName(ctrl) && FabricController(subsys + ctrl)) return true;
    }
    return false;
  }
  return parent->rfind("nvme", 0) == 0 && FabricController(sysfs + "/class/nvme/" + *parent);
}

}  // namespace nvmeof
