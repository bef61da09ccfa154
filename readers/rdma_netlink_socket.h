// The NETLINK_RDMA transport of the rdma_netlink collector: one request, its reply, within a
// per-scrape budget. Tests replace the socket with recorded replies (tests/unit/netlink_replay.h).
#pragma once

#include <rdma/rdma_netlink.h>
#include <cerrno>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <initializer_list>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "base/log.h"
#include "readers/nldev.h"

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

// Bounded name of a transport or kernel error: time_budget, byte_budget, truncated, malformed,
// or the errno name.
std::string RdmaNetlinkErrName(int err);

// One scrape's conversation with the kernel: requests, their failures and the budget.
class RdmaNetlinkSession {
 public:
  RdmaNetlinkSession(RdmaNetlinkTransport& t, double timeout_seconds, std::uint64_t max_bytes)
      : t_(t) {
    budget_.deadline = std::chrono::steady_clock::now() +
                       std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                           std::chrono::duration<double>(timeout_seconds));
    budget_.bytes_left = max_bytes;
  }

  // Runs `req`; returns the decodable data messages of the expected type. *err gets the kernel's
  // or the transport's errno (0 if none). Failures count in failures(); the caller decides which
  // series that costs. Errors listed in `absent` mean "this kernel or device has no such thing":
  // not failures.
  std::vector<rdmanl::Bytes> Call(const rdmanl::Request& req, int* err,
                                  std::initializer_list<int> absent = {}) {
    replies_.emplace_back();
    auto& reply = replies_.back();
    int terr = t_.Exchange(req, budget_, &reply);
    const rdmanl::Scan scan = rdmanl::ScanMessages(rdmanl::Bytes(reply));
    std::vector<rdmanl::Bytes> data;
    std::size_t strays = 0;
    for (const auto& m : scan.data) {
      // Only the client is checked: PORT_GET is answered with type GET (nldev_port_get_doit).
      if (RDMA_NL_GET_CLIENT(m.type) == RDMA_NL_NLDEV) {
        data.push_back(m.payload);
      } else {
        ++strays;
      }
    }
    *err = terr ? terr : scan.error ? scan.error : (scan.malformed || strays) ? EBADMSG : 0;
    // A doit that ends without its answer (or a dump without DONE) was cut short.
    if (!*err && !scan.done && (req.dump || data.empty())) *err = EBADMSG;
    if (*err && std::find(absent.begin(), absent.end(), *err) == absent.end()) Fail(req, *err);
    return data;
  }

  void Fail(const rdmanl::Request& req, int err) {
    ++failures_[{rdmanl::RequestKey(rdmanl::Request{req.cmd, req.dump, {}, {}, req.stat_res, {}}),
                 RdmaNetlinkErrName(err)}];
    LogDebug("rdma netlink request failed",
             Kv("request", rdmanl::RequestKey(req)) + " " + Kv("err", RdmaNetlinkErrName(err)));
  }

  const RdmaNetlinkBudget& budget() const { return budget_; }
  // (request without device and port, reason) -> failed requests this scrape.
  const std::map<std::pair<std::string, std::string>, std::size_t>& failures() const {
    return failures_;
  }

 private:
  RdmaNetlinkTransport& t_;
  RdmaNetlinkBudget budget_;
  std::vector<std::vector<std::uint8_t>> replies_;  // the Bytes handed out point into these
  std::map<std::pair<std::string, std::string>, std::size_t> failures_;
};

}  // namespace nvmeof
