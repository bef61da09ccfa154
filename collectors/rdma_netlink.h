// The rdma_netlink collector: what `rdma statistic` and `rdma resource` show, read over
// NETLINK_RDMA. The transport (a socket, or recorded replies in tests) is injectable.
#pragma once

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "collectors/base/collector.h"
#include "collectors/kernel/nldev.h"

namespace YAML {
class Node;
}

namespace nvmeof {

struct CollectorOptions;  // collectors/registry.h

// Config section `rdma_netlink:`. Devices are those rdma.devices admits.
struct RdmaNetlinkOptions {
  bool per_qp = false;                       // QP table and bound per-QP counter sets
  std::uint32_t max_qp_series = 1000;        // per-QP series per scrape; the rest are skipped
  std::uint64_t max_reply_bytes = 8u << 20;  // netlink bytes read per scrape
  double timeout_seconds = 2;                // netlink time per scrape
  std::vector<std::string> enable_optional_counters;  // STAT_SET: changes the system (opt-in)
  std::string record_dir;  // testing: write every netlink reply to DIR/<request>.bin
};

// The `rdma_netlink:` section on top of *options. Errors name the key:
// `rdma_netlink.max_qp_series: ...`.
bool ParseRdmaNetlinkOptions(const YAML::Node& section, RdmaNetlinkOptions* options,
                             std::string* error);

// Work allowed per scrape: dumps stop when either runs out (large QP tables are megabytes).
struct RdmaNetlinkBudget {
  std::chrono::steady_clock::time_point deadline;
  std::uint64_t bytes_left = 0;
  std::uint64_t bytes_read = 0;
  int exhausted = 0;  // kErrTimeBudget or kErrByteBudget once spent; every later request fails
};

// Pseudo-errnos of the transport, beyond the kernel's own.
constexpr int kErrTimeBudget = ETIMEDOUT;  // the scrape's time budget ran out
constexpr int kErrByteBudget = EFBIG;      // the scrape's byte budget ran out
constexpr int kErrTruncated = EMSGSIZE;    // a message longer than the receive buffer

class RdmaNetlinkTransport {
 public:
  virtual ~RdmaNetlinkTransport() = default;
  // 0, or an errno: EPROTONOSUPPORT/EAFNOSUPPORT when the kernel has no RDMA netlink.
  virtual int Open() = 0;
  virtual void Close() = 0;
  // Sends `req` and appends the reply's messages to *reply, up to and including the one that
  // ends it (the answer of a doit, NLMSG_DONE of a dump, NLMSG_ERROR). Returns 0, or an errno
  // of the transport or the budget; then *reply holds the whole messages that did arrive.
  virtual int Exchange(const rdmanl::Request& req, RdmaNetlinkBudget& budget,
                       std::vector<std::uint8_t>* reply) = 0;
};

// The real one. With a non-empty record_dir every reply is also written to
// record_dir/<RequestKey>.bin (how tests/fixtures/netlink/ was captured). No socket is opened
// while <sysfs>/class/infiniband is missing: that would make the kernel load ib_core.
std::unique_ptr<RdmaNetlinkTransport> NewRdmaNetlinkSocket(std::string record_dir,
                                                           std::string sysfs);
// Answers each request with record_dir/<RequestKey>.bin; a missing directory behaves like a
// kernel without RDMA netlink, a missing file like a request the kernel never answered.
std::unique_ptr<RdmaNetlinkTransport> NewRdmaNetlinkReplay(std::string dir);

std::unique_ptr<Collector> NewRdmaNetlinkCollector(const CollectorOptions& options,
                                                   std::unique_ptr<RdmaNetlinkTransport> transport);

}  // namespace nvmeof
