#include "collectors/pfc.h"

#include <gtest/gtest.h>
#include <linux/ethtool.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "base/files.h"
#include "collectors/registry.h"
#include "tests/unit/scratch_tree.h"
#include "tests/unit/sink_query.h"

namespace nvmeof {
namespace {

namespace fs = std::filesystem;

const std::string kFixtures = NVMEOF_FIXTURES;
const std::string kEthtool = kFixtures + "/ethtool";

// A scratch tree with a minimal sysfs under sys/ and ethtool fixtures beside it.
class PfcTree : public ScratchDir {
 public:
  // RDMA device `dev` with its port 1 bound to `netdev`.
  void RdmaDevice(const std::string& dev, const std::string& netdev) const {
    Write("sys/class/infiniband/" + dev + "/ports/1/gid_attrs/ndevs/0", netdev + "\n");
  }
  void Netdev(const std::string& netdev) const {
    fs::create_directories(path() + "/sys/class/net/" + netdev);
  }
};

// Every series of every family, as "family{k=v,...}", to look for duplicates.
std::vector<std::string> AllSeries(const MetricSink& sink) {
  std::vector<std::string> out;
  for (const char* name :
       {"nvmeof_rdma_netdev_info", "nvmeof_rdma_pfc_pause_frames_total",
        "nvmeof_rdma_pfc_pause_seconds_total", "nvmeof_rdma_pfc_pause_transitions_total",
        "nvmeof_rdma_link_pause_frames_total", "nvmeof_rdma_link_pause_seconds_total",
        "nvmeof_rdma_link_pause_transitions_total", "nvmeof_rdma_pause_storm_events_total",
        "nvmeof_rdma_phy_discards_total", "nvmeof_rdma_priority_discards_total",
        "nvmeof_rdma_dcb_pfc_enabled", "nvmeof_rdma_dcb_pfc_requests_total",
        "nvmeof_rdma_dcb_pfc_indications_total", "nvmeof_rdma_ecn_enabled"}) {
    const auto* f = sink.Find(name);
    if (!f) continue;
    for (const auto& m : f->metric) {
      std::string s = std::string(name) + "{";
      for (const auto& [k, v] : ToMap(m)) s += k + "=" + v + ",";
      out.push_back(s + "}");
    }
  }
  return out;
}

CollectorOptions FixtureOptions(const std::string& sysfs, const std::string& ethtool) {
  CollectorOptions o;
  o.paths.sysfs = sysfs;
  o.pfc.ethtool_fixture_dir = ethtool;
  return o;
}

bool HaveSysfsFixtures() { return IsDir(kFixtures + "/sysfs/class/infiniband"); }

// ---- The shared fixtures (tests/fixtures/sysfs + tests/fixtures/ethtool) ----------------------

class PfcFixtureTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(HaveSysfsFixtures()) << "checked-in fixture tests/fixtures/sysfs is missing";
    auto c = NewPfcCollector(FixtureOptions(kFixtures + "/sysfs", kEthtool));
    EXPECT_EQ(c->Name(), "pfc");
    ok_ = c->Collect(sink_);
  }
  MetricSink sink_;
  bool ok_ = false;
};

TEST_F(PfcFixtureTest, SucceedsWithoutSkips) {
  EXPECT_TRUE(ok_);
  EXPECT_EQ(sink_.skipped(), 0u);
  auto all = AllSeries(sink_);
  std::sort(all.begin(), all.end());
  EXPECT_EQ(std::adjacent_find(all.begin(), all.end()), all.end()) << "duplicate series";
}

TEST_F(PfcFixtureTest, NetdevInfoPerRdmaDevice) {
  EXPECT_EQ(Value(sink_, "nvmeof_rdma_netdev_info",
                  {{"netdev", "ens1f0np0"},
                   {"driver", "mlx5_core"},
                   {"firmware_version", "22.39.2048 (MT_0000000359)"},
                   {"rdma_device", "mlx5_0"}}),
            1);
  EXPECT_EQ(Value(sink_, "nvmeof_rdma_netdev_info",
                  {{"netdev", "ens1f1np1"}, {"driver", "mlx5_core"}, {"rdma_device", "mlx5_2"}}),
            1);
  EXPECT_EQ(Value(sink_, "nvmeof_rdma_netdev_info",
                  {{"netdev", "ens2f0"}, {"driver", "ice"}, {"rdma_device", "irdma0"}}),
            1);
  EXPECT_EQ(Value(sink_, "nvmeof_rdma_netdev_info",
                  {{"netdev", "ens3f0np0"}, {"driver", "bnxt_en"}, {"rdma_device", "bnxt_re0"}}),
            1);
  EXPECT_EQ(Value(sink_, "nvmeof_rdma_netdev_info",
                  {{"netdev", "veth0"}, {"driver", "veth"}, {"rdma_device", "rxe0"}}),
            1);
  EXPECT_EQ(Value(sink_, "nvmeof_rdma_netdev_info",
                  {{"netdev", "eth1"}, {"driver", "virtio_net"}, {"rdma_device", "siw0"}}),
            1);
  EXPECT_EQ(Count(sink_, "nvmeof_rdma_netdev_info"), 6);  // mlx5_1 is an IB port without a netdev
}

