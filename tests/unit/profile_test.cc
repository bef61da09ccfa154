// exporter/profile: the record file format and its reader's errors, the percentile math, and
// the host/target join on synthetic records.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

#include "exporter/profile/record.h"
#include "exporter/profile/report.h"
#include "exporter/profile/top.h"

namespace nvmeof::profile {
namespace {

RecordHeader Header(const std::string& role) {
  RecordHeader h;
  h.hostname = role == "host" ? "h1" : "t1";
  h.kernel = "6.1.0";
  h.role = role;
  h.mechanism = "fentry";
  h.sample_every = 8;
  return h;
}

// A 4 KiB TCP read on queue 1 of controller 3, as both sides see it.
Record Command(std::uint8_t role, std::uint32_t cid, std::uint64_t slba) {
  Record r;
  r.role = role;
  r.transport = "tcp";
  r.op = "read";
  r.size = 4096;
  r.qid = 1;
  r.cid = cid;
  r.cntlid = 3;
  r.subsys = "nqn.test";
  r.slba = slba;
  r.nlb = 7;
  return r;
}

// A host read: setup at t, posted +2us, response +2us+wait, complete +1us, end +1us.
Record HostRec(std::uint32_t cid, std::uint64_t slba, std::uint64_t t, std::uint64_t wait_ns) {
  Record r = Command(NVMEOF_ROLE_HOST, cid, slba);
  r.device = "nvme1n1";
  r.ts = {t, t + 1000, t + 2000, 0, t + 2000 + wait_ns, t + 3000 + wait_ns, t + 4000 + wait_ns};
  return r;
}

// The target side: recv at t, init +1us, exec +2us, done +2us+storage, sent +3us+storage.
Record TargetRec(std::uint32_t cid, std::uint64_t slba, std::uint64_t t, std::uint64_t storage) {
  Record r = Command(NVMEOF_ROLE_TARGET, cid, slba);
  r.ts = {t, t + 1000, 0, t + 2000, t + 2000 + storage, t + 3000 + storage};
  return r;
}

std::string Serialize(const RecordHeader& h, const std::vector<Record>& rs, bool end = true) {
  std::ostringstream out;
  WriteHeader(h, out);
  for (const auto& r : rs) WriteRecord(r, out);
  if (end) WriteEnd(rs.size(), 5, out);
  return out.str();
}

bool Parse(const std::string& text, RecordFile* f, std::string* error) {
  std::istringstream in(text);
  return ReadRecords(in, f, error);
}

TEST(ProfileRecord, RoundTrip) {
  Record r = HostRec(12, 100, 1'000'000, 50'000);
  r.hostnqn = "nqn.host \"quoted\"\n";
  const std::string text = Serialize(Header("host"), {r});
  RecordFile f;
  std::string error;
  ASSERT_TRUE(Parse(text, &f, &error)) << error;
  EXPECT_EQ(f.header.hostname, "h1");
  EXPECT_EQ(f.header.sample_every, 8u);
  ASSERT_EQ(f.records.size(), 1u);
  EXPECT_EQ(f.records[0].hostnqn, r.hostnqn);
  EXPECT_EQ(f.records[0].ts, r.ts);
  EXPECT_EQ(f.records[0].cid, 12u);
  EXPECT_TRUE(f.has_end);
  EXPECT_EQ(f.lost, 5u);
}

TEST(ProfileRecord, Errors) {
  const std::string good = Serialize(Header("host"), {HostRec(1, 1, 1000, 10)}, false);
  struct Case {
    std::string text, expect;
  } cases[] = {
      {"", "empty file"},
      {good.substr(0, good.size() - 10), "line 2: truncated"},
      {"{\"format\":\"nvmeof-record\",\"version\":2,\"role\":\"host\",\"sample_every\":1}\n",
       "version 2 is not supported"},
      {"{\"format\":\"other\",\"version\":1}\n", "not an nvmeof record file"},
      {"garbage\n", "line 1: corrupt"},
      {good + "{\"role\":\"host\"}\n", "line 3: corrupt record: missing field \"transport\""},
      {good + "{\"role\":\"target\",\"transport\":\"tcp\",\"op\":\"read\",\"size\":1,\"qid\":1,"
              "\"cid\":1,\"slba\":1,\"nlb\":1,\"ts\":[1,2,3,4,5,6]}\n",
       "a target record in a host file"},
      {good + "{\"role\":\"host\",\"transport\":\"tcp\",\"op\":\"read\",\"size\":1,\"qid\":1,"
              "\"cid\":99999999999,\"slba\":1,\"nlb\":1,\"ts\":[1,2,3,4,5,6,7]}\n",
       "out of range"},
      {good + "{\"role\":\"host\",\"transport\":\"tcp\",\"op\":\"read\",\"size\":1,\"qid\":1,"
              "\"cid\":1,\"slba\":1,\"nlb\":1,\"ts\":[1,2,3]}\n",
       "\"ts\" has 3 points"},
      {good + "{\"role\":\"host\",\"transport\":\"tcp\",\"op\":\"read\",\"size\":1,\"qid\":1,"
              "\"cid\":1,\"slba\":1,\"nlb\":1,\"ts\":[9,2,3,4,5,6,7]}\n",
       "back in time"},
      {good + "{\"end\":true,\"records\":7,\"lost\":0}\n", "end line says 7 records"},
  };
  for (const auto& c : cases) {
    RecordFile f;
    std::string error;
    EXPECT_FALSE(Parse(c.text, &f, &error)) << c.expect;
    EXPECT_NE(error.find(c.expect), std::string::npos) << error << " / want " << c.expect;
  }
}

TEST(ProfileRecord, ReportExitsTwoOnBadFiles) {
  const std::string dir = ::testing::TempDir();
  const std::string bad = dir + "/bad.jsonl";
  { std::ofstream(bad) << "{\"format\":\"nvmeof-record\",\"version\":9}\n"; }
  std::ostringstream out, err;
  EXPECT_EQ(RunReport({bad}, out, err), 2);
  EXPECT_NE(err.str().find("version 9 is not supported"), std::string::npos) << err.str();
  std::ostringstream out2, err2;
  EXPECT_EQ(RunReport({dir + "/does-not-exist"}, out2, err2), 2);
  EXPECT_NE(err2.str().find("cannot open"), std::string::npos);
}

TEST(ProfilePercentile, NearestRank) {
  std::vector<double> v;
  for (int i = 1; i <= 1000; ++i) v.push_back(i);
  EXPECT_EQ(Percentile(v, 0.5), 500);
  EXPECT_EQ(Percentile(v, 0.99), 990);
  EXPECT_EQ(Percentile(v, 0.999), 999);
  EXPECT_EQ(Percentile(v, 1.0), 1000);
  EXPECT_EQ(Percentile(v, 0.0), 1);
  EXPECT_EQ(Percentile({}, 0.5), 0);
  EXPECT_EQ(Percentile({7}, 0.99), 7);
  EXPECT_EQ(Percentile({1, 2}, 0.5), 1);
  EXPECT_EQ(Percentile({1, 2}, 0.51), 2);
}

TEST(ProfileReport, StagesUseMetricsNamesAndLittlesLaw) {
  RecordFile f;
  f.header = Header("host");
  // 10 commands 1 ms apart, each wait 50 us: host stages and end to end of 54 us.
  for (int i = 0; i < 10; ++i)
    f.records.push_back(HostRec(static_cast<std::uint32_t>(i), static_cast<std::uint64_t>(i),
                                1'000'000 + static_cast<std::uint64_t>(i) * 1'000'000, 50'000));
  const Report rep = BuildReport(f, nullptr);
  ASSERT_EQ(rep.groups.size(), 1u);
  const Group& g = rep.groups[0];
  EXPECT_EQ(g.key, "host tcp read 4KiB nvme1n1");
  EXPECT_EQ(g.n, 10u);
  std::vector<std::string> names;
  for (const auto& c : g.components) names.push_back(c.name);
  EXPECT_EQ(names, (std::vector<std::string>{"block_submit", "driver_submit", "network_and_target",
                                             "host_receive", "block_complete"}));
  EXPECT_NEAR(g.end_to_end.mean, 54e-6, 1e-12);
  EXPECT_NEAR(g.components[2].share, 50.0 / 54.0, 1e-9);
  // Wall: first point to last = 9 ms + 54 us; L = sum * 8 / wall.
  EXPECT_NEAR(g.end_to_end.queue_depth, 10 * 54e-6 * 8 / (9e-3 + 54e-6), 1e-9);
  std::ostringstream text;
  PrintReportText(rep, true, text);
  EXPECT_NE(text.str().find("network_and_target"), std::string::npos) << text.str();
  EXPECT_NE(text.str().find("|#"), std::string::npos) << text.str();
}

struct Pair {
  RecordFile host, target;
};

// n commands; target clock = host clock + offset; network 20 us, storage 30 us per command.
Pair Synthetic(int n, std::int64_t offset) {
  Pair p;
  p.host.header = Header("host");
  p.target.header = Header("target");
  for (int i = 0; i < n; ++i) {
    const std::uint64_t t = 10'000'000 + static_cast<std::uint64_t>(i) * 100'000;
    // target residence = 3 us + storage 30 us; host wait = residence + 20 us
    p.host.records.push_back(
        HostRec(static_cast<std::uint32_t>(i % 4), static_cast<std::uint64_t>(i), t, 53'000));
    p.target.records.push_back(TargetRec(
        static_cast<std::uint32_t>(i % 4), static_cast<std::uint64_t>(i),
        static_cast<std::uint64_t>(static_cast<std::int64_t>(t) + 10'000 + offset), 30'000));
  }
  return p;
}

TEST(ProfileJoin, NetworkPerCommandWithClockOffset) {
  for (std::int64_t offset :
       {std::int64_t{0}, std::int64_t{5'000'000'000'000}, std::int64_t{-9'000'000}}) {
    Pair p = Synthetic(50, offset);
    const Report rep = BuildReport(p.host, &p.target);
    ASSERT_TRUE(rep.join);
    EXPECT_EQ(rep.join->matched, 50u);
    EXPECT_EQ(rep.join->negative_network, 0u);
    ASSERT_EQ(rep.joined.size(), 1u);
    const Group& g = rep.joined[0];
    std::vector<std::string> names;
    for (const auto& c : g.components) names.push_back(c.name);
    EXPECT_EQ(names,
              (std::vector<std::string>{"block_submit", "driver_submit", "network",
                                        "target:receive", "target:submit", "target:storage",
                                        "target:response", "host_receive", "block_complete"}));
    EXPECT_NEAR(g.components[2].p99, 20e-6, 1e-12);
    EXPECT_NEAR(g.components[5].mean, 30e-6, 1e-12);
  }
}

TEST(ProfileJoin, ReorderedDuplicatesAndCidReuse) {
  Pair p = Synthetic(40, 777'000'000);
  // Reorder the target file; the same (qid, cid, slba, nlb) reused 0.5 s later with another
  // network time; a duplicate target record; an unmatched host record outside the target span.
  std::reverse(p.target.records.begin(), p.target.records.end());
  Record h = HostRec(1, 5, 510'000'000, 83'000);  // 50 us network
  Record t = TargetRec(1, 5, 510'000'000 + 10'000 + 777'000'000, 30'000);
  p.host.records.push_back(h);
  p.target.records.insert(p.target.records.begin() + 7, t);
  p.target.records.push_back(p.target.records[3]);                    // duplicate
  p.host.records.push_back(HostRec(2, 999, 90'000'000'000, 53'000));  // 90 s later
  p.host.records.push_back(HostRec(3, 12345, 12'000'000, 53'000));    // not sampled there
  const Report rep = BuildReport(p.host, &p.target);
  const JoinResult& j = *rep.join;
  EXPECT_EQ(j.host_records, 43u);
  EXPECT_EQ(j.matched, 41u);
  EXPECT_EQ(j.unmatched_outside, 1u);
  EXPECT_EQ(j.unmatched_no_key, 1u);
  EXPECT_EQ(j.negative_network, 0u);
  EXPECT_EQ(j.offset_ns, 777'008'000);  // recv is 8 us after posted in Synthetic
  // The reused cid paired with its own target record: network max = 50 us, never 20 +- 0.5 s.
  const Group& g = rep.joined[0];
  const Component& net = g.components[2];
  ASSERT_EQ(net.name, "network");
  EXPECT_NEAR(net.values.back(), 50e-6, 1e-12);
  EXPECT_NEAR(net.values.front(), 20e-6, 1e-12);
  std::ostringstream text;
  PrintReportText(rep, false, text);
  EXPECT_NE(text.str().find("41 matched, 95.3% of the host's 43"), std::string::npos) << text.str();
}

TEST(ProfileJoin, WrongControllerDoesNotMatch) {
  Pair p = Synthetic(3, 0);
  for (auto& r : p.target.records) r.cntlid = 9;
  const JoinResult j = Join(p.host, p.target);
  EXPECT_EQ(j.matched, 0u);
  EXPECT_EQ(j.unmatched_no_partner, 3u);
}

TEST(ProfileReport, BaselineNamesTheStageThatMoved) {
  Pair before = Synthetic(20, 0);
  Pair after = Synthetic(20, 0);
  for (auto& r : after.target.records) {
    r.ts[NVMEOF_TP_DONE] += 40'000;
    r.ts[NVMEOF_TP_SENT] += 40'000;
  }
  for (auto& r : after.host.records)
    for (int p = NVMEOF_HP_RESPONSE; p < NVMEOF_HP_COUNT; ++p)
      r.ts[static_cast<size_t>(p)] += 40'000;
  std::ostringstream out;
  PrintComparison(BuildReport(before.host, &before.target), BuildReport(after.host, &after.target),
                  false, out);
  EXPECT_NE(out.str().find("moved most: target:storage"), std::string::npos) << out.str();
  std::ostringstream json;
  PrintComparison(BuildReport(before.host, &before.target), BuildReport(after.host, &after.target),
                  true, json);
  EXPECT_NE(json.str().find("\"component\":\"target:storage\",\"change_seconds\":4e-05"),
            std::string::npos)
      << json.str();
}

TEST(ProfileReport, JsonIsOneObject) {
  Pair p = Synthetic(5, 0);
  std::ostringstream out;
  PrintReportJson(BuildReport(p.host, &p.target), out);
  const std::string s = out.str();
  EXPECT_EQ(s.front(), '{');
  EXPECT_NE(s.find("\"matched\":5"), std::string::npos) << s;
  EXPECT_NE(s.find("\"name\":\"network\""), std::string::npos);
}

}  // namespace
}  // namespace nvmeof::profile

namespace nvmeof::profile {
namespace {

std::vector<Sample> Exposition(const std::string& text) {
  std::vector<Sample> out;
  std::string error;
  EXPECT_TRUE(ParseExposition(text, &out, &error)) << error;
  return out;
}

TEST(ProfileTop, BucketQuantile) {
  // 100 in (0, 1], 100 in (1, 2]: p50 = 1, p99 = 1.98; in +Inf: the last finite bound.
  EXPECT_DOUBLE_EQ(BucketQuantile(0.5, {{1, 100}, {2, 200}, {INFINITY, 200}}), 1);
  EXPECT_NEAR(BucketQuantile(0.99, {{1, 100}, {2, 200}, {INFINITY, 200}}), 1.98, 1e-12);
  EXPECT_DOUBLE_EQ(BucketQuantile(0.99, {{1, 100}, {INFINITY, 200}}), 1);
  EXPECT_TRUE(std::isnan(BucketQuantile(0.5, {{1, 0}})));
}

// Two scrapes 2 s apart; the second uses step 3's renamed label (disk) for the same group:
// both are read through the label table.
TEST(ProfileTop, FrameFromTwoScrapes) {
  const std::string labels = R"(role="host",transport="tcp",op="read",)";
  const auto before = Exposition(
      "# HELP x\n"
      "nvmeof_commands_total{" +
      labels +
      R"(device="nvme1n1"} 1000)"
      "\n");
  const auto after = Exposition("nvmeof_commands_total{" + labels +
                                R"(disk="nvme1n1"} 3000)"
                                "\n"
                                "nvmeof_command_latency_seconds_bucket{" +
                                labels +
                                R"(disk="nvme1n1",le="0.0001"} 200)"
                                "\n"
                                "nvmeof_command_latency_seconds_bucket{" +
                                labels +
                                R"(disk="nvme1n1",le="+Inf"} 250)"
                                "\n"
                                "nvmeof_command_latency_seconds_count{" +
                                labels +
                                R"(disk="nvme1n1"} 250)"
                                "\n"
                                "nvmeof_command_latency_seconds_sum{" +
                                labels +
                                R"(disk="nvme1n1"} 0.025)"
                                "\n"
                                "nvmeof_stage_latency_seconds_count{" +
                                labels +
                                R"(disk="nvme1n1",stage="network_and_target"} 250)"
                                "\n"
                                "nvmeof_stage_latency_seconds_sum{" +
                                labels +
                                R"(disk="nvme1n1",stage="network_and_target"} 0.02)"
                                "\n"
                                "nvmeof_stage_latency_seconds_count{" +
                                labels +
                                R"(disk="nvme1n1",stage="block_submit"} 250)"
                                "\n"
                                "nvmeof_stage_latency_seconds_sum{" +
                                labels +
                                R"(disk="nvme1n1",stage="block_submit"} 0.005)"
                                "\n");
  const auto frame = TopFrame(before, after, 2.0);
  ASSERT_EQ(frame.size(), 1u);
  const TopGroup& g = frame[0];
  EXPECT_EQ(g.device, "nvme1n1");
  EXPECT_DOUBLE_EQ(g.commands_per_second, 1000);
  EXPECT_DOUBLE_EQ(g.sampled, 250);
  EXPECT_DOUBLE_EQ(g.mean, 100e-6);
  EXPECT_NEAR(g.p50, 62.5e-6, 1e-12);
  EXPECT_NEAR(g.queue_depth, 0.1, 1e-12);
  ASSERT_EQ(g.stages.size(), 2u);
  EXPECT_EQ(g.stages[0].name, "block_submit");  // path order, not alphabetical
  EXPECT_EQ(g.stages[1].name, "network_and_target");
  EXPECT_NEAR(g.stages[1].share, 0.8, 1e-12);
  std::ostringstream json;
  PrintTopJson(frame, 2.0, json);
  EXPECT_NE(json.str().find("\"commands_per_second\":1000"), std::string::npos) << json.str();
}

TEST(ProfileTop, ExpositionErrors) {
  std::vector<Sample> out;
  std::string error;
  EXPECT_FALSE(ParseExposition("x{a=\"b} 1\n", &out, &error));
  EXPECT_NE(error.find("line 1"), std::string::npos);
  EXPECT_FALSE(ParseExposition("x{a=\"b\"}\n", &out, &error));
  EXPECT_FALSE(ParseExposition("x{a} 1\n", &out, &error));
}

}  // namespace
}  // namespace nvmeof::profile
