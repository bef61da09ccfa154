// Tests for the rdma collector against tests/fixtures/sysfs (class/infiniband links into
// devices/...), plus small trees written to a temp dir for cases the shared fixture should not
// carry (several netdevs on one port, odd rate/state strings, newer driver names).
//
// Fixture devices: mlx5_0 (ConnectX-6 Dx RoCE, ens1f0np0), mlx5_2 (its second PF, link down,
// ens1f1np1, one garbage hw_counter), mlx5_1 (ConnectX-6 HDR InfiniBand: IB GIDs have no
// netdev, so its ndevs/0 is a dangling symlink that fails to read like the kernel's EINVAL),
// irdma0 (E810 iWARP, ens2f0, counters/ answer "N/A (no PMA)"), bnxt_re0 (BCM57508, ens3f0np0,
// pre-2025 counter names), rxe0 (veth0), siw0 (eth1).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "collectors/rdma_counter_map.h"
#include "collectors/registry.h"
#include "tests/unit/scratch_tree.h"

namespace nvmeof {
namespace {

namespace fs = std::filesystem;

const std::string kSysfs = std::string(NVMEOF_FIXTURES) + "/sysfs";

struct Scrape {
  MetricSink sink;
  bool ok = false;
};

Scrape ScrapeRdma(const std::string& sysfs, NameFilter devices = {}, bool traffic_detail = false) {
  CollectorOptions options;
  options.paths.sysfs = sysfs;
  options.rdma.devices = std::move(devices);
  options.rdma.traffic_detail = traffic_detail;
  Scrape s;
  s.ok = NewRdmaCollector(options)->Collect(s.sink);
  return s;
}

// With rdma.traffic_detail: the families that test the counter maps of every driver.
Scrape ScrapeRdmaDetail(const std::string& sysfs) { return ScrapeRdma(sysfs, {}, true); }

bool HasLabels(const prometheus::ClientMetric& m, const Labels& want) {
  for (const auto& w : want) {
    bool found = false;
    for (const auto& l : m.label) found |= (l.name == w.name && l.value == w.value);
    if (!found) return false;
  }
  return true;
}

// Series of `family` whose labels include all of `want`.
std::vector<const prometheus::ClientMetric*> Find(const MetricSink& sink, std::string_view family,
                                                  const Labels& want) {
  std::vector<const prometheus::ClientMetric*> out;
  if (const auto* f = sink.Find(family)) {
    for (const auto& m : f->metric) {
      if (HasLabels(m, want)) out.push_back(&m);
    }
  }
  return out;
}

// The value of the one series matching, or nullopt if none (fails the test if several match).
std::optional<double> Value(const MetricSink& sink, std::string_view family, const Labels& want) {
  auto found = Find(sink, family, want);
  if (found.empty()) return std::nullopt;
  EXPECT_EQ(found.size(), 1u) << family;
  const auto* f = sink.Find(family);
  return f->type == prometheus::MetricType::Counter ? found[0]->counter.value
                                                    : found[0]->gauge.value;
}

// The value of each family in `want` (family, value) on the series with the labels `on`.
void ExpectValues(const MetricSink& sink, const Labels& on,
                  const std::vector<std::pair<std::string, double>>& want) {
  for (const auto& [family, value] : want) EXPECT_EQ(Value(sink, family, on), value) << family;
}

std::string Label(const prometheus::ClientMetric& m, std::string_view name) {
  for (const auto& l : m.label) {
    if (l.name == name) return l.value;
  }
  return "<missing>";
}

// A scratch sysfs root, removed at the end of the test.
class TempSysfs {
 public:
  const std::string& root() const { return dir_.path(); }
  void Write(const std::string& rel, const std::string& content) const {
    dir_.Write(rel, content + "\n");
  }
  // A minimal port: class/infiniband/<dev>/ports/<port>/...
  void Port(const std::string& dev, const std::string& port, const std::string& state,
            const std::string& rate) const {
    const std::string p = "class/infiniband/" + dev + "/ports/" + port + "/";
    Write(p + "state", state);
    Write(p + "phys_state", "5: LinkUp");
    Write(p + "rate", rate);
    Write(p + "link_layer", "Ethernet");
  }
  // Files of hw_counters/ (name, value): a port's, or the device's where `port` is empty.
  void HwCounters(const std::string& dev, const std::string& port,
                  const std::vector<std::pair<std::string, std::string>>& counters) const {
    const std::string dir =
        "class/infiniband/" + dev + (port.empty() ? "" : "/ports/" + port) + "/hw_counters/";
    for (const auto& [name, value] : counters) Write(dir + name, value);
  }

