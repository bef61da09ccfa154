#include "readers/ethtool.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <libmnl/libmnl.h>
#include <linux/dcbnl.h>
#include <linux/ethtool.h>
#include <linux/rtnetlink.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "readers/dcb.h"

namespace nvmeof {
namespace {

// Copies into user memory the way the kernel's copy_to_user does: through a system call, so an
// inaccessible page ends the copy with EFAULT instead of crashing the test.
int CopyToUser(void* dst, const void* src, size_t n) {
  int fds[2];
  if (::pipe(fds) != 0) return errno;
  ssize_t w = ::write(fds[1], src, n);
  ssize_t r = w == static_cast<ssize_t>(n) ? ::read(fds[0], dst, n) : -1;
  ::close(fds[0]);
  ::close(fds[1]);
  return r == static_cast<ssize_t>(n) ? 0 : EFAULT;
}

// A driver behind SIOCETHTOOL. `count(call)` is how many statistics it has at the call-th ioctl,
// so tests can change it between ETHTOOL_GSSET_INFO, ETHTOOL_GSTRINGS and ETHTOOL_GSTATS.
// `fixed_kernel` answers a length mismatch with 0 entries (Linux with the Dec 2025 fix); without
// it the fake copies as many entries as it has now, like older kernels.
struct FakeDriver {
  std::function<uint32_t(int call)> count = [](int) { return 4u; };
  std::function<std::string(uint32_t i)> name = [](uint32_t i) {
    return "stat_" + std::to_string(i);
  };
  bool fixed_kernel = false;
  int err = 0;  // returned by every ioctl when set
  int calls = 0;

