// The config sections read by their collectors (CollectorInfo::parse) and the base YAML readers:
// the exact messages users see, which the move out of exporter/config.cc kept byte for byte.
#include <gtest/gtest.h>

#include "base/yaml.h"
#include "collectors/registry.h"
#include "exporter/config.h"
#include "exporter/web_config.h"

namespace nvmeof {
namespace {

std::string ConfigError(const std::string& yaml) {
  Options o;
  for (const auto& c : AllCollectors()) o.collectors[std::string(c.name)] = c.enabled_by_default;
  std::string error;
  EXPECT_FALSE(ApplyConfigYaml(yaml, "c.yml", &o, &error)) << yaml;
  return error;
}

TEST(OptionsYaml, MessagesAreExact) {
  EXPECT_EQ(ConfigError("bogus: 1"),
            "c.yml: bogus: unknown key (expected one of: bpf, collectors, kubernetes, nvme_host, "
            "nvmet, pfc, rdma, rdma_netlink, tcp)");
  EXPECT_EQ(ConfigError("nvmet: {x: 1}"),
            "c.yml: nvmet.x: unknown key (expected one of: inventory)");
  EXPECT_EQ(ConfigError("nvme_host: {inventory: 3}"),
            "c.yml: nvme_host.inventory: expected true or false");
  EXPECT_EQ(ConfigError("collectors: {x: true}"), "c.yml: collectors.x: unknown collector");
  EXPECT_EQ(ConfigError("collectors: {rdma: maybe}"),
            "c.yml: collectors.rdma: expected true or false");
  EXPECT_EQ(ConfigError("rdma: 3"), "c.yml: rdma: expected a mapping");
  EXPECT_EQ(ConfigError("rdma: {traffic_detail: maybe}"),
            "c.yml: rdma.traffic_detail: expected true or false");
  EXPECT_EQ(ConfigError("pfc: {netdev: {}}"),
            "c.yml: pfc.netdev: unknown key (expected one of: netdevs)");
  EXPECT_EQ(ConfigError("nvme_host: {controllers: {inc: x}}"),
            "c.yml: nvme_host.controllers.inc: unknown key (expected one of: exclude, include)");
  EXPECT_EQ(ConfigError("rdma: {devices: {include: [1]}}"),
            "c.yml: rdma.devices.include: expected a string");
  EXPECT_EQ(ConfigError("rdma: {devices: {include: \"mlx5_[0-\"}}")
                .rfind("c.yml: rdma.devices.include: invalid regular expression \"mlx5_[0-\": ", 0),
            0u);
  EXPECT_EQ(ConfigError("bpf: {sample_every: 0}"),
            "c.yml: bpf.sample_every: \"0\" is not an integer in [1, 1000000]");
  EXPECT_EQ(ConfigError("bpf: {mechanism: magic}"),
            "c.yml: bpf.mechanism: \"magic\" is not one of auto, fentry, kprobe, tp_btf, raw_tp");
  EXPECT_EQ(ConfigError("bpf: {buckets: [0.001, 0.0001]}"),
            "c.yml: bpf.buckets[1]: expected a positive number of seconds, larger than the one "
            "before");
  EXPECT_EQ(ConfigError("bpf: {protobuf_histograms: sparse}"),
            "c.yml: bpf.protobuf_histograms: \"sparse\" is not one of native, classic, both");
  EXPECT_EQ(ConfigError("bpf: {block_devices: {exclude: \"(\"}}")
                .rfind("c.yml: bpf.block_devices.exclude: invalid regular expression \"(\": ", 0),
            0u);
  EXPECT_EQ(ConfigError("rdma_netlink: {max_reply_bytes: 10}"),
            "c.yml: rdma_netlink.max_reply_bytes: \"10\" is not an integer in [4096, 1073741824]");
  EXPECT_EQ(ConfigError("rdma_netlink: {max_qp_series: [1]}"),
            "c.yml: rdma_netlink.max_qp_series: expected a string");
  EXPECT_EQ(ConfigError("rdma_netlink: {timeout_seconds: 61}"),
            "c.yml: rdma_netlink.timeout_seconds: expected a number of seconds in (0, 60]");
  EXPECT_EQ(ConfigError("rdma_netlink: {enable_optional_counters: [\"\"]}"),
            "c.yml: rdma_netlink.enable_optional_counters[0]: empty counter name");
}

TEST(OptionsYaml, SectionsReachTheirCollectorsOptions) {
  Options o;
  std::string error;
  ASSERT_TRUE(
      ApplyConfigYaml("rdma: {devices: {include: \"mlx5_.*\"}, traffic_detail: true}\n"
                      "pfc: {netdevs: {exclude: eth1}}\n"
                      "nvme_host: {controllers: {exclude: nvme0}}\n"
                      "bpf: {sample_every: 4}\n"
                      "rdma_netlink: {per_qp: true, timeout_seconds: 0.5}\n",
                      "c.yml", &o, &error))
      << error;
  const CollectorOptions& c = o.collector;
  EXPECT_TRUE(c.rdma.devices.Allows("mlx5_0"));
  EXPECT_FALSE(c.rdma.devices.Allows("rxe0"));
  EXPECT_TRUE(c.rdma.traffic_detail);
  EXPECT_FALSE(c.pfc.netdevs.Allows("eth1"));
  EXPECT_FALSE(c.nvme_host.controllers.Allows("nvme0"));
  EXPECT_TRUE(c.nvme_host.controllers.Allows("nvme1"));
  EXPECT_EQ(c.bpf.sample_every, 4u);
  EXPECT_TRUE(c.rdma_netlink.per_qp);
  EXPECT_EQ(c.rdma_netlink.timeout_seconds, 0.5);
}

TEST(OptionsYaml, WebConfigKeepsItsShortUnknownKeyMessage) {
  WebConfig c;
  std::string error;
  EXPECT_FALSE(ParseWebConfig("tls_server_confg: {}", "", &c, &error));
  EXPECT_EQ(error, "tls_server_confg: unknown key");
  EXPECT_FALSE(ParseWebConfig("http_server_config: {http3: true}", "", &c, &error));
  EXPECT_EQ(error, "http_server_config.http3: unknown key");
  EXPECT_FALSE(ParseWebConfig("http_server_config: 1", "", &c, &error));
  EXPECT_EQ(error, "http_server_config: expected a mapping");
}

TEST(OptionsYaml, ReadersOnTheirOwn) {
  std::string error;
  std::uint64_t v = 0;
  EXPECT_TRUE(ReadUint(YAML::Load("7"), "a.b", 1, 10, &v, &error));
  EXPECT_EQ(v, 7u);
  EXPECT_FALSE(ReadUint(YAML::Load("-1"), "a.b", 1, 10, &v, &error));
  EXPECT_EQ(error, "a.b: \"-1\" is not an integer in [1, 10]");
  double s = 0;
  EXPECT_FALSE(ReadSeconds(YAML::Load("0"), "t", 2.5, &s, &error));
  EXPECT_EQ(error, "t: expected a number of seconds in (0, 2.5]");
  NameFilter f;
  EXPECT_TRUE(ReadFilter(YAML::Load("{include: \"a.*\", exclude: \"ab\"}"), "f", &f, &error));
  EXPECT_TRUE(f.Allows("ac"));
  EXPECT_FALSE(f.Allows("ab"));
  EXPECT_FALSE(f.Allows("xa"));  // full match
  EXPECT_TRUE(ReadFilter(YAML::Load("{include: \"\"}"), "f", &f, &error));
  EXPECT_TRUE(f.Allows("xa"));  // "" clears the include
}

}  // namespace
}  // namespace nvmeof
