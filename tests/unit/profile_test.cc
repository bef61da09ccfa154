// profile/: the record file format and its reader's errors, the percentile math, and
// the host/target join on synthetic records.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "loader/nvmeof.h"
#include "loader/record_file.h"
#include "profile/commands.h"
#include "profile/live.h"
#include "profile/report_data.h"
#include "profile/report_render.h"
#include "profile/top_frame.h"
#include "profile/top_render.h"

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

// Format version 1 as this reader's predecessor (the hand-written one) wrote it: every line
// read, and written again byte for byte (tests/fixtures/records, escapes and UTF-8 included).
// WriteRecord writes its lines field by field (it runs per sampled command); they must be the
// bytes the library's ordered_json writes, whatever the strings (escapes, invalid UTF-8), and a
// field's remembered string must not leak into the next line.
TEST(ProfileRecord, LinesAreTheLibrarysBytes) {
  const std::vector<std::string> odd = {"",         "nvme0n1",  "a\"b\\c\x01\n",
                                        "\xff\xfe", "\xc3\xa9", std::string("nul\0in", 6)};
  std::vector<std::uint64_t> ts = {1, 0, ~0ULL, 42};
  for (size_t i = 0; i < odd.size() * 2; ++i) {
    Record r;
    r.role = i % 2 ? NVMEOF_ROLE_TARGET : NVMEOF_ROLE_HOST;
    r.transport = odd[i % odd.size()];
    r.op = odd[(i + 1) % odd.size()];
    r.subsys = odd[(i + 2) % odd.size()];
    r.hostnqn = odd[(i + 3) % odd.size()];
    r.device = odd[(i * 5) % odd.size()];
    r.size = i * 4096;
    r.qid = static_cast<std::uint32_t>(i);
    r.cid = 65535;
    r.cntlid = 0;
    r.slba = ~0ULL - i;
    r.nlb = 7;
    r.ts = i % 3 ? ts : std::vector<std::uint64_t>{};
    nlohmann::ordered_json j = {{"role", i % 2 ? "target" : "host"},
                                {"transport", r.transport},
                                {"op", r.op},
                                {"size", r.size},
                                {"qid", r.qid},
                                {"cid", r.cid},
                                {"cntlid", r.cntlid},
                                {"subsys", r.subsys},
                                {"hostnqn", r.hostnqn},
                                {"device", r.device},
                                {"slba", r.slba},
                                {"nlb", r.nlb},
                                {"ts", r.ts}};
    std::ostringstream out;
    WriteRecord(r, out);
    EXPECT_EQ(out.str(),
              j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n")
        << i;
  }
}

TEST(ProfileRecord, ReadsAndRewritesVersion1Files) {
  for (const std::string role : {"host", "target"}) {
    const std::string path = std::string(NVMEOF_FIXTURES) + "/records/v1." + role + ".jsonl";
    std::ifstream in(path, std::ios::binary);
    std::stringstream original;
    original << in.rdbuf();
    RecordFile f;
    std::string error;
    ASSERT_TRUE(ReadRecordFile(path, &f, &error)) << path << ": " << error;
    EXPECT_EQ(f.header.role, role);
    EXPECT_EQ(f.header.kernel, "6.12.117+deb12-amd64");
    EXPECT_EQ(f.header.sample_every, 4u);
    ASSERT_TRUE(f.has_end);
    ASSERT_FALSE(f.records.empty());
    EXPECT_EQ(f.records[0].cid, 36u);
    EXPECT_EQ(f.records[0].subsys, "nqn.2024-01.io.nvmeof-exporter:vm-rec-rdma");
    std::ostringstream again;
    WriteHeader(f.header, again);
    for (const auto& r : f.records) WriteRecord(r, again);
    if (f.commands)
      WriteEnd(f.records.size(), f.lost, again, f.commands);
    else
      WriteEnd(f.records.size(), f.lost, again);
    EXPECT_EQ(again.str(), original.str()) << role;
    if (role == "host") {
      ASSERT_EQ(f.records.size(), 2u);
      EXPECT_EQ(f.records[1].hostnqn, "nqn.2014-08.org.nvmexpress:uuid:\"odd\\name\"\x01\xc3\xa9");
      EXPECT_EQ(f.records[1].ts[3], 0u);
      EXPECT_EQ(f.commands, 8u);
    }
  }
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
      {good + "{\"role\":\"host\",\"role\":\"target\"}\n",
       "line 3: corrupt: duplicate key \"role\""},
      {good + "{\"end\":true,\"records\":-1,\"lost\":0}\n",
       "line 3: corrupt: bad value for \"records\""},
      {good + "{\"end\":true,\"records\":1.5,\"lost\":0}\n", "bad value for \"records\""},
      {good + "{\"end\":true,\"x\":{\"y\":1}}\n", "bad value for \"x\""},
      {good + "[1,2]\n", "line 3: corrupt: expected an object"},
      {good + "{\"role\" \"host\"}\n", "line 3: corrupt: parse error at line 1, column 14"},
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
    // target residence (received -> nvmet_req_complete) = 2 us + storage 30 us; host wait =
    // residence + 20 us. The target's response stage after it is the network's.
    p.host.records.push_back(
        HostRec(static_cast<std::uint32_t>(i % 4), static_cast<std::uint64_t>(i), t, 52'000));
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
    EXPECT_EQ(names, (std::vector<std::string>{"block_submit", "driver_submit", "network",
                                               "target:receive", "target:submit", "target:storage",
                                               "host_receive", "block_complete"}));
    EXPECT_NEAR(g.components[2].p99, 20e-6, 1e-12);
    EXPECT_NEAR(g.components[5].mean, 30e-6, 1e-12);
  }
}

TEST(ProfileJoin, ReorderedDuplicatesAndCidReuse) {
  Pair p = Synthetic(40, 777'000'000);
  // Reorder the target file; the same (qid, cid, slba, nlb) reused 0.5 s later with another
  // network time; a duplicate target record; an unmatched host record outside the target span.
  std::reverse(p.target.records.begin(), p.target.records.end());
  Record h = HostRec(1, 5, 510'000'000, 82'000);  // 50 us network
  Record t = TargetRec(1, 5, 510'000'000 + 10'000 + 777'000'000, 30'000);
  p.host.records.push_back(h);
  p.target.records.insert(p.target.records.begin() + 7, t);
  p.target.records.push_back(p.target.records[3]);                    // duplicate
  p.host.records.push_back(HostRec(2, 999, 90'000'000'000, 52'000));  // 90 s later
  p.host.records.push_back(HostRec(3, 12345, 12'000'000, 52'000));    // not sampled there
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

// Stage series with bpf.stage_detail=controller: host stages carry the controller and no
// namespace; the command series keep nvme_namespace. One group per controller.
TEST(ProfileTop, HostStagesByControllerWithoutNamespace) {
  const std::string labels = R"(role="host",transport="rdma",op="read",controller="nvme0")";
  const std::string tlabels = R"(role="target",transport="rdma",op="read",nqn="nqn.t")";
  const auto after = Exposition("nvmeof_commands_total{" + labels +
                                R"(,nvme_namespace="nvme0n1"} 300)"
                                "\n"
                                "nvmeof_commands_total{" +
                                labels +
                                R"(,nvme_namespace="nvme0n2"} 100)"
                                "\n"
                                "nvmeof_command_latency_seconds_count{" +
                                labels +
                                R"(,nvme_namespace="nvme0n1"} 40)"
                                "\n"
                                "nvmeof_command_latency_seconds_sum{" +
                                labels +
                                R"(,nvme_namespace="nvme0n1"} 0.004)"
                                "\n"
                                "nvmeof_command_latency_seconds_count{" +
                                labels +
                                R"(,nvme_namespace="nvme0n2"} 10)"
                                "\n"
                                "nvmeof_command_latency_seconds_sum{" +
                                labels +
                                R"(,nvme_namespace="nvme0n2"} 0.001)"
                                "\n"
                                "nvmeof_stage_latency_seconds_count{" +
                                labels +
                                R"(,stage="block_submit"} 50)"
                                "\n"
                                "nvmeof_stage_latency_seconds_sum{" +
                                labels +
                                R"(,stage="block_submit"} 0.001)"
                                "\n"
                                "nvmeof_commands_total{" +
                                tlabels +
                                R"(,nvmet_port="1"} 400)"
                                "\n"
                                "nvmeof_stage_latency_seconds_count{" +
                                tlabels +
                                R"(,stage="storage"} 50)"
                                "\n"
                                "nvmeof_stage_latency_seconds_sum{" +
                                tlabels +
                                R"(,stage="storage"} 0.0025)"
                                "\n");
  const auto frame = TopFrame({}, after, 1.0);
  ASSERT_EQ(frame.size(), 2u);
  const TopGroup* host = frame[0].role == "host" ? &frame[0] : &frame[1];
  const TopGroup* target = frame[0].role == "host" ? &frame[1] : &frame[0];
  EXPECT_EQ(host->device, "nvme0");
  EXPECT_DOUBLE_EQ(host->commands_per_second, 400);
  EXPECT_DOUBLE_EQ(host->sampled, 50);
  EXPECT_NEAR(host->mean, 100e-6, 1e-12);
  ASSERT_EQ(host->stages.size(), 1u);
  EXPECT_NEAR(host->stages[0].mean, 20e-6, 1e-12);
  EXPECT_EQ(target->device, "nqn.t");
  EXPECT_DOUBLE_EQ(target->commands_per_second, 400);
  ASSERT_EQ(target->stages.size(), 1u);
}

nvmeof_record KernelHostRecord(std::uint16_t cid, std::uint64_t t) {
  nvmeof_record k{};
  k.role = NVMEOF_ROLE_HOST;
  k.opcode = 0x02;
  k.trtype = NVMEOF_TRTYPE_RDMA;
  k.bytes = 4096;
  k.qid = 2;
  k.cid = cid;
  k.cntlid = 7;
  k.slba = 1234;
  k.nlb = 7;
  std::snprintf(k.disk, sizeof k.disk, "nvme0c0n1");
  std::snprintf(k.nqn, sizeof k.nqn, "nqn.t");
  std::snprintf(k.hostnqn, sizeof k.hostnqn, "nqn.h");
  // alloc, setup +1us, posted +2us, (sent), response +12us, complete +13us, end +14us
  const std::uint64_t ts[NVMEOF_HP_COUNT] = {t,         t + 1000,  t + 2000, 0,
                                             t + 12000, t + 13000, t + 14000};
  for (int i = 0; i < NVMEOF_HP_COUNT; ++i) k.ts[i] = ts[i];
  return k;
}

TEST(ProfileLive, FromKernelRecord) {
  std::uint64_t dropped = 0;
  nvmeof_record k = KernelHostRecord(0x1003, 1'000'000);
  k.ts[NVMEOF_HP_SENT] = 999;  // before the points around it: dropped, the file stays readable
  const Record r = FromKernel(k, &dropped);
  EXPECT_EQ(dropped, 1u);
  EXPECT_EQ(r.transport, "rdma");
  EXPECT_EQ(r.op, "read");
  EXPECT_EQ(r.size, 4096u);
  EXPECT_EQ(r.qid, 2u);
  EXPECT_EQ(r.cid, 0x1003u);
  EXPECT_EQ(r.cntlid, 7u);
  EXPECT_EQ(r.device, "nvme0c0n1");
  EXPECT_EQ(r.subsys, "nqn.t");
  EXPECT_EQ(r.hostnqn, "nqn.h");
  ASSERT_EQ(r.ts.size(), size_t{NVMEOF_HP_COUNT});
  EXPECT_EQ(r.ts[NVMEOF_HP_SENT], 0u);
  // What record writes, report reads.
  std::ostringstream out;
  WriteHeader(Header("host"), out);
  WriteRecord(r, out);
  WriteEnd(1, 0, out, 8);
  RecordFile f;
  std::string error;
  ASSERT_TRUE(Parse(out.str(), &f, &error)) << error;
  EXPECT_EQ(f.commands, 8u);
  EXPECT_EQ(f.records[0].device, "nvme0c0n1");
  EXPECT_EQ(OpName(0x01), "write");
  EXPECT_EQ(OpName(0x09), "discard");
  EXPECT_EQ(NvmeofTransportName(NVMEOF_TRTYPE_TCP), "tcp");
  EXPECT_EQ(NvmeofTransportName(0), "pcie");
}

// Exact commands/s from the group counts, latency and stages from the records.
TEST(ProfileLive, FrameFromRecordsAndCounts) {
  std::vector<Record> records;
  std::uint64_t dropped = 0;
  for (std::uint16_t i = 0; i < 10; ++i)
    records.push_back(FromKernel(KernelHostRecord(i, 1'000'000 + i * 100'000ull), &dropped));
  RecordGroupCount g;
  g.key.id = 0xffff0000;
  g.key.role = NVMEOF_ROLE_HOST;
  g.key.trtype = NVMEOF_TRTYPE_RDMA;
  g.key.opcode = 0x02;
  g.key.size = 1;  // 4KiB
  g.commands = 500;
  RecordGroupCount old = g;
  old.commands = 100;
  const auto frame = LiveFrame(records, {old}, {g}, {{0xffff0000, "nvme0c0n1"}}, 2.0);
  ASSERT_EQ(frame.size(), 1u);
  const TopGroup& t = frame[0];
  EXPECT_EQ(t.role, "host");
  EXPECT_EQ(t.transport, "rdma");
  EXPECT_EQ(t.op, "read");
  EXPECT_EQ(t.size, "4KiB");
  EXPECT_EQ(t.device, "nvme0c0n1");
  EXPECT_DOUBLE_EQ(t.commands_per_second, 200);
  EXPECT_DOUBLE_EQ(t.sampled, 10);
  EXPECT_NEAR(t.mean, 14e-6, 1e-12);
  EXPECT_NEAR(t.p99, 14e-6, 1e-12);
  EXPECT_NEAR(t.queue_depth, 200 * 14e-6, 1e-12);
  std::vector<std::string> names;
  for (const auto& s : t.stages) names.push_back(s.name);
  EXPECT_EQ(names, (std::vector<std::string>{"block_submit", "driver_submit", "network_and_target",
                                             "host_receive", "block_complete"}));
  EXPECT_NEAR(t.stages[2].mean, 10e-6, 1e-12);
  EXPECT_NEAR(t.stages[2].share, 10.0 / 14, 1e-9);
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
