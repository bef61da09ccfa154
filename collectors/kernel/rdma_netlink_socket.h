// The NETLINK_RDMA transport of the rdma_netlink collector: one request, its reply, within a
// per-scrape budget. Tests replace the socket with recorded replies (tests/unit/netlink_replay.h).
#pragma once

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "collectors/kernel/nldev.h"

namespace nvmeof {

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

}  // namespace nvmeof
