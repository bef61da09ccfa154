// The flight recorder's ring (loader/flight_recorder.h) and GET /api/v1/commands
// (exporter/commands_api.h): bounds, queries, and what a malformed request gets.
#include <gtest/gtest.h>

#include <sstream>

#include "exporter/commands_api.h"
#include "loader/flight_recorder.h"
#include "loader/record_file.h"

namespace nvmeof {
namespace {

constexpr std::uint64_t kSecond = 1000000000ULL;

FlightEntry HostEntry(FlightRecorder& rec, std::uint64_t end_s, std::uint64_t e2e_us,
                      const std::string& disk = "nvme0c1n1", std::uint16_t cid = 7) {
  FlightEntry e;
  e.role = NVMEOF_ROLE_HOST;
  const std::uint64_t end = end_s * kSecond;
  e.ts[NVMEOF_HP_ALLOC] = end - e2e_us * 1000;
  e.ts[NVMEOF_HP_SETUP] = end - e2e_us * 1000 + 500;
  e.ts[NVMEOF_HP_COMPLETE] = end - 200;
  e.ts[NVMEOF_HP_END] = end;
  e.e2e_ns = e2e_us * 1000;
  e.time_ns = end + 1700000000ULL * kSecond;  // a wall clock
  e.slba = 4096;
  e.size = 4096;
  e.qid = 2;
  e.cid = cid;
  e.nlb = 0;
  e.op = "read";
  e.identity =
      rec.Intern({"tcp", "nqn.2014-08.org.example:sub1", "", disk, ControllerOfDisk(disk)});
  return e;
}

TEST(FlightRecorder, ControllerOfDiskNames) {
  EXPECT_EQ(ControllerOfDisk("nvme0c1n1"), "nvme1");
  EXPECT_EQ(ControllerOfDisk("nvme3n2"), "nvme3");
  EXPECT_EQ(ControllerOfDisk("sda"), "");
  EXPECT_EQ(ControllerOfDisk(""), "");
}

TEST(FlightRecorder, KeepsTheNewestWithinAge) {
  FlightRecorder rec({1u << 20, std::chrono::seconds(30)});
  for (std::uint64_t s = 1; s <= 100; ++s) rec.Add({HostEntry(rec, s, 100)});
  const FlightStats st = rec.Stats();
  EXPECT_EQ(st.added, 100u);
  // Ended within 30 s of the newest (t = 100): 70..100.
  EXPECT_EQ(st.records, 31u);
  EXPECT_EQ(st.evicted, 69u);
}

TEST(FlightRecorder, KeepsWithinBytes) {
  FlightRecorder rec({FlightRecorder::kStoredBytes * 10, std::chrono::seconds(3600)});
  for (std::uint64_t s = 1; s <= 50; ++s) rec.Add({HostEntry(rec, s, 100)});
  EXPECT_EQ(rec.Stats().records, 10u);
  bool truncated = true;
  auto all = rec.Query({}, &truncated);
  ASSERT_EQ(all.size(), 10u);
  EXPECT_FALSE(truncated);
  EXPECT_EQ(all.front().ts[NVMEOF_HP_END], 41 * kSecond);  // oldest first
  EXPECT_EQ(all.back().ts[NVMEOF_HP_END], 50 * kSecond);
}

TEST(FlightRecorder, QueryFilters) {
  FlightRecorder rec({1u << 20, std::chrono::seconds(3600)});
  rec.Add({HostEntry(rec, 10, 100, "nvme0c1n1", 1)});
  rec.Add({HostEntry(rec, 11, 5000, "nvme0c2n1", 2)});
  rec.Add({HostEntry(rec, 12, 300, "nvme0c1n1", 3)});
  bool truncated = false;
  FlightQuery q;
  q.min_ns = 1000 * 1000;  // 1 ms
  auto slow = rec.Query(q, &truncated);
  ASSERT_EQ(slow.size(), 1u);
  EXPECT_EQ(slow[0].cid, 2u);
  EXPECT_EQ(slow[0].device, "nvme0c2n1");
  q = {};
  q.controller = "nvme1";
  EXPECT_EQ(rec.Query(q, &truncated).size(), 2u);
  q = {};
  q.limit = 1;
  auto newest = rec.Query(q, &truncated);
  ASSERT_EQ(newest.size(), 1u);
  EXPECT_EQ(newest[0].cid, 3u);
  EXPECT_TRUE(truncated);
  q = {};
  q.ref = newest[0].ref;
  ASSERT_EQ(rec.Query(q, &truncated).size(), 1u);
  q = {};
  q.role = NVMEOF_ROLE_TARGET;
  EXPECT_TRUE(rec.Query(q, &truncated).empty());
  q = {};
  q.since_ns = newest[0].time_ns;
  EXPECT_EQ(rec.Query(q, &truncated).size(), 1u);
}

TEST(FlightRecorder, SharesIdentitiesAndDropsUnusedOnes) {
  FlightRecorder rec({FlightRecorder::kStoredBytes * 2, std::chrono::seconds(3600)});
  rec.Add({HostEntry(rec, 1, 100, "nvme0c1n1")});
  rec.Add({HostEntry(rec, 2, 100, "nvme0c1n1")});
  const auto one = rec.Stats().bytes;
  // Two more disks come and go: the first disk's records are evicted, its identity too.
  for (int i = 0; i < 20; ++i)
    rec.Add({HostEntry(rec, 3 + i, 100, "nvme0c" + std::to_string(i) + "n1")});
  // Held: two records and at most three identities (the two records', and the one interned
  // just before the Add that evicted its predecessor's record).
  const auto identity = one - 2 * FlightRecorder::kStoredBytes;
  EXPECT_LE(rec.Stats().bytes, one + 2 * identity + 16);
}

TEST(CommandsApi, ServesARecordFile) {
  FlightRecorder rec({1u << 20, std::chrono::seconds(3600)});
  rec.Add({HostEntry(rec, 10, 100)});
  rec.Add({HostEntry(rec, 11, 2500)});
  auto reply = ServeCommands(&rec, {"node1", "6.12.0", 32}, {{"min_seconds", "0.002"}});
  ASSERT_EQ(reply.code, 200u) << reply.body;
  EXPECT_NE(reply.content_type.find("application/x-ndjson"), std::string::npos);
  std::istringstream in(reply.body);
  RecordFile file;
  std::string error;
  ASSERT_TRUE(ReadRecords(in, &file, &error)) << error << "\n" << reply.body;
  EXPECT_EQ(file.header.hostname, "node1");
  EXPECT_EQ(file.header.role, "host");
  EXPECT_EQ(file.header.sample_every, 32u);
  ASSERT_EQ(file.records.size(), 1u);
  EXPECT_EQ(file.records[0].subsys, "nqn.2014-08.org.example:sub1");
  EXPECT_EQ(file.records[0].ref, "h-" + std::to_string(11 * kSecond));
  EXPECT_EQ(file.records[0].time_ns, 11 * kSecond + 1700000000ULL * kSecond);
  EXPECT_TRUE(file.has_end);
}

TEST(CommandsApi, RejectsMalformedParameters) {
  FlightRecorder rec({1u << 20, std::chrono::seconds(3600)});
  const CommandsNode node{"n", "k", 1};
  for (const WebServer::QueryArgs& args :
       std::vector<WebServer::QueryArgs>{{{"role", "both"}},
                                         {{"since", "yesterday"}},
                                         {{"since", "-5"}},
                                         {{"min_seconds", "nan"}},
                                         {{"min_seconds", "1e400"}},
                                         {{"limit", "0"}},
                                         {{"limit", "100001"}},
                                         {{"limit", "10x"}},
                                         {{"color", "red"}},
                                         {{"role", "host"}, {"role", "target"}}}) {
    auto reply = ServeCommands(&rec, node, args);
    EXPECT_EQ(reply.code, 400u) << args[0].first << "=" << args[0].second;
    EXPECT_FALSE(reply.body.empty());
  }
  EXPECT_EQ(ServeCommands(nullptr, node, {}).code, 404u);
}

}  // namespace
}  // namespace nvmeof