TEST_F(PfcFixtureTest, Mlx5PfcOnPriority3) {
  const LabelMap rx3 = {{"netdev", "ens1f0np0"}, {"direction", "rx"}, {"priority", "3"}};
  const LabelMap tx3 = {{"netdev", "ens1f0np0"}, {"direction", "tx"}, {"priority", "3"}};
  EXPECT_EQ(Value(sink_, "nvmeof_rdma_pfc_pause_frames_total", rx3), 184312);
  EXPECT_EQ(Value(sink_, "nvmeof_rdma_pfc_pause_frames_total", tx3), 52870);
  // rx_prio3_pause_duration 9215600 us, tx 2643500 us.
  EXPECT_DOUBLE_EQ(Value(sink_, "nvmeof_rdma_pfc_pause_seconds_total", rx3), 9.2156);
  EXPECT_DOUBLE_EQ(Value(sink_, "nvmeof_rdma_pfc_pause_seconds_total", tx3), 2.6435);
  EXPECT_EQ(Value(sink_, "nvmeof_rdma_pfc_pause_transitions_total", rx3), 92156);
  // mlx5 lists PFC counters only for PFC-enabled priorities, and has no tx transition counter.
  EXPECT_EQ(Count(sink_, "nvmeof_rdma_pfc_pause_frames_total", {{"netdev", "ens1f0np0"}}), 2);
  EXPECT_EQ(Count(sink_, "nvmeof_rdma_pfc_pause_transitions_total", {{"netdev", "ens1f0np0"}}), 1);
  EXPECT_EQ(Count(sink_, "nvmeof_rdma_link_pause_frames_total", {{"netdev", "ens1f0np0"}}), 0);
}

TEST_F(PfcFixtureTest, Mlx5StormsAndDiscards) {
  EXPECT_EQ(Value(sink_, "nvmeof_rdma_pause_storm_events_total",
                  {{"netdev", "ens1f0np0"}, {"level", "warning"}}),
            3);
  EXPECT_EQ(Value(sink_, "nvmeof_rdma_pause_storm_events_total",
                  {{"netdev", "ens1f0np0"}, {"level", "error"}}),
            1);
  EXPECT_EQ(Value(sink_, "nvmeof_rdma_phy_discards_total",
                  {{"netdev", "ens1f0np0"}, {"direction", "rx"}}),
            1287);
  EXPECT_EQ(Value(sink_, "nvmeof_rdma_phy_discards_total",
                  {{"netdev", "ens1f0np0"}, {"direction", "tx"}}),
            0);
  EXPECT_EQ(Value(sink_, "nvmeof_rdma_priority_discards_total",
                  {{"netdev", "ens1f0np0"}, {"direction", "rx"}, {"priority", "3"}}),
            1203);
  EXPECT_EQ(Value(sink_, "nvmeof_rdma_priority_discards_total",
                  {{"netdev", "ens1f0np0"}, {"direction", "rx"}, {"priority", "0"}}),
            84);
  EXPECT_EQ(Count(sink_, "nvmeof_rdma_priority_discards_total", {{"netdev", "ens1f0np0"}}), 8);
}

TEST_F(PfcFixtureTest, Mlx5LinkPause) {
  const LabelMap rx = {{"netdev", "ens1f1np1"}, {"direction", "rx"}};
  const LabelMap tx = {{"netdev", "ens1f1np1"}, {"direction", "tx"}};
  EXPECT_EQ(Value(sink_, "nvmeof_rdma_link_pause_frames_total", rx), 4410);
  EXPECT_EQ(Value(sink_, "nvmeof_rdma_link_pause_frames_total", tx), 1210);
  EXPECT_DOUBLE_EQ(Value(sink_, "nvmeof_rdma_link_pause_seconds_total", rx), 0.2205);
  EXPECT_DOUBLE_EQ(Value(sink_, "nvmeof_rdma_link_pause_seconds_total", tx), 0.0605);
  EXPECT_EQ(Value(sink_, "nvmeof_rdma_link_pause_transitions_total", rx), 2205);
  EXPECT_EQ(Count(sink_, "nvmeof_rdma_pfc_pause_frames_total", {{"netdev", "ens1f1np1"}}), 0);
  EXPECT_EQ(Value(sink_, "nvmeof_rdma_pause_storm_events_total",
                  {{"netdev", "ens1f1np1"}, {"level", "error"}}),
            0);
}

