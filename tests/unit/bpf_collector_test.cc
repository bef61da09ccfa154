// The bpf collector over a fake kernel side (BlockSource) and a fixture sysfs tree.
#include "collectors/bpf.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <tuple>

#include "collectors/registry.h"
#include "tests/unit/sink_query.h"

namespace nvmeof {
namespace {

namespace fs = std::filesystem;

class FakeSource : public BlockSource {
 public:
  BlockSnapshot snap;
  bool ok = true;
  std::vector<nvmeof_block_key>* forgotten = nullptr;  // where Forget's keys go, if set
  bool Read(BlockSnapshot* out) override {
    *out = snap;
    return ok;
  }
  void Forget(const std::vector<nvmeof_block_key>& keys) override {
    if (forgotten) forgotten->insert(forgotten->end(), keys.begin(), keys.end());
  }
};

const prometheus::ClientMetric* FindSeries(const MetricSink& sink, const std::string& family,
                                           std::map<std::string, std::string> labels) {
  auto found = Select(sink, family, labels);
  return found.empty() ? nullptr : found[0];
}

class BpfCollectorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("bpf_coll_" + std::to_string(getpid()));
    fs::remove_all(root_);
    Disk("7:0", "loop0");
    Disk("254:0", "vda");
    options_.paths.sysfs = root_.string();
    options_.paths.procfs = (root_ / "proc").string();
    fs::create_directories(root_ / "proc");
  }
  void TearDown() override { fs::remove_all(root_); }
  void Disk(const std::string& majmin, const std::string& name) {
    fs::create_directories(root_ / "dev/block" / majmin);
    std::ofstream(root_ / "dev/block" / majmin / "uevent")
        << "MAJOR=x\nMINOR=y\nDEVNAME=" << name << "\nDEVTYPE=disk\n";
  }

  // A loaded, attached plan (both hooks on tp_btf unless told otherwise).
  BlockLoad Loaded(std::unique_ptr<FakeSource> source, bool issue_hook = true) {
    BlockLoad load;
    load.availability = {true, "ok", ""};
    for (const auto& h : BlockHooks()) {
      HookPlan hp;
      hp.hook = &h;
      if (issue_hook || h.required) hp.chosen = h.variants[0];
      if (!hp.chosen) hp.rejected.emplace_back(Mechanism::kTpBtf, "load: EPERM");
      load.plan.hooks.push_back(hp);
    }
    load.source = std::move(source);
    return load;
  }

  static BlockSeries Series(std::uint32_t disk, std::uint32_t op, std::uint64_t requests) {
    BlockSeries s;
    s.disk = disk;
    s.op = op;
    s.hist.requests = requests;
    // queue: 2 x 1 us; device: 2 x 100 us; total: 2 x 101 us
    const unsigned long long ns[NVMEOF_STAGE_COUNT] = {1000, 100000, 101000};
    for (int st = 0; st < NVMEOF_STAGE_COUNT; ++st) {
      s.hist.count[st] = 2;
      s.hist.sum_ns[st] = 2 * ns[st];
      s.hist.buckets[st][nvmeof_hist_index(ns[st])] = 2;
    }
    return s;
  }

  fs::path root_;
  CollectorOptions options_;
};

constexpr std::uint32_t kLoop0 = 7u << 20;
constexpr std::uint32_t kVda = 254u << 20;

