#include "tests/unit/netlink_replay.h"

#include <linux/netlink.h>

#include <fstream>
#include <iterator>
#include <vector>

#include "base/files.h"

namespace nvmeof {
namespace {

using rdmanl::Bytes;
using rdmanl::Request;
using Clock = std::chrono::steady_clock;

class ReplayTransport : public RdmaNetlinkTransport {
 public:
  explicit ReplayTransport(std::string dir) : dir_(std::move(dir)) {}
  int Open() override { return IsDir(dir_) ? 0 : EPROTONOSUPPORT; }
  void Close() override {}
  int Exchange(const Request& req, RdmaNetlinkBudget& budget,
               std::vector<std::uint8_t>* reply) override {
    if (budget.exhausted) return budget.exhausted;
    if (Clock::now() >= budget.deadline) return budget.exhausted = kErrTimeBudget;
    std::ifstream in(dir_ + "/" + rdmanl::RequestKey(req) + ".bin", std::ios::binary);
    if (!in) return ENOENT;
    std::vector<std::uint8_t> data((std::istreambuf_iterator<char>(in)),
                                   std::istreambuf_iterator<char>());
    // Like the socket: whole messages until the byte budget is spent.
    std::vector<Bytes> msgs;
    const bool whole = rdmanl::SplitMessages(Bytes(data), &msgs);
    for (const auto& raw : msgs) {
      const std::uint64_t len = NLMSG_ALIGN(raw.size());
      if (len > budget.bytes_left) return budget.exhausted = kErrByteBudget;
      budget.bytes_left -= len;
      budget.bytes_read += len;
      reply->insert(reply->end(), raw.begin(), raw.end());
      reply->insert(reply->end(), len - raw.size(), 0);
    }
    return whole ? 0 : EBADMSG;
  }

 private:
  std::string dir_;
};

}  // namespace

std::unique_ptr<RdmaNetlinkTransport> NewRdmaNetlinkReplay(std::string dir) {
  return std::make_unique<ReplayTransport>(std::move(dir));
}

}  // namespace nvmeof