TEST_F(PfcFixtureTest, IceCountsXoffOnly) {
  // rx_priority_3_xoff.nic 96241, rx_priority_3_xon.nic 96238: pause frames are the XOFF ones.
  EXPECT_EQ(Value(sink_, "nvmeof_rdma_pfc_pause_frames_total",
                  {{"netdev", "ens2f0"}, {"direction", "rx"}, {"priority", "3"}}),
            96241);
  EXPECT_EQ(Value(sink_, "nvmeof_rdma_pfc_pause_frames_total",
                  {{"netdev", "ens2f0"}, {"direction", "tx"}, {"priority", "3"}}),
            31877);
  EXPECT_EQ(Value(sink_, "nvmeof_rdma_pfc_pause_frames_total",
                  {{"netdev", "ens2f0"}, {"direction", "rx"}, {"priority", "0"}}),
            0);
  EXPECT_EQ(Count(sink_, "nvmeof_rdma_pfc_pause_frames_total", {{"netdev", "ens2f0"}}), 16);
  // The same number ice's DCB ieee_getpfc reports.
  EXPECT_EQ(Value(sink_, "nvmeof_rdma_dcb_pfc_indications_total",
                  {{"netdev", "ens2f0"}, {"priority", "3"}}),
            96241);
  EXPECT_EQ(Value(sink_, "nvmeof_rdma_link_pause_frames_total",
                  {{"netdev", "ens2f0"}, {"direction", "rx"}}),
            0);
  EXPECT_EQ(
      Value(sink_, "nvmeof_rdma_phy_discards_total", {{"netdev", "ens2f0"}, {"direction", "rx"}}),
      342);
  EXPECT_EQ(Count(sink_, "nvmeof_rdma_phy_discards_total", {{"netdev", "ens2f0"}}), 1);
  // ice has no pause duration, transition or storm counters.
  EXPECT_EQ(Count(sink_, "nvmeof_rdma_pfc_pause_seconds_total", {{"netdev", "ens2f0"}}), 0);
  EXPECT_EQ(Count(sink_, "nvmeof_rdma_pause_storm_events_total", {{"netdev", "ens2f0"}}), 0);
}

TEST_F(PfcFixtureTest, BnxtFramesDurationTransitions) {
  const LabelMap rx3 = {{"netdev", "ens3f0np0"}, {"direction", "rx"}, {"priority", "3"}};
  const LabelMap tx3 = {{"netdev", "ens3f0np0"}, {"direction", "tx"}, {"priority", "3"}};
  EXPECT_EQ(Value(sink_, "nvmeof_rdma_pfc_pause_frames_total", rx3), 75420);
  EXPECT_EQ(Value(sink_, "nvmeof_rdma_pfc_pause_frames_total", tx3), 21230);
  EXPECT_DOUBLE_EQ(Value(sink_, "nvmeof_rdma_pfc_pause_seconds_total", rx3), 3.771);
  EXPECT_DOUBLE_EQ(Value(sink_, "nvmeof_rdma_pfc_pause_seconds_total", tx3), 1.0615);
  EXPECT_EQ(Value(sink_, "nvmeof_rdma_pfc_pause_transitions_total", rx3), 37710);
  EXPECT_EQ(Value(sink_, "nvmeof_rdma_pfc_pause_transitions_total", tx3), 10615);
  EXPECT_EQ(Count(sink_, "nvmeof_rdma_pfc_pause_frames_total", {{"netdev", "ens3f0np0"}}), 16);
  EXPECT_EQ(Count(sink_, "nvmeof_rdma_pfc_pause_seconds_total", {{"netdev", "ens3f0np0"}}), 16);
  EXPECT_EQ(Value(sink_, "nvmeof_rdma_link_pause_frames_total",
                  {{"netdev", "ens3f0np0"}, {"direction", "tx"}}),
            0);
  EXPECT_EQ(Value(sink_, "nvmeof_rdma_phy_discards_total",
                  {{"netdev", "ens3f0np0"}, {"direction", "rx"}}),
            57);
  EXPECT_EQ(Count(sink_, "nvmeof_rdma_dcb_pfc_enabled", {{"netdev", "ens3f0np0"}}),
            0);  // no dcb_pfc
}

TEST_F(PfcFixtureTest, VirtualNetdevsOnlyHaveInfo) {
  for (const char* netdev : {"veth0", "eth1"}) {
    std::string prefix = std::string(netdev);
    int series = 0;
    for (const auto& s : AllSeries(sink_)) {
      if (s.find("netdev=" + prefix + ",") != std::string::npos) ++series;
    }
    EXPECT_EQ(series, 1) << netdev;
  }
}

TEST_F(PfcFixtureTest, DcbUnderItsOwnNames) {
  EXPECT_EQ(
      Value(sink_, "nvmeof_rdma_dcb_pfc_enabled", {{"netdev", "ens1f0np0"}, {"priority", "3"}}), 1);
  EXPECT_EQ(
      Value(sink_, "nvmeof_rdma_dcb_pfc_enabled", {{"netdev", "ens1f0np0"}, {"priority", "4"}}), 0);
  EXPECT_EQ(Count(sink_, "nvmeof_rdma_dcb_pfc_enabled", {{"netdev", "ens1f0np0"}}), 8);
  EXPECT_EQ(Value(sink_, "nvmeof_rdma_dcb_pfc_requests_total",
                  {{"netdev", "ens1f0np0"}, {"priority", "3"}}),
            52870);
  EXPECT_EQ(Value(sink_, "nvmeof_rdma_dcb_pfc_indications_total",
                  {{"netdev", "ens1f0np0"}, {"priority", "3"}}),
            184312);
  EXPECT_EQ(
      Value(sink_, "nvmeof_rdma_dcb_pfc_enabled", {{"netdev", "ens1f1np1"}, {"priority", "0"}}), 0);
  // Three netdevs have a dcb_pfc fixture.
  EXPECT_EQ(Count(sink_, "nvmeof_rdma_dcb_pfc_requests_total"), 24);
}

// ---- Filters and empty roots (own temp trees) ------------------------------------------------