TEST_F(BpfCollectorTest, StagesPerDeviceAndOp) {
  auto src = std::make_unique<FakeSource>();
  src->snap.series = {Series(kLoop0, NVMEOF_OP_READ, 5), Series(kVda, NVMEOF_OP_WRITE, 7)};
  src->snap.counters[NVMEOF_CTR_INFLIGHT_EVICTED] = 3;
  src->snap.inflight_used = 4;
  src->snap.inflight_capacity = 16384;
  auto c = NewBpfCollectorFrom(options_, Loaded(std::move(src)));
  EXPECT_EQ(c->Name(), "bpf");
  MetricSink sink;
  ASSERT_TRUE(c->Collect(sink));

  auto* avail = FindSeries(sink, "nvmeof_exporter_bpf_available", {});
  ASSERT_TRUE(avail);
  EXPECT_EQ(avail->gauge.value, 1);
  EXPECT_EQ(Label(*avail, "reason"), "ok");
  auto* hook =
      FindSeries(sink, "nvmeof_exporter_bpf_hook_attached", {{"hook", "block_rq_complete"}});
  ASSERT_TRUE(hook);
  EXPECT_EQ(Label(*hook, "mechanism"), "tp_btf");
  EXPECT_EQ(Label(*hook, "required"), "true");
  EXPECT_EQ(hook->gauge.value, 1);

  auto* req = FindSeries(sink, "nvmeof_block_requests_total", {{"disk", "loop0"}, {"op", "read"}});
  ASSERT_TRUE(req);
  EXPECT_EQ(req->counter.value, 5);
  auto* wr = FindSeries(sink, "nvmeof_block_requests_total", {{"disk", "vda"}, {"op", "write"}});
  ASSERT_TRUE(wr);
  EXPECT_EQ(wr->counter.value, 7);

  auto* dev = FindSeries(sink, "nvmeof_block_stage_latency_seconds",
                         {{"disk", "loop0"}, {"op", "read"}, {"stage", "device"}});
  ASSERT_TRUE(dev);
  EXPECT_EQ(dev->histogram.sample_count, 2u);
  EXPECT_DOUBLE_EQ(dev->histogram.sample_sum, 200e-6);
  // Cumulative: 0 below 100 us, 2 from the bucket holding it on, +Inf last.
  const auto& b = dev->histogram.bucket;
  ASSERT_EQ(b.size(), 17u);  // the default 16 classic bounds + +Inf
  EXPECT_TRUE(std::isinf(b.back().upper_bound));
  for (const auto& bucket : b) {
    EXPECT_EQ(bucket.cumulative_count, bucket.upper_bound > 100e-6 ? 2u : 0u) << bucket.upper_bound;
  }
  // Native buckets beside it (bpf.protobuf_histograms: native): 100 us is native bucket -106.
  const auto* fam = sink.Find("nvmeof_block_stage_latency_seconds");
  size_t fi = 0, mi = 0;
  while (&sink.families()[fi] != fam) ++fi;
  while (&fam->metric[mi] != dev) ++mi;
  const NativeHistogram* native = sink.NativeOf(fi, mi);
  ASSERT_TRUE(native);
  EXPECT_FALSE(native->with_classic);
  ASSERT_EQ(native->positive_span.size(), 1u);
  EXPECT_EQ(native->positive_span[0].offset, -106);
  EXPECT_EQ(native->positive_delta, (std::vector<std::int64_t>{2}));
  EXPECT_TRUE(FindSeries(sink, "nvmeof_block_stage_latency_seconds", {{"stage", "queue"}}));
  auto* total = FindSeries(sink, "nvmeof_block_latency_seconds", {{"disk", "vda"}});
  ASSERT_TRUE(total);
  EXPECT_DOUBLE_EQ(total->histogram.sample_sum, 202e-6);

  auto* lost =
      FindSeries(sink, "nvmeof_exporter_bpf_lost_events_total", {{"reason", "inflight_evicted"}});
  ASSERT_TRUE(lost);
  EXPECT_EQ(lost->counter.value, 3);
  EXPECT_EQ(FindSeries(sink, "nvmeof_exporter_bpf_inflight_entries", {})->gauge.value, 4);
  // No BPF stats enabled: no run counters (they would be a frozen, made-up 0).
  EXPECT_FALSE(sink.Find("nvmeof_exporter_bpf_program_runs_total"));
}

