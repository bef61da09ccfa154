// Tests for the rdma_netlink collector and its parser.
//
// Real data: tests/fixtures/netlink/<kernel>/ holds the replies Debian's 6.1 and 6.12 kernels
// gave the exporter in the VM (scenario netlink, rxe0 with NVMe/RDMA connected), together with
// that scrape's /metrics and `rdma -j statistic/resource show` read right before and after it.
// Replaying them must give the same series the exporter produced in the VM, and the kernel's own
// tool must agree. Damaged copies of those replies (truncated at every byte, bad lengths,
// oversized, error answers) must give skips and the failure self-metric, never a crash or a 0.
// rxe has no optional counters and binds no QP to a counter, so those replies are built here in
// the kernel's layout (nldev.c) with mlx5's counter names, and say so.
#include <gtest/gtest.h>
#include <linux/netlink.h>
#include <rdma/rdma_netlink.h>

#include <climits>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "collectors/rdma_netlink.h"
#include "collectors/registry.h"
#include "exporter/config.h"
#include "readers/nldev.h"
#include "tests/unit/netlink_replay.h"
#include "tests/unit/sink_query.h"

#include <prometheus/text_serializer.h>

namespace nvmeof {
namespace {

namespace fs = std::filesystem;
using Buf = std::vector<std::uint8_t>;

const std::string kFixtures = std::string(NVMEOF_FIXTURES) + "/netlink";
const char* const kKernels[] = {"6.1", "6.12"};

Buf ReadBin(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return Buf((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

std::string ReadText(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// ---- a tiny netlink writer for replies rxe cannot give ----
class Nl {
 public:
  Nl& Attr(std::uint16_t type, const void* data, std::size_t len) {
    const std::size_t at = buf_.size();
    nlattr h{static_cast<std::uint16_t>(NLA_HDRLEN + len), type};
    buf_.resize(at + NLA_ALIGN(NLA_HDRLEN + len));
    std::memcpy(buf_.data() + at, &h, sizeof h);
    if (len) std::memcpy(buf_.data() + at + NLA_HDRLEN, data, len);
    return *this;
  }
  Nl& U8(std::uint16_t t, std::uint8_t v) { return Attr(t, &v, 1); }
  Nl& U32(std::uint16_t t, std::uint32_t v) { return Attr(t, &v, 4); }
  Nl& U64(std::uint16_t t, std::uint64_t v) { return Attr(t, &v, 8); }
  Nl& Str(std::uint16_t t, const std::string& s) { return Attr(t, s.c_str(), s.size() + 1); }
  Nl& Nest(std::uint16_t t, const Nl& inner) {
    return Attr(t, inner.buf_.data(), inner.buf_.size());
  }
  // As a complete netlink message of nldev command `cmd`.
  Buf Message(std::uint16_t cmd, std::uint16_t flags = 0) const {
    Buf out(NLMSG_HDRLEN + buf_.size());
    nlmsghdr h{static_cast<std::uint32_t>(out.size()),
               static_cast<std::uint16_t>(RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, cmd)), flags, 1, 0};
    std::memcpy(out.data(), &h, sizeof h);
    std::memcpy(out.data() + NLMSG_HDRLEN, buf_.data(), buf_.size());
    return out;
  }

 private:
  Buf buf_;
};

Buf Control(std::uint16_t type, int error) {
  Buf out(NLMSG_HDRLEN + sizeof(nlmsgerr));
  nlmsghdr h{static_cast<std::uint32_t>(out.size()), type, 0, 1, 0};
  std::memcpy(out.data(), &h, sizeof h);
  std::memcpy(out.data() + NLMSG_HDRLEN, &error, sizeof error);
  return out;
}
Buf Done() { return Control(NLMSG_DONE, 0); }
Buf Error(int err) { return Control(NLMSG_ERROR, -err); }
Buf Cat(std::initializer_list<Buf> parts) {
  Buf out;
  for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

// ---- scraping a directory of replies ----

// A scratch copy of one kernel's replies that tests may damage file by file.
class ReplyDir {
 public:
  explicit ReplyDir(const std::string& kernel = "6.12") {
    dir_ = fs::temp_directory_path() / ("nvmeof_rdma_netlink_test." + std::to_string(::getpid()) +
                                        "." + std::to_string(counter_++));
    fs::create_directories(dir_);
    for (const auto& e : fs::directory_iterator(kFixtures + "/" + kernel)) {
      if (e.path().extension() == ".bin") fs::copy_file(e.path(), dir_ / e.path().filename());
    }
  }
  ~ReplyDir() { fs::remove_all(dir_); }
  void Put(const std::string& key, const Buf& bytes) const {
    std::ofstream out(dir_ / (key + ".bin"), std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(bytes.data()),
              static_cast<std::streamsize>(bytes.size()));
  }
  Buf Get(const std::string& key) const { return ReadBin((dir_ / (key + ".bin")).string()); }
  void Remove(const std::string& key) const { fs::remove(dir_ / (key + ".bin")); }
  std::string path() const { return dir_.string(); }

 private:
  fs::path dir_;
  static inline int counter_ = 0;
};

// Replays a directory and remembers every request (to see what STAT_SET asked for).
class LoggingReplay : public RdmaNetlinkTransport {
 public:
  explicit LoggingReplay(const std::string& dir) : replay_(NewRdmaNetlinkReplay(dir)) {}
  int Open() override { return replay_->Open(); }
  void Close() override { replay_->Close(); }
  int Exchange(const rdmanl::Request& req, RdmaNetlinkBudget& budget, Buf* reply) override {
    requests->push_back(req);
    return replay_->Exchange(req, budget, reply);
  }
  std::shared_ptr<std::vector<rdmanl::Request>> requests =
      std::make_shared<std::vector<rdmanl::Request>>();

 private:
  std::unique_ptr<RdmaNetlinkTransport> replay_;
};

struct Scrape {
  MetricSink sink;
  bool ok = false;
  std::vector<rdmanl::Request> requests;
};

Scrape ScrapeDir(const std::string& dir, RdmaNetlinkOptions o = {}, NameFilter devices = {}) {
  CollectorOptions options;
  options.rdma_netlink = std::move(o);
  options.rdma.devices = std::move(devices);
  auto t = std::make_unique<LoggingReplay>(dir);
  auto requests = t->requests;
  Scrape s;
  s.ok = NewRdmaNetlinkCollector(options, std::move(t))->Collect(s.sink);
  s.requests = *requests;
  return s;
}

RdmaNetlinkOptions PerQp() {
  RdmaNetlinkOptions o;
  o.per_qp = true;
  return o;
}

double Failures(const MetricSink& sink, const std::string& request, const std::string& reason) {
  return Value(sink, "nvmeof_exporter_rdma_netlink_request_failures",
               {{"request", request}, {"reason", reason}});
}

// "name{a="b",...} value" lines of a /metrics text, for the families given.
std::map<std::string, double> PromSeries(const std::string& text,
                                         const std::set<std::string>& families) {
  std::map<std::string, double> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    const auto brace = line.find_first_of("{ ");
    if (!families.count(line.substr(0, brace))) continue;
    const auto space = line.rfind(' ');
    out[line.substr(0, space)] = std::stod(line.substr(space + 1));
  }
  return out;
}

std::map<std::string, double> SinkSeries(MetricSink& sink, const std::set<std::string>& families) {
  std::map<std::string, double> out;
  for (const auto& f : sink.Take()) {
    if (!families.count(f.name)) continue;
    for (const auto& m : f.metric) {
      std::string key = f.name;
      if (!m.label.empty()) {
        key += "{";
        for (size_t i = 0; i < m.label.size(); ++i) {
          key += (i ? "," : "") + m.label[i].name + "=\"" + m.label[i].value + "\"";
        }
        key += "}";
      }
      out[key] = f.type == prometheus::MetricType::Counter ? m.counter.value : m.gauge.value;
    }
  }
  return out;
}

// `rdma -j ...` output: the numbers of the object for rxe0 ("name":123 pairs only).
std::map<std::string, double> RdmaJsonNumbers(const std::string& path) {
  std::map<std::string, double> out;
  const std::string text = ReadText(path);
  static const std::regex pair("\"([a-z_]+)\":([0-9]+)");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), pair); it != std::sregex_iterator();
       ++it) {
    out[(*it)[1]] = std::stod((*it)[2]);
  }
  return out;
}

const std::set<std::string> kFamilies = {
    "nvmeof_rdma_netlink_device_info",
    "nvmeof_rdma_netlink_port_info",
    "nvmeof_rdma_netlink_port_stat_total",
    "nvmeof_rdma_netlink_optional_stat_enabled",
    "nvmeof_rdma_resources",
    "nvmeof_rdma_netlink_qp_info",
    "nvmeof_rdma_netlink_qp_bound",
    "nvmeof_rdma_netlink_qp_stat_total",
    "nvmeof_exporter_rdma_netlink_reply_bytes",
    "nvmeof_exporter_rdma_netlink_budget_exhausted",
    "nvmeof_exporter_rdma_netlink_request_failures",
    "nvmeof_exporter_rdma_netlink_qp_series_dropped",
};

// ---- recorded kernels ----

class Recorded : public ::testing::TestWithParam<const char*> {
 protected:
  std::string dir() const { return kFixtures + "/" + GetParam(); }
};

// The replies of the VM's scrape give exactly the series the exporter served in the VM.
TEST_P(Recorded, ReplayEqualsTheVmScrape) {
  auto s = ScrapeDir(dir(), PerQp());
  ASSERT_TRUE(s.ok);
  EXPECT_EQ(s.sink.skipped(), 0u);
  const auto vm = PromSeries(ReadText(dir() + "/metrics-final.prom"), kFamilies);
  const auto replay = SinkSeries(s.sink, kFamilies);
  ASSERT_GT(vm.size(), 30u) << "fixture metrics-final.prom lacks rdma_netlink series";
  EXPECT_EQ(replay, vm);
}

// ...and `rdma statistic show` / `rdma resource show`, read around that scrape, agree.
TEST_P(Recorded, MatchesRdmaTool) {
  auto s = ScrapeDir(dir(), PerQp());
  ASSERT_TRUE(s.ok);
  const auto pre = RdmaJsonNumbers(dir() + "/rdma-stat-final-pre.json");
  const auto post = RdmaJsonNumbers(dir() + "/rdma-stat-final-post.json");
  ASSERT_GE(pre.size(), 15u);  // rxe's 15 counters plus "port"
  size_t compared = 0;
  for (const auto& [name, before] : pre) {
    if (name == "port" || name == "ifindex") continue;
    const double v = Value(s.sink, "nvmeof_rdma_netlink_port_stat_total",
                           {{"rdma_device", "rxe0"}, {"rdma_port", "1"}, {"counter", name}});
    EXPECT_GE(v, before) << name;
    EXPECT_LE(v, post.at(name)) << name;
    ++compared;
  }
  EXPECT_EQ(compared, Select(s.sink, "nvmeof_rdma_netlink_port_stat_total").size());
  EXPECT_GT(Value(s.sink, "nvmeof_rdma_netlink_port_stat_total", {{"counter", "sent_pkts"}}), 1000)
      << "the fixture was taken after NVMe/RDMA I/O";

  const auto res = RdmaJsonNumbers(dir() + "/rdma-res-final-pre.json");
  for (const char* type : {"pd", "cq", "qp", "cm_id", "mr", "ctx", "srq"}) {
    EXPECT_EQ(Value(s.sink, "nvmeof_rdma_resources", {{"rdma_device", "rxe0"}, {"type", type}}),
              res.at(type))
        << type;
  }
  // The VM's numbers (vm-recipe.md): 2 CPUs -> admin + 2 I/O queues, each a QP on both sides.
  EXPECT_EQ(Value(s.sink, "nvmeof_rdma_resources", {{"type", "qp"}}), 7);
  EXPECT_EQ(Value(s.sink, "nvmeof_rdma_resources", {{"type", "mr"}}), 288);
}

TEST_P(Recorded, DevicePortAndQps) {
  auto s = ScrapeDir(dir(), PerQp());
  EXPECT_EQ(Value(s.sink, "nvmeof_rdma_netlink_device_info",
                  {{"rdma_device", "rxe0"}, {"protocol", "roce"}}),
            1);
  EXPECT_EQ(Value(s.sink, "nvmeof_rdma_netlink_port_info",
                  {{"rdma_device", "rxe0"}, {"rdma_port", "1"}, {"netdev", "veth0"}}),
            1);
  // NVMe-oF queues: host QPs belong to nvme_rdma and go to the target port, target QPs to
  // nvmet_rdma on it; the GSI QP is ib_core's. rxe offers no optional counters and no binding.
  EXPECT_EQ(Select(s.sink, "nvmeof_rdma_netlink_qp_info",
                   {{"owner", "nvme_rdma"}, {"dst", "10.10.10.1:4420"}})
                .size(),
            3u);
  EXPECT_EQ(Select(s.sink, "nvmeof_rdma_netlink_qp_info",
                   {{"owner", "nvmet_rdma"}, {"src", "10.10.10.1:4420"}})
                .size(),
            3u);
  EXPECT_EQ(Value(s.sink, "nvmeof_rdma_netlink_qp_info",
                  {{"qpn", "1"}, {"type", "gsi"}, {"owner", "ib_core"}}),
            1);
  EXPECT_TRUE(Select(s.sink, "nvmeof_rdma_netlink_optional_stat_enabled").empty());
  EXPECT_TRUE(Select(s.sink, "nvmeof_rdma_netlink_qp_stat_total").empty());
  EXPECT_TRUE(Select(s.sink, "nvmeof_exporter_rdma_netlink_request_failures").empty());
}

// Per-QP series are opt-in: the default scrape asks no QP or cm_id table at all.
TEST_P(Recorded, PerQpOnlyWhenConfigured) {
  auto s = ScrapeDir(dir());
  ASSERT_TRUE(s.ok);
  EXPECT_TRUE(Select(s.sink, "nvmeof_rdma_netlink_qp_info").empty());
  EXPECT_TRUE(Select(s.sink, "nvmeof_exporter_rdma_netlink_qp_series_dropped").empty());
  for (const auto& r : s.requests) {
    EXPECT_NE(r.cmd, RDMA_NLDEV_CMD_RES_QP_GET);
    EXPECT_NE(r.cmd, RDMA_NLDEV_CMD_RES_CM_ID_GET);
    EXPECT_FALSE(r.stat_res.has_value());
    EXPECT_NE(r.cmd, RDMA_NLDEV_CMD_STAT_SET) << "nothing is ever set unless configured";
  }
  EXPECT_EQ(Select(s.sink, "nvmeof_rdma_netlink_port_stat_total").size(), 15u);
}

TEST_P(Recorded, QpSeriesLimit) {
  auto o = PerQp();
  o.max_qp_series = 3;
  auto s = ScrapeDir(dir(), o);
  ASSERT_TRUE(s.ok);
  EXPECT_EQ(Select(s.sink, "nvmeof_rdma_netlink_qp_info").size(), 3u);
  EXPECT_EQ(Value(s.sink, "nvmeof_exporter_rdma_netlink_qp_series_dropped"), 4);
  EXPECT_EQ(s.sink.skipped(), 4u);
}

TEST_P(Recorded, DeviceFilter) {
  NameFilter f;
  f.exclude = std::regex("rxe.*");
  auto s = ScrapeDir(dir(), PerQp(), f);
  ASSERT_TRUE(s.ok);
  EXPECT_TRUE(Select(s.sink, "nvmeof_rdma_netlink_device_info").empty());
  EXPECT_TRUE(Select(s.sink, "nvmeof_rdma_resources").empty());
  EXPECT_EQ(s.requests.size(), 1u) << "only the device list is read";
}

TEST_P(Recorded, Decoders) {
  const Buf get = ReadBin(dir() + "/get.bin");
  auto scan = rdmanl::ScanMessages(get);
  ASSERT_FALSE(scan.malformed);
  EXPECT_TRUE(scan.done);
  ASSERT_EQ(scan.data.size(), 1u);
  rdmanl::Device d;
  ASSERT_TRUE(rdmanl::DecodeDevice(scan.data[0].payload, &d));
  EXPECT_EQ(d.name, "rxe0");
  EXPECT_EQ(d.ports, 1u);
  EXPECT_EQ(d.protocol, "roce");

  const Buf status = ReadBin(dir() + "/stat_get_status-d0-p1.bin");
  scan = rdmanl::ScanMessages(status);
  ASSERT_EQ(scan.data.size(), 1u);
  rdmanl::PortStats st;
  ASSERT_TRUE(rdmanl::DecodePortStats(scan.data[0].payload, &st));
  ASSERT_EQ(st.counters.size(), 15u);
  for (size_t i = 0; i < st.counters.size(); ++i) {
    EXPECT_EQ(st.counters[i].index, i);
    EXPECT_FALSE(st.counters[i].optional_enabled) << "rxe has no optional counters";
    EXPECT_FALSE(st.counters[i].value);
  }
  EXPECT_EQ(st.counters[0].name, "sent_pkts");
}

INSTANTIATE_TEST_SUITE_P(Kernels, Recorded, ::testing::ValuesIn(kKernels), [](const auto& info) {
  std::string n = info.param;
  for (auto& c : n) c = c == '.' ? '_' : c;
  return "linux_" + n;
});

// ---- no source ----

TEST(RdmaNetlink, NoRdmaNetlinkIsSuccessWithNoSeries) {
  auto s = ScrapeDir("/nonexistent/netlink");
  EXPECT_TRUE(s.ok);
  EXPECT_TRUE(s.sink.Empty());
  EXPECT_EQ(s.sink.skipped(), 0u);
}

// The real socket on this machine: 6.18 without RDMA refuses NETLINK_RDMA; a kernel with ib_core
// answers. Either way the collector succeeds and never reports a failed request for GET. The
// fixture sysfs has class/infiniband, so the socket is really opened.
TEST(RdmaNetlink, RealSocket) {
  CollectorOptions options;
  MetricSink sink;
  const std::string sysfs = std::string(NVMEOF_FIXTURES) + "/sysfs";
  EXPECT_TRUE(NewRdmaNetlinkCollector(options, NewRdmaNetlinkSocket("", sysfs))->Collect(sink));
  EXPECT_EQ(sink.skipped(), 0u);
  EXPECT_TRUE(Select(sink, "nvmeof_exporter_rdma_netlink_request_failures").empty());
}

// No class/infiniband: no socket at all (opening one would modprobe ib_core), no series.
TEST(RdmaNetlink, NoInfinibandClassNoSocket) {
  auto t = NewRdmaNetlinkSocket("", "/nonexistent-sysfs");
  EXPECT_EQ(t->Open(), EPROTONOSUPPORT);
  CollectorOptions options;
  options.paths.sysfs = "/nonexistent-sysfs";
  MetricSink sink;
  EXPECT_TRUE(NewRdmaNetlinkCollector(options)->Collect(sink));
  EXPECT_TRUE(sink.Empty());
}

// ---- damaged replies ----

// Every prefix of every recorded reply: no crash, success, and a short reply costs a skip and a
// failure instead of a made-up value.
TEST(RdmaNetlinkMalformed, EveryTruncation) {
  ReplyDir dir;
  for (const auto& key : {"get", "port_get-d0-p1", "stat_get_status-d0-p1", "stat_get-d0-p1",
                          "res_get", "res_qp_get-d0", "res_cm_id_get-d0", "stat_get_qp-d0"}) {
    const Buf whole = dir.Get(key);
    ASSERT_FALSE(whole.empty()) << key;
    for (size_t n = 0; n < whole.size(); ++n) {
      dir.Put(key, Buf(whole.begin(), whole.begin() + static_cast<long>(n)));
      auto s = ScrapeDir(dir.path(), PerQp());
      const std::string what = std::string(key) + " cut at " + std::to_string(n);
      if (std::string(key) == "get" && !s.ok) {
        // Without the device list nothing else exists: the source failed, no series.
        EXPECT_TRUE(Select(s.sink, "nvmeof_rdma_netlink_device_info").empty()) << what;
        continue;
      }
      EXPECT_TRUE(s.ok) << what;
      const bool only_done_lost = n >= whole.size() - 20;  // NLMSG_DONE is 20 bytes
      if (only_done_lost && std::string(key) == "res_get") {
        // The summary of every device GET listed arrived whole: nothing is missing, but the
        // unfinished dump is still reported. (A device list without DONE may lack devices:
        // that costs a skip.)
        EXPECT_EQ(s.sink.skipped(), 0u) << what;
        EXPECT_EQ(Value(s.sink, "nvmeof_rdma_resources", {{"type", "qp"}}), 7) << what;
      } else {
        EXPECT_GE(s.sink.skipped(), 1u) << what;
      }
      EXPECT_FALSE(Select(s.sink, "nvmeof_exporter_rdma_netlink_request_failures").empty()) << what;
      if (std::string(key) == "stat_get-d0-p1") {
        EXPECT_TRUE(Select(s.sink, "nvmeof_rdma_netlink_port_stat_total").empty()) << what;
      }
    }
    dir.Put(key, whole);
  }
}

TEST(RdmaNetlinkMalformed, BadLengthsAndGarbage) {
  ReplyDir dir;
  const Buf good = dir.Get("stat_get-d0-p1");
  // An nlmsg_len far beyond the buffer ("oversized"), then one below the header size.
  for (std::uint32_t len : {0x40000000u, 8u}) {
    Buf bad = good;
    std::memcpy(bad.data(), &len, 4);
    dir.Put("stat_get-d0-p1", bad);
    auto s = ScrapeDir(dir.path());
    EXPECT_TRUE(s.ok);
    EXPECT_TRUE(Select(s.sink, "nvmeof_rdma_netlink_port_stat_total").empty());
    EXPECT_EQ(Failures(s.sink, "stat_get", "malformed"), 1) << len;
    EXPECT_EQ(s.sink.skipped(), 1u);
  }
  // The first attribute (DEV_INDEX) claims more bytes than the message has.
  Buf bad = good;
  const std::uint16_t big = 0x7000;
  std::memcpy(bad.data() + NLMSG_HDRLEN, &big, 2);
  dir.Put("stat_get-d0-p1", bad);
  auto s = ScrapeDir(dir.path());
  EXPECT_TRUE(Select(s.sink, "nvmeof_rdma_netlink_port_stat_total").empty());
  EXPECT_EQ(s.sink.skipped(), 1u);
  // Resource summary and devices still come through.
  EXPECT_EQ(Value(s.sink, "nvmeof_rdma_resources", {{"type", "qp"}}), 7);

  // Random bytes instead of every reply: no crash.
  std::srand(7);
  for (int round = 0; round < 50; ++round) {
    for (const auto& key : {"port_get-d0-p1", "stat_get_status-d0-p1", "stat_get-d0-p1", "res_get",
                            "res_qp_get-d0", "res_cm_id_get-d0", "stat_get_qp-d0"}) {
      Buf junk(static_cast<size_t>(std::rand() % 300));
      for (auto& b : junk) b = static_cast<std::uint8_t>(std::rand());
      dir.Put(key, junk);
    }
    auto r = ScrapeDir(dir.path(), PerQp());
    EXPECT_TRUE(r.ok);
  }
}

// Error codes outside the kernel's -4095..0: INT_MIN made `-err` overflow (found by the fuzzer,
// tests/fuzz/regressions/rdma_netlink_fuzz/); positive ones are no errno either.
TEST(RdmaNetlinkMalformed, ErrorCodeOutOfRange) {
  for (int code : {INT_MIN, -4096, 1, INT_MAX}) {
    Buf msg = Control(NLMSG_ERROR, 0);
    std::memcpy(msg.data() + NLMSG_HDRLEN, &code, sizeof code);
    const auto scan = rdmanl::ScanMessages(msg);
    EXPECT_TRUE(scan.malformed) << code;
    EXPECT_TRUE(scan.done) << code;
    EXPECT_EQ(scan.error, EBADMSG) << code;
    ReplyDir dir;
    dir.Put("stat_get-d0-p1", msg);
    auto s = ScrapeDir(dir.path());
    EXPECT_EQ(Failures(s.sink, "stat_get", "malformed"), 1) << code;
  }
  const auto eperm = rdmanl::ScanMessages(Error(EPERM));
  EXPECT_FALSE(eperm.malformed);
  EXPECT_EQ(eperm.error, EPERM);
}

// One bad counter entry (a name that is not a clean label value) costs one series, not the port.
TEST(RdmaNetlinkMalformed, BadEntrySkippedAlone) {
  ReplyDir dir;
  Nl counters;
  counters.Nest(RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY,
                Nl().Str(RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_NAME, "sent_pkts")
                    .U64(RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_VALUE, 42));
  counters.Nest(RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY,
                Nl().Str(RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_NAME, "bad\"name")
                    .U64(RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_VALUE, 1));
  counters.Nest(RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY,
                Nl().Str(RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_NAME, "short_value")
                    .U32(RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_VALUE, 1));  // u64 expected
  dir.Put("stat_get-d0-p1", Nl().U32(RDMA_NLDEV_ATTR_DEV_INDEX, 0)
                                .Str(RDMA_NLDEV_ATTR_DEV_NAME, "rxe0")
                                .U32(RDMA_NLDEV_ATTR_PORT_INDEX, 1)
                                .Nest(RDMA_NLDEV_ATTR_STAT_HWCOUNTERS, counters)
                                .Message(RDMA_NLDEV_CMD_STAT_GET));
  auto s = ScrapeDir(dir.path());
  EXPECT_EQ(Select(s.sink, "nvmeof_rdma_netlink_port_stat_total").size(), 1u);
  EXPECT_EQ(Value(s.sink, "nvmeof_rdma_netlink_port_stat_total", {{"counter", "sent_pkts"}}), 42);
  EXPECT_EQ(s.sink.skipped(), 2u);
}

// ---- kernel errors ----

TEST(RdmaNetlinkErrors, EpermAndEopnotsuppSkip) {
  for (int err : {EPERM, EOPNOTSUPP}) {
    ReplyDir dir;
    dir.Put("stat_get-d0-p1", Error(err));
    dir.Put("res_get", Error(err));
    auto s = ScrapeDir(dir.path());
    EXPECT_TRUE(s.ok);
    EXPECT_TRUE(Select(s.sink, "nvmeof_rdma_netlink_port_stat_total").empty());
    EXPECT_TRUE(Select(s.sink, "nvmeof_rdma_resources").empty());
    const std::string reason = err == EPERM ? "EPERM" : "EOPNOTSUPP";
    EXPECT_EQ(Failures(s.sink, "stat_get", reason), 1);
    EXPECT_EQ(Failures(s.sink, "res_get", reason), 1);
    EXPECT_EQ(s.sink.skipped(), 2u) << "one per port's statistics, one per device's resources";
  }
}

// STAT_GET_STATUS exists from 5.16; older kernels answer EINVAL. That is absence, not failure.
TEST(RdmaNetlinkErrors, NoStatusCommandOnOldKernels) {
  ReplyDir dir;
  dir.Put("stat_get_status-d0-p1", Error(EINVAL));
  auto s = ScrapeDir(dir.path());
  EXPECT_TRUE(s.ok);
  EXPECT_EQ(s.sink.skipped(), 0u);
  EXPECT_TRUE(Select(s.sink, "nvmeof_exporter_rdma_netlink_request_failures").empty());
  EXPECT_EQ(Select(s.sink, "nvmeof_rdma_netlink_port_stat_total").size(), 15u);
}

TEST(RdmaNetlinkErrors, DeviceListErrorFailsTheCollector) {
  ReplyDir dir;
  dir.Put("get", Error(EPERM));
  auto s = ScrapeDir(dir.path());
  EXPECT_FALSE(s.ok);
  EXPECT_EQ(Failures(s.sink, "get", "EPERM"), 1);
}

// A dump that never ends (no NLMSG_DONE) is cut short: what came is used, the rest skipped.
TEST(RdmaNetlinkErrors, DumpWithoutDone) {
  ReplyDir dir;
  Buf res = dir.Get("res_get");
  auto scan = rdmanl::ScanMessages(res);
  ASSERT_EQ(scan.data.size(), 1u);
  dir.Put("res_get", Buf(scan.data[0].raw.begin(), scan.data[0].raw.end()));
  auto s = ScrapeDir(dir.path());
  EXPECT_EQ(Value(s.sink, "nvmeof_rdma_resources", {{"type", "qp"}}), 7);
  EXPECT_EQ(Failures(s.sink, "res_get", "malformed"), 1);
}

// ---- budgets ----

TEST(RdmaNetlinkBudget, ByteBudget) {
  ReplyDir dir;
  auto o = PerQp();
  o.max_reply_bytes = 600;  // the device list and port replies fit; the rest does not
  auto s = ScrapeDir(dir.path(), o);
  EXPECT_TRUE(s.ok);
  EXPECT_EQ(Value(s.sink, "nvmeof_exporter_rdma_netlink_budget_exhausted"), 1);
  EXPECT_LE(Value(s.sink, "nvmeof_exporter_rdma_netlink_reply_bytes"), 600);
  EXPECT_GE(s.sink.skipped(), 1u);
  EXPECT_EQ(Value(s.sink, "nvmeof_rdma_netlink_device_info", {{"rdma_device", "rxe0"}}), 1);
  // After the budget is gone no request gets through, and nothing is invented.
  EXPECT_TRUE(Select(s.sink, "nvmeof_rdma_netlink_qp_info").empty());
  double failed = 0;
  for (const auto* m : Select(s.sink, "nvmeof_exporter_rdma_netlink_request_failures")) {
    failed += m->gauge.value;
  }
  EXPECT_GE(failed, 1);
}

TEST(RdmaNetlinkBudget, TimeBudget) {
  ReplyDir dir;
  RdmaNetlinkOptions o;
  o.timeout_seconds = 1e-9;
  auto s = ScrapeDir(dir.path(), o);
  EXPECT_FALSE(s.ok) << "not even the device list";
  EXPECT_EQ(Value(s.sink, "nvmeof_exporter_rdma_netlink_budget_exhausted"), 1);
  EXPECT_EQ(Failures(s.sink, "get", "time_budget"), 1);
}

// ---- optional counters (mlx5 names; built in nldev.c's layout since rxe has none) ----

Buf StatusReply(const std::vector<std::tuple<std::string, bool, std::optional<bool>>>& counters) {
  Nl table;
  std::uint32_t index = 0;
  for (const auto& [name, _, enabled] : counters) {
    Nl e;
    e.Str(RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_NAME, name)
        .U32(RDMA_NLDEV_ATTR_STAT_HWCOUNTER_INDEX, index++);
    if (enabled) e.U8(RDMA_NLDEV_ATTR_STAT_HWCOUNTER_DYNAMIC, *enabled);
    table.Nest(RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY, e);
  }
  return Nl()
      .U32(RDMA_NLDEV_ATTR_DEV_INDEX, 0)
      .Str(RDMA_NLDEV_ATTR_DEV_NAME, "rxe0")
      .U32(RDMA_NLDEV_ATTR_PORT_INDEX, 1)
      .Nest(RDMA_NLDEV_ATTR_STAT_HWCOUNTERS, table)
      .Message(RDMA_NLDEV_CMD_STAT_GET_STATUS);
}

const std::vector<std::tuple<std::string, bool, std::optional<bool>>> kMlx5Status = {
    {"rx_write_requests", false, std::nullopt},  // index 0: not optional
    {"cc_rx_ce_pkts", true, true},               // 1: optional, on
    {"cc_rx_cnp_pkts", true, false},             // 2: optional, off
    {"cc_tx_cnp_pkts", true, false},             // 3: optional, off
};

TEST(RdmaNetlinkOptional, ReportsStateAndSetsNothingUnasked) {
  ReplyDir dir;
  dir.Put("stat_get_status-d0-p1", StatusReply(kMlx5Status));
  auto s = ScrapeDir(dir.path());
  EXPECT_EQ(Select(s.sink, "nvmeof_rdma_netlink_optional_stat_enabled").size(), 3u);
  EXPECT_EQ(
      Value(s.sink, "nvmeof_rdma_netlink_optional_stat_enabled", {{"counter", "cc_rx_ce_pkts"}}),
      1);
  EXPECT_EQ(
      Value(s.sink, "nvmeof_rdma_netlink_optional_stat_enabled", {{"counter", "cc_rx_cnp_pkts"}}),
      0);
  EXPECT_TRUE(Select(s.sink, "nvmeof_rdma_netlink_optional_stat_enabled",
                     {{"counter", "rx_write_requests"}})
                  .empty());
  for (const auto& r : s.requests) EXPECT_NE(r.cmd, RDMA_NLDEV_CMD_STAT_SET);
}

// Configured: one STAT_SET naming the counters already on plus the requested one (the kernel
// disables every optional counter left out), then the state is read again.
TEST(RdmaNetlinkOptional, EnablesConfiguredCounters) {
  ReplyDir dir;
  dir.Put("stat_get_status-d0-p1", StatusReply(kMlx5Status));
  dir.Put("stat_set-d0-p1", Error(0));  // the ACK
  RdmaNetlinkOptions o;
  o.enable_optional_counters = {"cc_rx_cnp_pkts", "no_such_counter"};
  auto s = ScrapeDir(dir.path(), o);
  std::vector<rdmanl::Request> sets;
  for (const auto& r : s.requests) {
    if (r.cmd == RDMA_NLDEV_CMD_STAT_SET) sets.push_back(r);
  }
  ASSERT_EQ(sets.size(), 1u);
  EXPECT_EQ(sets[0].dev_index, 0u);
  EXPECT_EQ(sets[0].port, 1u);
  EXPECT_EQ(*sets[0].enable_indices, (std::vector<std::uint32_t>{1, 2}));
  int status_reads = 0;
  for (const auto& r : s.requests) status_reads += r.cmd == RDMA_NLDEV_CMD_STAT_GET_STATUS;
  EXPECT_EQ(status_reads, 2);
  EXPECT_TRUE(Select(s.sink, "nvmeof_exporter_rdma_netlink_request_failures").empty());

  // The request as bytes: NLM_F_ACK, and the indices nested in STAT_HWCOUNTERS.
  const Buf bytes = rdmanl::BuildRequest(sets[0], 9);
  nlmsghdr h;
  std::memcpy(&h, bytes.data(), sizeof h);
  EXPECT_EQ(h.nlmsg_len, bytes.size());
  EXPECT_EQ(h.nlmsg_type, RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_STAT_SET));
  EXPECT_EQ(h.nlmsg_flags, NLM_F_REQUEST | NLM_F_ACK);
  EXPECT_EQ(h.nlmsg_seq, 9u);
}

TEST(RdmaNetlinkOptional, EpermIsCountedAndStateStillShown) {
  ReplyDir dir;
  dir.Put("stat_get_status-d0-p1", StatusReply(kMlx5Status));
  dir.Put("stat_set-d0-p1", Error(EPERM));
  RdmaNetlinkOptions o;
  o.enable_optional_counters = {"cc_tx_cnp_pkts"};
  auto s = ScrapeDir(dir.path(), o);
  EXPECT_TRUE(s.ok);
  EXPECT_EQ(Failures(s.sink, "stat_set", "EPERM"), 1);
  EXPECT_EQ(
      Value(s.sink, "nvmeof_rdma_netlink_optional_stat_enabled", {{"counter", "cc_tx_cnp_pkts"}}),
      0);
}

TEST(RdmaNetlinkOptional, NothingToDoWhenAlreadyOn) {
  ReplyDir dir;
  dir.Put("stat_get_status-d0-p1", StatusReply(kMlx5Status));
  RdmaNetlinkOptions o;
  o.enable_optional_counters = {"cc_rx_ce_pkts"};
  auto s = ScrapeDir(dir.path(), o);
  for (const auto& r : s.requests) EXPECT_NE(r.cmd, RDMA_NLDEV_CMD_STAT_SET);
}

// ---- bound per-QP counters (mlx5: `rdma statistic qp set link mlx5_0/1 auto type on`) ----

// Counters 4 (QPs 17, 19) and 5 (QP 21) bound on rxe0 port 1, and a bad entry (no port).
void PutBoundCounters(const ReplyDir& dir) {
  auto counter = [](std::uint32_t id, std::vector<std::uint32_t> qpns, std::uint64_t oos) {
    Nl qps;
    for (auto q : qpns)
      qps.Nest(RDMA_NLDEV_ATTR_RES_QP_ENTRY, Nl().U32(RDMA_NLDEV_ATTR_RES_LQPN, q));
    Nl hw;
    hw.Nest(RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY,
            Nl().Str(RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_NAME, "out_of_sequence")
                .U64(RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_VALUE, oos));
    hw.Nest(RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY,
            Nl().Str(RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_NAME, "packet_seq_err")
                .U64(RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_VALUE, 5));
    return Nl()
        .U32(RDMA_NLDEV_ATTR_PORT_INDEX, 1)
        .U32(RDMA_NLDEV_ATTR_STAT_COUNTER_ID, id)
        .U32(RDMA_NLDEV_ATTR_STAT_MODE, RDMA_COUNTER_MODE_AUTO)
        .U32(RDMA_NLDEV_ATTR_STAT_AUTO_MODE_MASK, RDMA_COUNTER_MASK_QP_TYPE)
        .U8(RDMA_NLDEV_ATTR_RES_TYPE, 2)
        .U32(RDMA_NLDEV_ATTR_RES_PID, 4242)
        .Nest(RDMA_NLDEV_ATTR_RES_QP, qps)
        .Nest(RDMA_NLDEV_ATTR_STAT_HWCOUNTERS, hw);
  };
  Nl table;
  table.Nest(RDMA_NLDEV_ATTR_STAT_COUNTER_ENTRY, counter(4, {17, 19}, 12));
  table.Nest(RDMA_NLDEV_ATTR_STAT_COUNTER_ENTRY, counter(5, {21}, 3));
  table.Nest(RDMA_NLDEV_ATTR_STAT_COUNTER_ENTRY,
             Nl().U32(RDMA_NLDEV_ATTR_STAT_COUNTER_ID, 6));  // no port: bad
  dir.Put("stat_get_qp-d0", Cat({Nl().U32(RDMA_NLDEV_ATTR_DEV_INDEX, 0)
                                     .Str(RDMA_NLDEV_ATTR_DEV_NAME, "rxe0")
                                     .Nest(RDMA_NLDEV_ATTR_STAT_COUNTER, table)
                                     .Message(RDMA_NLDEV_CMD_STAT_GET, NLM_F_MULTI),
                                 Done()}));
}

TEST(RdmaNetlinkPerQp, BoundCounters) {
  ReplyDir dir;
  PutBoundCounters(dir);
  auto s = ScrapeDir(dir.path(), PerQp());
  EXPECT_EQ(Value(s.sink, "nvmeof_rdma_netlink_qp_stat_total",
                  {{"counter_id", "4"}, {"counter", "out_of_sequence"}}),
            12);
  EXPECT_EQ(Value(s.sink, "nvmeof_rdma_netlink_qp_stat_total",
                  {{"counter_id", "5"}, {"counter", "out_of_sequence"}}),
            3);
  EXPECT_EQ(Select(s.sink, "nvmeof_rdma_netlink_qp_stat_total").size(), 4u);
  EXPECT_EQ(Value(s.sink, "nvmeof_rdma_netlink_qp_bound", {{"counter_id", "4"}, {"qpn", "19"}}), 1);
  EXPECT_EQ(Select(s.sink, "nvmeof_rdma_netlink_qp_bound").size(), 3u);
  EXPECT_EQ(s.sink.skipped(), 1u);  // counter 6
  // Labels stay bounded: no PID anywhere.
  for (const auto& m : Select(s.sink, "nvmeof_rdma_netlink_qp_stat_total")) {
    for (const auto& l : m->label) EXPECT_NE(l.value, "4242");
  }
}

// ---- config ----

TEST(RdmaNetlinkConfig, Keys) {
  Options o;
  std::string err;
  ASSERT_TRUE(
      ApplyConfigYaml("rdma_netlink:\n  per_qp: true\n  max_qp_series: 50\n"
                      "  max_reply_bytes: 65536\n  timeout_seconds: 0.5\n"
                      "  enable_optional_counters: [cc_rx_ce_pkts, cc_rx_cnp_pkts]\n",
                      "t.yml", &o, &err))
      << err;
  const auto& r = o.collector.rdma_netlink;
  EXPECT_TRUE(r.per_qp);
  EXPECT_EQ(r.max_qp_series, 50u);
  EXPECT_EQ(r.max_reply_bytes, 65536u);
  EXPECT_DOUBLE_EQ(r.timeout_seconds, 0.5);
  EXPECT_EQ(r.enable_optional_counters,
            (std::vector<std::string>{"cc_rx_ce_pkts", "cc_rx_cnp_pkts"}));

  Options d;
  EXPECT_FALSE(d.collector.rdma_netlink.per_qp);
  EXPECT_TRUE(d.collector.rdma_netlink.enable_optional_counters.empty());

  for (const char* bad :
       {"rdma_netlink:\n  per_qpp: true\n", "rdma_netlink:\n  per_qp: maybe\n",
        "rdma_netlink:\n  max_reply_bytes: 10\n", "rdma_netlink:\n  timeout_seconds: 0\n",
        "rdma_netlink:\n  timeout_seconds: 61\n",
        "rdma_netlink:\n  enable_optional_counters: cc_rx_ce_pkts\n",
        "rdma_netlink:\n  enable_optional_counters: ['']\n"}) {
    Options b;
    std::string e;
    EXPECT_FALSE(ApplyConfigYaml(bad, "t.yml", &b, &e)) << bad;
    EXPECT_NE(e.find("rdma_netlink."), std::string::npos) << e;
  }
}

}  // namespace
// ---- metric model 1.0: names and labels of everything this collector serves ----