TEST(PfcFilters, IncludeAddsNetdevsExcludeRemovesAny) {
  PfcTree t;
  t.RdmaDevice("mlx5_0", "ens1f0np0");
  for (const char* n : {"ens1f0np0", "ens2f0", "lo", "veth0"}) t.Netdev(n);
  t.Write("sys/class/net/bonding_masters", "bond0\n");  // a file, not a netdev
  CollectorOptions o = FixtureOptions(t.path() + "/sys", kEthtool);

  {
    MetricSink sink;  // default: only the RDMA netdev
    ASSERT_TRUE(NewPfcCollector(o)->Collect(sink));
    EXPECT_EQ(Count(sink, "nvmeof_rdma_netdev_info"), 1);
    EXPECT_EQ(Count(sink, "nvmeof_rdma_netdev_info", {{"netdev", "ens1f0np0"}}), 1);
  }
  {
    o.pfc.netdevs.include = std::regex("ens2f0|veth0|bonding_masters");
    MetricSink sink;
    ASSERT_TRUE(NewPfcCollector(o)->Collect(sink));
    EXPECT_EQ(Count(sink, "nvmeof_rdma_netdev_info"), 3);
    EXPECT_EQ(Count(sink, "nvmeof_rdma_netdev_info", {{"netdev", "ens2f0"}, {"rdma_device", ""}}),
              1);
    EXPECT_EQ(Value(sink, "nvmeof_rdma_pfc_pause_frames_total",
                    {{"netdev", "ens2f0"}, {"direction", "rx"}, {"priority", "3"}}),
              96241);
    EXPECT_EQ(sink.skipped(), 0u);
  }
  {
    o.pfc.netdevs.exclude = std::regex("ens1f0np0|veth0");
    MetricSink sink;
    ASSERT_TRUE(NewPfcCollector(o)->Collect(sink));
    EXPECT_EQ(Count(sink, "nvmeof_rdma_netdev_info"), 1);
    EXPECT_EQ(Count(sink, "nvmeof_rdma_netdev_info", {{"netdev", "ens2f0"}}), 1);
    EXPECT_EQ(Count(sink, "nvmeof_rdma_pfc_pause_frames_total", {{"netdev", "ens1f0np0"}}), 0);
  }
  {
    CollectorOptions o2 = FixtureOptions(t.path() + "/sys", kEthtool);
    o2.rdma.devices.exclude = std::regex("mlx5_.*");
    MetricSink sink;
    ASSERT_TRUE(NewPfcCollector(o2)->Collect(sink));
    EXPECT_TRUE(sink.Empty());
  }
}

TEST(PfcFilters, NetdevOnTwoRdmaDevicesIsReadOnce) {
  PfcTree t;
  t.RdmaDevice("mlx5_0", "ens1f0np0");
  t.RdmaDevice("rxe0", "ens1f0np0");  // soft-RoCE on top of the same netdev
  MetricSink sink;
  ASSERT_TRUE(NewPfcCollector(FixtureOptions(t.path() + "/sys", kEthtool))->Collect(sink));
  EXPECT_EQ(Count(sink, "nvmeof_rdma_netdev_info"), 2);
  EXPECT_EQ(Count(sink, "nvmeof_rdma_netdev_info", {{"rdma_device", "rxe0"}}), 1);
  EXPECT_EQ(Count(sink, "nvmeof_rdma_pfc_pause_frames_total"), 2);
  EXPECT_EQ(Count(sink, "nvmeof_rdma_dcb_pfc_enabled"), 8);
}

TEST(PfcEmpty, NoRootNoNetdevsIsSuccessWithoutSeries) {
  PfcTree t;
  for (const std::string& sysfs : {t.path() + "/sys", std::string("/nonexistent/sys")}) {
    MetricSink sink;
    EXPECT_TRUE(NewPfcCollector(FixtureOptions(sysfs, kEthtool))->Collect(sink));
    EXPECT_TRUE(sink.Empty());
    EXPECT_EQ(sink.skipped(), 0u);
  }
  // RDMA devices without any bound netdev (an IB port) neither.
  t.Write("sys/class/infiniband/mlx5_1/ports/1/gid_attrs/ndevs/.keep", "");
  MetricSink sink;
  EXPECT_TRUE(NewPfcCollector(FixtureOptions(t.path() + "/sys", kEthtool))->Collect(sink));
  EXPECT_TRUE(sink.Empty());
}

// ---- RoCE ECN switches (mlx5: class/net/<netdev>/ecn/roce_{np,rp}/enable/<prio>) -----------

TEST_F(PfcFixtureTest, EcnPerPriorityAndPoint) {
  EXPECT_EQ(Count(sink_, "nvmeof_rdma_ecn_enabled"), 32);  // two mlx5 netdevs x np/rp x 8
  EXPECT_EQ(Count(sink_, "nvmeof_rdma_ecn_enabled", {{"netdev", "ens1f0np0"}, {"point", "np"}}), 8);
  EXPECT_EQ(Value(sink_, "nvmeof_rdma_ecn_enabled",
                  {{"netdev", "ens1f0np0"}, {"point", "rp"}, {"priority", "3"}}),
            1);
  // The second port's reaction point is off on priority 3 only.
  EXPECT_EQ(Value(sink_, "nvmeof_rdma_ecn_enabled",
                  {{"netdev", "ens1f1np1"}, {"point", "rp"}, {"priority", "3"}}),
            0);
  EXPECT_EQ(Value(sink_, "nvmeof_rdma_ecn_enabled",
                  {{"netdev", "ens1f1np1"}, {"point", "np"}, {"priority", "3"}}),
            1);
  // Drivers without ECN files (ice, bnxt_en, veth) have no series: not an error.
  EXPECT_EQ(Count(sink_, "nvmeof_rdma_ecn_enabled", {{"netdev", "ens2f0"}}), 0);
  EXPECT_EQ(Count(sink_, "nvmeof_rdma_ecn_enabled", {{"netdev", "veth0"}}), 0);
}

