#include "readers/rdma_netlink_socket.h"

#include <linux/netlink.h>
#include <sys/socket.h>
#include <sys/time.h>

#include <algorithm>
#include <cstring>
#include <ctime>
#include <fstream>

#include "base/fd.h"
#include "base/files.h"

namespace nvmeof {
namespace {

using rdmanl::Bytes;
using rdmanl::Request;
using Clock = std::chrono::steady_clock;

// Netlink dumps fill skbs of up to 32 KiB (netlink_dump's max); doits are smaller.
constexpr std::size_t kRecvBuffer = 64 * 1024;

void Record(const std::string& dir, const Request& req, const std::vector<std::uint8_t>& reply) {
  if (dir.empty()) return;
  std::ofstream out(dir + "/" + rdmanl::RequestKey(req) + ".bin", std::ios::binary);
  out.write(reinterpret_cast<const char*>(reply.data()),
            static_cast<std::streamsize>(reply.size()));
}

class SocketTransport : public RdmaNetlinkTransport {
 public:
  SocketTransport(std::string record_dir, std::string sysfs)
      : record_dir_(std::move(record_dir)), sysfs_(std::move(sysfs)), buf_(kRecvBuffer) {}

  int Open() override {
    // socket(NETLINK_RDMA) makes the kernel modprobe ib_core when it is not loaded (seen in the
    // VM's hotload scenario): a scrape must not load modules. ib_core registers the infiniband
    // class, so without that directory there is no RDMA stack to ask.
    if (!IsDir(sysfs_ + "/class/infiniband")) return EPROTONOSUPPORT;
    // Without ib_core (or CONFIG_INFINIBAND) the protocol does not exist: EPROTONOSUPPORT.
    UniqueFd fd(::socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_RDMA));
    if (fd.get() < 0) return errno;
    sockaddr_nl local{};
    local.nl_family = AF_NETLINK;
    if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&local), sizeof local) < 0) return errno;
    fd_ = std::move(fd);
    return 0;
  }

  void Close() override { fd_.Reset(); }

  int Exchange(const Request& req, RdmaNetlinkBudget& budget,
               std::vector<std::uint8_t>* reply) override {
    const std::size_t start = reply->size();
    int err = DoExchange(req, budget, reply);
    if (!record_dir_.empty()) {
      Record(record_dir_, req, std::vector<std::uint8_t>(reply->begin() + start, reply->end()));
    }
    return err;
  }

 private:
  int DoExchange(const Request& req, RdmaNetlinkBudget& budget, std::vector<std::uint8_t>* reply) {
    if (budget.exhausted) return budget.exhausted;
    const std::uint32_t seq = ++seq_;
    const auto msg = rdmanl::BuildRequest(req, seq);
    sockaddr_nl kernel{};
    kernel.nl_family = AF_NETLINK;
    if (::sendto(fd_.get(), msg.data(), msg.size(), 0, reinterpret_cast<sockaddr*>(&kernel),
                 sizeof kernel) < 0) {
      return errno;
    }
    for (;;) {
      const auto left = budget.deadline - Clock::now();
      if (left <= Clock::duration::zero()) {
        return budget.exhausted = kErrTimeBudget;
      }
      const auto us = std::max<std::int64_t>(
          1000, std::chrono::duration_cast<std::chrono::microseconds>(left).count());
      timeval tv{static_cast<time_t>(us / 1000000), static_cast<suseconds_t>(us % 1000000)};
      ::setsockopt(fd_.get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
      // MSG_TRUNC returns the real length, so a message longer than the buffer is detected.
      const ssize_t n = ::recv(fd_.get(), buf_.data(), buf_.size(), MSG_TRUNC);
      if (n < 0) {
        if (errno == EINTR) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) return budget.exhausted = kErrTimeBudget;
        return errno;
      }
      if (static_cast<std::size_t>(n) > buf_.size()) return kErrTruncated;
      if (static_cast<std::uint64_t>(n) > budget.bytes_left) {
        return budget.exhausted = kErrByteBudget;
      }
      budget.bytes_left -= static_cast<std::uint64_t>(n);
      budget.bytes_read += static_cast<std::uint64_t>(n);
      std::vector<Bytes> msgs;
      if (!rdmanl::SplitMessages(Bytes(buf_.data(), static_cast<std::size_t>(n)), &msgs)) {
        return EBADMSG;
      }
      for (const auto& raw : msgs) {
        nlmsghdr hdr;
        std::memcpy(&hdr, raw.data(), sizeof hdr);
        if (hdr.nlmsg_seq != seq) continue;  // the rest of an abandoned earlier request
        reply->insert(reply->end(), raw.begin(), raw.end());
        const std::size_t pad = NLMSG_ALIGN(raw.size()) - raw.size();
        reply->insert(reply->end(), pad, 0);
        if (hdr.nlmsg_type == NLMSG_ERROR || hdr.nlmsg_type == NLMSG_DONE) return 0;
        if (!req.dump && hdr.nlmsg_type >= NLMSG_MIN_TYPE && !req.enable_indices) return 0;
      }
    }
  }

  std::string record_dir_;
  std::string sysfs_;
  std::vector<std::uint8_t> buf_;
  UniqueFd fd_;
  std::uint32_t seq_ = static_cast<std::uint32_t>(::time(nullptr));
};

}  // namespace

std::unique_ptr<RdmaNetlinkTransport> NewRdmaNetlinkSocket(std::string record_dir,
                                                           std::string sysfs) {
  return std::make_unique<SocketTransport>(std::move(record_dir), std::move(sysfs));
}

std::string RdmaNetlinkErrName(int err) {
  switch (err) {
    case kErrTimeBudget:
      return "time_budget";
    case kErrByteBudget:
      return "byte_budget";
    case kErrTruncated:
      return "truncated";
    case EBADMSG:
      return "malformed";
  }
  return ErrnoName(err);
}

}  // namespace nvmeof