TEST_F(BpfCollectorTest, ConfiguredBucketsAndDeviceFilter) {
  options_.bpf.buckets = {10e-6, 1e-3};
  options_.bpf.block_devices.include = std::regex("loop[0-9]+");
  auto src = std::make_unique<FakeSource>();
  src->snap.series = {Series(kLoop0, NVMEOF_OP_READ, 5), Series(kVda, NVMEOF_OP_WRITE, 7)};
  auto c = NewBpfCollectorFrom(options_, Loaded(std::move(src)));
  MetricSink sink;
  ASSERT_TRUE(c->Collect(sink));
  EXPECT_FALSE(FindSeries(sink, "nvmeof_block_requests_total", {{"disk", "vda"}}));
  auto* dev = FindSeries(sink, "nvmeof_block_stage_latency_seconds", {{"stage", "device"}});
  ASSERT_TRUE(dev);
  ASSERT_EQ(dev->histogram.bucket.size(), 3u);
  EXPECT_NEAR(dev->histogram.bucket[0].upper_bound / 10e-6, 1, 0.05);
  EXPECT_EQ(dev->histogram.bucket[0].cumulative_count, 0u);
  EXPECT_EQ(dev->histogram.bucket[1].cumulative_count, 2u);
  EXPECT_EQ(dev->histogram.bucket[2].cumulative_count, 2u);
}

// An NVMe-oF source that has loaded and timed nothing yet: enough for the block series to know
// that the host's NVMe-oF stages time the fabric namespaces' requests.
class IdleNvmeof : public NvmeofSource {
 public:
  bool Read(NvmeofSnapshot* out) override {
    *out = {};
    return true;
  }
  AttachPlan Plan() const override { return {}; }
  void Forget(const std::vector<std::uint64_t>&) override {}
};

// Which disks are timed (docs/fleet.md): with the NVMe-oF stages loaded, an NVMe-oF host
// namespace's disk (here nvme1c1n1 behind a tcp controller) serves no block series unless
// bpf.block_devices.include names it; a PCIe drive (a target's backing disk) and vda always do.
TEST_F(BpfCollectorTest, FabricNamespacesAreTimedByTheNvmeofStagesOnly) {
  Disk("259:0", "nvme0n1");
  Disk("259:1", "nvme1c1n1");
  for (auto [disk, ctrl, transport] :
       {std::tuple{"nvme0n1", "nvme0", "pcie"}, std::tuple{"nvme1c1n1", "nvme1", "tcp"}}) {
    fs::create_directories(root_ / "block" / disk);
    fs::create_directories(root_ / "class/nvme" / ctrl);
    std::ofstream(root_ / "class/nvme" / ctrl / "transport") << transport << "\n";
    fs::create_symlink(fs::path("../../class/nvme") / ctrl, root_ / "block" / disk / "device");
  }
  auto scrape = [&](bool nvmeof_loaded) {
    auto src = std::make_unique<FakeSource>();
    src->snap.series = {Series(kVda, NVMEOF_OP_READ, 1), Series(259u << 20, NVMEOF_OP_READ, 2),
                        Series(259u << 20 | 1, NVMEOF_OP_READ, 3)};
    src->snap.inflight_used = 0;
    NvmeofLoad nv;
    if (nvmeof_loaded) {
      nv.availability = {true, "ok", ""};
      nv.source = std::make_unique<IdleNvmeof>();
    }
    auto c = NewBpfCollectorFrom(options_, Loaded(std::move(src)), std::move(nv));
    MetricSink sink;
    EXPECT_TRUE(c->Collect(sink));
    EXPECT_EQ(sink.skipped(), 0u);
    std::set<std::string> disks;
    for (const auto* m : Select(sink, "nvmeof_block_requests_total"))
      disks.insert(Label(*m, "disk"));
    for (const char* f : {"nvmeof_block_latency_seconds", "nvmeof_block_stage_latency_seconds"}) {
      for (const auto* m : Select(sink, f)) EXPECT_TRUE(disks.count(Label(*m, "disk"))) << f;
    }
    return disks;
  };
  using Disks = std::set<std::string>;
  EXPECT_EQ(scrape(true), (Disks{"vda", "nvme0n1"}));
  EXPECT_EQ(scrape(false), (Disks{"vda", "nvme0n1", "nvme1c1n1"}));  // the block layer only
  options_.bpf.block_devices.include = std::regex("nvme.*|vda");
  EXPECT_EQ(scrape(true), (Disks{"vda", "nvme0n1", "nvme1c1n1"}));
  options_.bpf.block_devices.include = std::nullopt;
  options_.bpf.block_devices.exclude = std::regex("nvme0n1");
  EXPECT_EQ(scrape(true), (Disks{"vda"}));
}

