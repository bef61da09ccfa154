#include <gtest/gtest.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "collectors/registry.h"
#include "tests/unit/scratch_tree.h"
#include "tests/unit/sink_query.h"
#include "tests/unit/tree_collector.h"

namespace nvmeof {
namespace {

namespace fs = std::filesystem;

// Scraped with every family (nvme_host.inventory); the default's are checked below.
constexpr TreeCollector kNvmeHost = {NewNvmeHostCollector, &Paths::sysfs, "sysfs",
                                     [](CollectorOptions& o) { o.nvme_host.inventory = true; }};

using NvmeHostFixture = FixtureScrape<kNvmeHost>;

TEST_F(NvmeHostFixture, SucceedsWithoutSkips) { ExpectSucceededWithoutSkips(); }

TEST_F(NvmeHostFixture, ControllerInfoLabels) {
  auto info = Select(sink_, "nvmeof_controller_info");
  ASSERT_EQ(info.size(), 4u);
  const std::string host = "nqn.2014-08.org.nvmexpress:uuid:4c4c4544-0035-4b10-8044-b4c04f4d3232";
  ExpectSeriesLabels(sink_, "nvmeof_controller_info", {"controller"},
                     {{{"controller", "nvme0"},
                       {"transport", "rdma"},
                       {"traddr", "10.0.0.1"},
                       {"trsvcid", "4420"},
                       {"host_traddr", ""},
                       {"host_iface", ""},
                       {"src_addr", ""},
                       {"nqn", "nqn.2024-06.io.example:ssd-pool"},
                       {"hostnqn", host},
                       {"cntlid", "1"},
                       {"nvme_subsystem", "nvme-subsys0"}},
                      {{"controller", "nvme1"},
                       {"transport", "tcp"},
                       {"traddr", "192.168.1.10"},
                       {"trsvcid", "4421"},
                       {"host_traddr", ""},
                       {"host_iface", ""},
                       {"src_addr", "192.168.1.2"},
                       {"nqn", "nqn.2024-06.io.example:null-test"},
                       {"hostnqn", host},
                       {"cntlid", "2"},
                       {"nvme_subsystem", "nvme-subsys1"}},
                      {{"controller", "nvme2"},
                       {"transport", "tcp"},
                       {"traddr", "192.168.2.10"},
                       {"trsvcid", "4421"},
                       {"host_traddr", "192.168.2.2"},
                       {"host_iface", ""},
                       {"src_addr", ""},
                       {"nqn", "nqn.2024-06.io.example:null-test"},
                       {"hostnqn", host},
                       {"cntlid", "3"},
                       {"nvme_subsystem", "nvme-subsys1"}},
                      // pcie: the address is the PCI function, no host NQN.
                      {{"controller", "nvme3"},
                       {"transport", "pcie"},
                       {"traddr", "0000:03:00.0"},
                       {"trsvcid", ""},
                       {"host_traddr", ""},
                       {"host_iface", ""},
                       {"src_addr", ""},
                       {"nqn", "nqn.1994-11.com.samsung:nvme:980PRO:M.2:S5GXNX0T123456M"},
                       {"hostnqn", ""},
                       {"cntlid", "6"},
                       {"nvme_subsystem", "nvme-subsys3"}}});
  for (const auto* m : info) EXPECT_EQ(m->gauge.value, 1);
}

TEST_F(NvmeHostFixture, StateIsOneHot) {
  const std::vector<std::string> states = {"new",      "live",          "resetting", "connecting",
                                           "deleting", "deleting_noio", "dead"};
  const std::map<std::string, std::string> current = {
      {"nvme0", "live"}, {"nvme1", "live"}, {"nvme2", "connecting"}, {"nvme3", "live"}};
  EXPECT_EQ(Select(sink_, "nvmeof_controller_state").size(), 4 * states.size());
  for (const auto& [ctrl, state] : current) {
    for (const auto& s : states) {
      EXPECT_EQ(Value(sink_, "nvmeof_controller_state", {{"controller", ctrl}, {"state", s}}),
                s == state ? 1 : 0)
          << ctrl << " " << s;
    }
  }
}

TEST_F(NvmeHostFixture, QueuesAndTimeouts) {
  EXPECT_EQ(Value(sink_, "nvmeof_controller_queues", {{"controller", "nvme0"}}), 5);
  EXPECT_EQ(Value(sink_, "nvmeof_controller_queues", {{"controller", "nvme3"}}), 3);
  EXPECT_EQ(Value(sink_, "nvmeof_controller_keep_alive_timeout_seconds", {{"controller", "nvme0"}}),
            5);
  EXPECT_EQ(Value(sink_, "nvmeof_controller_keep_alive_timeout_seconds", {{"controller", "nvme3"}}),
            0);
  EXPECT_EQ(Value(sink_, "nvmeof_controller_reconnect_delay_seconds", {{"controller", "nvme1"}}),
            10);
  EXPECT_EQ(Value(sink_, "nvmeof_controller_loss_timeout_seconds", {{"controller", "nvme0"}}), 600);
  // "off" means retried forever / never fails fast.
  EXPECT_EQ(Value(sink_, "nvmeof_controller_loss_timeout_seconds", {{"controller", "nvme2"}}),
            INFINITY);
  EXPECT_EQ(
      Value(sink_, "nvmeof_controller_fast_io_fail_timeout_seconds", {{"controller", "nvme0"}}),
      INFINITY);
  EXPECT_EQ(
      Value(sink_, "nvmeof_controller_fast_io_fail_timeout_seconds", {{"controller", "nvme1"}}),
      30);
  // pcie has no fabrics options: those series are absent, not zero.
  for (const char* f :
       {"nvmeof_controller_reconnect_delay_seconds", "nvmeof_controller_loss_timeout_seconds",
        "nvmeof_controller_fast_io_fail_timeout_seconds"}) {
    EXPECT_TRUE(Select(sink_, f, {{"controller", "nvme3"}}).empty()) << f;
    EXPECT_EQ(Select(sink_, f).size(), 3u) << f;
  }
}

TEST_F(NvmeHostFixture, DiagCounters) {
  EXPECT_EQ(sink_.Find("nvmeof_controller_reconnects_total")->type,
            prometheus::MetricType::Counter);
  EXPECT_EQ(Value(sink_, "nvmeof_controller_reconnects_total", {{"controller", "nvme2"}}), 7);
  EXPECT_EQ(Value(sink_, "nvmeof_controller_resets_total", {{"controller", "nvme2"}}), 1);
  EXPECT_EQ(Value(sink_, "nvmeof_controller_resets_total", {{"controller", "nvme3"}}), 0);
  EXPECT_TRUE(
      Select(sink_, "nvmeof_controller_reconnects_total", {{"controller", "nvme3"}}).empty());
  EXPECT_EQ(Select(sink_, "nvmeof_controller_command_errors_total").size(), 4u);
}

TEST_F(NvmeHostFixture, SubsystemInfo) {
  ASSERT_EQ(Select(sink_, "nvmeof_subsystem_info").size(), 3u);
  ExpectSeriesLabels(sink_, "nvmeof_subsystem_info", {"nvme_subsystem"},
                     {{{"nvme_subsystem", "nvme-subsys1"},
                       {"nqn", "nqn.2024-06.io.example:null-test"},
                       {"subsystype", "nvm"},
                       {"iopolicy", "round-robin"},
                       {"model", "Linux"},  // space padding trimmed
                       {"serial", "3c2b1a0f9e8d7c6b5a49"},
                       {"firmware_rev", "6.1.0-28"}}});
  EXPECT_EQ(Select(sink_, "nvmeof_subsystem_info",
                   {{"nvme_subsystem", "nvme-subsys3"},
                    {"model", "Samsung SSD 980 PRO 1TB"},
                    {"serial", "S5GXNX0T123456M"},
                    {"iopolicy", "numa"}})
                .size(),
            1u);
}

TEST_F(NvmeHostFixture, Namespaces) {
  ASSERT_EQ(Select(sink_, "nvmeof_namespace_info").size(), 3u);
  ExpectSeriesLabels(sink_, "nvmeof_namespace_info", {"nvme_namespace"},
                     {{{"nvme_subsystem", "nvme-subsys1"},
                       {"nvme_namespace", "nvme1n1"},
                       {"nsid", "1"},
                       {"nqn", "nqn.2024-06.io.example:null-test"}}});
  EXPECT_EQ(Select(sink_, "nvmeof_namespace_info",
                   {{"nvme_namespace", "nvme0n1"}, {"nvme_subsystem", "nvme-subsys0"}})
                .size(),
            1u);
  // The pcie namespace has no multipath head: found under its controller.
  EXPECT_EQ(Select(sink_, "nvmeof_namespace_info",
                   {{"nvme_namespace", "nvme3n1"},
                    {"nvme_subsystem", "nvme-subsys3"},
                    {"nqn", "nqn.1994-11.com.samsung:nvme:980PRO:M.2:S5GXNX0T123456M"}})
                .size(),
            1u);
  EXPECT_EQ(Value(sink_, "nvmeof_namespace_size_bytes", {{"nvme_namespace", "nvme1n1"}}),
            2097152.0 * 512);
  EXPECT_EQ(Value(sink_, "nvmeof_namespace_size_bytes", {{"nvme_namespace", "nvme3n1"}}),
            1953525168.0 * 512);
}

TEST_F(NvmeHostFixture, PathsAndAnaState) {
  ASSERT_EQ(Select(sink_, "nvmeof_path_info").size(), 4u);
  // Two controllers, two paths, one namespace head.
  auto paths = Select(sink_, "nvmeof_path_info", {{"nvme_namespace", "nvme1n1"}});
  ASSERT_EQ(paths.size(), 2u);
  EXPECT_EQ(
      ToMap(*paths[0]),
      (LabelMap{{"controller", "nvme1"}, {"nvme_namespace", "nvme1n1"}, {"path", "nvme1c1n1"}}));
  EXPECT_EQ(
      ToMap(*paths[1]),
      (LabelMap{{"controller", "nvme2"}, {"nvme_namespace", "nvme1n1"}, {"path", "nvme1c2n1"}}));
  EXPECT_EQ(Select(sink_, "nvmeof_path_info",
                   {{"controller", "nvme3"}, {"nvme_namespace", "nvme3n1"}, {"path", "nvme3n1"}})
                .size(),
            1u);

  const std::vector<std::string> states = {"optimized",       "non-optimized", "inaccessible",
                                           "persistent-loss", "change",        "invalid"};
  const std::map<std::string, std::string> current = {
      {"nvme0c0n1", "optimized"}, {"nvme1c1n1", "optimized"}, {"nvme1c2n1", "non-optimized"}};
  EXPECT_EQ(Select(sink_, "nvmeof_path_ana_state").size(), current.size() * states.size());
  for (const auto& [path, state] : current) {
    for (const auto& s : states) {
      EXPECT_EQ(Value(sink_, "nvmeof_path_ana_state", {{"path", path}, {"state", s}}),
                s == state ? 1 : 0)
          << path << " " << s;
    }
  }
  EXPECT_EQ(Select(sink_, "nvmeof_path_ana_state",
                   {{"path", "nvme1c2n1"}, {"controller", "nvme2"}, {"nvme_namespace", "nvme1n1"}})
                .size(),
            states.size());
  EXPECT_TRUE(Select(sink_, "nvmeof_path_ana_state", {{"path", "nvme3n1"}}).empty());
}

// Each path disk's inflight file ("reads writes"), per direction; no file, no series.
TEST_F(NvmeHostFixture, PathInflight) {
  EXPECT_EQ(Value(sink_, "nvmeof_path_inflight_commands", {{"path", "nvme1c1n1"}, {"op", "read"}}),
            3);
  EXPECT_EQ(Value(sink_, "nvmeof_path_inflight_commands", {{"path", "nvme1c1n1"}, {"op", "write"}}),
            1);
  EXPECT_EQ(Value(sink_, "nvmeof_path_inflight_commands",
                  {{"controller", "nvme2"}, {"path", "nvme1c2n1"}, {"op", "read"}}),
            0);
  EXPECT_EQ(Select(sink_, "nvmeof_path_inflight_commands").size(), 4u);  // nvme0c0n1 has none
}

// Layouts met on real systems (tests/fixtures/layouts/README.md).
MetricSink CollectLayout(const std::string& tree, bool* ok) {
  MetricSink sink;
  *ok = kNvmeHost.Collect(FixturePath("layouts/" + tree + "/sysfs"), sink);
  return sink;
}

// nvme_core.multipath=N: no head, so the namespace under its controller is its only path, and
// an ANA controller's ana_state is in that namespace's own directory.
TEST(NvmeHostLayouts, MultipathOffServesAnaState) {
  bool ok = false;
  MetricSink sink = CollectLayout("nvme-multipath-off", &ok);
  ASSERT_TRUE(ok);
  EXPECT_EQ(sink.skipped(), 0u);
  EXPECT_EQ(Select(sink, "nvmeof_namespace_info").size(), 1u);
  EXPECT_EQ(Select(sink, "nvmeof_path_info",
                   {{"controller", "nvme0"}, {"nvme_namespace", "nvme0n1"}, {"path", "nvme0n1"}})
                .size(),
            1u);
  const std::vector<std::string> states = {"optimized",       "non-optimized", "inaccessible",
                                           "persistent-loss", "change",        "invalid"};
  ASSERT_EQ(Select(sink, "nvmeof_path_ana_state").size(), states.size());
  for (const auto& s : states) {
    EXPECT_EQ(Value(sink, "nvmeof_path_ana_state",
                    {{"controller", "nvme0"},
                     {"nvme_namespace", "nvme0n1"},
                     {"path", "nvme0n1"},
                     {"state", s}}),
              s == "non-optimized" ? 1 : 0)
        << s;
  }
  EXPECT_TRUE(sink.anomalies().empty());
}

// One namespace under both its subsystem and its controller: one namespace_info (and size),
// not a duplicate series that makes Prometheus reject the scrape.
TEST(NvmeHostLayouts, NamespaceShownTwiceIsServedOnce) {
  bool ok = false;
  MetricSink sink = CollectLayout("nvme-namespace-twice", &ok);
  ASSERT_TRUE(ok);
  const auto info = Select(sink, "nvmeof_namespace_info");
  ASSERT_EQ(info.size(), 1u);
  EXPECT_EQ(ToMap(*info[0]), (LabelMap{{"nvme_subsystem", "nvme-subsys0"},
                                       {"nvme_namespace", "nvme0n1"},
                                       {"nsid", "1"},
                                       {"nqn", "nqn.2024-06.io.example:ana-test"}}));
  EXPECT_EQ(Select(sink, "nvmeof_namespace_size_bytes").size(), 1u);
  EXPECT_EQ(Select(sink, "nvmeof_path_info").size(), 1u);
  // Not even dropped by the sink's guard: the collector does not make the duplicate.
  EXPECT_EQ(sink.skipped(), 0u);
  EXPECT_TRUE(sink.anomalies().empty());
}

// The diag group (Debian's 7.2 has it; the names as 7.2.13 shows them): per-path failover
// and retry counts, and a head's I/O with no path. Absent files (every older kernel, and the
// fixture) are no series, not 0.
TEST_F(NvmeHostFixture, DiagPathCountersAbsentAreNoSeries) {
  for (const char* f :
       {"nvmeof_path_diag_failovers_total", "nvmeof_path_diag_command_retries_total",
        "nvmeof_namespace_diag_no_usable_path_requeues_total",
        "nvmeof_namespace_diag_no_available_path_failures_total"}) {
    EXPECT_EQ(sink_.Find(f), nullptr) << f;
  }
}

TEST(NvmeHostLayouts, DiagPathCounters) {
  ScratchDir d;
  d.Write("class/nvme/nvme0/transport", "tcp\n");
  d.Write("class/nvme/nvme0/state", "live\n");
  d.Write("class/nvme/nvme0/nvme0c0n1/nsid", "1\n");
  d.Write("class/nvme/nvme0/nvme0c0n1/diag/multipath_failover_count", "3\n");
  d.Write("class/nvme/nvme0/nvme0c0n1/diag/command_retries_count", "11\n");
  d.Write("class/nvme/nvme0/nvme0c1n1/nsid", "1\n");  // no diag group: no series
  d.Write("class/nvme/nvme0/nvme0c2n1/nsid", "1\n");
  d.Write("class/nvme/nvme0/nvme0c2n1/diag/multipath_failover_count", "x\n");  // skipped
  d.Write("class/nvme-subsystem/nvme-subsys0/subsysnqn", "nqn.test\n");
  d.Write("class/nvme-subsystem/nvme-subsys0/nvme0n1/nsid", "1\n");
  d.Write("class/nvme-subsystem/nvme-subsys0/nvme0n1/diag/io_requeue_no_usable_path_count", "5\n");
  d.Write("class/nvme-subsystem/nvme-subsys0/nvme0n1/diag/io_fail_no_available_path_count", "0\n");
  CollectorOptions o;
  o.paths.sysfs = d.path();
  MetricSink sink;
  ASSERT_TRUE(NewNvmeHostCollector(o)->Collect(sink));
  EXPECT_EQ(sink.Find("nvmeof_path_diag_failovers_total")->type, prometheus::MetricType::Counter);
  ASSERT_EQ(Select(sink, "nvmeof_path_diag_failovers_total").size(), 1u);
  EXPECT_EQ(Value(sink, "nvmeof_path_diag_failovers_total",
                  {{"controller", "nvme0"}, {"nvme_namespace", "nvme0n1"}, {"path", "nvme0c0n1"}}),
            3);
  EXPECT_EQ(Value(sink, "nvmeof_path_diag_command_retries_total", {{"path", "nvme0c0n1"}}), 11);
  EXPECT_EQ(Value(sink, "nvmeof_namespace_diag_no_usable_path_requeues_total",
                  {{"nvme_namespace", "nvme0n1"}}),
            5);
  EXPECT_EQ(Value(sink, "nvmeof_namespace_diag_no_available_path_failures_total",
                  {{"nvme_namespace", "nvme0n1"}}),
            0);
  EXPECT_EQ(sink.skipped(), 1u);
}

TEST(NvmeHostFilter, IncludeOneController) {
  CollectorOptions o = kNvmeHost.EveryFamily(FixturePath("sysfs"));
  o.nvme_host.controllers.include = std::regex("nvme1");
  MetricSink sink;
  ASSERT_TRUE(NewNvmeHostCollector(o)->Collect(sink));
  ASSERT_EQ(Select(sink, "nvmeof_controller_info").size(), 1u);
  EXPECT_EQ(Select(sink, "nvmeof_controller_info", {{"controller", "nvme1"}}).size(), 1u);
  EXPECT_EQ(Select(sink, "nvmeof_path_info").size(), 1u);
  EXPECT_EQ(Select(sink, "nvmeof_subsystem_info").size(), 3u);  // subsystems are not filtered
}

// The families nvme_host.inventory adds (docs/fleet.md): none of them at the default, and the
// rest of the scrape unchanged.
constexpr const char* kInventoryFamilies[] = {"nvmeof_subsystem_info",
                                              "nvmeof_namespace_size_bytes",
                                              "nvmeof_controller_queues",
                                              "nvmeof_controller_keep_alive_timeout_seconds",
                                              "nvmeof_controller_reconnect_delay_seconds",
                                              "nvmeof_controller_loss_timeout_seconds",
                                              "nvmeof_controller_fast_io_fail_timeout_seconds"};

TEST(NvmeHostInventory, OffByDefaultOnWithTheOption) {
  EXPECT_FALSE(kNvmeHost.Defaults(FixturePath("sysfs")).nvme_host.inventory);
  ExpectEveryFamilyAdds(kNvmeHost, kInventoryFamilies,
                        {"nvmeof_controller_info", "nvmeof_namespace_info", "nvmeof_path_info",
                         "nvmeof_controller_state", "nvmeof_path_ana_state"});
}

TEST(NvmeHostInventory, ParsedFromTheSection) {
  NvmeHostOptions o;
  std::string error;
  ASSERT_TRUE(ParseNvmeHostOptions(YAML::Load("{inventory: true, controllers: {exclude: nvme0}}"),
                                   &o, &error))
      << error;
  EXPECT_TRUE(o.inventory);
  EXPECT_FALSE(o.controllers.Allows("nvme0"));
  EXPECT_FALSE(ParseNvmeHostOptions(YAML::Load("{inventory: maybe}"), &o, &error));
  EXPECT_NE(error.find("nvme_host.inventory"), std::string::npos) << error;
  EXPECT_FALSE(ParseNvmeHostOptions(YAML::Load("{inventroy: true}"), &o, &error));
}

// A scratch sysfs tree for odd inputs.
class NvmeHostScratch : public ScratchScrape<kNvmeHost> {
 protected:
  // A minimal fabrics controller: everything a scrape needs except `address`.
  void Controller(const std::string& name, const std::string& state = "live") {
    Write("class/nvme/" + name + "/transport", "tcp\n");
    Write("class/nvme/" + name + "/state", state + "\n");
    Write("class/nvme/" + name + "/queue_count", "3\n");
  }
  LabelMap InfoOf(const MetricSink& sink, const std::string& ctrl) {
    auto sel = Select(sink, "nvmeof_controller_info", {{"controller", ctrl}});
    return sel.size() == 1 ? ToMap(*sel[0]) : LabelMap{};
  }
};

TEST_F(NvmeHostScratch, AddressParsingEdgeCases) {
  const std::map<std::string, std::string> addresses = {
      // IPv6 addresses hold colons and a zone; unknown keys are dropped.
      {"nvme0", "traddr=fe80::1%eth0,trsvcid=4420,host_iface=eth0,foo=bar,src_addr=fe80::2\n"},
      {"nvme1", "traddr=10.0.0.1,trsvcid=4420,\n"},                     // trailing comma
      {"nvme2", "trsvcid=4420,garbage,traddr=,host_traddr=1.2.3.4\n"},  // no '=', empty
      {"nvme3", "\n"},                                                  // empty
      {"nvme4",
       "traddr=nn-0x20000090fa942779:pn-0x10000090fa942779,"
       "host_traddr=nn-0x20000090fae0b5f5:pn-0x10000090fae0b5f5\n"},    // fc
      {"nvme5", "traddr=10.0.0.1,trsvcid=4420,src_addr=10.0.0.2=x\n"},  // '=' in a value
  };
  for (const auto& [ctrl, addr] : addresses) {
    Controller(ctrl);
    Write("class/nvme/" + ctrl + "/address", addr);
  }
  Controller("nvme6");  // no address attribute at all (e.g. loop)
  MetricSink sink;
  ASSERT_TRUE(Collect(sink));
  EXPECT_EQ(sink.skipped(), 0u);

  auto a = InfoOf(sink, "nvme0");
  EXPECT_EQ(a["traddr"], "fe80::1%eth0");
  EXPECT_EQ(a["trsvcid"], "4420");
  EXPECT_EQ(a["host_iface"], "eth0");
  EXPECT_EQ(a["src_addr"], "fe80::2");
  EXPECT_EQ(a.count("foo"), 0u);
  EXPECT_EQ(a.size(), 11u);  // the fixed label set, nothing more

  a = InfoOf(sink, "nvme1");
  EXPECT_EQ(a["traddr"], "10.0.0.1");
  EXPECT_EQ(a["trsvcid"], "4420");

  a = InfoOf(sink, "nvme2");
  EXPECT_EQ(a["traddr"], "");
  EXPECT_EQ(a["trsvcid"], "4420");
  EXPECT_EQ(a["host_traddr"], "1.2.3.4");

  for (const char* c : {"nvme3", "nvme6"}) {
    a = InfoOf(sink, c);
    ASSERT_EQ(a.size(), 11u) << c;  // still reported, with empty address labels
    EXPECT_EQ(a["traddr"], "") << c;
    EXPECT_EQ(a["trsvcid"], "") << c;
    EXPECT_EQ(a["transport"], "tcp") << c;
  }

  a = InfoOf(sink, "nvme4");
  EXPECT_EQ(a["traddr"], "nn-0x20000090fa942779:pn-0x10000090fa942779");
  EXPECT_EQ(a["host_traddr"], "nn-0x20000090fae0b5f5:pn-0x10000090fae0b5f5");

  EXPECT_EQ(InfoOf(sink, "nvme5")["src_addr"], "10.0.0.2=x");
}

TEST_F(NvmeHostScratch, StateStrings) {
  Controller("nvme0", "deleting (no IO)");
  Controller("nvme1", "garbage");
  Controller("nvme2", "unknown state");  // what the kernel prints for a state it has no name for
  Controller("nvme3", "LIVE");
  Controller("nvme4", "dead");
  Write("class/nvme/nvme5/transport", "tcp\n");  // no state file
  Write("class/nvme/nvme5/queue_count", "1\n");
  MetricSink sink;
  ASSERT_TRUE(Collect(sink));
  EXPECT_EQ(
      Value(sink, "nvmeof_controller_state", {{"controller", "nvme0"}, {"state", "deleting_noio"}}),
      1);
  EXPECT_EQ(
      Value(sink, "nvmeof_controller_state", {{"controller", "nvme0"}, {"state", "deleting"}}), 0);
  EXPECT_EQ(Value(sink, "nvmeof_controller_state", {{"controller", "nvme4"}, {"state", "dead"}}),
            1);
  for (const char* c : {"nvme1", "nvme2", "nvme3", "nvme5"}) {
    EXPECT_TRUE(Select(sink, "nvmeof_controller_state", {{"controller", c}}).empty()) << c;
    EXPECT_EQ(Select(sink, "nvmeof_controller_info", {{"controller", c}}).size(), 1u) << c;
  }
  EXPECT_EQ(sink.skipped(), 4u);
}

TEST_F(NvmeHostScratch, OddValuesAreSkipped) {
  Controller("nvme0");
  Write("class/nvme/nvme0/queue_count", "abc\n");
  Write("class/nvme/nvme0/ctrl_loss_tmo", "-1\n");
  Write("class/nvme/nvme0/reconnect_delay", "\n");
  Write("class/nvme/nvme0/fast_io_fail_tmo", "off\n");
  Write("class/nvme/nvme0/diag/reconnect_count", "many\n");
  Write("class/nvme/nvme0/nvme0c0n1/ana_state", "bogus\n");
  Write("class/nvme/nvme0/nvme0c0n1/nsid", "1\n");
  Write("class/nvme/nvme0/nvme0c0n1/inflight", "       1        2        3\n");  // one too many
  Write("class/nvme/nvme0/nvme0n9/size", "12x\n");  // non-multipath namespace, odd size
  Write("class/nvme/nvme0/nvme0n9/inflight", "x 1\n");
  Write("class/nvme/nvme0/nvme0n9p1/size", "1\n");  // a partition: ignored
  Write("class/nvme/nvme0/ng0n9/nsid", "9\n");      // generic char device: ignored
  MetricSink sink;
  ASSERT_TRUE(Collect(sink));
  EXPECT_TRUE(Select(sink, "nvmeof_controller_queues").empty());
  EXPECT_TRUE(Select(sink, "nvmeof_controller_loss_timeout_seconds").empty());
  EXPECT_TRUE(Select(sink, "nvmeof_controller_reconnect_delay_seconds").empty());
  EXPECT_TRUE(Select(sink, "nvmeof_controller_reconnects_total").empty());
  EXPECT_TRUE(Select(sink, "nvmeof_path_ana_state").empty());
  EXPECT_TRUE(Select(sink, "nvmeof_namespace_size_bytes").empty());
  EXPECT_TRUE(Select(sink, "nvmeof_path_inflight_commands").empty());
  EXPECT_EQ(
      Value(sink, "nvmeof_controller_fast_io_fail_timeout_seconds", {{"controller", "nvme0"}}),
      INFINITY);
  // queue_count, ctrl_loss_tmo, reconnect_delay, reconnect_count, ana_state, size, 2 inflight.
  EXPECT_EQ(sink.skipped(), 8u);
  EXPECT_EQ(Select(sink, "nvmeof_path_info").size(), 2u);  // nvme0c0n1 and nvme0n9
  EXPECT_EQ(Select(sink, "nvmeof_namespace_info").size(), 1u);
  EXPECT_EQ(
      Select(sink, "nvmeof_namespace_info", {{"nvme_namespace", "nvme0n9"}, {"nsid", ""}}).size(),
      1u);
}

TEST_F(NvmeHostScratch, EmptyRootIsSuccessWithoutSeries) { ExpectEmptySuccess(*NewCollector()); }

TEST(NvmeHostMissing, NonexistentRootIsSuccessWithoutSeries) {
  ExpectEmptySuccess(*NewNvmeHostCollector(kNvmeHost.Defaults("/nonexistent/sysfs")));
}

TEST(NvmeHostReal, RunsOnThisMachine) {
  CollectorOptions o;  // real /sys: no NVMe here, but it must not fail or crash
  MetricSink sink;
  EXPECT_TRUE(NewNvmeHostCollector(o)->Collect(sink));
}

}  // namespace
}  // namespace nvmeof
