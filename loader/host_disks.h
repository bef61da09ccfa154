// The host disk map block.bpf.c and nvmeof.bpf.c share (bpf/nvmeof_inflight.bpf.h), as the
// NVMe-oF source keeps it: which disks the block programs need not time
// (NVMEOF_CTRL_UNTIMED_BLOCK in nv_ctrl). Built with NVMEOF_BPF only.
#pragma once

#include <cstdint>
#include <mutex>
#include <set>
#include <vector>

#include "base/collector.h"

namespace nvmeof {

class HostDisks {
 public:
  // The maps' fds (owned by the caller's object) and what BlockSeriesLeftOut needs.
  HostDisks(int ctrl_fd, int names_fd, std::string sysfs, NameFilter block_devices);

  // A host disk whose block series the collector leaves out gets NVMEOF_CTRL_UNTIMED_BLOCK once
  // its first sampled command has made its nv_ctrl entry and named it: the block programs then
  // spare its sampled requests. Each disk is decided once, until Forget. The watcher's.
  void Untime();

  // Drops the entries of disks that are gone (a scrape's).
  void Forget(const std::vector<std::uint64_t>& ids);

 private:
  const int ctrl_fd_, names_fd_;
  const std::string sysfs_;
  const NameFilter block_devices_;
  std::mutex mu_;  // Untime (the watcher) and Forget (scrapes)
  std::set<std::uint64_t> decided_;
};

}  // namespace nvmeof
