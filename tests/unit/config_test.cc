#include "exporter/config.h"

#include <gtest/gtest.h>

#include "exporter/web_config.h"

namespace nvmeof {
namespace {

bool Parse(std::vector<const char*> args, Options* o, std::string* error) {
  args.insert(args.begin(), "nvmeof_exporter");
  return ParseOptions(static_cast<int>(args.size()), args.data(), o, error);
}

TEST(Config, DefaultsAndFlags) {
  Options o;
  std::string error;
  ASSERT_TRUE(Parse({"--web.listen-address", "127.0.0.1:1234", "--no-collector.pfc",
                     "--web.max-requests=2", "--log.level=debug"},
                    &o, &error))
      << error;
  EXPECT_EQ(o.web.listen_address, "127.0.0.1:1234");
  EXPECT_EQ(o.web.telemetry_path, "/metrics");
  EXPECT_EQ(o.web.max_requests, 2);
  EXPECT_FALSE(o.collectors["pfc"]);
  EXPECT_TRUE(o.collectors["rdma"]);
  EXPECT_EQ(o.collector.paths.sysfs, "/sys");
}

TEST(Config, ErrorsNameTheFlag) {
  Options o;
  std::string error;
  EXPECT_FALSE(Parse({"--web.max-requests=0"}, &o, &error));
  EXPECT_NE(error.find("--web.max-requests"), std::string::npos);
  EXPECT_FALSE(Parse({"--collector.rdma=true"}, &o, &error));
  EXPECT_NE(error.find("takes no value"), std::string::npos);
  EXPECT_FALSE(Parse({"--config.file"}, &o, &error));
  EXPECT_NE(error.find("missing value"), std::string::npos);
  EXPECT_FALSE(Parse({"stray"}, &o, &error));
  EXPECT_FALSE(Parse({"--bpf.mechanism=magic"}, &o, &error));
  EXPECT_NE(error.find("--bpf.mechanism"), std::string::npos);
}

TEST(Config, YamlFiltersAndBpf) {
  Options o;
  std::string error;
  ASSERT_TRUE(Parse({}, &o, &error));
  ASSERT_TRUE(ApplyConfigYaml(R"(
collectors: {tcp: false}
rdma: {devices: {include: "mlx5_.*", exclude: "mlx5_1"}}
pfc: {netdevs: {include: "eth.*"}}
bpf:
  mechanism: raw_tp
  sample_every: 8
  buckets: [0.00001, 0.0001, 0.001]
  enable_stats: true
  block_devices: {exclude: "loop.*"}
  size_classes: true
)",
                              "test.yml", &o, &error))
      << error;
  EXPECT_FALSE(o.collectors["tcp"]);
  EXPECT_TRUE(o.collector.rdma.devices.Allows("mlx5_0"));
  EXPECT_FALSE(o.collector.rdma.devices.Allows("mlx5_1"));
  EXPECT_FALSE(o.collector.rdma.devices.Allows("rxe0"));
  EXPECT_TRUE(o.collector.pfc.netdevs.Allows("eth0"));
  EXPECT_EQ(o.collector.bpf.mechanism, "raw_tp");
  EXPECT_EQ(o.collector.bpf.sample_every, 8u);
  EXPECT_EQ(o.collector.bpf.buckets.size(), 3u);
  EXPECT_TRUE(o.collector.bpf.enable_stats);
  EXPECT_FALSE(o.collector.bpf.block_devices.Allows("loop0"));
  EXPECT_TRUE(o.collector.bpf.size_classes);
}

TEST(Config, YamlErrorsNameTheKey) {
  Options o;
  std::string error;
  ASSERT_TRUE(Parse({}, &o, &error));
  EXPECT_FALSE(ApplyConfigYaml("rdma: {device: {}}", "c.yml", &o, &error));
  EXPECT_NE(error.find("c.yml: rdma.device: unknown key"), std::string::npos) << error;
  EXPECT_FALSE(ApplyConfigYaml("bpf: {size_classes: sometimes}", "c.yml", &o, &error));
  EXPECT_NE(error.find("bpf.size_classes"), std::string::npos) << error;
  EXPECT_FALSE(ApplyConfigYaml("bpf: {mechanism: [1]}", "c.yml", &o, &error));
  EXPECT_NE(error.find("bpf.mechanism: expected a string"), std::string::npos) << error;
  EXPECT_FALSE(ApplyConfigYaml("- a\n- b\n", "c.yml", &o, &error));
  EXPECT_TRUE(ApplyConfigYaml("", "empty.yml", &o, &error));
}

TEST(WebConfig, ParsesToolkitSchemaAndRejectsWhatItCannotHonour) {
  WebConfig c;
  std::string error;
  const std::string hash = "$2y$10$QOauhQNbBCuQDKes6eFzPeMqBSjb7Mr5DUmpZ/VcEd00UAV/LDeSi";
  ASSERT_TRUE(ParseWebConfig("basic_auth_users:\n  alice: '" + hash +
                                 "'\nhttp_server_config:\n  headers:\n    X-Frame-Options: deny\n",
                             "", &c, &error))
      << error;
  EXPECT_EQ(c.users.at("alice"), hash);
  EXPECT_EQ(c.headers.at("X-Frame-Options"), "deny");
  EXPECT_FALSE(c.tls());
  WebConfig d;
  EXPECT_FALSE(
      ParseWebConfig("tls_server_config: {cert_file: a, key_file: b, client_auth_type: "
                     "RequireAndVerifyClientCert}",
                     "/nonexistent", &d, &error));
  EXPECT_FALSE(ParseWebConfig("basic_auth_users: {bob: [x]}", "", &d, &error));
  EXPECT_NE(error.find("basic_auth_users.bob"), std::string::npos) << error;
}

TEST(WebConfig, VerifyBcrypt) {
  // htpasswd -nbBC 4 u secret
  const std::string hash = "$2y$04$hg6o9cglax0nGNdDnZYMP.8eL8Dc58jNtJXEoPEUhRfgJWfMX7BC.";
  EXPECT_TRUE(VerifyBcrypt("secret", hash));
  EXPECT_FALSE(VerifyBcrypt("Secret", hash));
  EXPECT_FALSE(VerifyBcrypt("secret", "$2y$04$garbage"));
}

}  // namespace
}  // namespace nvmeof
