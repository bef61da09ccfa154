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

const std::string kNqnA = "nqn.2024-06.io.example:ssd-pool";
const std::string kNqnB = "nqn.2024-06.io.example:null-test";

// Scraped with every family (nvmet.inventory); the default's are checked below.
constexpr TreeCollector kNvmet = {NewNvmetCollector, &Paths::configfs, "configfs",
                                  [](CollectorOptions& o) { o.nvmet.inventory = true; }};

using NvmetFixture = FixtureScrape<kNvmet>;

TEST_F(NvmetFixture, SucceedsWithoutSkips) { ExpectSucceededWithoutSkips(); }

TEST_F(NvmetFixture, SubsystemInfo) {
  ASSERT_EQ(Select(sink_, "nvmeof_target_subsystem_info").size(), 2u);
  ExpectSeriesLabels(sink_, "nvmeof_target_subsystem_info", {"nqn"},
                     {{{"nqn", kNqnA},
                       {"serial", "9d4b8c1f2e3a5b6c7d8e"},
                       {"model", "Linux"},
                       {"version", "1.3"},
                       {"allow_any_host", "0"}}});
  EXPECT_EQ(Select(sink_, "nvmeof_target_subsystem_info", {{"nqn", kNqnB}, {"allow_any_host", "1"}})
                .size(),
            1u);
}

TEST_F(NvmetFixture, Namespaces) {
  ASSERT_EQ(Select(sink_, "nvmeof_target_namespace_info").size(), 3u);
  ExpectSeriesLabels(sink_, "nvmeof_target_namespace_info", {"nqn", "nsid"},
                     {{{"nqn", kNqnA},
                       {"nsid", "1"},
                       {"device_path", "/dev/nvme0n1"},
                       {"device_uuid", "6f9a3c52-8d1e-4b7a-9c2f-0e5d4a3b2c1d"},
                       {"ana_grpid", "1"}}});
  EXPECT_EQ(Select(sink_, "nvmeof_target_namespace_info",
                   {{"nqn", kNqnB}, {"nsid", "1"}, {"device_path", "/dev/nullb0"}})
                .size(),
            1u);
  EXPECT_EQ(Value(sink_, "nvmeof_target_namespace_enabled", {{"nqn", kNqnA}, {"nsid", "1"}}), 1);
  EXPECT_EQ(Value(sink_, "nvmeof_target_namespace_enabled", {{"nqn", kNqnA}, {"nsid", "2"}}), 0);
  EXPECT_EQ(Value(sink_, "nvmeof_target_namespace_enabled", {{"nqn", kNqnB}, {"nsid", "1"}}), 1);
}

TEST_F(NvmetFixture, AllowedHosts) {
  auto hosts = Select(sink_, "nvmeof_target_allowed_host");
  ASSERT_EQ(hosts.size(), 2u);
  EXPECT_EQ(ToMap(*hosts[0]),
            (LabelMap{{"nqn", kNqnA},
                      {"hostnqn",
                       "nqn.2014-08.org.nvmexpress:uuid:1b4e28ba-2fa1-11d2-883f-0016d3cca427"}}));
  EXPECT_EQ(ToMap(*hosts[1]),
            (LabelMap{{"nqn", kNqnA},
                      {"hostnqn",
                       "nqn.2014-08.org.nvmexpress:uuid:4c4c4544-0035-4b10-8044-b4c04f4d3232"}}));
  EXPECT_TRUE(Select(sink_, "nvmeof_target_allowed_host", {{"nqn", kNqnB}}).empty());
}

TEST_F(NvmetFixture, Ports) {
  ASSERT_EQ(Select(sink_, "nvmeof_target_port_info").size(), 3u);
  ExpectSeriesLabels(sink_, "nvmeof_target_port_info", {"nvmet_port"},
                     {{{"nvmet_port", "1"},
                       {"trtype", "rdma"},
                       {"traddr", "10.0.0.1"},
                       {"trsvcid", "4420"},
                       {"adrfam", "ipv4"}},
                      {{"nvmet_port", "2"},
                       {"trtype", "tcp"},
                       {"traddr", "192.168.1.10"},
                       {"trsvcid", "4421"},
                       {"adrfam", "ipv4"}}});
  auto links = Select(sink_, "nvmeof_target_port_subsystem");
  ASSERT_EQ(links.size(), 3u);
  EXPECT_EQ(ToMap(*links[0]), (LabelMap{{"nvmet_port", "1"}, {"nqn", kNqnA}}));
  EXPECT_EQ(ToMap(*links[1]), (LabelMap{{"nvmet_port", "2"}, {"nqn", kNqnB}}));
  EXPECT_EQ(ToMap(*links[2]), (LabelMap{{"nvmet_port", "3"}, {"nqn", kNqnB}}));
}

