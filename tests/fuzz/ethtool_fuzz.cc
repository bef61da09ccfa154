// libFuzzer target for EthtoolReader (ETHTOOL_GDRVINFO, GSSET_INFO, GSTRINGS, GSTATS) with a fake
// driver scripted by the input: each ioctl takes its answer from the next bytes, so the count of
// statistics can change between GSSET_INFO and GSTRINGS/GSTATS, and names need no NUL.
// The fake copies as a kernel does into the reader's buffer: a fixed kernel answers 0 entries
// on a count mismatch; an unfixed one copies the current count, which runs into the guard page
// (EFAULT) when it grew, exactly what GuardedBuffer makes the real kernel answer.
#include <fuzzer/FuzzedDataProvider.h>
#include <linux/ethtool.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "readers/ethtool.h"

namespace {

// memcpy of what the input had left (possibly nothing: data() is then null).
void Copy(std::uint8_t* to, const std::vector<std::uint8_t>& bytes) {
  if (!bytes.empty()) std::memcpy(to, bytes.data(), bytes.size());
}

int FakeIoctl(FuzzedDataProvider& in, void* cmd) {
  if (in.ConsumeIntegralInRange<int>(0, 15) == 0) {
    static constexpr int kErrors[] = {ENODEV, EOPNOTSUPP, EPERM, EFAULT, EINVAL, EAGAIN};
    return in.PickValueInArray(kErrors);
  }
  std::uint32_t op;
  std::memcpy(&op, cmd, sizeof op);
  const bool fixed_kernel = in.ConsumeBool();
  switch (op) {
    case ETHTOOL_GDRVINFO: {
      auto* info = static_cast<ethtool_drvinfo*>(cmd);
      // Fixed-size fields the driver fills with strncpy: possibly without a NUL.
      const auto bytes = in.ConsumeBytes<std::uint8_t>(sizeof *info - sizeof info->cmd);
      Copy(reinterpret_cast<std::uint8_t*>(info) + sizeof info->cmd, bytes);
      return 0;
    }
    case ETHTOOL_GSSET_INFO: {
      auto* sset = static_cast<ethtool_sset_info*>(cmd);
      if (!in.ConsumeBool()) {
        sset->sset_mask = 0;
        return 0;
      }
      // Mostly small counts, sometimes past the reader's bound.
      sset->data[0] = in.ConsumeBool() ? in.ConsumeIntegralInRange<std::uint32_t>(0, 64)
                                       : in.ConsumeIntegral<std::uint32_t>();
      return 0;
    }
    case ETHTOOL_GSTRINGS: {
      auto* gs = static_cast<ethtool_gstrings*>(cmd);
      const std::uint32_t now = in.ConsumeIntegralInRange<std::uint32_t>(0, 80);
      if (now != gs->len && fixed_kernel) {
        gs->len = 0;
        return 0;
      }
      if (now > gs->len) return EFAULT;  // the guard page
      gs->len = now;
      for (std::uint32_t i = 0; i < now; ++i) {
        const auto name = in.ConsumeBytes<std::uint8_t>(ETH_GSTRING_LEN);
        Copy(gs->data + std::size_t{i} * ETH_GSTRING_LEN, name);
      }
      return 0;
    }
    case ETHTOOL_GSTATS: {
      auto* st = static_cast<ethtool_stats*>(cmd);
      const std::uint32_t now = in.ConsumeIntegralInRange<std::uint32_t>(0, 80);
      if (now != st->n_stats && fixed_kernel) {
        st->n_stats = 0;
        return 0;
      }
      if (now > st->n_stats) return EFAULT;
      st->n_stats = now;
      for (std::uint32_t i = 0; i < now; ++i) st->data[i] = in.ConsumeIntegral<std::uint64_t>();
      return 0;
    }
  }
  return EINVAL;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  FuzzedDataProvider in(data, size);
  nvmeof::EthtoolReader reader([&in](const std::string&, void* cmd) { return FakeIoctl(in, cmd); });
  nvmeof::EthtoolDriverInfo info;
  (void)reader.DriverInfo("eth0", &info);
  std::vector<nvmeof::EthtoolStat> stats;
  (void)reader.Stats("eth0", &stats);
  return 0;
}
