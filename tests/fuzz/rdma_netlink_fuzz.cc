// libFuzzer target for the RDMA netlink parser and the collector above it.
//
// Input: the first byte picks the mode.
//   0: the rest is one reply buffer: split into messages, every message through every decoder.
//   1: the rest is a sequence of replies, each a little-endian u16 length and that many bytes;
//      the collector (per-QP mode, an optional counter to enable) scrapes with a transport that
//      answers its requests with them in order (an exhausted sequence answers nothing).
// Seeds: the replies recorded from real kernels in tests/fixtures/netlink (tests/fuzz/run.sh).
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "base/log.h"
#include "collectors/rdma_netlink.h"
#include "collectors/registry.h"
#include "readers/nldev.h"

namespace {

using nvmeof::rdmanl::Bytes;

void DecodeAll(Bytes buf) {
  const auto scan = nvmeof::rdmanl::ScanMessages(buf);
  for (const auto& m : scan.data) {
    nvmeof::rdmanl::Device d;
    nvmeof::rdmanl::Port p;
    nvmeof::rdmanl::PortStats s;
    nvmeof::rdmanl::Resources r;
    std::vector<nvmeof::rdmanl::BoundCounter> bc;
    std::vector<nvmeof::rdmanl::Qp> qps;
    std::vector<nvmeof::rdmanl::CmId> cms;
    std::size_t bad = 0;
    nvmeof::rdmanl::DecodeDevice(m.payload, &d);
    nvmeof::rdmanl::DecodePort(m.payload, &p);
    nvmeof::rdmanl::DecodePortStats(m.payload, &s);
    nvmeof::rdmanl::DecodeResources(m.payload, &r);
    nvmeof::rdmanl::DecodeBoundCounters(m.payload, &bc, &bad);
    nvmeof::rdmanl::DecodeQps(m.payload, &qps, &bad);
    nvmeof::rdmanl::DecodeCmIds(m.payload, &cms, &bad);
  }
}

class SequenceTransport : public nvmeof::RdmaNetlinkTransport {
 public:
  explicit SequenceTransport(Bytes data) : data_(data) {}
  int Open() override { return 0; }
  void Close() override {}
  int Exchange(const nvmeof::rdmanl::Request&, nvmeof::RdmaNetlinkBudget& budget,
               std::vector<std::uint8_t>* reply) override {
    if (data_.size() < 2) return ETIMEDOUT;
    std::uint16_t len;
    std::memcpy(&len, data_.data(), 2);
    data_ = data_.subspan(2);
    len = static_cast<std::uint16_t>(std::min<std::size_t>(len, data_.size()));
    reply->insert(reply->end(), data_.begin(), data_.begin() + len);
    budget.bytes_read += len;
    data_ = data_.subspan(len);
    return 0;
  }

 private:
  Bytes data_;
};

}  // namespace

// libFuzzer's once-per-process hook: only errors are logged while fuzzing.
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  nvmeof::SetLogLevel(nvmeof::LogLevel::kError);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  const Bytes rest(data + 1, size - 1);
  if (data[0] == 0) {
    DecodeAll(rest);
    return 0;
  }
  nvmeof::CollectorOptions options;
  options.rdma_netlink.per_qp = true;
  options.rdma_netlink.max_qp_series = 64;
  options.rdma_netlink.enable_optional_counters = {"cc_rx_ce_pkts"};
  auto collector =
      nvmeof::NewRdmaNetlinkCollector(options, std::make_unique<SequenceTransport>(rest));
  nvmeof::MetricSink sink;
  collector->Collect(sink);
  return 0;
}