// A native multipath path disk (nvme1c2n1) is hidden: no /sys/dev/block entry. It is named
// through /proc/diskstats, so its block series are neither a skipped series on every scrape of a
// multipath host nor lost where bpf.block_devices.include names it; a dev_t neither knows is
// skipped.
TEST_F(BpfCollectorTest, HiddenPathDisksAreNamedThroughDiskstats) {
  std::ofstream(root_ / "proc/diskstats")
      << "   7       0 loop0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n"
         " 259       5 nvme1c2n1 5 0 40 1 0 0 0 0 0 2 1 0 0 0 0 0 0\n";
  fs::create_directories(root_ / "block/nvme1c2n1");
  fs::create_directories(root_ / "class/nvme/nvme2");
  std::ofstream(root_ / "class/nvme/nvme2/transport") << "tcp\n";
  fs::create_symlink("../../class/nvme/nvme2", root_ / "block/nvme1c2n1/device");
  auto scrape = [&]() {
    auto src = std::make_unique<FakeSource>();
    src->snap.series = {Series(kVda, NVMEOF_OP_READ, 1), Series(259u << 20 | 5, NVMEOF_OP_READ, 5),
                        Series(259u << 20 | 6, NVMEOF_OP_READ, 6)};  // neither names it
    src->snap.inflight_used = 0;
    NvmeofLoad nv;
    nv.availability = {true, "ok", ""};
    nv.source = std::make_unique<IdleNvmeof>();
    auto c = NewBpfCollectorFrom(options_, Loaded(std::move(src)), std::move(nv));
    MetricSink sink;
    EXPECT_TRUE(c->Collect(sink));
    return sink;
  };
  MetricSink left_out = scrape();  // a fabric namespace's path: the NVMe-oF series time it
  EXPECT_EQ(Count(left_out, "nvmeof_block_requests_total"), 1);  // vda
  EXPECT_EQ(left_out.skipped(), 1u);                             // 259:6
  options_.bpf.block_devices.include = std::regex("nvme.*|vda");
  MetricSink named = scrape();
  EXPECT_EQ(Value(named, "nvmeof_block_requests_total", {{"disk", "nvme1c2n1"}}), 5);
  EXPECT_EQ(named.skipped(), 1u);
}

// Which host disks the block programs spare (NVMEOF_CTRL_UNTIMED_BLOCK, set by the NVMe-oF
// source's watcher) is the rule the block series follow: an NVMe-oF namespace's disk, unless
// bpf.block_devices.include names it; never a PCIe drive's, nor a disk that is not NVMe.
TEST_F(BpfCollectorTest, BlockSeriesLeftOutOnlyForFabricNamespaces) {
  for (auto [disk, ctrl, transport] :
       {std::tuple{"nvme0n1", "nvme0", "pcie"}, std::tuple{"nvme1c1n1", "nvme1", "tcp"},
        std::tuple{"nvme2n1", "nvme2", "rdma"}}) {
    fs::create_directories(root_ / "block" / disk);
    fs::create_directories(root_ / "class/nvme" / ctrl);
    std::ofstream(root_ / "class/nvme" / ctrl / "transport") << transport << "\n";
    fs::create_symlink(fs::path("../../class/nvme") / ctrl, root_ / "block" / disk / "device");
  }
  NameFilter filter;
  auto left_out = [&](const std::string& disk) {
    return BlockSeriesLeftOut(root_.string(), filter, disk);
  };
  EXPECT_TRUE(left_out("nvme1c1n1"));
  EXPECT_TRUE(left_out("nvme2n1"));
  EXPECT_FALSE(left_out("nvme0n1"));
  EXPECT_FALSE(left_out("vda"));
  EXPECT_FALSE(left_out("nvme9n1"));  // gone
  EXPECT_FALSE(left_out("nqn.2024-01.io.example:sub"));
  filter.include = std::regex("nvme1c1n1");
  EXPECT_FALSE(left_out("nvme1c1n1"));
  EXPECT_TRUE(left_out("nvme2n1"));
}