  int operator()(const std::string& netdev, void* cmd) {
    if (netdev != "fake0") return ENODEV;
    if (err) return err;
    const uint32_t n = count(calls++);
    uint32_t op;
    std::memcpy(&op, cmd, sizeof op);
    switch (op) {
      case ETHTOOL_GDRVINFO: {
        auto* info = static_cast<ethtool_drvinfo*>(cmd);
        std::memset(info->driver, 'x', sizeof info->driver);  // no terminator at all
        std::strcpy(info->fw_version, "1.2.3");
        info->n_stats = n;
        return 0;
      }
      case ETHTOOL_GSSET_INFO: {
        auto* sset = static_cast<ethtool_sset_info*>(cmd);
        sset->sset_mask &= 1ULL << ETH_SS_STATS;
        sset->data[0] = n;
        return 0;
      }
      case ETHTOOL_GSTRINGS: {
        auto* gs = static_cast<ethtool_gstrings*>(cmd);
        uint32_t len = fixed_kernel && gs->len && gs->len != n ? 0 : n;
        gs->len = len;
        std::vector<char> data(size_t{len} * ETH_GSTRING_LEN, 0);
        for (uint32_t i = 0; i < len; ++i) {
          const std::string s = name(i);
          std::memcpy(&data[size_t{i} * ETH_GSTRING_LEN], s.data(),
                      std::min<size_t>(s.size(), ETH_GSTRING_LEN));
        }
        return data.empty() ? 0 : CopyToUser(gs->data, data.data(), data.size());
      }
      case ETHTOOL_GSTATS: {
        auto* st = static_cast<ethtool_stats*>(cmd);
        uint32_t len = fixed_kernel && st->n_stats && st->n_stats != n ? 0 : n;
        st->n_stats = len;
        std::vector<uint64_t> data(len);
        for (uint32_t i = 0; i < len; ++i) data[i] = 1000 + i;
        return data.empty() ? 0 : CopyToUser(st->data, data.data(), data.size() * 8);
      }
    }
    return EOPNOTSUPP;
  }
};

EthtoolReader ReaderFor(FakeDriver* fake) {
  return EthtoolReader(
      [fake](const std::string& netdev, void* cmd) { return (*fake)(netdev, cmd); });
}

TEST(GuardedBuffer, EndsAtAnInaccessiblePage) {
  GuardedBuffer buf(8 + 3 * 8, 8);
  ASSERT_NE(buf.data(), nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(buf.data()) % 8, 0u);
  EXPECT_EQ((reinterpret_cast<uintptr_t>(buf.data()) + buf.size()) %
                static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE)),
            0u);
  std::memset(buf.data(), 0xab, buf.size());  // all of it is writable
  // The kernel writing one byte more than we have stops at the guard page.
  int fd = ::open("/dev/zero", O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  ssize_t n = ::read(fd, buf.data(), buf.size() + 1);
  ::close(fd);
  EXPECT_LE(n, static_cast<ssize_t>(buf.size()));
}

TEST(GuardedBuffer, RejectsMisalignedSizes) {
  GuardedBuffer buf(12, 8);
  EXPECT_EQ(buf.data(), nullptr);
  GuardedBuffer zero(0, 8);
  EXPECT_EQ(zero.data(), nullptr);
}

TEST(EthtoolReader, ReadsNamesAndValuesInOrder) {
  FakeDriver fake;
  std::vector<EthtoolStat> stats;
  ASSERT_EQ(ReaderFor(&fake).Stats("fake0", &stats), 0);
  ASSERT_EQ(stats.size(), 4u);
  EXPECT_EQ(stats[0].name, "stat_0");
  EXPECT_EQ(stats[0].value, 1000u);
  EXPECT_EQ(stats[3].name, "stat_3");
  EXPECT_EQ(stats[3].value, 1003u);
}

TEST(EthtoolReader, NamesFillingAll32BytesAreNotOverread) {
  FakeDriver fake;
  fake.name = [](uint32_t i) { return std::string(40, static_cast<char>('a' + i)); };
  std::vector<EthtoolStat> stats;
  ASSERT_EQ(ReaderFor(&fake).Stats("fake0", &stats), 0);
  ASSERT_EQ(stats.size(), 4u);
  EXPECT_EQ(stats[1].name, std::string(ETH_GSTRING_LEN, 'b'));
}

TEST(EthtoolReader, DriverInfoWithoutTerminator) {
  FakeDriver fake;
  EthtoolDriverInfo info;
  ASSERT_EQ(ReaderFor(&fake).DriverInfo("fake0", &info), 0);
  EXPECT_EQ(info.driver, std::string(32, 'x'));
  EXPECT_EQ(info.firmware_version, "1.2.3");
}

TEST(EthtoolReader, MoreStatsThanAnnouncedOnAnOldKernelIsRetriedNotOverflowed) {
  // GSSET_INFO says 4, the driver has 6 by GSTRINGS: an old kernel copies 6 entries into room
  // for 4, runs into the guard page (EFAULT); the retry sees 6 throughout.
  FakeDriver fake;
  fake.count = [](int call) { return call == 0 ? 4u : 6u; };
  std::vector<EthtoolStat> stats;
  ASSERT_EQ(ReaderFor(&fake).Stats("fake0", &stats), 0);
  EXPECT_EQ(stats.size(), 6u);
  EXPECT_EQ(stats[5].name, "stat_5");
  EXPECT_EQ(stats[5].value, 1005u);
}

// The count changes between the strings and the stats calls (calls: 0 sset, 1 strings, 2 stats,
// then the new count throughout): more stats than announced, and fewer, are both retried.
TEST(EthtoolReader, CountChangedBeforeGstatsIsRetried) {
  for (const auto& change : {std::pair{4u, 5u}, std::pair{6u, 3u}}) {
    const std::uint32_t announced = change.first, now = change.second;
    FakeDriver fake;
    fake.count = [announced, now](int call) { return call <= 1 ? announced : now; };
    std::vector<EthtoolStat> stats;
    ASSERT_EQ(ReaderFor(&fake).Stats("fake0", &stats), 0) << announced << " -> " << now;
    EXPECT_EQ(stats.size(), now);
  }
}

TEST(EthtoolReader, FixedKernelAnswersZeroOnMismatchAndIsRetried) {
  FakeDriver fake;
  fake.fixed_kernel = true;
  fake.count = [](int call) { return call == 0 ? 4u : 7u; };
  std::vector<EthtoolStat> stats;
  ASSERT_EQ(ReaderFor(&fake).Stats("fake0", &stats), 0);
  EXPECT_EQ(stats.size(), 7u);
}

TEST(EthtoolReader, CountThatNeverSettlesGivesUp) {
  FakeDriver fake;
  fake.count = [](int call) { return 4u + static_cast<uint32_t>(call); };
  std::vector<EthtoolStat> stats;
  EXPECT_EQ(ReaderFor(&fake).Stats("fake0", &stats), EAGAIN);
  EXPECT_TRUE(stats.empty());
}

TEST(EthtoolReader, AbsurdCountIsRefused) {
  FakeDriver fake;
  fake.count = [](int) { return EthtoolReader::kMaxStats + 1; };
  std::vector<EthtoolStat> stats;
  EXPECT_EQ(ReaderFor(&fake).Stats("fake0", &stats), E2BIG);
}

TEST(EthtoolReader, ZeroStatsIsEmptySuccess) {
  FakeDriver fake;
  fake.count = [](int) { return 0u; };
  std::vector<EthtoolStat> stats;
  EXPECT_EQ(ReaderFor(&fake).Stats("fake0", &stats), 0);
  EXPECT_TRUE(stats.empty());
}

TEST(EthtoolReader, ErrorsPassThrough) {
  FakeDriver fake;
  std::vector<EthtoolStat> stats;
  EthtoolDriverInfo info;
  EXPECT_EQ(ReaderFor(&fake).Stats("gone0", &stats), ENODEV);
  EXPECT_EQ(ReaderFor(&fake).DriverInfo("gone0", &info), ENODEV);
  fake.err = EOPNOTSUPP;
  EXPECT_EQ(ReaderFor(&fake).Stats("fake0", &stats), EOPNOTSUPP);
  fake.err = EPERM;
  EXPECT_EQ(ReaderFor(&fake).Stats("fake0", &stats), EPERM);
}

TEST(EthtoolReader, NamesTooLongForIfreqAreNoSuchDevice) {
  EXPECT_EQ(SiocEthtool("", nullptr), ENODEV);
  EXPECT_EQ(SiocEthtool("a_name_longer_than_ifnamsiz", nullptr), ENODEV);
}

// ---- DCB netlink reply parsing -----------------------------------------------------------------

struct Reply {
  std::vector<char> buf = std::vector<char>(MNL_SOCKET_BUFFER_SIZE);
  struct nlmsghdr* nlh;
  Reply() {
    nlh = mnl_nlmsg_put_header(buf.data());
    nlh->nlmsg_type = RTM_GETDCB;
    auto* dcb = static_cast<dcbmsg*>(mnl_nlmsg_put_extra_header(nlh, sizeof(dcbmsg)));
    dcb->cmd = DCB_CMD_IEEE_GET;
    mnl_attr_put_strz(nlh, DCB_ATTR_IFNAME, "ens1f0np0");
  }
  // The IEEE nest with only a PFC attribute.
  void PutPfc(std::uint8_t pfc_cap) {
    struct nlattr* nest = mnl_attr_nest_start(nlh, DCB_ATTR_IEEE);
    struct ieee_pfc pfc = {};
    pfc.pfc_cap = pfc_cap;
    mnl_attr_put(nlh, DCB_ATTR_IEEE_PFC, sizeof pfc, &pfc);
    mnl_attr_nest_end(nlh, nest);
  }
};

TEST(DcbParse, IeeePfcInsideTheIeeeNest) {
  Reply r;
  struct nlattr* nest = mnl_attr_nest_start(r.nlh, DCB_ATTR_IEEE);
  struct ieee_ets ets = {};
  mnl_attr_put(r.nlh, DCB_ATTR_IEEE_ETS, sizeof ets, &ets);
  struct ieee_pfc pfc = {};
  pfc.pfc_cap = 8;
  pfc.pfc_en = 0x08;
  pfc.delay = 7;
  pfc.requests[3] = 52870;
  pfc.indications[3] = 184312;
  mnl_attr_put(r.nlh, DCB_ATTR_IEEE_PFC, sizeof pfc, &pfc);
  mnl_attr_nest_end(r.nlh, nest);
  mnl_attr_put_u8(r.nlh, DCB_ATTR_DCBX, DCB_CAP_DCBX_VER_IEEE);

  IeeePfc out;
  ASSERT_EQ(ParseIeeePfcReply(r.buf.data(), r.nlh->nlmsg_len, &out), 0);
  EXPECT_EQ(out.pfc_cap, 8);
  EXPECT_EQ(out.pfc_en, 0x08);
  EXPECT_EQ(out.delay, 7);
  EXPECT_EQ(out.requests[3], 52870u);
  EXPECT_EQ(out.indications[3], 184312u);
  EXPECT_EQ(out.requests[0], 0u);
}

TEST(DcbParse, NoPfcAttributeIsEnoent) {
  Reply r;
  struct nlattr* nest = mnl_attr_nest_start(r.nlh, DCB_ATTR_IEEE);
  struct ieee_ets ets = {};
  mnl_attr_put(r.nlh, DCB_ATTR_IEEE_ETS, sizeof ets, &ets);
  mnl_attr_nest_end(r.nlh, nest);
  IeeePfc out;
  EXPECT_EQ(ParseIeeePfcReply(r.buf.data(), r.nlh->nlmsg_len, &out), ENOENT);
}

TEST(DcbParse, TruncatedPfcIsMalformed) {
  Reply r;
  struct nlattr* nest = mnl_attr_nest_start(r.nlh, DCB_ATTR_IEEE);
  char half[20] = {};
  mnl_attr_put(r.nlh, DCB_ATTR_IEEE_PFC, sizeof half, half);
  mnl_attr_nest_end(r.nlh, nest);
  IeeePfc out;
  EXPECT_EQ(ParseIeeePfcReply(r.buf.data(), r.nlh->nlmsg_len, &out), EBADMSG);
}

TEST(DcbParse, NetlinkErrorCarriesTheErrno) {
  std::vector<char> buf(MNL_SOCKET_BUFFER_SIZE);
  struct nlmsghdr* nlh = mnl_nlmsg_put_header(buf.data());
  nlh->nlmsg_type = NLMSG_ERROR;
  auto* err = static_cast<nlmsgerr*>(mnl_nlmsg_put_extra_header(nlh, sizeof(nlmsgerr)));
  err->error = -EOPNOTSUPP;
  IeeePfc out;
  EXPECT_EQ(ParseIeeePfcReply(buf.data(), nlh->nlmsg_len, &out), EOPNOTSUPP);
}

TEST(DcbParse, GarbageDoesNotCrash) {
  std::vector<char> junk(100, '\x7f');
  IeeePfc out;
  EXPECT_NE(ParseIeeePfcReply(junk.data(), junk.size(), &out), 0);
  EXPECT_NE(ParseIeeePfcReply(junk.data(), 3, &out), 0);
}

// A second message whose nlmsg_len is 2^31 or more: libmnl's mnl_nlmsg_ok takes it for a
// negative length and mnl_cb_run walked off the buffer (SEGV, found by tests/fuzz/dcb_fuzz:
// tests/fuzz/regressions/dcb_fuzz/). Only the whole messages before it are parsed.
TEST(DcbParse, HugeMessageLengthStopsTheWalk) {
  Reply r;
  r.PutPfc(8);
  std::vector<char> buf(r.buf.begin(), r.buf.begin() + r.nlh->nlmsg_len);
  // First an unrelated RTM_GETDCB message (another command), then one claiming 0xe1e1e1e1 bytes.
  std::vector<char> other(24, '\xe1');
  const std::uint32_t other_len = 24;
  std::memcpy(other.data(), &other_len, 4);
  const std::uint16_t type = RTM_GETDCB, flags = 0;
  std::memcpy(other.data() + 4, &type, 2);
  std::memcpy(other.data() + 6, &flags, 2);
  std::memset(other.data() + 8, 0, 8);
  other[16] = 0;  // dcbmsg.dcb_family
  other[17] = 0;  // dcbmsg.cmd: not DCB_CMD_IEEE_GET
  std::vector<char> huge(64, '\xe1');
  IeeePfc out;
  std::vector<char> joined = other;
  joined.insert(joined.end(), huge.begin(), huge.end());
  EXPECT_EQ(ParseIeeePfcReply(joined.data(), joined.size(), &out), ENOENT);
  joined.insert(joined.begin() + 24, buf.begin(), buf.end());
  ASSERT_EQ(ParseIeeePfcReply(joined.data(), joined.size(), &out), 0);
  EXPECT_EQ(out.pfc_cap, 8);
}

// A last message whose nlmsg_len is not a multiple of 4 and whose padding is not in the buffer:
// libmnl walks attributes up to the padded end, so the PFC attribute was read past the buffer
// (heap-buffer-overflow, found by tests/fuzz/dcb_fuzz). Such a message is not whole: not parsed.
TEST(DcbParse, UnpaddedLastMessageIsNotReadPastTheBuffer) {
  Reply r;
  r.PutPfc(8);
  const std::size_t whole = r.nlh->nlmsg_len;
  IeeePfc out;
  ASSERT_EQ(ParseIeeePfcReply(r.buf.data(), whole, &out), 0);
  r.nlh->nlmsg_len = static_cast<std::uint32_t>(whole - 1);
  std::vector<char> exact(r.buf.begin(), r.buf.begin() + static_cast<std::ptrdiff_t>(whole - 1));
  EXPECT_EQ(ParseIeeePfcReply(exact.data(), exact.size(), &out), ENOENT);
}

}  // namespace
}  // namespace nvmeof
