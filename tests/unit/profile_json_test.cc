// profile/json_out.h and the JSON of `report` and `top`: read back with nlohmann/json, every
// value where it was put, and valid JSON whatever bytes a device name holds.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <sstream>

#include "loader/record_file.h"
#include "profile/json_out.h"
#include "profile/report_data.h"
#include "profile/report_render.h"
#include "profile/top_render.h"

namespace nvmeof::profile {
namespace {

std::string Dump(const Json& j) {
  std::ostringstream out;
  WriteJson(j, out);
  return out.str();
}

TEST(ProfileJson, RealsAreRoundedWholeNumbersIntegersNonFiniteNull) {
  EXPECT_EQ(Dump(JsonReal(1000.0)), "1000\n");
  EXPECT_EQ(Dump(JsonReal(-3.0)), "-3\n");
  EXPECT_EQ(Dump(JsonReal(4.0000000000000001e-05 + 1e-20)), "4e-05\n");
  EXPECT_EQ(Dump(JsonReal(1.0 / 3)), "0.333333333\n");
  EXPECT_EQ(Dump(JsonReal(std::nan(""))), "null\n");
  EXPECT_EQ(Dump(JsonReal(std::numeric_limits<double>::infinity())), "null\n");
  EXPECT_EQ(Dump(JsonReal(1e300)), "1e+300\n");  // a double, not an overflowing integer
}

TEST(ProfileJson, TopFrameReadsBack) {
  TopGroup g;
  g.role = "host";
  g.transport = "rdma";
  g.op = "read";
  g.size = "4KiB";
  g.device = std::string("nvme0n1\"\\\n\xff", 11);  // quote, backslash, newline, not UTF-8
  g.commands_per_second = 1000;
  g.sampled = 125;
  g.mean = 100e-6;
  g.p50 = 90e-6;
  g.p99 = std::nan("");
  g.queue_depth = 0.1;
  g.stages.push_back({"block_submit", 20e-6, 0.2, 0.02});
  std::ostringstream out;
  PrintTopJson({g}, 2.0, out, 12.5);
  const std::string s = out.str();
  ASSERT_EQ(s.back(), '\n');
  EXPECT_EQ(s.find('\n'), s.size() - 1) << "one line per frame";
  const auto j = Json::parse(s);  // ordered: the key order is checked below
  EXPECT_EQ(j["interval_seconds"], 2);
  EXPECT_EQ(j["at_monotonic_seconds"], 12.5);
  ASSERT_EQ(j["groups"].size(), 1u);
  const auto& jg = j["groups"][0];
  EXPECT_EQ(jg["device"], "nvme0n1\"\\\n\xEF\xBF\xBD");  // U+FFFD for the stray byte
  EXPECT_EQ(jg["commands_per_second"], 1000);
  EXPECT_DOUBLE_EQ(jg["mean_seconds"].get<double>(), 100e-6);
  EXPECT_TRUE(jg["p99_seconds"].is_null());
  ASSERT_EQ(jg["stages"].size(), 1u);
  EXPECT_EQ(jg["stages"][0]["stage"], "block_submit");
  EXPECT_DOUBLE_EQ(jg["stages"][0]["share"].get<double>(), 0.2);
  // Key order as documented (docs/profiling.md): role first, stages last.
  EXPECT_EQ(jg.begin().key(), "role");
  std::ostringstream no_at;
  PrintTopJson({}, 1.0, no_at);
  EXPECT_FALSE(nlohmann::json::parse(no_at.str()).contains("at_monotonic_seconds"));
}

Record HostRead(std::uint64_t start, std::uint64_t wait_ns) {
  Record r;
  r.role = NVMEOF_ROLE_HOST;
  r.transport = "tcp";
  r.op = "read";
  r.size = 4096;
  r.device = "nvme1n1";
  r.ts.assign(NVMEOF_HP_COUNT, 0);
  r.ts[NVMEOF_HP_SETUP] = start;
  r.ts[NVMEOF_HP_POSTED] = start + 1'000;
  r.ts[NVMEOF_HP_RESPONSE] = start + 1'000 + wait_ns;
  return r;
}

TEST(ProfileJson, ReportReadsBack) {
  RecordFile f;
  f.header.role = "host";
  f.header.hostname = "h1";
  f.header.sample_every = 4;
  f.lost = 3;
  for (int i = 0; i < 10; ++i)
    f.records.push_back(HostRead(1'000'000 + static_cast<std::uint64_t>(i) * 100'000, 9'000));
  std::ostringstream out;
  PrintReportJson(BuildReport(f, nullptr), out);
  const auto j = nlohmann::json::parse(out.str());
  EXPECT_EQ(j["format"], "nvmeof-report");
  EXPECT_EQ(j["version"], 1);
  ASSERT_EQ(j["files"].size(), 1u);
  EXPECT_EQ(j["files"][0]["hostname"], "h1");
  EXPECT_EQ(j["files"][0]["sample_every"], 4);
  EXPECT_EQ(j["files"][0]["lost"], 3);
  EXPECT_FALSE(j.contains("join"));
  ASSERT_EQ(j["groups"].size(), 1u);
  const auto& g = j["groups"][0];
  EXPECT_EQ(g["n"], 10);
  EXPECT_EQ(g["size"], "4KiB");
  EXPECT_DOUBLE_EQ(g["end_to_end"]["mean_seconds"].get<double>(), 10e-6);
  ASSERT_EQ(g["components"].size(), 2u);
  EXPECT_DOUBLE_EQ(g["components"][1]["mean_seconds"].get<double>(), 9e-6);
  EXPECT_DOUBLE_EQ(g["components"][1]["share"].get<double>(), 0.9);
}

TEST(ProfileJson, ComparisonReadsBack) {
  RecordFile before, after;
  before.header.role = after.header.role = "host";
  for (int i = 0; i < 5; ++i) {
    before.records.push_back(HostRead(1'000'000 + static_cast<std::uint64_t>(i) * 100'000, 9'000));
    after.records.push_back(HostRead(1'000'000 + static_cast<std::uint64_t>(i) * 100'000, 19'000));
  }
  std::ostringstream out;
  PrintComparison(BuildReport(before, nullptr), BuildReport(after, nullptr), true, out);
  const auto j = nlohmann::json::parse(out.str());
  EXPECT_EQ(j["format"], "nvmeof-report-comparison");
  ASSERT_TRUE(j["moved"].is_object()) << out.str();
  EXPECT_DOUBLE_EQ(j["moved"]["change_seconds"].get<double>(), 10e-6);
  EXPECT_FALSE(j["rows"].empty());
  std::ostringstream none;
  RecordFile other = before;
  for (auto& r : other.records) r.device = "nvme9n9";
  PrintComparison(BuildReport(before, nullptr), BuildReport(other, nullptr), true, none);
  EXPECT_TRUE(nlohmann::json::parse(none.str())["moved"].is_null());
}

}  // namespace
}  // namespace nvmeof::profile