 private:
  ScratchDir dir_;
};

TEST(RdmaCollector, DeviceInfoPerDriver) {
  auto s = ScrapeRdma(kSysfs);
  ASSERT_TRUE(s.ok);
  ASSERT_EQ(Find(s.sink, "nvmeof_rdma_device_info", {}).size(), 7u);
  auto info = [&](const std::string& dev) {
    auto found = Find(s.sink, "nvmeof_rdma_device_info", {{"rdma_device", dev}});
    EXPECT_EQ(found.size(), 1u) << dev;
    EXPECT_EQ(found[0]->gauge.value, 1);
    return found[0];
  };
  const auto* mlx = info("mlx5_0");
  EXPECT_EQ(Label(*mlx, "node_type"), "CA");
  EXPECT_EQ(Label(*mlx, "hca_type"), "MT4125");
  EXPECT_EQ(Label(*mlx, "fw_ver"), "22.39.1002");
  EXPECT_EQ(Label(*mlx, "node_guid"), "b8ce:f603:00a1:b2c4");
  EXPECT_EQ(Label(*mlx, "board_id"), "MT_0000000359");
  EXPECT_EQ(Label(*info("mlx5_1"), "hca_type"), "MT4123");
  // irdma has neither hca_type nor board_id: empty labels, the series is still there.
  const auto* irdma = info("irdma0");
  EXPECT_EQ(Label(*irdma, "node_type"), "RNIC");
  EXPECT_EQ(Label(*irdma, "hca_type"), "");
  EXPECT_EQ(Label(*irdma, "board_id"), "");
  EXPECT_EQ(Label(*irdma, "fw_ver"), "1.71");
  EXPECT_EQ(Label(*info("bnxt_re0"), "hca_type"), "Broadcom NetXtreme-C/E RoCE Driver HCA");
  EXPECT_EQ(Label(*info("rxe0"), "fw_ver"), "");
  EXPECT_EQ(Label(*info("siw0"), "node_type"), "RNIC");
}

TEST(RdmaCollector, PortInfoNetdevs) {
  auto s = ScrapeRdma(kSysfs);
  auto netdev_of = [&](const std::string& dev) {
    auto found = Find(s.sink, "nvmeof_rdma_port_info", {{"rdma_device", dev}, {"rdma_port", "1"}});
    EXPECT_EQ(found.size(), 1u) << dev;  // duplicate GID slots collapse to one netdev
    return found.empty() ? "<none>" : Label(*found[0], "netdev");
  };
  EXPECT_EQ(netdev_of("mlx5_0"), "ens1f0np0");
  EXPECT_EQ(netdev_of("mlx5_2"), "ens1f1np1");
  EXPECT_EQ(netdev_of("mlx5_1"), "");  // InfiniBand: no netdev in the GID table
  EXPECT_EQ(netdev_of("irdma0"), "ens2f0");
  EXPECT_EQ(netdev_of("bnxt_re0"), "ens3f0np0");
  EXPECT_EQ(netdev_of("rxe0"), "veth0");
  EXPECT_EQ(netdev_of("siw0"), "eth1");
  EXPECT_EQ(
      Label(*Find(s.sink, "nvmeof_rdma_port_info", {{"rdma_device", "mlx5_1"}})[0], "link_layer"),
      "InfiniBand");
  EXPECT_EQ(
      Label(*Find(s.sink, "nvmeof_rdma_port_info", {{"rdma_device", "mlx5_0"}})[0], "link_layer"),
      "Ethernet");
}

TEST(RdmaCollector, PortStateIsOneHot) {
  auto s = ScrapeRdma(kSysfs);
  auto states =
      Find(s.sink, "nvmeof_rdma_port_state", {{"rdma_device", "mlx5_0"}, {"rdma_port", "1"}});
  ASSERT_EQ(states.size(), 5u);
  double sum = 0;
  for (const auto* m : states) sum += m->gauge.value;
  EXPECT_EQ(sum, 1);
  // A one-hot family's series for (device, state).
  auto one_hot = [&](const char* family, const std::string& dev, const std::string& state) {
    return Value(s.sink, family, {{"rdma_device", dev}, {"state", state}});
  };
  EXPECT_EQ(one_hot("nvmeof_rdma_port_state", "mlx5_0", "ACTIVE"), 1);
  EXPECT_EQ(one_hot("nvmeof_rdma_port_state", "mlx5_0", "DOWN"), 0);
  EXPECT_EQ(one_hot("nvmeof_rdma_port_state", "mlx5_2", "DOWN"), 1);
  EXPECT_EQ(one_hot("nvmeof_rdma_port_state", "mlx5_2", "ACTIVE"), 0);
  EXPECT_EQ(one_hot("nvmeof_rdma_port_state", "mlx5_0", "ACTIVE_DEFER"), 0);

  EXPECT_EQ(Find(s.sink, "nvmeof_rdma_port_phys_state", {{"rdma_device", "mlx5_0"}}).size(), 7u);
  EXPECT_EQ(one_hot("nvmeof_rdma_port_phys_state", "mlx5_0", "LinkUp"), 1);
  EXPECT_EQ(one_hot("nvmeof_rdma_port_phys_state", "mlx5_2", "Disabled"), 1);
  EXPECT_EQ(one_hot("nvmeof_rdma_port_phys_state", "mlx5_2", "LinkUp"), 0);
  EXPECT_EQ(one_hot("nvmeof_rdma_port_phys_state", "siw0", "Phy Test"), 0);
}

TEST(RdmaCollector, PortRateInBytesPerSecond) {
  auto s = ScrapeRdma(kSysfs);
  auto rate = [&](const std::string& dev) {
    return Value(s.sink, "nvmeof_rdma_port_rate_bytes_per_second",
                 {{"rdma_device", dev}, {"rdma_port", "1"}});
  };
  EXPECT_EQ(rate("mlx5_0"), 12.5e9);     // 100 Gb/sec (4X EDR)
  EXPECT_EQ(rate("mlx5_1"), 25e9);       // 200 Gb/sec (4X HDR)
  EXPECT_EQ(rate("mlx5_2"), 5e9);        // 40 Gb/sec (4X QDR), what a down mlx5 port shows
  EXPECT_EQ(rate("bnxt_re0"), 3.125e9);  // 25 Gb/sec (1X EDR)
  EXPECT_EQ(rate("rxe0"), 1.25e9);       // 10 Gb/sec (1X QDR)
  EXPECT_EQ(rate("siw0"), 312.5e6);      // 2.5 Gb/sec (1X SDR)
}

TEST(RdmaCollector, PortRateStrings) {
  TempSysfs t;
  t.Port("a", "1", "4: ACTIVE", "400 Gb/sec (4X NDR)");
  t.Port("b", "1", "4: ACTIVE", "5 Gb/sec (1X DDR)");
  t.Port("c", "1", "4: ACTIVE", "Gb/sec");
  t.Port("d", "1", "4: ACTIVE", "fast");
  t.Port("e", "1", "4: ACTIVE", "-10 Gb/sec (1X SDR)");
  auto s = ScrapeRdma(t.root());
  EXPECT_EQ(Value(s.sink, "nvmeof_rdma_port_rate_bytes_per_second", {{"rdma_device", "a"}}), 50e9);
  EXPECT_EQ(Value(s.sink, "nvmeof_rdma_port_rate_bytes_per_second", {{"rdma_device", "b"}}), 625e6);
  for (const char* dev : {"c", "d", "e"}) {
    EXPECT_FALSE(Value(s.sink, "nvmeof_rdma_port_rate_bytes_per_second", {{"rdma_device", dev}}))
        << dev;
  }
  EXPECT_EQ(s.sink.skipped(), 3u);
}

TEST(RdmaCollector, UnknownOrUnreadableState) {
  TempSysfs t;
  t.Port("nop", "1", "0: NOP", "10 Gb/sec (1X QDR)");
  t.Port("odd", "1", "ACTIVE", "10 Gb/sec (1X QDR)");
  auto s = ScrapeRdma(t.root());
  // NOP is a state the kernel reports but not one we export: every known state is 0, and
  // counted, so a one-hot that sums to 0 is never silent.
  auto nop = Find(s.sink, "nvmeof_rdma_port_state", {{"rdma_device", "nop"}});
  ASSERT_EQ(nop.size(), 5u);
  for (const auto* m : nop) EXPECT_EQ(m->gauge.value, 0);
  EXPECT_EQ(s.sink.anomalies().at("unknown_state"), 1u);
  // Not "<n>: <name>": the family is skipped for that port, not guessed.
  EXPECT_TRUE(Find(s.sink, "nvmeof_rdma_port_state", {{"rdma_device", "odd"}}).empty());
  EXPECT_EQ(s.sink.skipped(), 1u);
}

// The state is the kernel's number; the name is only its table's spelling of it. Before, a
// phys_state of "4: ACTIVE" matched no name and served all 7 states as 0, counting nothing.
TEST(RdmaLayouts, PhysStateServedByNumber) {
  auto s = ScrapeRdma(std::string(NVMEOF_FIXTURES) + "/layouts/rdma-phys-state-mismatch/sysfs");
  ASSERT_TRUE(s.ok);
  const auto phys = Find(s.sink, "nvmeof_rdma_port_phys_state", {{"rdma_device", "rxe0"}});
  ASSERT_EQ(phys.size(), 7u);
  double sum = 0;
  for (const auto* m : phys) sum += m->gauge.value;
  EXPECT_EQ(sum, 1);
  // 4 is PortConfigurationTraining in the kernel's phys_state table (5 is LinkUp).
  EXPECT_EQ(Value(s.sink, "nvmeof_rdma_port_phys_state",
                  {{"rdma_device", "rxe0"}, {"state", "PortConfigurationTraining"}}),
            1);
  // The port state file's "4: ACTIVE" agrees with its table: served, not counted.
  EXPECT_EQ(Value(s.sink, "nvmeof_rdma_port_state", {{"rdma_device", "rxe0"}, {"state", "ACTIVE"}}),
            1);
  ASSERT_EQ(s.sink.anomalies().size(), 1u);
  EXPECT_EQ(s.sink.anomalies().at("state_number_mismatch"), 1u);
}

TEST(RdmaCollector, StateNumberOutsideTheTableIsAllZeroAndCounted) {
  TempSysfs t;
  t.Port("far", "1", "9: ACTIVE", "10 Gb/sec (1X QDR)");  // a name we know, a number we do not
  auto s = ScrapeRdma(t.root());
  auto far = Find(s.sink, "nvmeof_rdma_port_state", {{"rdma_device", "far"}});
  ASSERT_EQ(far.size(), 5u);
  for (const auto* m : far) EXPECT_EQ(m->gauge.value, 0);
  EXPECT_EQ(s.sink.anomalies().at("unknown_state"), 1u);
}

TEST(RdmaCollector, PortCountersBytesAreFourByteWords) {
  auto s = ScrapeRdmaDetail(kSysfs);
  ExpectValues(s.sink, {{"rdma_device", "mlx5_0"}, {"rdma_port", "1"}},
               {{"nvmeof_rdma_port_transmit_bytes_total", 1843827611239.0 * 4},
                {"nvmeof_rdma_port_receive_bytes_total", 2511037748021.0 * 4},
                {"nvmeof_rdma_port_transmit_packets_total", 2230472981},
                {"nvmeof_rdma_port_receive_packets_total", 2712950443},
                {"nvmeof_rdma_port_unicast_transmit_packets_total", 2230470112},
                {"nvmeof_rdma_port_unicast_receive_packets_total", 2712947031},
                {"nvmeof_rdma_port_multicast_transmit_packets_total", 2869},
                {"nvmeof_rdma_port_multicast_receive_packets_total", 3412}});
  EXPECT_EQ(s.sink.Find("nvmeof_rdma_port_transmit_bytes_total")->type,
            prometheus::MetricType::Counter);

  // Everything else in counters/ is generic, by file name; the named ones are not repeated.
  auto generic = [&](const std::string& dev, const std::string& counter) {
    return Value(s.sink, "nvmeof_rdma_port_counters_total",
                 {{"rdma_device", dev}, {"rdma_port", "1"}, {"counter", counter}});
  };
  EXPECT_EQ(generic("mlx5_0", "port_rcv_errors"), 14);
  EXPECT_EQ(generic("mlx5_0", "port_xmit_discards"), 3);
  EXPECT_EQ(generic("mlx5_0", "port_xmit_wait"), 918273);
  EXPECT_EQ(generic("mlx5_0", "symbol_error"), 0);
  EXPECT_EQ(generic("mlx5_0", "VL15_dropped"), 0);
  EXPECT_EQ(generic("mlx5_1", "symbol_error"), 3);
  EXPECT_EQ(generic("mlx5_2", "link_downed"), 1);
  EXPECT_FALSE(generic("mlx5_0", "port_xmit_data"));
  EXPECT_EQ(Find(s.sink, "nvmeof_rdma_port_counters_total", {{"rdma_device", "mlx5_0"}}).size(),
            21u - 8u);
  // rxe, bnxt_re and siw have no counters/ directory at all.
  for (const char* dev : {"rxe0", "bnxt_re0", "siw0"}) {
    EXPECT_TRUE(Find(s.sink, "nvmeof_rdma_port_counters_total", {{"rdma_device", dev}}).empty())
        << dev;
    EXPECT_FALSE(Value(s.sink, "nvmeof_rdma_port_transmit_bytes_total", {{"rdma_device", dev}}))
        << dev;
  }
}

// rdma.traffic_detail (off by default): the traffic breakdowns no panel reads are not served,
// and their raw driver counters stay in the generic family.
TEST(RdmaCollector, TrafficDetailOnlyWithTheOption) {
  const char* detail[] = {"nvmeof_rdma_port_unicast_transmit_packets_total",
                          "nvmeof_rdma_port_unicast_receive_packets_total",
                          "nvmeof_rdma_port_multicast_transmit_packets_total",
                          "nvmeof_rdma_port_multicast_receive_packets_total",
                          "nvmeof_rdma_transmit_packets_total",
                          "nvmeof_rdma_receive_packets_total",
                          "nvmeof_rdma_received_write_requests_total",
                          "nvmeof_rdma_received_read_requests_total",
                          "nvmeof_rdma_received_atomic_requests_total"};
  auto plain = ScrapeRdma(kSysfs);
  auto full = ScrapeRdmaDetail(kSysfs);
  for (const char* family : detail) {
    EXPECT_EQ(plain.sink.Find(family), nullptr) << family;
    EXPECT_NE(full.sink.Find(family), nullptr) << family;
  }
  const Labels mlx = {{"rdma_device", "mlx5_0"}, {"rdma_port", "1"}};
  EXPECT_EQ(
      Value(plain.sink, "nvmeof_rdma_hw_counters_total",
            {{"rdma_device", "mlx5_0"}, {"rdma_port", "1"}, {"counter", "rx_write_requests"}}),
      48211903);
  // Not moved into the generic PMA family either, and nothing is counted as skipped.
  EXPECT_FALSE(Value(plain.sink, "nvmeof_rdma_port_counters_total",
                     {{"rdma_device", "mlx5_0"}, {"counter", "unicast_xmit_packets"}}));
  EXPECT_EQ(Value(plain.sink, "nvmeof_rdma_port_transmit_packets_total", mlx), 2230472981);
  EXPECT_EQ(plain.sink.skipped(), full.sink.skipped());
}

TEST(RdmaCollector, IwarpNoPmaAndGarbageAreSkippedNotZero) {
  auto s = ScrapeRdma(kSysfs);
  // irdma0: all 16 counters/ files say "N/A (no PMA)".
  EXPECT_TRUE(Find(s.sink, "nvmeof_rdma_port_counters_total", {{"rdma_device", "irdma0"}}).empty());
  EXPECT_FALSE(Value(s.sink, "nvmeof_rdma_port_transmit_bytes_total", {{"rdma_device", "irdma0"}}));
  EXPECT_FALSE(
      Value(s.sink, "nvmeof_rdma_port_receive_packets_total", {{"rdma_device", "irdma0"}}));
  // mlx5_2 port 1: np_cnp_sent holds garbage, so neither its generic nor its stable series exist.
  EXPECT_FALSE(Value(s.sink, "nvmeof_rdma_hw_counters_total",
                     {{"rdma_device", "mlx5_2"}, {"rdma_port", "1"}, {"counter", "np_cnp_sent"}}));
  EXPECT_FALSE(
      Value(s.sink, "nvmeof_rdma_cnp_sent_total", {{"rdma_device", "mlx5_2"}, {"rdma_port", "1"}}));
  EXPECT_EQ(Value(s.sink, "nvmeof_rdma_cnp_handled_total",
                  {{"rdma_device", "mlx5_2"}, {"rdma_port", "1"}}),
            0);
  // The device-scope copy of the same counter is fine.
  EXPECT_EQ(Value(s.sink, "nvmeof_rdma_hw_counters_total",
                  {{"rdma_device", "mlx5_2"}, {"rdma_port", "0"}, {"counter", "np_cnp_sent"}}),
            0);
  EXPECT_EQ(s.sink.skipped(), 16u + 2u);
}

TEST(RdmaCollector, HwCountersGenericPortAndDeviceScope) {
  auto s = ScrapeRdma(kSysfs);
  auto hw = [&](const std::string& dev, const std::string& port, const std::string& counter) {
    return Value(s.sink, "nvmeof_rdma_hw_counters_total",
                 {{"rdma_device", dev}, {"rdma_port", port}, {"counter", counter}});
  };
  EXPECT_EQ(hw("mlx5_0", "1", "np_cnp_sent"), 201316);
  EXPECT_EQ(hw("mlx5_0", "1", "roce_adp_retrans"), 57);
  EXPECT_EQ(hw("mlx5_0", "0", "np_cnp_sent"), 201316);  // device scope: port="0"
  EXPECT_EQ(hw("rxe0", "1", "ack_deferred"), 1422);
  EXPECT_EQ(hw("irdma0", "1", "ip4InOctets"), 771300318842);
  EXPECT_EQ(hw("bnxt_re0", "1", "active_qps"), 66);
  // lifespan is the driver's cache time, not a counter.
  EXPECT_TRUE(Find(s.sink, "nvmeof_rdma_hw_counters_total", {{"counter", "lifespan"}}).empty());
  EXPECT_EQ(Find(s.sink, "nvmeof_rdma_hw_counters_total", {{"rdma_device", "rxe0"}}).size(), 15u);
  EXPECT_EQ(
      Find(s.sink, "nvmeof_rdma_hw_counters_total", {{"rdma_device", "mlx5_0"}, {"rdma_port", "1"}})
          .size(),
      31u);
  EXPECT_EQ(
      Find(s.sink, "nvmeof_rdma_hw_counters_total", {{"rdma_device", "mlx5_0"}, {"rdma_port", "0"}})
          .size(),
      31u);
  EXPECT_TRUE(Find(s.sink, "nvmeof_rdma_hw_counters_total", {{"rdma_device", "siw0"}}).empty());
  // Device scope repeats port 1 on mlx5: it gets no stable names (sums would double count).
  EXPECT_TRUE(Find(s.sink, "nvmeof_rdma_cnp_sent_total", {{"rdma_port", "0"}}).empty());
}

TEST(RdmaCollector, StableNamesMlx5) {
  auto s = ScrapeRdmaDetail(kSysfs);
  const Labels p = {{"rdma_device", "mlx5_0"}, {"rdma_port", "1"}};
  ExpectValues(s.sink, p,
               {{"nvmeof_rdma_cnp_sent_total", 201316},
                {"nvmeof_rdma_cnp_handled_total", 158233},
                {"nvmeof_rdma_cnp_ignored_total", 19},
                {"nvmeof_rdma_ecn_marked_packets_total", 201774},
                {"nvmeof_rdma_out_of_sequence_total", 3391},
                {"nvmeof_rdma_packet_sequence_errors_total", 842},
                {"nvmeof_rdma_implied_nak_sequence_errors_total", 5},
                {"nvmeof_rdma_local_ack_timeout_errors_total", 64},
                {"nvmeof_rdma_rnr_nak_errors_total", 11},
                {"nvmeof_rdma_duplicate_requests_total", 27},
                {"nvmeof_rdma_retry_exceeded_errors_total", 0},
                {"nvmeof_rdma_rnr_retry_exceeded_errors_total", 0},
                {"nvmeof_rdma_out_of_buffer_discards_total", 1207},
                {"nvmeof_rdma_requester_cqe_errors_total", 3},
                {"nvmeof_rdma_responder_cqe_errors_total", 2},
                {"nvmeof_rdma_remote_access_errors_total", 1},
                {"nvmeof_rdma_received_write_requests_total", 48211903},
                {"nvmeof_rdma_received_read_requests_total", 12804417}});
  // mlx5 has no retransmit count and its rdma_tx_* counters are optional (absent here).
  EXPECT_FALSE(Value(s.sink, "nvmeof_rdma_retransmits_total", p));
  EXPECT_FALSE(Value(s.sink, "nvmeof_rdma_transmit_packets_total", p));
  // InfiniBand mlx5 has no congestion counters.
  EXPECT_FALSE(Value(s.sink, "nvmeof_rdma_cnp_sent_total", {{"rdma_device", "mlx5_1"}}));
  EXPECT_EQ(Value(s.sink, "nvmeof_rdma_out_of_sequence_total",
                  {{"rdma_device", "mlx5_1"}, {"rdma_port", "1"}}),
            12);
  EXPECT_EQ(s.sink.Find("nvmeof_rdma_cnp_sent_total")->type, prometheus::MetricType::Counter);
}

TEST(RdmaCollector, StableNamesRxe) {
  auto s = ScrapeRdmaDetail(kSysfs);
  const Labels p = {{"rdma_device", "rxe0"}, {"rdma_port", "1"}};
  ExpectValues(s.sink, p,
               {{"nvmeof_rdma_transmit_packets_total", 3894121},
                {"nvmeof_rdma_receive_packets_total", 3901877},
                {"nvmeof_rdma_out_of_sequence_total", 17},
                {"nvmeof_rdma_packet_sequence_errors_total", 9},
                {"nvmeof_rdma_retransmits_total", 12},
                {"nvmeof_rdma_duplicate_requests_total", 0},
                {"nvmeof_rdma_rnr_nak_errors_total", 0},
                {"nvmeof_rdma_rnr_naks_sent_total", 0},
                {"nvmeof_rdma_retry_exceeded_errors_total", 0},
                {"nvmeof_rdma_rnr_retry_exceeded_errors_total", 0}});
  EXPECT_FALSE(Value(s.sink, "nvmeof_rdma_cnp_sent_total", p));  // soft-RoCE does no DCQCN
}

TEST(RdmaCollector, StableNamesIrdma) {
  auto s = ScrapeRdmaDetail(kSysfs);
  const Labels p = {{"rdma_device", "irdma0"}, {"rdma_port", "1"}};
  ExpectValues(s.sink, p,
               {{"nvmeof_rdma_cnp_sent_total", 0},
                {"nvmeof_rdma_cnp_handled_total", 0},
                {"nvmeof_rdma_cnp_ignored_total", 0},
                {"nvmeof_rdma_ecn_marked_packets_total", 0},
                {"nvmeof_rdma_retransmits_total", 1733},
                {"nvmeof_rdma_received_write_requests_total", 30119874},
                {"nvmeof_rdma_received_read_requests_total", 2210443}});
}

TEST(RdmaCollector, StableNamesBnxtReOldNames) {
  auto s = ScrapeRdmaDetail(kSysfs);
  const Labels p = {{"rdma_device", "bnxt_re0"}, {"rdma_port", "1"}};
  ExpectValues(s.sink, p,
               {{"nvmeof_rdma_cnp_sent_total", 88121},                 // tx_cnp_pkts
                {"nvmeof_rdma_cnp_handled_total", 61204},              // rx_cnp_pkts
                {"nvmeof_rdma_ecn_marked_packets_total", 88433},       // rx_ecn_marked_pkts
                {"nvmeof_rdma_local_ack_timeout_errors_total", 37},    // to_retransmits
                {"nvmeof_rdma_packet_sequence_errors_total", 219},     // seq_err_naks_rcvd
                {"nvmeof_rdma_rnr_nak_errors_total", 8},               // rnr_naks_rcvd
                {"nvmeof_rdma_implied_nak_sequence_errors_total", 3},  // missing_resp
                {"nvmeof_rdma_out_of_sequence_total", 1280},           // oos_drop_count
                {"nvmeof_rdma_duplicate_requests_total", 14},          // dup_req
                {"nvmeof_rdma_retry_exceeded_errors_total", 0},        // max_retry_exceeded
                {"nvmeof_rdma_out_of_buffer_discards_total", 77},      // rx_out_of_buffer
                {"nvmeof_rdma_receive_discards_total", 41},
                {"nvmeof_rdma_transmit_discards_total", 2},
                {"nvmeof_rdma_remote_access_errors_total", 1},  // remote_access_err
                {"nvmeof_rdma_remote_invalid_request_errors_total", 0},
                {"nvmeof_rdma_transmit_bytes_total", 4410236690021},
                {"nvmeof_rdma_receive_bytes_total", 4390187342117},
                {"nvmeof_rdma_received_write_requests_total", 28103317},  // rx_write_req
                {"nvmeof_rdma_received_atomic_requests_total", 0}});      // rx_atomic_req
}

TEST(RdmaCollector, NewDriverNamesAndFirstSourceWins) {
  TempSysfs t;
  // bnxt_re after the 2025 rename, plus an out-of-tree driver's np_cnp_sent next to the upstream
  // np_cnp_pkts: one device, two names for one event.
  t.Port("bnxt_re0", "1", "4: ACTIVE", "100 Gb/sec (4X EDR)");
  t.HwCounters("bnxt_re0", "1",
               {{"np_cnp_sent", "500"},
                {"np_cnp_pkts", "400"},
                {"local_ack_timeout_err", "7"},
                {"packet_seq_err", "8"},
                {"duplicate_request", "9"},
                {"out_of_sequence", "10"},
                {"lifespan", "10"}});
  // irdma with the gen3 names, which contain spaces.
  t.Port("irdma1", "1", "4: ACTIVE", "200 Gb/sec (4X HDR)");
  t.HwCounters("irdma1", "1",
               {{"RetransSegs", "31"},
                {"RNR received", "4"},
                {"Nak Sequence Error", "5"},
                {"RTO", "6"},
                {"InRdmaReads", "70"}});
  auto s = ScrapeRdmaDetail(t.root());
  const Labels bp = {{"rdma_device", "bnxt_re0"}, {"rdma_port", "1"}};
  EXPECT_EQ(Value(s.sink, "nvmeof_rdma_cnp_sent_total", bp), 500);  // first in the table wins...
  EXPECT_EQ(Value(s.sink, "nvmeof_rdma_hw_counters_total",
                  {{"rdma_device", "bnxt_re0"}, {"counter", "np_cnp_pkts"}}),
            400);  // ...and the other stays generic
  ExpectValues(s.sink, bp,
               {{"nvmeof_rdma_local_ack_timeout_errors_total", 7},
                {"nvmeof_rdma_packet_sequence_errors_total", 8},
                {"nvmeof_rdma_duplicate_requests_total", 9},
                {"nvmeof_rdma_out_of_sequence_total", 10}});
  const Labels ip = {{"rdma_device", "irdma1"}, {"rdma_port", "1"}};
  ExpectValues(s.sink, ip,
               {{"nvmeof_rdma_retransmits_total", 31},
                {"nvmeof_rdma_rnr_nak_errors_total", 4},
                {"nvmeof_rdma_packet_sequence_errors_total", 5},
                {"nvmeof_rdma_local_ack_timeout_errors_total", 6},
                {"nvmeof_rdma_received_read_requests_total", 70}});
  EXPECT_EQ(Value(s.sink, "nvmeof_rdma_hw_counters_total",
                  {{"rdma_device", "irdma1"}, {"counter", "RNR received"}}),
            4);
  EXPECT_EQ(s.sink.skipped(), 0u);
}

TEST(RdmaCollector, FirstSourceUnreadableIsSkippedNotReplaced) {
  TempSysfs t;
  t.Port("bnxt_re0", "1", "4: ACTIVE", "100 Gb/sec (4X EDR)");
  t.HwCounters("bnxt_re0", "1", {{"np_cnp_sent", "N/A"}, {"tx_cnp_pkts", "400"}});
  auto s = ScrapeRdma(t.root());
  // Switching sources from scrape to scrape would look like counter resets.
  EXPECT_FALSE(Value(s.sink, "nvmeof_rdma_cnp_sent_total", {{"rdma_device", "bnxt_re0"}}));
  EXPECT_EQ(s.sink.skipped(), 2u);  // the generic series and the stable one
}

TEST(RdmaCollector, DeviceScopeOnlyDriverGetsStableNames) {
  // cxgb4 style: hw_counters only at device scope.
  TempSysfs t;
  t.Port("cxgb4_0", "1", "4: ACTIVE", "25 Gb/sec (1X EDR)");
  t.HwCounters("cxgb4_0", "", {{"tcpRetransSegs", "99"}, {"tcpInSegs", "1000"}});
  auto s = ScrapeRdma(t.root());
  EXPECT_EQ(Value(s.sink, "nvmeof_rdma_retransmits_total",
                  {{"rdma_device", "cxgb4_0"}, {"rdma_port", "0"}}),
            99);
  EXPECT_EQ(Value(s.sink, "nvmeof_rdma_hw_counters_total",
                  {{"rdma_device", "cxgb4_0"}, {"rdma_port", "0"}, {"counter", "tcpInSegs"}}),
            1000);
}

TEST(RdmaCollector, SeveralNetdevsOnOnePort) {
  TempSysfs t;
  t.Port("mlx5_0", "1", "4: ACTIVE", "100 Gb/sec (4X EDR)");
  const std::string n = "class/infiniband/mlx5_0/ports/1/gid_attrs/ndevs/";
  t.Write(n + "0", "ens1f0np0");
  t.Write(n + "1", "ens1f0np0");
  t.Write(n + "2", "ens1f0np0.100");  // a VLAN's GIDs point at the VLAN netdev
  t.Write(n + "3", "");
  fs::create_directories(t.root() + "/" + n + "4");  // unreadable slot (read fails)
  auto s = ScrapeRdma(t.root());
  auto info = Find(s.sink, "nvmeof_rdma_port_info", {{"rdma_device", "mlx5_0"}});
  ASSERT_EQ(info.size(), 2u);
  std::set<std::string> netdevs;
  for (const auto* m : info) netdevs.insert(Label(*m, "netdev"));
  EXPECT_EQ(netdevs, (std::set<std::string>{"ens1f0np0", "ens1f0np0.100"}));
  EXPECT_EQ(s.sink.skipped(), 0u);  // empty GID slots are normal, not missing data
}

TEST(RdmaCollector, DeviceFilter) {
  NameFilter f;
  f.include = std::regex("mlx5_.*");
  f.exclude = std::regex("mlx5_1");
  auto s = ScrapeRdma(kSysfs, f);
  std::set<std::string> devices;
  for (const auto* m : Find(s.sink, "nvmeof_rdma_device_info", {}))
    devices.insert(Label(*m, "rdma_device"));
  EXPECT_EQ(devices, (std::set<std::string>{"mlx5_0", "mlx5_2"}));
  EXPECT_TRUE(Find(s.sink, "nvmeof_rdma_hw_counters_total", {{"rdma_device", "rxe0"}}).empty());
  EXPECT_TRUE(Find(s.sink, "nvmeof_rdma_port_info", {{"rdma_device", "mlx5_1"}}).empty());
  EXPECT_EQ(s.sink.skipped(), 2u);  // only mlx5_2's garbage counter is left
}

TEST(RdmaCollector, EmptyClassDirIsSuccessWithNoSeries) {
  TempSysfs t;
  fs::create_directories(t.root() + "/class/infiniband");
  auto s = ScrapeRdma(t.root());
  EXPECT_TRUE(s.ok);
  EXPECT_TRUE(s.sink.Empty());
  EXPECT_EQ(s.sink.skipped(), 0u);
}

TEST(RdmaCollector, NonexistentRootIsSuccessWithNoSeries) {
  auto s = ScrapeRdma("/nonexistent/sysfs");
  EXPECT_TRUE(s.ok);
  EXPECT_TRUE(s.sink.Empty());
}

TEST(RdmaCollector, RepeatedScrapesAreIdentical) {
  CollectorOptions options;
  options.paths.sysfs = kSysfs;
  auto c = NewRdmaCollector(options);
  EXPECT_EQ(c->Name(), "rdma");
  MetricSink a, b;
  ASSERT_TRUE(c->Collect(a));
  ASSERT_TRUE(c->Collect(b));
  auto fa = a.Take(), fb = b.Take();
  ASSERT_EQ(fa.size(), fb.size());
  for (size_t i = 0; i < fa.size(); ++i) {
    EXPECT_EQ(fa[i].name, fb[i].name);
    EXPECT_EQ(fa[i].metric.size(), fb[i].metric.size()) << fa[i].name;
  }
}

// ---- MTUs: class/net/<netdev>/mtu and the RoCE path MTU rdma_cm derives from it --------------

TEST(RdmaMtu, FixtureNetdevAndRocePathMtus) {
  auto s = ScrapeRdma(kSysfs);
  ASSERT_TRUE(s.ok);
  auto netdev_mtu = [&](const std::string& netdev) {
    return Value(s.sink, "nvmeof_rdma_netdev_mtu_bytes", {{"netdev", netdev}});
  };
  EXPECT_EQ(netdev_mtu("ens1f0np0"), 9000);
  EXPECT_EQ(netdev_mtu("ens1f1np1"), 1500);
  EXPECT_EQ(netdev_mtu("ens2f0"), 9000);
  EXPECT_EQ(netdev_mtu("ens3f0np0"), 4200);
  EXPECT_EQ(netdev_mtu("veth0"), 1500);
  EXPECT_FALSE(netdev_mtu("eth1"));  // siw0's netdev is not in the fixture's class/net
  EXPECT_EQ(Find(s.sink, "nvmeof_rdma_netdev_mtu_bytes", {}).size(), 5u);

  auto roce = [&](const std::string& dev) {
    return Value(s.sink, "nvmeof_rdma_roce_path_mtu_bytes",
                 {{"rdma_device", dev}, {"rdma_port", "1"}});
  };
  EXPECT_EQ(roce("mlx5_0"), 4096);
  EXPECT_EQ(roce("mlx5_2"), 1024);    // 1500 - 96 = 1404: 2048 does not fit
  EXPECT_EQ(roce("bnxt_re0"), 4096);  // 4200 - 96 = 4104
  EXPECT_EQ(roce("rxe0"), 1024);
  EXPECT_FALSE(roce("irdma0"));  // iWARP (RNIC) runs over TCP: no RoCE path MTU
  EXPECT_FALSE(roce("siw0"));
  EXPECT_FALSE(roce("mlx5_1"));  // InfiniBand: no netdev
  const auto found = Find(s.sink, "nvmeof_rdma_roce_path_mtu_bytes", {{"rdma_device", "mlx5_0"}});
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(Label(*found[0], "netdev"), "ens1f0np0");
}

TEST(RdmaMtu, RocePathMtuEdgesFollowIboeGetMtu) {
  // netdev MTU -> path MTU: an IB MTU fits when netdev MTU >= IB MTU + 96.
  const std::pair<int, int> cases[] = {{4192, 4096}, {4191, 2048}, {2144, 2048}, {2143, 1024},
                                       {1500, 1024}, {1120, 1024}, {1119, 512},  {352, 256},
                                       {351, 0},     {68, 0},      {65535, 4096}};
  for (const auto& [netdev_mtu, want] : cases) {
    TempSysfs t;
    t.Port("mlx5_0", "1", "4: ACTIVE", "100 Gb/sec (4X EDR)");
    t.Write("class/infiniband/mlx5_0/node_type", "1: CA");
    t.Write("class/infiniband/mlx5_0/ports/1/gid_attrs/ndevs/0", "ens1f0np0");
    t.Write("class/net/ens1f0np0/mtu", std::to_string(netdev_mtu));
    auto s = ScrapeRdma(t.root());
    EXPECT_EQ(Value(s.sink, "nvmeof_rdma_roce_path_mtu_bytes", {{"rdma_device", "mlx5_0"}}), want)
        << "netdev MTU " << netdev_mtu;
    EXPECT_EQ(s.sink.skipped(), 0u);
  }
}

TEST(RdmaMtu, SharedNetdevIsReadOnce) {
  TempSysfs t;
  for (const std::string dev : {"rxe0", "siw0"}) {
    t.Port(dev, "1", "4: ACTIVE", "10 Gb/sec (1X QDR)");
    t.Write("class/infiniband/" + dev + "/ports/1/gid_attrs/ndevs/0", "eth0");
  }
  t.Write("class/infiniband/rxe0/node_type", "1: CA");
  t.Write("class/infiniband/siw0/node_type", "4: RNIC");
  t.Write("class/net/eth0/mtu", "1500");
  auto s = ScrapeRdma(t.root());
  EXPECT_EQ(Find(s.sink, "nvmeof_rdma_netdev_mtu_bytes", {}).size(), 1u);
  EXPECT_EQ(Find(s.sink, "nvmeof_rdma_roce_path_mtu_bytes", {}).size(), 1u);
  EXPECT_EQ(Value(s.sink, "nvmeof_rdma_roce_path_mtu_bytes", {{"rdma_device", "rxe0"}}), 1024);
}

TEST(RdmaMtu, BadMtuFilesAreSkippedNotZero) {
  // Garbage, empty, missing and unreadable (a directory: read fails like EACCES or EIO) mtu
  // files: no netdev series and no RoCE series, each counted as skipped; a netdev absent from
  // class/net (another network namespace) is no data and no skip.
  const std::string bad[] = {"garbage", "", "-1", "<missing>", "<dir>"};
  for (const auto& content : bad) {
    TempSysfs t;
    t.Port("mlx5_0", "1", "4: ACTIVE", "100 Gb/sec (4X EDR)");
    t.Write("class/infiniband/mlx5_0/node_type", "1: CA");
    t.Write("class/infiniband/mlx5_0/ports/1/gid_attrs/ndevs/0", "ens1f0np0");
    t.Write("class/infiniband/mlx5_0/ports/1/gid_attrs/ndevs/1", "elsewhere0");
    if (content == "<dir>") {
      fs::create_directories(t.root() + "/class/net/ens1f0np0/mtu");
    } else if (content == "<missing>") {
      fs::create_directories(t.root() + "/class/net/ens1f0np0");
    } else {
      t.Write("class/net/ens1f0np0/mtu", content);
    }
    auto s = ScrapeRdma(t.root());
    EXPECT_TRUE(s.ok);
    EXPECT_TRUE(Find(s.sink, "nvmeof_rdma_netdev_mtu_bytes", {}).empty()) << content;
    EXPECT_TRUE(Find(s.sink, "nvmeof_rdma_roce_path_mtu_bytes", {}).empty()) << content;
    EXPECT_EQ(s.sink.skipped(), 2u) << content;  // the netdev's MTU and the port's path MTU
    EXPECT_EQ(Find(s.sink, "nvmeof_rdma_port_info", {}).size(), 2u);
  }
}

TEST(RdmaCounterMap, EveryDriverNameMapsOnce) {
  std::set<std::string_view> counters, metrics;
  for (const auto& stable : StableHwCounters()) {
    EXPECT_TRUE(metrics.insert(stable.metric).second) << stable.metric;
    EXPECT_EQ(stable.metric.substr(0, 12), "nvmeof_rdma_") << stable.metric;
    EXPECT_TRUE(stable.metric.ends_with("_total")) << stable.metric;
    EXPECT_FALSE(stable.help.empty()) << stable.metric;
    EXPECT_FALSE(stable.sources.empty()) << stable.metric;
    for (const auto& src : stable.sources) {
      EXPECT_TRUE(counters.insert(src.counter).second) << src.counter;
      EXPECT_FALSE(src.drivers.empty()) << src.counter;
    }
  }
  EXPECT_FALSE(counters.contains("lifespan"));
}

TEST(RdmaCounterMap, NoClashWithOtherRdmaFamilies) {
  for (const auto& stable : StableHwCounters()) {
    EXPECT_FALSE(stable.metric.starts_with("nvmeof_rdma_port_")) << stable.metric;
    EXPECT_NE(stable.metric, "nvmeof_rdma_hw_counters_total");
  }
}

}  // namespace
}  // namespace nvmeof