// The recorded 6.12 replies plus mlx5-style optional counters and bound per-QP counters, so every
// family is present. Every name has the application prefix, no label is one Prometheus,
// Kubernetes or alert routing own, and `promtool check metrics` (when installed) is clean.
TEST(RdmaNetlinkMetricModel, NamesLabelsAndPromtool) {
  ReplyDir dir;
  dir.Put("stat_get_status-d0-p1", StatusReply(kMlx5Status));
  PutBoundCounters(dir);
  auto s = ScrapeDir(dir.path(), PerQp());
  ASSERT_TRUE(s.ok);
  auto families = s.sink.Take();
  std::set<std::string> names;
  for (const auto& f : families) names.insert(f.name);
  for (const char* want : {"nvmeof_rdma_netlink_optional_stat_enabled",
                           "nvmeof_rdma_netlink_qp_bound", "nvmeof_rdma_netlink_qp_stat_total",
                           "nvmeof_rdma_netlink_port_stat_total", "nvmeof_rdma_resources"}) {
    EXPECT_TRUE(names.count(want)) << want;
  }
  const std::set<std::string> forbidden = {"namespace", "job",       "instance", "pod",
                                           "node",      "container", "service",  "endpoint",
                                           "cluster",   "severity"};
  for (const auto& f : families) {
    EXPECT_EQ(f.name.rfind("nvmeof_", 0), 0u) << f.name;
    for (const char* type : {"counter", "gauge", "histogram", "summary"}) {
      const std::string t = std::string("_") + type;
      EXPECT_EQ(f.name.find(t + "_"), std::string::npos) << f.name << " names its type";
    }
    for (const auto& m : f.metric) {
      for (const auto& l : m.label)
        EXPECT_FALSE(forbidden.count(l.name)) << f.name << " " << l.name;
    }
  }
  std::ostringstream text;
  prometheus::TextSerializer().Serialize(text, families);
  if (std::system("command -v promtool >/dev/null 2>&1") != 0) GTEST_SKIP() << "no promtool";
  const fs::path prom = fs::path(dir.path()) / "scrape.prom";
  const fs::path log = fs::path(dir.path()) / "promtool.log";
  std::ofstream(prom) << text.str();
  const int rc = std::system(
      ("promtool check metrics <" + prom.string() + " >" + log.string() + " 2>&1").c_str());
  EXPECT_EQ(rc, 0) << ReadText(log.string());
  EXPECT_EQ(ReadText(log.string()), "") << "promtool warnings";
}

// The QP type and state label values are the names `rdma res show qp` prints (enum ib_qp_type and
// ib_qp_state); values the table does not know stay numbers.
TEST(RdmaNetlinkNames, QpTypeAndStateNamesAsRdmaToolPrintsThem) {
  const char* const types[] = {
      "smi",           "gsi", "rc",         "uc",      "ud",      "raw_ipv6",
      "raw_ethertype", "7",   "raw_packet", "xrc_ini", "xrc_tgt", "11"};
  for (std::uint8_t t = 0; t < std::size(types); ++t) EXPECT_EQ(rdmanl::QpTypeName(t), types[t]);
  EXPECT_EQ(rdmanl::QpTypeName(0xff), "driver");
  EXPECT_EQ(rdmanl::QpTypeName(0xfe), "254");
  EXPECT_EQ(rdmanl::QpStateName(3), "rts");
  EXPECT_EQ(rdmanl::QpStateName(6), "err");
  EXPECT_EQ(rdmanl::QpStateName(7), "7");
}

}  // namespace nvmeof