// A multipath head's parent is its subsystem, not a controller: it is an NVMe-oF namespace when
// the subsystem has a fabric controller (the layout of Debian's 6.12: nvme-subsys0 holds links
// to its controllers and a directory per head).
TEST_F(BpfCollectorTest, BlockSeriesLeftOutJudgesAHeadByItsSubsystem) {
  for (auto [n, transport] : {std::pair{"3", "tcp"}, std::pair{"4", "pcie"}}) {
    const std::string subsys = std::string("nvme-subsys") + n, ctrl = std::string("nvme") + n,
                      head = ctrl + "n1";
    const fs::path dev = root_ / "devices/virtual/nvme-subsystem" / subsys;
    fs::create_directories(dev / head);
    fs::create_directories(root_ / "devices/virtual/nvme-fabrics/ctl" / ctrl);
    std::ofstream(root_ / "devices/virtual/nvme-fabrics/ctl" / ctrl / "transport")
        << transport << "\n";
    fs::create_symlink(fs::path("../../nvme-fabrics/ctl") / ctrl, dev / ctrl);
    fs::create_directories(root_ / "class/nvme-subsystem");
    fs::create_symlink(fs::path("../../devices/virtual/nvme-subsystem") / subsys,
                       root_ / "class/nvme-subsystem" / subsys);
    fs::create_directories(root_ / "block" / head);
    fs::create_symlink(fs::path("../../devices/virtual/nvme-subsystem") / subsys,
                       root_ / "block" / head / "device");
  }
  NameFilter filter;
  EXPECT_TRUE(BlockSeriesLeftOut(root_.string(), filter, "nvme3n1"));
  EXPECT_FALSE(BlockSeriesLeftOut(root_.string(), filter, "nvme4n1"));
  filter.include = std::regex("nvme3n1");
  EXPECT_FALSE(BlockSeriesLeftOut(root_.string(), filter, "nvme3n1"));
}

// 5.15+ keys a disk by its diskseq: named through <sysfs>/class/block/*/diskseq, and a key no
// disk holds is a disk that is gone for good: forgotten (its map entries freed), not a skipped
// series. Before 5.15 (dev_t keys) a missing disk is skipped, and nothing is forgotten.
TEST_F(BpfCollectorTest, DiskseqKeysNameDisksAndForgetGoneOnes) {
  for (auto [name, seq] : {std::pair{"nvme0n1", "12"}, std::pair{"vdb", "3"}}) {
    fs::create_directories(root_ / "class/block" / name);
    std::ofstream(root_ / "class/block" / name / "diskseq") << seq << "\n";
  }
  fs::create_directories(root_ / "class/block/vdb1");  // a partition: no diskseq
  auto scrape = [&](bool by_seq, std::vector<nvmeof_block_key>* forgotten) {
    auto src = std::make_unique<FakeSource>();
    src->snap.disk_is_seq = by_seq;
    src->snap.series = {Series(12, NVMEOF_OP_READ, 5), Series(3, NVMEOF_OP_WRITE, 7),
                        Series(11, NVMEOF_OP_READ, 9), Series(0, NVMEOF_OP_OTHER, 1)};
    src->snap.inflight_used = 0;
    src->forgotten = forgotten;
    auto c = NewBpfCollectorFrom(options_, Loaded(std::move(src)));
    MetricSink sink;
    EXPECT_TRUE(c->Collect(sink));
    return sink;
  };
  std::vector<nvmeof_block_key> forgotten;
  MetricSink seq = scrape(true, &forgotten);
  EXPECT_EQ(Value(seq, "nvmeof_block_requests_total", {{"disk", "nvme0n1"}}), 5);
  EXPECT_EQ(Value(seq, "nvmeof_block_requests_total", {{"disk", "vdb"}, {"op", "write"}}), 7);
  EXPECT_EQ(Count(seq, "nvmeof_block_requests_total"), 2);
  ASSERT_EQ(forgotten.size(), 1u);  // diskseq 11: made and removed since the last scrape
  EXPECT_EQ(forgotten[0].disk, 11u);
  EXPECT_EQ(forgotten[0].op, static_cast<unsigned>(NVMEOF_OP_READ));
  EXPECT_EQ(seq.skipped(), 1u);  // key 0: a request without a disk

  forgotten.clear();
  MetricSink devt = scrape(false, &forgotten);  // 12, 3 and 11 are no disk's dev_t here
  EXPECT_EQ(Count(devt, "nvmeof_block_requests_total"), 0);
  EXPECT_TRUE(forgotten.empty());
  EXPECT_EQ(devt.skipped(), 4u);
}