TEST(PfcEcn, BadSwitchFilesAreSkippedNotZero) {
  PfcTree t;
  t.RdmaDevice("mlx5_0", "ens1f0np0");
  const std::string np = "sys/class/net/ens1f0np0/ecn/roce_np/enable/";
  for (int p = 0; p < 8; ++p) t.Write(np + std::to_string(p), "1\n");
  t.Write(np + "1", "2\n");               // not a switch value
  t.Write(np + "2", "enabled\n");         // garbage
  t.Write(np + "3", "");                  // empty
  fs::remove(t.path() + "/" + np + "4");  // missing
  fs::remove(t.path() + "/" + np + "5");  // unreadable: a directory
  fs::create_directories(t.path() + "/" + np + "5");
  MetricSink sink;
  ASSERT_TRUE(NewPfcCollector(FixtureOptions(t.path() + "/sys", kEthtool))->Collect(sink));
  EXPECT_EQ(Count(sink, "nvmeof_rdma_ecn_enabled"), 3);  // priorities 0, 6, 7
  EXPECT_EQ(Count(sink, "nvmeof_rdma_ecn_enabled", {{"priority", "1"}}), 0);
  EXPECT_EQ(Count(sink, "nvmeof_rdma_ecn_enabled", {{"point", "rp"}}), 0);  // no rp directory
  EXPECT_EQ(sink.skipped(), 5u);
}

// ---- Malformed and missing fixture data --------------------------------------------------------

TEST(PfcFixtureSource, MissingNetdevIsSkippedNotFatal) {
  PfcTree t;
  t.RdmaDevice("mlx5_0", "ens1f0np0");
  t.RdmaDevice("mlx5_9", "gone0");  // no fixture directory: like ENODEV from the ioctl
  MetricSink sink;
  EXPECT_TRUE(NewPfcCollector(FixtureOptions(t.path() + "/sys", kEthtool))->Collect(sink));
  EXPECT_EQ(sink.skipped(), 2u);  // driver info and statistics of gone0
  EXPECT_EQ(Count(sink, "nvmeof_rdma_netdev_info", {{"netdev", "gone0"}}), 0);
  EXPECT_EQ(Count(sink, "nvmeof_rdma_netdev_info", {{"netdev", "ens1f0np0"}}), 1);
}

TEST(PfcFixtureSource, EverythingUnreadableFailsTheCollector) {
  PfcTree t;
  t.RdmaDevice("mlx5_9", "dead0");
  t.Netdev("dead0");  // there, but nothing of it can be read
  MetricSink sink;
  EXPECT_FALSE(
      NewPfcCollector(FixtureOptions(t.path() + "/sys", t.path() + "/none"))->Collect(sink));
  EXPECT_EQ(sink.skipped(), 2u);
  EXPECT_NE(sink.failure().find("no netdev's pause counters"), std::string::npos);
}

// A netdev removed between listing and reading (a VM's tap device, a VF reset) is skipped, and
// the collector does not fail for it: nothing was there to read.
TEST(PfcFixtureSource, NetdevGoneDuringTheScrapeIsNoFailure) {
  PfcTree t;
  t.RdmaDevice("mlx5_9", "gone0");  // listed by the RDMA device, absent from class/net
  MetricSink sink;
  EXPECT_TRUE(
      NewPfcCollector(FixtureOptions(t.path() + "/sys", t.path() + "/none"))->Collect(sink));
  EXPECT_EQ(sink.skipped(), 2u);
  EXPECT_EQ(sink.failure(), "");
}

TEST(PfcFixtureSource, MalformedLinesAndFilesAreSkipped) {
  PfcTree t;
  t.RdmaDevice("mlx5_0", "bad0");
  t.Write("eth/bad0/driver", "driver: mlx5_core\n");
  t.Write("eth/bad0/stats",
          "NIC statistics:\n"
          "     rx_prio3_pause: 10\n"
          "     tx_prio3_pause: -1\n"  // not a counter
          "     garbage line\n"
          "     rx_discards_phy: 12abc\n"
          "     tx_discards_phy: 99999999999999999999999\n"  // > 2^64
          "     tx_pause_storm_error_events: 2\n");
  t.Write("eth/bad0/dcb_pfc", "pfc_en 0x08\nrequests 1 2 3\n");
  MetricSink sink;
  EXPECT_TRUE(NewPfcCollector(FixtureOptions(t.path() + "/sys", t.path() + "/eth"))->Collect(sink));
  EXPECT_EQ(sink.skipped(), 5u);  // four bad lines and the DCB file
  EXPECT_EQ(
      Value(sink, "nvmeof_rdma_pfc_pause_frames_total", {{"direction", "rx"}, {"priority", "3"}}),
      10);
  EXPECT_EQ(Count(sink, "nvmeof_rdma_pfc_pause_frames_total"), 1);
  EXPECT_EQ(Count(sink, "nvmeof_rdma_phy_discards_total"), 0);
  EXPECT_EQ(Value(sink, "nvmeof_rdma_pause_storm_events_total", {{"level", "error"}}), 2);
  EXPECT_EQ(Count(sink, "nvmeof_rdma_dcb_pfc_enabled"), 0);
}

