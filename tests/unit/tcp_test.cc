#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <linux/filter.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "collectors/registry.h"
#include "tests/unit/scratch_tree.h"
#include "tests/unit/sink_query.h"

namespace nvmeof {
namespace {

// sock_diag reads the live kernel, where another test process may hold a connection on port
// 4420 right now; with a missing procfs nothing else may appear.
bool OnlyLiveSocketFamilies(MetricSink& sink) {
  for (const auto& family : sink.Take()) {
    if (family.name != "nvmeof_tcp_connections" &&
        family.name != "nvmeof_tcp_connection_retransmits") {
      ADD_FAILURE() << "unexpected family " << family.name;
      return false;
    }
  }
  return true;
}

namespace fs = std::filesystem;

TEST(TcpFixture, EverySeriesFromTheFixture) {
  CollectorOptions o;
  o.tcp.node_counters = true;
  o.paths.procfs = std::string(NVMEOF_FIXTURES) + "/procfs";
  MetricSink sink;
  ASSERT_TRUE(NewTcpCollector(o)->Collect(sink));
  EXPECT_EQ(sink.skipped(), 0u);
  const std::map<std::string, double> counters = {
      {"nvmeof_tcp_segments_received_total", 208046881},
      {"nvmeof_tcp_segments_sent_total", 186512034},
      {"nvmeof_tcp_retransmitted_segments_total", 14529},
      {"nvmeof_tcp_receive_errors_total", 4},
      {"nvmeof_tcp_checksum_errors_total", 1},
      {"nvmeof_tcp_resets_sent_total", 377},
      {"nvmeof_tcp_established_resets_total", 9},
      {"nvmeof_tcp_connection_failures_total", 17},
      {"nvmeof_tcp_timeouts_total", 1843},
      {"nvmeof_tcp_spurious_timeouts_total", 21},
      {"nvmeof_tcp_lost_retransmits_total", 112},
      {"nvmeof_tcp_fast_retransmits_total", 9021},
      {"nvmeof_tcp_slow_start_retransmits_total", 37},
      {"nvmeof_tcp_retransmit_failures_total", 3},
      {"nvmeof_tcp_syn_retransmits_total", 58},
      {"nvmeof_tcp_loss_probes_total", 4410},
      {"nvmeof_tcp_aborts_on_timeout_total", 2},
      {"nvmeof_tcp_listen_drops_total", 5},
      {"nvmeof_tcp_delivered_ce_total", 7713},
  };
  for (const auto& [name, v] : counters) {
    const auto* f = sink.Find(name);
    ASSERT_NE(f, nullptr) << name;
    EXPECT_EQ(f->type, prometheus::MetricType::Counter) << name;
    EXPECT_NE(f->help.find("node-wide"), std::string::npos) << name;
    ASSERT_EQ(f->metric.size(), 1u) << name;
    EXPECT_TRUE(f->metric[0].label.empty()) << name;
    EXPECT_EQ(f->metric[0].counter.value, v) << name;
  }
  ASSERT_NE(sink.Find("nvmeof_tcp_connections_established"), nullptr);
  EXPECT_EQ(sink.Find("nvmeof_tcp_connections_established")->type, prometheus::MetricType::Gauge);
  EXPECT_EQ(Value(sink, "nvmeof_tcp_connections_established"), 14);

  const std::map<std::pair<std::string, std::string>, double> ecn = {
      {{"ipv4", "not_ect"}, 120034567}, {{"ipv4", "ect1"}, 0},        {{"ipv4", "ect0"}, 88012345},
      {{"ipv4", "ce"}, 15321},          {{"ipv6", "not_ect"}, 40211}, {{"ipv6", "ect1"}, 0},
      {{"ipv6", "ect0"}, 35120},        {{"ipv6", "ce"}, 42},
  };
  EXPECT_EQ(Select(sink, "nvmeof_ip_received_packets_total").size(), ecn.size());
  for (const auto& [k, v] : ecn) {
    EXPECT_EQ(
        Value(sink, "nvmeof_ip_received_packets_total", {{"family", k.first}, {"ecn", k.second}}),
        v)
        << k.first << " " << k.second;
  }
}

TEST(TcpReal, ReadsThisMachinesProcfs) {
  CollectorOptions o;  // /proc
  o.tcp.node_counters = true;
  MetricSink sink;
  ASSERT_TRUE(NewTcpCollector(o)->Collect(sink));
  EXPECT_EQ(sink.skipped(), 0u);
  EXPECT_GT(Value(sink, "nvmeof_tcp_segments_sent_total"), 0);
  EXPECT_FALSE(std::isnan(Value(sink, "nvmeof_tcp_timeouts_total")));
  EXPECT_EQ(Select(sink, "nvmeof_ip_received_packets_total", {{"family", "ipv4"}}).size(), 4u);
}

TEST(TcpOptions, NodeCountersOffByDefault) {
  CollectorOptions o;
  o.paths.procfs = "/nonexistent/proc";  // not read without node_counters
  o.paths.sysfs = "/nonexistent";
  o.paths.configfs = "/nonexistent";
  MetricSink sink;
  NewTcpCollector(o)->Collect(sink);
  EXPECT_TRUE(Select(sink, "nvmeof_tcp_segments_sent_total").empty());
  EXPECT_TRUE(Select(sink, "nvmeof_ip_received_packets_total").empty());
}

TEST(TcpOptions, ParsesNodeCounters) {
  TcpOptions t;
  std::string error;
  ASSERT_TRUE(ParseTcpOptions(YAML::Load("{node_counters: true}"), &t, &error)) << error;
  EXPECT_TRUE(t.node_counters);
  EXPECT_FALSE(ParseTcpOptions(YAML::Load("{node_counter: true}"), &t, &error));
  EXPECT_NE(error.find("tcp"), std::string::npos) << error;
}

class TcpScratch : public ScratchTree {
 protected:
  bool Collect(MetricSink& sink) {
    CollectorOptions o;
    o.tcp.node_counters = true;
    o.paths.procfs = root_;
    return NewTcpCollector(o)->Collect(sink);
  }
};

TEST_F(TcpScratch, ColumnsByNameInAnyOrderAndSet) {
  // An old kernel: fewer, reordered columns, unknown ones, no snmp6.
  Write("net/snmp",
        "Ip: Forwarding DefaultTTL\nIp: 1 64\n"
        "Tcp: OutSegs MaxConn RetransSegs InSegs NewThing\nTcp: 200 -1 7 300 5\n");
  Write("net/netstat",
        "TcpExt: TCPSynRetrans TCPTimeouts\nTcpExt: 4 11\n"
        "IpExt: InCEPkts InOctets\nIpExt: 3 99\n");
  MetricSink sink;
  ASSERT_TRUE(Collect(sink));
  EXPECT_EQ(sink.skipped(), 0u);  // counters this kernel lacks are absent, not skipped
  EXPECT_EQ(Value(sink, "nvmeof_tcp_segments_sent_total"), 200);
  EXPECT_EQ(Value(sink, "nvmeof_tcp_segments_received_total"), 300);
  EXPECT_EQ(Value(sink, "nvmeof_tcp_retransmitted_segments_total"), 7);
  EXPECT_EQ(Value(sink, "nvmeof_tcp_timeouts_total"), 11);
  EXPECT_EQ(Value(sink, "nvmeof_tcp_syn_retransmits_total"), 4);
  EXPECT_EQ(Value(sink, "nvmeof_ip_received_packets_total", {{"ecn", "ce"}}), 3);
  EXPECT_EQ(Select(sink, "nvmeof_ip_received_packets_total").size(), 1u);
  EXPECT_EQ(sink.Find("nvmeof_tcp_resets_sent_total"), nullptr);
  EXPECT_EQ(sink.Find("nvmeof_tcp_delivered_ce_total"), nullptr);
}

TEST_F(TcpScratch, MismatchedAndTruncatedSectionsAreSkipped) {
  // Tcp value line is short; IpExt header has no value line (file cut off).
  Write("net/snmp",
        "Tcp: InSegs OutSegs RetransSegs InErrs OutRsts InCsumErrors EstabResets AttemptFails "
        "CurrEstab\nTcp: 1 2 3\nUdp: InDatagrams\nUdp: 5\n");
  Write("net/netstat",
        "TcpExt: TCPTimeouts TCPLostRetransmit\nTcpExt: 8 abc\nIpExt: InNoECTPkts InECT1Pkts "
        "InECT0Pkts InCEPkts\n");
  Write("net/snmp6", "Ip6InCEPkts  \t7\nIp6InECT0Pkts x\nIcmp6InMsgs 3\ngarbage line here\n");
  MetricSink sink;
  ASSERT_TRUE(Collect(sink));
  // Nothing of the broken Tcp section is guessed.
  EXPECT_EQ(sink.Find("nvmeof_tcp_segments_received_total"), nullptr);
  EXPECT_EQ(sink.Find("nvmeof_tcp_retransmitted_segments_total"), nullptr);
  EXPECT_EQ(Value(sink, "nvmeof_tcp_timeouts_total"), 8);
  EXPECT_EQ(sink.Find("nvmeof_tcp_lost_retransmits_total"), nullptr);
  auto ecn = Select(sink, "nvmeof_ip_received_packets_total");
  ASSERT_EQ(ecn.size(), 1u);
  EXPECT_EQ(ToMap(*ecn[0]), (LabelMap{{"family", "ipv6"}, {"ecn", "ce"}}));
  EXPECT_EQ(ecn[0]->counter.value, 7);
  // 9 Tcp stats + TCPLostRetransmit "abc" + 4 IpExt stats + Ip6InECT0Pkts "x".
  EXPECT_EQ(sink.skipped(), 9u + 1 + 4 + 1);
}

TEST_F(TcpScratch, EmptyFilesGiveNoSeries) {
  Write("net/snmp", "");
  Write("net/netstat", "");
  MetricSink sink;
  EXPECT_TRUE(Collect(sink));
  EXPECT_TRUE(OnlyLiveSocketFamilies(sink));
  EXPECT_EQ(sink.skipped(), 0u);
}

// snmp and netstat always exist under a mounted procfs: their absence is a misconfigured
// --path.procfs, reported as a failed collection (with no series) rather than hidden.
TEST_F(TcpScratch, EmptyRootFailsWithoutSeries) {
  MetricSink sink;
  EXPECT_FALSE(Collect(sink));
  EXPECT_TRUE(OnlyLiveSocketFamilies(sink));
  EXPECT_EQ(sink.skipped(), 0u);
}

// A procfs without net/snmp (a container's partial /proc): the collector fails and says why,
// so the scraper can warn once with the file and the error.
TEST(TcpLayouts, NoSnmpFailsWithReason) {
  CollectorOptions o;
  o.paths.procfs = std::string(NVMEOF_FIXTURES) + "/layouts/procfs-no-snmp/procfs";
  o.tcp.node_counters = true;
  MetricSink sink;
  EXPECT_FALSE(NewTcpCollector(o)->Collect(sink));
  EXPECT_EQ(sink.failure(), o.paths.procfs + "/net/snmp: No such file or directory");
  // What netstat holds is still served.
  EXPECT_FALSE(Select(sink, "nvmeof_tcp_timeouts_total").empty());
  EXPECT_TRUE(Select(sink, "nvmeof_tcp_retransmitted_segments_total").empty());
}

// Real sockets on loopback: sock_diag must find both ends of an NVMe/TCP-port connection,
// over IPv4 and IPv6, and ignore a connection on another port.
class TcpConnections : public ::testing::Test {
 protected:
  void TearDown() override {
    for (int fd : fds_) ::close(fd);
  }
  // Listens on loopback `port` (0 = any), connects to it, accepts; returns the bound port
  // or 0 when the address is unavailable. Sends a little data both ways.
  std::uint16_t Connect(int family, std::uint16_t port) {
    sockaddr_storage ss = {};
    socklen_t len;
    if (family == AF_INET) {
      auto* a = reinterpret_cast<sockaddr_in*>(&ss);
      a->sin_family = AF_INET;
      a->sin_port = htons(port);
      a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      len = sizeof(*a);
    } else {
      auto* a = reinterpret_cast<sockaddr_in6*>(&ss);
      a->sin6_family = AF_INET6;
      a->sin6_port = htons(port);
      a->sin6_addr = in6addr_loopback;
      len = sizeof(*a);
    }
    int l = Track(::socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0));
    int one = 1;
    ::setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (::bind(l, reinterpret_cast<sockaddr*>(&ss), len) != 0 || ::listen(l, 4) != 0) return 0;
    ::getsockname(l, reinterpret_cast<sockaddr*>(&ss), &len);
    int c = Track(::socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (::connect(c, reinterpret_cast<sockaddr*>(&ss), len) != 0) return 0;
    int s = Track(::accept(l, nullptr, nullptr));
    char buf[4096] = {};
    EXPECT_EQ(::send(c, buf, sizeof(buf), 0), static_cast<ssize_t>(sizeof(buf)));
    EXPECT_EQ(::send(s, buf, 100, 0), 100);
    client_ = c;
    server_ = s;
    return family == AF_INET ? ntohs(reinterpret_cast<sockaddr_in*>(&ss)->sin_port)
                             : ntohs(reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port);
  }
  int Track(int fd) {
    if (fd >= 0) fds_.push_back(fd);
    return fd;
  }
  static double TotalRetrans(int fd) {
    tcp_info info = {};
    socklen_t len = sizeof(info);
    ::getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &len);
    return info.tcpi_total_retrans;
  }
  std::vector<int> fds_;
  int client_ = -1, server_ = -1;
};

TEST_F(TcpConnections, LoopbackNvmeTcpPorts) {
  if (Connect(AF_INET, 4420) != 4420) GTEST_SKIP() << "127.0.0.1:4420 unavailable";
  const int c4 = client_, s4 = server_;
  const bool v6 = Connect(AF_INET6, 8009) == 8009;
  const std::uint16_t other = Connect(AF_INET, 0);
  ASSERT_NE(other, 0);

  CollectorOptions o;
  o.tcp.node_counters = true;
  o.paths.procfs = std::string(NVMEOF_FIXTURES) + "/procfs";
  o.paths.sysfs = std::string(NVMEOF_FIXTURES) + "/sysfs";        // host tcp trsvcid 4421
  o.paths.configfs = std::string(NVMEOF_FIXTURES) + "/configfs";  // target tcp port 4421
  MetricSink sink;
  ASSERT_TRUE(NewTcpCollector(o)->Collect(sink));
  EXPECT_EQ(sink.skipped(), 0u);

  for (const char* role : {"host", "target"}) {
    EXPECT_EQ(Value(sink, "nvmeof_tcp_connections", {{"role", role}, {"tcp_port", "4420"}}), 1)
        << role;
    // Configured but without connections: present as 0.
    EXPECT_EQ(Value(sink, "nvmeof_tcp_connections", {{"role", role}, {"tcp_port", "4421"}}), 0)
        << role;
    EXPECT_EQ(
        Value(sink, "nvmeof_tcp_connection_retransmits", {{"role", role}, {"tcp_port", "4421"}}), 0)
        << role;
    if (v6) {
      EXPECT_EQ(Value(sink, "nvmeof_tcp_connections", {{"role", role}, {"tcp_port", "8009"}}), 1)
          << role;
    }
  }
  EXPECT_EQ(
      Value(sink, "nvmeof_tcp_connection_retransmits", {{"role", "host"}, {"tcp_port", "4420"}}),
      TotalRetrans(c4));
  EXPECT_EQ(
      Value(sink, "nvmeof_tcp_connection_retransmits", {{"role", "target"}, {"tcp_port", "4420"}}),
      TotalRetrans(s4));
  EXPECT_TRUE(
      Select(sink, "nvmeof_tcp_connections", {{"tcp_port", std::to_string(other)}}).empty());
  for (const auto* m : Select(sink, "nvmeof_tcp_connections")) {
    EXPECT_EQ(ToMap(*m).size(), 2u);  // role and tcp_port only
  }
}

// Real retransmits without netem or root: a socket filter on the accepting end drops every
// incoming segment, so the client retransmits on RTO; the exported sum must match the
// client's own tcp_info.
TEST_F(TcpConnections, LoopbackRetransmitsAreCounted) {
  if (Connect(AF_INET, 4420) != 4420) GTEST_SKIP() << "127.0.0.1:4420 unavailable";
  sock_filter drop = BPF_STMT(BPF_RET | BPF_K, 0);
  sock_fprog prog = {1, &drop};
  ASSERT_EQ(::setsockopt(server_, SOL_SOCKET, SO_ATTACH_FILTER, &prog, sizeof(prog)), 0);
  const double before = TotalRetrans(client_);
  char buf[1000] = {};
  ASSERT_EQ(::send(client_, buf, sizeof(buf), 0), static_cast<ssize_t>(sizeof(buf)));
  for (int i = 0; i < 100 && TotalRetrans(client_) < before + 2; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_GE(TotalRetrans(client_), before + 2);
  // Let the data through so the count stops moving, then wait for the ACK.
  int zero = 0;
  ASSERT_EQ(::setsockopt(server_, SOL_SOCKET, SO_DETACH_FILTER, &zero, sizeof(zero)), 0);
  for (int i = 0; i < 100; ++i) {
    tcp_info info = {};
    socklen_t len = sizeof(info);
    ::getsockopt(client_, IPPROTO_TCP, TCP_INFO, &info, &len);
    if (info.tcpi_unacked == 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }

  CollectorOptions o;
  o.tcp.node_counters = true;
  o.paths.procfs = std::string(NVMEOF_FIXTURES) + "/procfs";
  o.paths.sysfs = "/nonexistent";
  o.paths.configfs = "/nonexistent";
  MetricSink sink;
  ASSERT_TRUE(NewTcpCollector(o)->Collect(sink));
  const double host =
      Value(sink, "nvmeof_tcp_connection_retransmits", {{"role", "host"}, {"tcp_port", "4420"}});
  EXPECT_GE(host, 2);
  EXPECT_EQ(host, TotalRetrans(client_));
  EXPECT_EQ(
      Value(sink, "nvmeof_tcp_connection_retransmits", {{"role", "target"}, {"tcp_port", "4420"}}),
      TotalRetrans(server_));
}

TEST(TcpMissing, NonexistentRootFailsWithoutSeries) {
  CollectorOptions o;
  o.tcp.node_counters = true;
  o.paths.procfs = "/nonexistent/proc";
  MetricSink sink;
  EXPECT_FALSE(NewTcpCollector(o)->Collect(sink));
  EXPECT_TRUE(OnlyLiveSocketFamilies(sink));
}

}  // namespace
}  // namespace nvmeof