TEST_F(NvmetFixture, AnaGroupStateIsOneHot) {
  const std::vector<std::string> states = {"optimized", "non-optimized", "inaccessible",
                                           "persistent-loss", "change"};
  EXPECT_EQ(Select(sink_, "nvmeof_target_ana_group_state").size(), 3 * states.size());
  for (const auto& s : states) {
    EXPECT_EQ(Value(sink_, "nvmeof_target_ana_group_state",
                    {{"nvmet_port", "1"}, {"group", "1"}, {"state", s}}),
              s == "optimized" ? 1 : 0);
    EXPECT_EQ(Value(sink_, "nvmeof_target_ana_group_state",
                    {{"nvmet_port", "3"}, {"group", "1"}, {"state", s}}),
              s == "non-optimized" ? 1 : 0);
  }
}

using NvmetScratch = ScratchScrape<kNvmet>;

// The families nvmet.inventory adds (docs/fleet.md): none of them at the default; the namespace,
// port and ANA series the rules join on are the same either way.
TEST(NvmetInventory, OffByDefaultOnWithTheOption) {
  EXPECT_FALSE(kNvmet.Defaults(FixturePath("configfs")).nvmet.inventory);
  const char* added[] = {"nvmeof_target_subsystem_info", "nvmeof_target_namespace_enabled",
                         "nvmeof_target_allowed_host", "nvmeof_target_port_subsystem"};
  ExpectEveryFamilyAdds(
      kNvmet, added,
      {"nvmeof_target_namespace_info", "nvmeof_target_port_info", "nvmeof_target_ana_group_state"});
}

TEST(NvmetInventory, ParsedFromTheSection) {
  NvmetOptions o;
  std::string error;
  ASSERT_TRUE(ParseNvmetOptions(YAML::Load("{inventory: true}"), &o, &error)) << error;
  EXPECT_TRUE(o.inventory);
  EXPECT_FALSE(ParseNvmetOptions(YAML::Load("{inventory: 2}"), &o, &error));
  EXPECT_NE(error.find("nvmet.inventory"), std::string::npos) << error;
  EXPECT_FALSE(ParseNvmetOptions(YAML::Load("{devices: {}}"), &o, &error));
}

TEST_F(NvmetScratch, OddFiles) {
  Write("nvmet/subsystems/s1/attr_allow_any_host", "1\n");
  Write("nvmet/subsystems/s1/namespaces/1/device_path", "(null)\n");  // never set
  Write("nvmet/subsystems/s1/namespaces/1/enable", "0\n");
  Write("nvmet/subsystems/s1/namespaces/2/enable", "yes\n");  // odd
  Write("nvmet/subsystems/s1/namespaces/3/enable", "2\n");    // not a boolean
  Write("nvmet/subsystems/s1/namespaces/x/enable", "1\n");    // not an nsid: ignored
  Write("nvmet/ports/1/addr_trtype", "tcp\n");
  Write("nvmet/ports/1/ana_groups/1/ana_state", "\n");  // kernel prints "" for unknown
  Write("nvmet/ports/1/ana_groups/2/ana_state", "sideways\n");
  Write("nvmet/ports/abc/addr_trtype", "tcp\n");  // not a port id: ignored
  MetricSink sink;
  ASSERT_TRUE(Collect(sink));
  EXPECT_EQ(Select(sink, "nvmeof_target_namespace_info",
                   {{"nqn", "s1"}, {"nsid", "1"}, {"device_path", ""}})
                .size(),
            1u);
  EXPECT_EQ(Select(sink, "nvmeof_target_namespace_info").size(), 3u);
  EXPECT_EQ(Select(sink, "nvmeof_target_namespace_enabled").size(), 1u);
  EXPECT_EQ(
      ToMap(*Select(sink, "nvmeof_target_subsystem_info")[0]),
      (LabelMap{
          {"nqn", "s1"}, {"serial", ""}, {"model", ""}, {"version", ""}, {"allow_any_host", "1"}}));
  EXPECT_EQ(ToMap(*Select(sink, "nvmeof_target_port_info")[0]), (LabelMap{{"nvmet_port", "1"},
                                                                          {"trtype", "tcp"},
                                                                          {"traddr", ""},
                                                                          {"trsvcid", ""},
                                                                          {"adrfam", ""}}));
  EXPECT_TRUE(Select(sink, "nvmeof_target_ana_group_state").empty());
  EXPECT_EQ(sink.skipped(), 4u);  // two enables, two ana states
}

TEST_F(NvmetScratch, EmptyRootIsSuccessWithoutSeries) {
  ExpectEmptySuccess(*NewCollector());  // configfs without nvmet: module not loaded
  fs::create_directories(root_ + "/nvmet/subsystems");
  fs::create_directories(root_ + "/nvmet/ports");
  fs::create_directories(root_ + "/nvmet/hosts");
  ExpectEmptySuccess(*NewCollector());  // loaded, nothing configured
}

TEST(NvmetMissing, NonexistentRootIsSuccessWithoutSeries) {
  ExpectEmptySuccess(*NewNvmetCollector(kNvmet.Defaults("/nonexistent/configfs")));
}

}  // namespace
}  // namespace nvmeof