TEST(PfcFixtureSource, DuplicateNamesGiveOneSeriesAndUnknownDriversNone) {
  PfcTree t;
  t.RdmaDevice("mlx5_0", "dup0");
  t.RdmaDevice("foo0", "foo0");
  t.Write("eth/dup0/driver", "mlx5_core");  // just the name
  t.Write("eth/dup0/stats", "NIC statistics:\n     rx_prio3_pause: 5\n     rx_prio3_pause: 6\n");
  t.Write("eth/foo0/driver", "foo\n");
  t.Write("eth/foo0/stats", "NIC statistics:\n     rx_prio3_pause: 5\n     rx_pause_frames: 1\n");
  MetricSink sink;
  EXPECT_TRUE(NewPfcCollector(FixtureOptions(t.path() + "/sys", t.path() + "/eth"))->Collect(sink));
  EXPECT_EQ(Count(sink, "nvmeof_rdma_pfc_pause_frames_total"), 1);
  EXPECT_EQ(Value(sink, "nvmeof_rdma_pfc_pause_frames_total", {{"netdev", "dup0"}}), 5);
  EXPECT_EQ(Value(sink, "nvmeof_rdma_netdev_info", {{"netdev", "foo0"}, {"driver", "foo"}}), 1);
  EXPECT_EQ(sink.skipped(), 0u);
}

TEST(ParseEthtoolStats, EthtoolSFormat) {
  size_t bad = 99;
  auto stats = ParseEthtoolStats(
      "NIC statistics:\r\n"
      "     rx_prio3_pause: 184312\r\n"
      "     [0]: rx_ucast_packets: 12003344\n"
      "\n"
      "     rx_dropped.nic: 342   \n"
      "     : 5\n"
      "     no value here\n"
      "     x: y\n"
      "     big: 18446744073709551615",
      &bad);
  ASSERT_EQ(stats.size(), 4u);
  EXPECT_EQ(stats[0].name, "rx_prio3_pause");
  EXPECT_EQ(stats[0].value, 184312u);
  EXPECT_EQ(stats[1].name, "[0]: rx_ucast_packets");
  EXPECT_EQ(stats[1].value, 12003344u);
  EXPECT_EQ(stats[2].name, "rx_dropped.nic");
  EXPECT_EQ(stats[3].value, UINT64_MAX);
  EXPECT_EQ(bad, 3u);
  EXPECT_TRUE(ParseEthtoolStats("", &bad).empty());
  EXPECT_EQ(bad, 0u);
}

TEST(ParseEthtoolDriver, FullOutputOrJustTheName) {
  auto full = ParseEthtoolDriver(
      "driver: ice\nversion: 6.1.0\nfirmware-version: 4.40 0x8001c967 1.3534.0\n"
      "expansion-rom-version: \nbus-info: 0000:af:00.0\n");
  EXPECT_EQ(full.driver, "ice");
  EXPECT_EQ(full.firmware_version, "4.40 0x8001c967 1.3534.0");
  EXPECT_EQ(full.bus_info, "0000:af:00.0");
  EXPECT_EQ(ParseEthtoolDriver("bnxt_en\n").driver, "bnxt_en");
  EXPECT_EQ(ParseEthtoolDriver("").driver, "");
  EXPECT_EQ(ParseEthtoolDriver("two words").driver, "");
}

TEST(ParseDcbPfc, Format) {
  IeeePfc pfc;
  ASSERT_TRUE(
      ParseDcbPfc("pfc_cap 8\npfc_en 0x08\nmbc 0\ndelay 7\n"
                  "requests 0 0 0 52870 0 0 0 0\nindications 0 0 0 184312 0 0 0 0\n",
                  &pfc));
  EXPECT_EQ(pfc.pfc_cap, 8);
  EXPECT_EQ(pfc.pfc_en, 8);
  EXPECT_EQ(pfc.delay, 7);
  EXPECT_EQ(pfc.requests[3], 52870u);
  EXPECT_EQ(pfc.indications[3], 184312u);
  EXPECT_TRUE(
      ParseDcbPfc("pfc_en 24\nrequests 0 0 0 0 0 0 0 0\nindications 0 0 0 0 0 0 0 0", &pfc));
  EXPECT_EQ(pfc.pfc_en, 24);
  // Missing pieces, wrong counts, unknown keys, out of range.
  EXPECT_FALSE(ParseDcbPfc("", &pfc));
  EXPECT_FALSE(ParseDcbPfc("pfc_en 0x08\nrequests 0 0 0 0 0 0 0 0\n", &pfc));
  EXPECT_FALSE(ParseDcbPfc("pfc_en 0x08\nrequests 0 0 0\nindications 0 0 0 0 0 0 0 0", &pfc));
  EXPECT_FALSE(
      ParseDcbPfc("pfc_en 0x100\nrequests 0 0 0 0 0 0 0 0\nindications 0 0 0 0 0 0 0 0", &pfc));
  EXPECT_FALSE(ParseDcbPfc(
      "pfc_en 0x08\nfoo 1\nrequests 0 0 0 0 0 0 0 0\nindications 0 0 0 0 0 0 0 0", &pfc));
  EXPECT_FALSE(
      ParseDcbPfc("pfc_en 0xzz\nrequests 0 0 0 0 0 0 0 0\nindications 0 0 0 0 0 0 0 0", &pfc));
}

