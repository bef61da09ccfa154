#include "loader/host_disks.h"

#include <string>
#include <utility>

#include <bpf/bpf.h>

#include "bpf/nvmeof_maps.h"
#include "loader/block.h"

namespace nvmeof {

HostDisks::HostDisks(int ctrl_fd, int names_fd, std::string sysfs, NameFilter block_devices)
    : ctrl_fd_(ctrl_fd),
      names_fd_(names_fd),
      sysfs_(std::move(sysfs)),
      block_devices_(std::move(block_devices)) {}

void HostDisks::Untime() {
  std::uint64_t disk = 0, next = 0;
  const void* prev = nullptr;
  char name[NVMEOF_NQN_SIZE];
  std::lock_guard<std::mutex> lock(mu_);
  while (bpf_map_get_next_key(ctrl_fd_, prev, &next) == 0) {
    disk = next;
    prev = &disk;
    // Not named yet (the name is copied in after the entry is made): the next round decides.
    if (decided_.count(disk) || bpf_map_lookup_elem(names_fd_, &disk, name) != 0 || !name[0])
      continue;
    name[NVMEOF_NQN_SIZE - 1] = '\0';
    decided_.insert(disk);
    std::uint32_t v = 0;
    if (!BlockSeriesLeftOut(sysfs_, block_devices_, name) ||
        bpf_map_lookup_elem(ctrl_fd_, &disk, &v) != 0)
      continue;
    v |= NVMEOF_CTRL_UNTIMED_BLOCK;
    bpf_map_update_elem(ctrl_fd_, &disk, &v, BPF_EXIST);
  }
}

void HostDisks::Forget(const std::vector<std::uint64_t>& ids) {
  std::lock_guard<std::mutex> lock(mu_);
  for (std::uint64_t id : ids) decided_.erase(id);
}

}  // namespace nvmeof