TEST_F(BpfCollectorTest, UnknownDeviceIsSkippedNotInvented) {
  auto src = std::make_unique<FakeSource>();
  src->snap.series = {Series(0, NVMEOF_OP_OTHER, 1), Series(8u << 20 | 16, NVMEOF_OP_READ, 1)};
  src->snap.inflight_used = 0;
  auto c = NewBpfCollectorFrom(options_, Loaded(std::move(src)));
  MetricSink sink;
  ASSERT_TRUE(c->Collect(sink));
  EXPECT_FALSE(sink.Find("nvmeof_block_requests_total"));
  EXPECT_EQ(sink.skipped(), 2u);
}

// Requests end at block_io_done: a blk-mq disk whose queue/iostats went off is no longer
// reported there, so its frozen block series are skipped and the disk is named. Where requests
// end at block_rq_complete, iostats does not matter.
TEST_F(BpfCollectorTest, DiskWithIostatsOffIsSkippedAndNamed) {
  fs::create_directories(root_ / "block/loop0/mq/0");
  fs::create_directories(root_ / "block/loop0/queue");
  std::ofstream(root_ / "block/loop0/queue/iostats") << "0\n";
  fs::create_directories(root_ / "block/vda/mq/0");
  fs::create_directories(root_ / "block/vda/queue");
  std::ofstream(root_ / "block/vda/queue/iostats") << "1\n";
  for (bool at_io_done : {true, false}) {
    SCOPED_TRACE(at_io_done ? "block_io_done" : "block_rq_complete");
    auto src = std::make_unique<FakeSource>();
    src->snap.series = {Series(kLoop0, NVMEOF_OP_READ, 5), Series(kVda, NVMEOF_OP_READ, 7)};
    src->snap.inflight_used = 0;
    BlockLoad load = Loaded(std::move(src));
    for (auto& hp : load.plan.hooks) {
      if (hp.hook->name != kHookBlockComplete) continue;
      ASSERT_TRUE(hp.chosen->accounted);  // the table's first variant
      if (!at_io_done) hp.chosen = hp.hook->variants[2];
      ASSERT_EQ(hp.chosen->accounted, at_io_done);
    }
    auto c = NewBpfCollectorFrom(options_, std::move(load));
    MetricSink sink;
    ASSERT_TRUE(c->Collect(sink));
    EXPECT_EQ(Count(sink, "nvmeof_block_requests_total", {{"disk", "vda"}}), 1);
    EXPECT_EQ(Count(sink, "nvmeof_block_requests_total", {{"disk", "loop0"}}), at_io_done ? 0 : 1);
    EXPECT_EQ(Count(sink, "nvmeof_exporter_bpf_disk_iostats_off", {{"disk", "loop0"}}),
              at_io_done ? 1 : 0);
    EXPECT_EQ(Count(sink, "nvmeof_exporter_bpf_disk_iostats_off"), at_io_done ? 1 : 0);
    EXPECT_EQ(sink.skipped(), at_io_done ? 1u : 0u);
  }
}

TEST_F(BpfCollectorTest, MissingIssueHookMergesStages) {
  auto src = std::make_unique<FakeSource>();
  src->snap.series = {Series(kLoop0, NVMEOF_OP_READ, 5)};
  auto c = NewBpfCollectorFrom(options_, Loaded(std::move(src), /*issue_hook=*/false));
  MetricSink sink;
  ASSERT_TRUE(c->Collect(sink));
  EXPECT_FALSE(sink.Find("nvmeof_block_stage_latency_seconds"));
  EXPECT_TRUE(FindSeries(sink, "nvmeof_block_latency_seconds", {{"disk", "loop0"}}));
  auto* issue = FindSeries(sink, "nvmeof_exporter_bpf_hook_attached", {{"hook", "block_rq_issue"}});
  ASSERT_TRUE(issue);
  EXPECT_EQ(Label(*issue, "mechanism"), "none");
  EXPECT_EQ(issue->gauge.value, 0);
}