// ---- A fake source: errors and DCB outcomes
// ------------------------------------------------------

class FakeSource : public NetdevStatsSource {
 public:
  std::optional<EthtoolDriverInfo> driver;
  std::optional<EthtoolStats> stats;
  ReadStatus dcb = ReadStatus::kAbsent;
  std::optional<EthtoolDriverInfo> Driver(const std::string&) override { return driver; }
  std::optional<EthtoolStats> Ethtool(const std::string&) override { return stats; }
  ReadStatus Dcb(const std::string&, IeeePfc* out) override {
    if (dcb == ReadStatus::kOk) out->pfc_en = 0x08;
    return dcb;
  }
};

TEST(PfcSource, DcbAbsentIsNotASkipDcbFailureIs) {
  PfcTree t;
  t.RdmaDevice("rxe0", "veth0");
  auto run = [&](ReadStatus dcb, size_t* skipped, int* enabled) {
    auto src = std::make_unique<FakeSource>();
    src->driver = EthtoolDriverInfo{"veth", "1.0", "", ""};
    src->stats = EthtoolStats{};
    src->dcb = dcb;
    CollectorOptions o;
    o.paths.sysfs = t.path() + "/sys";
    MetricSink sink;
    EXPECT_TRUE(NewPfcCollectorWithSource(o, std::move(src))->Collect(sink));
    *skipped = sink.skipped();
    *enabled = Count(sink, "nvmeof_rdma_dcb_pfc_enabled");
  };
  size_t skipped;
  int enabled;
  run(ReadStatus::kAbsent, &skipped, &enabled);
  EXPECT_EQ(skipped, 0u);
  EXPECT_EQ(enabled, 0);
  run(ReadStatus::kFailed, &skipped, &enabled);
  EXPECT_EQ(skipped, 1u);
  EXPECT_EQ(enabled, 0);
  run(ReadStatus::kOk, &skipped, &enabled);
  EXPECT_EQ(skipped, 0u);
  EXPECT_EQ(enabled, 8);
}

TEST(PfcSource, FixtureDirChoosesTheFixtureSource) {
  PfcTree t;
  t.RdmaDevice("mlx5_0", "ens1f0np0");
  MetricSink sink;
  ASSERT_TRUE(NewPfcCollector(FixtureOptions(t.path() + "/sys", kEthtool))->Collect(sink));
  EXPECT_EQ(Value(sink, "nvmeof_rdma_netdev_info", {{"netdev", "ens1f0np0"}}), 1);
  EXPECT_NE(FindCollector("pfc"), nullptr);
}

// ---- The real kernel: veth, virtio_net, DCB
// --------------------------------------------------------

int Shell(const std::string& cmd) { return std::system((cmd + " >/dev/null 2>&1").c_str()); }

// A veth pair in this network namespace, removed again by the destructor.
class VethPair {
 public:
  VethPair(std::string a, std::string b) : a_(std::move(a)), b_(std::move(b)) {
    Shell("ip link del " + a_);
    ok_ = Shell("ip link add " + a_ + " type veth peer name " + b_) == 0;
  }
  ~VethPair() {
    if (ok_) Shell("ip link del " + a_);
  }
  bool ok() const { return ok_; }

 private:
  std::string a_, b_;
  bool ok_ = false;
};

class PfcRealTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "needs root to create a veth pair";
    if (Shell("ip -V") != 0) GTEST_SKIP() << "no ip(8)";
  }
};

TEST_F(PfcRealTest, VethThroughTheIoctl) {
  VethPair veth("nvtestv0", "nvtestv1");
  if (!veth.ok()) GTEST_SKIP() << "ip link add type veth failed";
  EthtoolReader reader;
  EthtoolDriverInfo info;
  ASSERT_EQ(reader.DriverInfo("nvtestv0", &info), 0);
  EXPECT_EQ(info.driver, "veth");

  std::vector<EthtoolStat> stats;
  ASSERT_EQ(reader.Stats("nvtestv0", &stats), 0);
  ASSERT_FALSE(stats.empty());
  auto peer = ReadU64(std::string("/sys/class/net/nvtestv1/ifindex"));
  ASSERT_TRUE(peer);
  bool found = false;
  for (const auto& s : stats) {
    if (s.name == "peer_ifindex") {
      found = true;
      EXPECT_EQ(s.value, *peer);
    }
  }
  EXPECT_TRUE(found) << "no peer_ifindex in veth statistics";

  IeeePfc pfc;
  const int err = ReadIeeePfc("nvtestv0", &pfc);
  EXPECT_TRUE(err == EOPNOTSUPP || err == ENODEV || err == ENOENT) << "errno " << err;
}

