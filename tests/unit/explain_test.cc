// `explain` (profile/explain.h) on canned host and target record files: the split per command,
// the tail summary naming the component a fault was injected in, the host side alone, a target
// that does not answer, an empty window; and the fast record reader it reads answers with.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <sstream>

#include <nlohmann/json.hpp>

#include "profile/cli.h"
#include "profile/explain.h"
#include "profile/explain_render.h"
#include "profile/record_scan.h"

namespace nvmeof::profile {
namespace {

constexpr std::uint64_t kUs = 1000;
constexpr std::uint64_t kWall = 1'700'000'000'000'000'000ull;  // CLOCK_REALTIME of t = 0
constexpr std::int64_t kTargetClock = 5'000'000'000;           // target clock - host clock

// One command's times, ns: host before and after its wait, network (both ways), target
// (nvmet, without the drive), drive (exec -> done).
struct Times {
  std::uint64_t host = 30 * kUs, network = 30 * kUs, target = 20 * kUs, drive = 10 * kUs;
};

RecordHeader Header(const char* role) {
  RecordHeader h;
  h.role = role;
  h.hostname = std::string(role) + "-node";
  h.sample_every = 32;
  return h;
}

// A host record and its target record of command i, which starts at t (host clock). The target
// records the exec point only with `exec` (not at the default tier).
std::pair<Record, Record> Command(std::uint32_t i, std::uint64_t t, const Times& d, bool exec) {
  Record h;
  h.role = NVMEOF_ROLE_HOST;
  h.transport = "tcp";
  h.op = "read";
  h.size = 4096;
  h.qid = 1 + i % 4;
  h.cid = i % 4096;
  h.cntlid = 2;
  h.subsys = "nqn.2024-06.io.example:pool";
  h.hostnqn = "nqn.2014-08.org.nvmexpress:uuid:host-a";
  h.device = "nvme0c1n1";
  h.slba = 8ull * i;
  h.nlb = 7;
  Record t_rec = h;
  t_rec.role = NVMEOF_ROLE_TARGET;
  t_rec.device = "";
  const std::uint64_t residence = d.target + d.drive;
  const std::uint64_t posted = t + d.host / 2, response = posted + d.network + residence;
  h.ts = {
      t, t + 1 * kUs, posted, 0, response, response + 1 * kUs, t + d.host + d.network + residence};
  h.time_ns = kWall + h.ts.back();
  h.ref = "h-" + std::to_string(h.ts.back());
  const std::uint64_t recv = posted + d.network / 2 + kTargetClock, done = recv + residence;
  t_rec.ts = {recv, recv + 1 * kUs, 0, exec ? done - d.drive : 0, done, done + 2 * kUs};
  t_rec.time_ns = kWall + done + 2 * kUs - kTargetClock;
  t_rec.ref = "t-" + std::to_string(t_rec.ts.back());
  return {h, t_rec};
}

// A deterministic spread of up to 10 us, independent per command and component (splitmix64).
std::uint64_t Jitter(std::uint32_t i, std::uint32_t salt) {
  std::uint64_t z = (std::uint64_t{i} << 8 | salt) + 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return (z ^ (z >> 31)) % (10 * kUs);
}

enum class Fault { kNone, kNetwork, kTarget, kHost };

// n commands, 1 in 50 of them `fault`-y by 5 ms in that component.
std::pair<RecordFile, RecordFile> Window(std::uint32_t n, Fault fault, bool exec = false) {
  RecordFile host, target;
  host.header = Header("host");
  target.header = Header("target");
  for (std::uint32_t i = 0; i < n; ++i) {
    Times d;
    d.host += Jitter(i, 1);
    d.network += Jitter(i, 2);
    d.target += Jitter(i, 3);  // the drive stays 10 us: host, network and target alike
    if (i % 50 == 7) {
      if (fault == Fault::kNetwork) d.network += 5000 * kUs;
      if (fault == Fault::kTarget) d.target += 5000 * kUs;
      if (fault == Fault::kHost) d.host += 5000 * kUs;
    }
    auto [h, t] = Command(i, 1'000'000'000ull + i * 200 * kUs, d, exec);
    host.records.push_back(std::move(h));
    target.records.push_back(std::move(t));
  }
  host.has_end = target.has_end = true;
  return {std::move(host), std::move(target)};
}

ExplainSource Source(const char* url, const char* role, RecordFile file) {
  ExplainSource s;
  s.url = url;
  s.role = role;
  s.ok = true;
  s.file = std::move(file);
  return s;
}

Explanation Explain(std::pair<RecordFile, RecordFile> w, bool with_target = true,
                    double min_seconds = 0) {
  std::vector<ExplainSource> hosts, targets;
  hosts.push_back(Source("http://host:10420", "host", std::move(w.first)));
  if (with_target) targets.push_back(Source("http://target:10420", "target", std::move(w.second)));
  return BuildExplanation(std::move(hosts), std::move(targets), 5, min_seconds);
}

std::string Body(const RecordFile& f) {
  std::ostringstream out;
  WriteHeader(f.header, out);
  for (const auto& r : f.records) WriteRecord(r, out);
  WriteEnd(f.records.size(), f.lost, out);
  return out.str();
}

TEST(Explain, SplitsEachCommandIntoHostNetworkTargetDrive) {
  Times d;
  d.host = 100 * kUs, d.network = 300 * kUs, d.target = 50 * kUs, d.drive = 2000 * kUs;
  for (bool exec : {true, false}) {
    auto [h, t] = Command(3, 1'000'000'000, d, exec);
    RecordFile hf, tf;
    hf.header = Header("host");
    tf.header = Header("target");
    hf.records = {h};
    tf.records = {t};
    Explanation x = Explain({hf, tf});
    ASSERT_EQ(x.slowest.size(), 1u);
    const ExplainCommand& c = x.slowest[0];
    ASSERT_NE(c.target, nullptr);
    EXPECT_EQ(x.joined, 1u);
    EXPECT_NEAR(c.e2e, 2.45e-3, 1e-12);
    EXPECT_NEAR(c.parts[kHostPart], 100e-6, 1e-12);
    EXPECT_NEAR(c.parts[kNetwork], 300e-6, 1e-12);
    EXPECT_TRUE(std::isnan(c.parts[kNetworkTarget]));
    if (exec) {
      EXPECT_TRUE(x.drive_known);
      EXPECT_NEAR(c.parts[kTargetPart], 50e-6, 1e-12);
      EXPECT_NEAR(c.parts[kDrive], 2000e-6, 1e-12);
      EXPECT_EQ(c.Largest(), kDrive);
      EXPECT_STREQ(ComponentName(kTargetPart, true), "target");
    } else {  // the default tier: no exec point, the target part holds the drive
      EXPECT_FALSE(x.drive_known);
      EXPECT_TRUE(std::isnan(c.parts[kDrive]));
      EXPECT_NEAR(c.parts[kTargetPart], 2050e-6, 1e-12);
      EXPECT_EQ(c.Largest(), kTargetPart);
      EXPECT_STREQ(ComponentName(kTargetPart, false), "target (incl. drive)");
    }
    double sum = 0;
    for (int k = 0; k < kComponents; ++k)
      if (!std::isnan(c.parts[k])) sum += c.parts[k];
    EXPECT_NEAR(sum, c.e2e, 1e-12) << "the components add up to end to end";
  }
}

TEST(Explain, TailNamesTheNetworkWhenTheNetworkIsSlow) {
  const Explanation x = Explain(Window(1000, Fault::kNetwork));
  ASSERT_TRUE(x.tail);
  const TailSummary& t = *x.tail;
  EXPECT_TRUE(t.joined);
  EXPECT_FALSE(t.drive_known);
  EXPECT_EQ(t.commands, 11u);  // at or above the p99 of 1000: ranks 990 to 1000
  EXPECT_EQ(t.split, 11u);
  EXPECT_EQ(t.parts[0].component, kNetwork);
  EXPECT_GT(t.parts[0].share, 0.9);
  EXPECT_EQ(t.parts[0].largest_in, 11u);
  EXPECT_TRUE(t.clear);
  EXPECT_EQ(x.slowest.size(), 5u);
  for (const auto& c : x.slowest) EXPECT_EQ(c.Largest(), kNetwork);
  std::ostringstream text;
  PrintExplainText(x, text);
  EXPECT_NE(text.str().find("network dominates the tail"), std::string::npos) << text.str();
  EXPECT_NE(text.str().find("target (incl. drive)"), std::string::npos) << text.str();
}

TEST(Explain, TailNamesTheTargetWhenTheTargetIsSlow) {
  for (bool exec : {false, true}) {
    const Explanation x = Explain(Window(1000, Fault::kTarget, exec));
    ASSERT_TRUE(x.tail);
    const TailSummary& t = *x.tail;
    EXPECT_EQ(t.drive_known, exec);
    EXPECT_EQ(t.parts.size(), exec ? 4u : 3u);
    EXPECT_EQ(t.parts[0].component, kTargetPart);
    EXPECT_GT(t.parts[0].share, 0.9);
    EXPECT_EQ(t.parts[0].largest_in, t.split);
    EXPECT_TRUE(t.clear);
    std::ostringstream text;
    PrintExplainText(x, text);
    EXPECT_NE(text.str().find(exec ? "\ntarget dominates the tail"
                                   : "\ntarget (incl. drive) dominates the tail"),
              std::string::npos)
        << text.str();
  }
}

TEST(Explain, TailWithoutAFaultIsMixed) {
  const Explanation x = Explain(Window(1000, Fault::kNone));
  ASSERT_TRUE(x.tail);
  const TailSummary& t = *x.tail;
  EXPECT_FALSE(t.clear) << ComponentKey(t.parts[0].component) << " " << t.parts[0].share;
  EXPECT_LT(t.parts[0].share, 0.5);
  EXPECT_LT(t.parts[0].largest_in, t.split);
  double shares = 0;
  for (const auto& p : t.parts) shares += p.share;
  EXPECT_NEAR(shares, 1, 1e-9);
  std::ostringstream text;
  PrintExplainText(x, text);
  EXPECT_NE(text.str().find("no single component dominates the tail"), std::string::npos)
      << text.str();
}

TEST(Explain, MinSetsTheTail) {
  const Explanation x = Explain(Window(1000, Fault::kHost), true, 0.004);
  ASSERT_TRUE(x.tail);
  EXPECT_TRUE(x.tail->by_min);
  EXPECT_EQ(x.tail->commands, 20u);  // the 1 in 50 with 5 ms more
  EXPECT_EQ(x.tail->parts[0].component, kHostPart);
}

TEST(Explain, HostSideOnly) {
  const Explanation x = Explain(Window(1000, Fault::kNetwork), false);
  EXPECT_FALSE(x.targets_answered);
  EXPECT_EQ(x.joined, 0u);
  ASSERT_TRUE(x.tail);
  EXPECT_FALSE(x.tail->joined);
  ASSERT_EQ(x.tail->parts.size(), 2u);
  EXPECT_EQ(x.tail->parts[0].component, kNetworkTarget);
  EXPECT_EQ(x.tail->split, 11u);
  const ExplainCommand& c = x.slowest[0];
  EXPECT_EQ(c.target, nullptr);
  EXPECT_TRUE(std::isnan(c.parts[kNetwork]));
  EXPECT_NEAR(c.parts[kHostPart] + c.parts[kNetworkTarget], c.e2e, 1e-12);
  std::ostringstream text;
  PrintExplainText(x, text);
  EXPECT_NE(text.str().find("host side only: no target exporter given"), std::string::npos);
  EXPECT_NE(text.str().find("network+target dominates the tail"), std::string::npos) << text.str();
}

TEST(Explain, UnmatchedHostCommandsAreCounted) {
  auto w = Window(200, Fault::kNetwork);
  w.second.records.resize(150);  // the target's last 50 records are missing
  const Explanation x = Explain(std::move(w));
  EXPECT_EQ(x.host_records, 200u);
  EXPECT_EQ(x.joined, 150u);
  EXPECT_EQ(x.unmatched, 50u);
  std::ostringstream text;
  PrintExplainText(x, text);
  EXPECT_NE(text.str().find("join: 150 of 200 host commands found their target record (75.0%); "
                            "50 did not"),
            std::string::npos)
      << text.str();
}

TEST(Explain, SeveralTargetsEachJoinTheirCommands) {
  auto [host, target] = Window(100, Fault::kNetwork);
  RecordFile other = target;
  other.records.clear();
  RecordFile mine = target;
  mine.records.clear();
  // Half of the commands went to a second subsystem, served by another target.
  for (size_t i = 0; i < host.records.size(); ++i) {
    if (i % 2) {
      host.records[i].subsys = target.records[i].subsys = "nqn.2024-06.io.example:other";
      other.records.push_back(target.records[i]);
    } else {
      mine.records.push_back(target.records[i]);
    }
  }
  std::vector<ExplainSource> hosts, targets;
  hosts.push_back(Source("http://h", "host", host));
  targets.push_back(Source("http://t1", "target", mine));
  targets.push_back(Source("http://t2", "target", other));
  const Explanation x = BuildExplanation(std::move(hosts), std::move(targets), 100, 0);
  EXPECT_EQ(x.joined, 100u);
  for (const auto& c : x.slowest)
    EXPECT_EQ(c.target_source, static_cast<int>(c.host->slba / 8 % 2));
}

// The fetch function of FetchAndExplain: canned answers per URL prefix, errors for the rest.
struct FakeFetch {
  std::map<std::string, std::string> bodies;  // URL prefix -> body
  std::vector<std::string> asked;
  bool operator()(const std::string& url, std::string* body, std::string* error) {
    asked.push_back(url);
    for (const auto& [prefix, b] : bodies)
      if (url.starts_with(prefix)) {
        *body = b;
        return true;
      }
    *error = "cannot connect to " + url.substr(7, url.find('/', 7) - 7) + ": Connection refused";
    return false;
  }
};

TEST(Explain, ATargetThatDoesNotAnswerIsNamedAndTheHostSideShown) {
  auto w = Window(300, Fault::kNetwork);
  FakeFetch fake;
  fake.bodies["http://host:10420/api/v1/commands?role=host&"] = Body(w.first);
  ExplainRequest req;
  req.hosts = {"http://host:10420/metrics"};
  req.targets = {"http://10.0.0.9:10420"};
  std::vector<std::string> warnings;
  const Explanation x = FetchAndExplain(
      req, [&](auto& u, auto* b, auto* e) { return fake(u, b, e); }, kWall + 2'000'000'000,
      &warnings);
  ASSERT_EQ(fake.asked.size(), 2u);
  EXPECT_EQ(fake.asked[0],
            "http://host:10420/api/v1/commands?role=host&since=1699999942.000&limit=100000");
  EXPECT_EQ(fake.asked[1],
            "http://10.0.0.9:10420/api/v1/commands?role=target&since=1699999941.000&limit=100000");
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_EQ(warnings[0],
            "target http://10.0.0.9:10420: cannot connect to 10.0.0.9:10420: "
            "Connection refused; the host side is shown without it");
  EXPECT_EQ(x.host_records, 300u);
  EXPECT_FALSE(x.targets_answered);
  ASSERT_TRUE(x.tail);
  EXPECT_EQ(x.tail->parts[0].component, kNetworkTarget);
  std::ostringstream text;
  PrintExplainText(x, text);
  EXPECT_NE(text.str().find("host side only: no target exporter answered"), std::string::npos)
      << text.str();
}

TEST(Explain, EmptyWindowSaysSo) {
  RecordFile empty;
  empty.header = Header("host");
  FakeFetch fake;
  fake.bodies["http://host:1/"] = Body(empty);
  ExplainRequest req;
  req.hosts = {"http://host:1"};
  std::vector<std::string> warnings;
  const Explanation x = FetchAndExplain(
      req, [&](auto& u, auto* b, auto* e) { return fake(u, b, e); }, kWall, &warnings);
  EXPECT_TRUE(warnings.empty());
  EXPECT_FALSE(x.tail);
  EXPECT_EQ(x.host_records, 0u);
  EXPECT_EQ(NoRecordsMessage(x),
            "no records: the host exporter's flight recorder holds no NVMe-oF command that "
            "ended in the last 60 s (no NVMe-oF I/O, or none sampled)");
  std::ostringstream json;
  PrintExplainJson(x, json);
  const auto doc = nlohmann::json::parse(json.str());
  EXPECT_TRUE(doc["tail"].is_null());
  EXPECT_EQ(doc["host_commands"], 0);

  // No host answers at all; a 404 is explained.
  req.hosts = {"http://other:1"};
  FakeFetch none;
  const Explanation y = FetchAndExplain(
      req,
      [&](auto&, auto*, std::string* e) {
        *e = "HTTP 404 Not Found";
        return false;
      },
      kWall, &warnings);
  EXPECT_EQ(NoRecordsMessage(y), "no host exporter answered: nothing measured");
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("host http://other:1: HTTP 404 Not Found (no flight recorder"),
            std::string::npos)
      << warnings[0];
}

TEST(Explain, JsonIsOneObjectWithTheTail) {
  const Explanation x = Explain(Window(500, Fault::kTarget));
  std::ostringstream out;
  PrintExplainJson(x, out);
  const auto doc = nlohmann::json::parse(out.str());
  EXPECT_EQ(doc["host_commands"], 500);
  EXPECT_EQ(doc["joined"], 500);
  EXPECT_EQ(doc["slowest"].size(), 5u);
  const auto& c = doc["slowest"][0];
  EXPECT_EQ(c["controller"], "nvme1");
  EXPECT_EQ(c["node"], "host-node");
  EXPECT_EQ(c["largest"], "target");
  EXPECT_TRUE(c["components"]["drive"].is_null());
  EXPECT_TRUE(c["time_ns"].is_number_unsigned());
  EXPECT_EQ(doc["tail"]["dominant"], "target");
  EXPECT_EQ(doc["tail"]["components"][0]["name"], "target (incl. drive)");
  EXPECT_EQ(doc["tail"]["clear"], true);
}

TEST(Explain, AutoTargetsFromControllerInfo) {
  const std::string metrics =
      "# TYPE nvmeof_controller_info gauge\n"
      "nvmeof_controller_info{controller=\"nvme0\",transport=\"rdma\",traddr=\"10.0.0.1\"} 1\n"
      "nvmeof_controller_info{controller=\"nvme1\",transport=\"tcp\",traddr=\"10.0.0.1\"} 1\n"
      "nvmeof_controller_info{controller=\"nvme2\",transport=\"tcp\",traddr=\"fd00::2\"} 1\n"
      "nvmeof_controller_info{controller=\"nvme3\",transport=\"pcie\",traddr=\"0000:03:00.0\"} 1\n"
      "nvmeof_controller_info{controller=\"nvme4\",transport=\"tcp\",traddr=\"\"} 1\n";
  std::string error;
  EXPECT_EQ(AutoTargets("https://u@host:9999/metrics", metrics, &error),
            (std::vector<std::string>{"https://10.0.0.1:9999", "https://[fd00::2]:9999"}));
  EXPECT_EQ(AutoTargets("http://[fd00::1]", metrics, &error),
            (std::vector<std::string>{"http://10.0.0.1", "http://[fd00::2]"}));
  EXPECT_TRUE(AutoTargets("http://h:1", "up 1\n", &error).empty());
  EXPECT_NE(error.find("no NVMe-oF controller with a target address"), std::string::npos);
}

TEST(Explain, CommandsUrl) {
  EXPECT_EQ(CommandsUrl("http://h:1", "host", 12.5),
            "http://h:1/api/v1/commands?role=host&since=12.500&limit=100000");
  EXPECT_EQ(CommandsUrl("https://h:1/prefix/metrics/", "target", 1),
            "https://h:1/prefix/api/v1/commands?role=target&since=1.000&limit=100000");
}

TEST(Explain, Durations) {
  double s = 0;
  EXPECT_TRUE(ParseDurationSeconds("60s", 3600, &s) && s == 60);
  EXPECT_TRUE(ParseDurationSeconds("5m", 3600, &s) && s == 300);
  EXPECT_TRUE(ParseDurationSeconds("250ms", 3600, &s) && s == 0.25);
  EXPECT_TRUE(ParseDurationSeconds("0.02", 3600, &s) && s == 0.02);
  EXPECT_FALSE(ParseDurationSeconds("2h", 3600, &s));
  EXPECT_FALSE(ParseDurationSeconds("0", 3600, &s));
  EXPECT_FALSE(ParseDurationSeconds("-1s", 3600, &s));
  EXPECT_FALSE(ParseDurationSeconds("1x", 3600, &s));
  EXPECT_FALSE(ParseDurationSeconds("", 3600, &s));
}

// The fast reader gives what ReadRecords gives, and leaves anything else to it.
TEST(RecordScan, SameAsReadRecords) {
  auto [host, target] = Window(50, Fault::kNetwork, true);
  host.records[3].device = "dev \"quoted\" \xc3\xa9";  // escaped and non-ASCII: the slow path
  target.lost = 3;
  for (const RecordFile* f : {&host, &target}) {
    std::string body = Body(*f);
    for (bool with_escape : {false, true}) {
      RecordFile copy = *f;
      if (!with_escape) copy.records[3].device = "nvme0c1n1";
      body = Body(copy);
      RecordFile fast_file, slow_file;
      std::string e1, e2;
      bool fast = false;
      ASSERT_TRUE(ReadRecordBody(body, &fast_file, &e1, &fast)) << e1;
      std::istringstream in(body);
      ASSERT_TRUE(ReadRecords(in, &slow_file, &e2)) << e2;
      EXPECT_EQ(fast, !(with_escape && f == &host));
      std::ostringstream a, b;
      a << Body(fast_file);
      b << Body(slow_file);
      EXPECT_EQ(a.str(), b.str());
      EXPECT_EQ(fast_file.lost, slow_file.lost);
      EXPECT_EQ(fast_file.has_end, slow_file.has_end);
    }
  }
  // Errors are ReadRecords' own.
  std::string body = Body(host);
  const std::vector<std::string> bad = {
      body.substr(0, body.size() - 10),                               // cut inside the end line
      body.substr(0, body.find('\n') + 1) + "{\"role\":\"host\"}\n",  // a record without fields
      body + "{}\n",                                                  // data after the end line
      "",                                                             // empty
      body.substr(0, body.find('\n') + 1) + "{\"end\":true,\"records\":2,\"lost\":0}\n",
  };
  for (const auto& b : bad) {
    RecordFile f1, f2;
    std::string e1, e2;
    std::istringstream in(b);
    EXPECT_FALSE(ReadRecordBody(b, &f1, &e1));
    EXPECT_FALSE(ReadRecords(in, &f2, &e2));
    EXPECT_EQ(e1, e2);
    EXPECT_FALSE(e1.empty());
  }
  // Without its last newline a file still reads (the end line is whole), by both.
  RecordFile f1, f2;
  std::string e1, e2;
  std::istringstream in(body.substr(0, body.size() - 1));
  EXPECT_TRUE(ReadRecordBody(body.substr(0, body.size() - 1), &f1, &e1)) << e1;
  EXPECT_TRUE(ReadRecords(in, &f2, &e2)) << e2;
  EXPECT_EQ(f1.records.size(), f2.records.size());
}

}  // namespace
}  // namespace nvmeof::profile
