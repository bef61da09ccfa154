// Driver-neutral names for well-known RDMA hw_counters.
//
// Every driver names the same event differently (mlx5 np_cnp_sent, irdma cnpSent, bnxt_re
// tx_cnp_pkts) and drivers rename counters between kernel versions (bnxt_re to_retransmits ->
// local_ack_timeout_err). Dashboards and alerts use these stable names; the raw name is always
// kept in nvmeof_rdma_hw_counters_total{counter=...} as well, so nothing is lost when a driver
// invents a new one.
#pragma once

#include <string_view>
#include <vector>

namespace nvmeof {

struct HwCounterSource {
  std::string_view counter;  // file name in .../hw_counters/
  std::string_view drivers;  // which drivers (and kernel versions) use it; documentation only
};

struct StableHwCounter {
  std::string_view metric;  // counter family name, e.g. nvmeof_rdma_cnp_sent_total
  std::string_view help;
  // Priority order. If a device has several of these files, the first one present wins and the
  // others only appear in the generic family, so no series is emitted twice.
  std::vector<HwCounterSource> sources;
  // A traffic breakdown served only with rdma.traffic_detail (collectors/rdma.h).
  bool traffic_detail = false;
};

// The whole table; every counter file name appears at most once in it.
const std::vector<StableHwCounter>& StableHwCounters();

}  // namespace nvmeof