// veth's statistics count follows its channel count: flip it between 1 and 4 queues while
// reading, so the count changes between ETHTOOL_GSSET_INFO, GSTRINGS and GSTATS for real.
TEST_F(PfcRealTest, StatsWhileTheCountChanges) {
  Shell("ip link del nvtestv4");
  if (Shell("ip link add nvtestv4 numtxqueues 4 numrxqueues 4 type veth peer name nvtestv5 "
            "numtxqueues 4 numrxqueues 4") != 0) {
    GTEST_SKIP() << "multi-queue veth not available";
  }
  const std::string flip =
      "while :; do ethtool -L nvtestv4 rx 1 tx 1; ethtool -L nvtestv4 rx 4 tx 4; done "
      ">/dev/null 2>&1";
  if (Shell("ethtool -L nvtestv4 rx 1 tx 1") != 0) {
    Shell("ip link del nvtestv4");
    GTEST_SKIP() << "ethtool -L not available";
  }
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::setpgid(0, 0);  // its own group, so the test stops exactly the loop and its ethtools
    ::execl("/bin/sh", "sh", "-c", flip.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ::setpgid(pid, pid);
  const auto peer = ReadU64(std::string("/sys/class/net/nvtestv5/ifindex"));
  int sset_calls = 0;  // more of them than reads: a count change was noticed and retried
  int efaults = 0;     // an older kernel copying past our buffer into the guard page
  EthtoolReader reader([&](const std::string& netdev, void* cmd) {
    std::uint32_t op;
    std::memcpy(&op, cmd, sizeof op);
    sset_calls += op == ETHTOOL_GSSET_INFO;
    const int err = SiocEthtool(netdev, cmd);
    efaults += err == EFAULT;
    return err;
  });
  int ok = 0, again = 0, other = 0;
  for (int i = 0; i < 3000; ++i) {
    std::vector<EthtoolStat> stats;
    const int err = reader.Stats("nvtestv4", &stats);
    if (err == EAGAIN) {
      ++again;
      continue;
    }
    if (err != 0) {
      ++other;
      continue;
    }
    ++ok;
    // Names and values still line up: peer_ifindex first, then whole per-queue groups.
    ASSERT_FALSE(stats.empty());
    EXPECT_EQ(stats[0].name, "peer_ifindex");
    if (peer) {
      EXPECT_EQ(stats[0].value, *peer);
    }
    EXPECT_EQ((stats.size() - 1) % 9, 0u) << stats.size();
  }
  ::kill(-pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
  Shell("ip link del nvtestv4");
  EXPECT_GT(ok, 0);
  EXPECT_EQ(other, 0);
  std::printf(
      "3000 reads while flipping channels: %d consistent, %d gave up (EAGAIN), %d retries "
      "(%d after EFAULT)\n",
      ok, again, sset_calls - 3000, efaults);
}

TEST_F(PfcRealTest, VanishedNetdevIsEnodev) {
  EthtoolReader reader;
  EthtoolDriverInfo info;
  std::vector<EthtoolStat> stats;
  EXPECT_EQ(reader.DriverInfo("nvtest_gone", &info), ENODEV);
  EXPECT_EQ(reader.Stats("nvtest_gone", &stats), ENODEV);
  IeeePfc pfc;
  EXPECT_EQ(ReadIeeePfc("nvtest_gone", &pfc), ENODEV);
}

TEST_F(PfcRealTest, CollectorOnARealVethBoundToAFakeRdmaDevice) {
  VethPair veth("nvtestv2", "nvtestv3");
  if (!veth.ok()) GTEST_SKIP() << "ip link add type veth failed";
  PfcTree t;
  t.RdmaDevice("rxe_test", "nvtestv2");
  t.RdmaDevice("rxe_gone", "nvtest_gone");
  CollectorOptions o;
  o.paths.sysfs = t.path() + "/sys";
  MetricSink sink;
  ASSERT_TRUE(NewPfcCollector(o)->Collect(sink));
  EXPECT_EQ(Value(sink, "nvmeof_rdma_netdev_info",
                  {{"netdev", "nvtestv2"}, {"driver", "veth"}, {"rdma_device", "rxe_test"}}),
            1);
  EXPECT_EQ(Count(sink, "nvmeof_rdma_netdev_info"), 1);
  EXPECT_EQ(Count(sink, "nvmeof_rdma_dcb_pfc_enabled"), 0);
  EXPECT_EQ(sink.skipped(), 2u);  // nvtest_gone: driver info and statistics (ENODEV)
}

TEST_F(PfcRealTest, VirtioNetIfPresent) {
  std::string netdev;
  for (const auto& n : ListDir("/sys/class/net")) {
    if (ReadLinkBase("/sys/class/net/" + n + "/device/driver").value_or("") == "virtio_net") {
      netdev = n;
      break;
    }
  }
  if (netdev.empty()) GTEST_SKIP() << "no virtio_net netdev";
  EthtoolReader reader;
  EthtoolDriverInfo info;
  ASSERT_EQ(reader.DriverInfo(netdev, &info), 0);
  EXPECT_EQ(info.driver, "virtio_net");
  std::vector<EthtoolStat> stats;
  ASSERT_EQ(reader.Stats(netdev, &stats), 0);
  bool kicks = false;
  for (const auto& s : stats) kicks = kicks || s.name == "tx_kicks" || s.name == "rx_kicks";
  EXPECT_TRUE(kicks);
  IeeePfc pfc;
  const int err = ReadIeeePfc(netdev, &pfc);
  EXPECT_TRUE(err == EOPNOTSUPP || err == ENOENT) << "errno " << err;
}

}  // namespace
}  // namespace nvmeof
