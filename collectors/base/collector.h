// The Collector interface: one per data source, metrics built fresh on every scrape.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <regex>
#include <string>
#include <string_view>
#include <vector>

#include "collectors/base/metric_sink.h"

namespace nvmeof {

// Roots of the kernel's virtual filesystems; injectable so every collector runs on fixtures.
struct Paths {
  std::string sysfs = "/sys";
  std::string procfs = "/proc";
  std::string configfs = "/sys/kernel/config";
};

// include/exclude by regular expression (ECMAScript, full match). Empty include admits all.
struct NameFilter {
  std::optional<std::regex> include;
  std::optional<std::regex> exclude;
  std::string include_text, exclude_text;  // for messages and --config.check output

  bool Allows(std::string_view name) const;
};

// eBPF latency collector options (config section `bpf:` and --bpf.* flags).
struct BpfOptions {
  std::string mechanism = "auto";  // auto | fentry | kprobe | tp_btf | raw_tp (forces one)
  std::string btf_path;            // external BTF file or directory, for kernels without BTF
  std::uint32_t sample_every = 8;  // time 1 in N; counts stay exact (default: tests/bench)
  std::vector<double> buckets;     // histogram upper bounds in seconds; empty = built-in
  bool enable_stats = false;       // turn on BPF_ENABLE_STATS for per-program run time
  NameFilter block_devices;        // disks to time (sda, vda, nvme0n1, loop0)
  bool size_classes = false;       // NVMe-oF stages: add a `size` label (5 I/O size classes)
};

// rdma_netlink collector options (config section `rdma_netlink:`).
struct RdmaNetlinkOptions {
  bool per_qp = false;                       // QP table and bound per-QP counter sets
  std::uint32_t max_qp_series = 1000;        // per-QP series per scrape; the rest are skipped
  std::uint64_t max_reply_bytes = 8u << 20;  // netlink bytes read per scrape
  double timeout_seconds = 2;                // netlink time per scrape
  std::vector<std::string> enable_optional_counters;  // STAT_SET: changes the system (opt-in)
  std::string record_dir;  // testing: write every netlink reply to DIR/<request>.bin
};

struct CollectorOptions {
  Paths paths;
  NameFilter rdma_devices;      // RDMA devices (mlx5_0, rxe0): rdma, pfc (via their netdevs)
  NameFilter netdevs;           // pfc: netdevs beyond the RDMA ones (include) and ones to skip
  NameFilter nvme_controllers;  // nvme_host: nvme0, nvme1, ...
  // Test hook for the pfc collector: read "ethtool -S" style text files from here instead of
  // the SIOCETHTOOL ioctl (see collectors/pfc.h). Empty in production.
  std::string ethtool_fixture_dir;
  BpfOptions bpf;
  RdmaNetlinkOptions rdma_netlink;
};

class Collector {
 public:
  virtual ~Collector() = default;
  virtual std::string_view Name() const = 0;
  // Appends this scrape's series to `out`. Returns false when the source failed as a whole
  // (reported as nvmeof_exporter_collector_success 0); series it could read are still kept.
  // A missing source (no RDMA devices, no nvmet loaded) is success with no series.
  virtual bool Collect(MetricSink& out) = 0;
};

}  // namespace nvmeof