TEST_F(BpfCollectorTest, ProgramStatsWhenEnabled) {
  auto src = std::make_unique<FakeSource>();
  src->snap.program_run_stats = true;
  src->snap.programs = {{"block_rq_complete", Mechanism::kRawTp, {1000, 250000, 2}}};
  auto c = NewBpfCollectorFrom(options_, Loaded(std::move(src)));
  MetricSink sink;
  ASSERT_TRUE(c->Collect(sink));
  auto* runs = FindSeries(sink, "nvmeof_exporter_bpf_program_runs_total",
                          {{"hook", "block_rq_complete"}, {"mechanism", "raw_tp"}});
  ASSERT_TRUE(runs);
  EXPECT_EQ(runs->counter.value, 1000);
  auto* secs = FindSeries(sink, "nvmeof_exporter_bpf_program_run_seconds_total", {});
  ASSERT_TRUE(secs);
  EXPECT_DOUBLE_EQ(secs->counter.value, 250e-6);
  EXPECT_EQ(FindSeries(sink, "nvmeof_exporter_bpf_lost_events_total", {{"reason", "recursion"}})
                ->counter.value,
            2);
}

// Before 5.12 the kernel's bpf_prog_info has no recursion_misses: the series is skipped, not 0.
TEST_F(BpfCollectorTest, RecursionMissesUnknownIsNoSeries) {
  auto src = std::make_unique<FakeSource>();
  src->snap.programs = {{"block_rq_complete", Mechanism::kRawTp, {1000, 0, 0, false}}};
  auto c = NewBpfCollectorFrom(options_, Loaded(std::move(src)));
  MetricSink sink;
  ASSERT_TRUE(c->Collect(sink));
  EXPECT_FALSE(
      FindSeries(sink, "nvmeof_exporter_bpf_lost_events_total", {{"reason", "recursion"}}));
  EXPECT_TRUE(FindSeries(sink, "nvmeof_exporter_bpf_lost_events_total", {{"reason", "map_full"}}));
  EXPECT_GE(sink.skipped(), 1u);
}

TEST_F(BpfCollectorTest, UnavailableSaysWhyAndKeepsGoing) {
  BlockLoad load;
  load.availability = {false, "no_capability", "needs CAP_BPF and CAP_PERFMON"};
  auto c = NewBpfCollectorFrom(options_, std::move(load));
  MetricSink sink;
  EXPECT_TRUE(c->Collect(sink));  // reported by the metric, not as a failed scrape
  auto* avail = FindSeries(sink, "nvmeof_exporter_bpf_available", {});
  ASSERT_TRUE(avail);
  EXPECT_EQ(avail->gauge.value, 0);
  EXPECT_EQ(Label(*avail, "reason"), "no_capability");
  EXPECT_FALSE(sink.Find("nvmeof_block_requests_total"));
}

TEST_F(BpfCollectorTest, ReadFailureFailsTheScrape) {
  auto src = std::make_unique<FakeSource>();
  src->ok = false;
  auto c = NewBpfCollectorFrom(options_, Loaded(std::move(src)));
  MetricSink sink;
  EXPECT_FALSE(c->Collect(sink));
}

// Without root (or with a locked-down kernel) the real constructor must not throw or exit.
TEST_F(BpfCollectorTest, RealLoadWithoutCapabilitiesReportsWhy) {
  fs::create_directories(root_ / "proc/self");
  std::ofstream(root_ / "proc/self/status") << "CapEff:\t0000000000000000\n";
  options_.paths.procfs = (root_ / "proc").string();
  auto c = NewBpfCollector(options_);
  MetricSink sink;
  EXPECT_TRUE(c->Collect(sink));
#ifdef NVMEOF_HAVE_BPF
  const std::string reason = "no_capability";
#else
  const std::string reason = "disabled_at_build";
#endif
  EXPECT_EQ(Label(*FindSeries(sink, "nvmeof_exporter_bpf_available", {}), "reason"), reason);
  std::ostringstream probe;
  EXPECT_EQ(RunProbe(options_, probe), 1);
  EXPECT_NE(probe.str().find("unavailable (" + reason + ")"), std::string::npos) << probe.str();
}

}  // namespace
}  // namespace nvmeof
