// Drops the capabilities the exporter no longer needs once its collectors are set up.
//
// At start-up the bpf collector loads and attaches its programs (CAP_BPF + CAP_PERFMON). After
// that only two things can still need a capability:
// - the NVMe-oF module watcher thread (loader/nvmeof_loader.cc), which loads and attaches
//   the hooks of modules loaded later: CAP_BPF + CAP_PERFMON (CAP_SYS_ADMIN on kernels without
//   CAP_BPF, i.e. before 5.8);
// - rdma_netlink's STAT_SET, sent on a scrape when a configured optional counter is off:
//   CAP_NET_ADMIN, only if rdma_netlink.enable_optional_counters names any.
// Every other read (sysfs, procfs, configfs, ethtool, DCB and rdma netlink dumps) needs none.
// Everything else the process holds is dropped from every thread (capabilities are per thread
// in Linux), the ambient set is cleared, and the bounding set shrinks where CAP_SETPCAP allows.
#pragma once

#include <cstdint>
#include <string>

#include "base/capabilities.h"
#include "exporter/config.h"

namespace nvmeof {

// What to keep after start-up for these options, before intersecting with what is held.
// cap_last_cap: /proc/sys/kernel/cap_last_cap (CAP_BPF exists from 39 on).
CapMask CapabilitiesToKeep(const Options& options, int cap_last_cap);

struct CapDropResult {
  bool ok = false;
  CapMask kept = 0;     // the permitted (= effective) set of every thread afterwards
  CapMask dropped = 0;  // held before, gone now
  int threads = 0;      // threads whose sets were checked after the drop
  std::string error;    // when !ok: what failed (a thread, a system call)
};

// Reduces every thread's permitted and effective sets to keep & (what the process holds),
// clears inheritable and ambient, then reads every thread's sets back from
// /proc/self/task/*/status. Other threads run a signal handler (a real-time signal) that calls
// capset for themselves, the way libpsx does; a thread that does not answer within 5 s fails it.
CapDropResult DropCapabilities(CapMask keep);

// DropCapabilities(CapabilitiesToKeep(...)) and one log line saying what was kept and dropped
// (a warning if the drop failed: the exporter keeps running with what it had).
void DropCapabilitiesAfterStartup(const Options& options);

}  // namespace nvmeof
