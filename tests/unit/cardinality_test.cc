// The series budget of issue 12 on the node shapes of docs/histograms.md "Series per node": what
// the bpf collector serves for an NVMe/RDMA host with 4 controllers x 8 namespaces and a target
// with 16 subsystems x 2 ports, reads and writes, every stage, fed the series keys the kernel
// programs make at each bpf.stage_detail. Counts series, not time: deterministic.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "collectors/bpf.h"
#include "collectors/registry.h"
#include "loader/bpf_options.h"
#include "loader/nvmeof.h"
#include "tests/unit/fake_nvmeof.h"
#include "tests/unit/scratch_tree.h"

namespace nvmeof {
namespace {

struct Series {
  std::size_t histograms = 0;
  std::size_t text = 0;    // classic: buckets + +Inf + _sum + _count per histogram; 1 per counter
  std::size_t native = 0;  // 1 per histogram or counter
};

Series Count(const MetricSink& sink) {
  Series n;
  for (const auto& f : sink.families()) {
    if (f.name.rfind("nvmeof_exporter_", 0) == 0) continue;  // self-metrics: a fixed few
    for (const auto& m : f.metric) {
      if (f.type == prometheus::MetricType::Histogram) {
        ++n.histograms;
        n.text += m.histogram.bucket.size() + 2;  // the bucket list ends with +Inf
        n.native += 1;
      } else {
        n.text += 1;
        n.native += 1;
      }
    }
  }
  return n;
}

// Bytes of nv_hists and nv_paths the kernel holds for a snapshot at `cpus` possible CPUs: one
// nv_paths entry (7 histogram slots) per stage key and set of points (here one chain per key:
// every command of a key passes the same points; an RDMA host whose send completions are polled
// sometimes after the response holds two), and one nv_hists entry per end-to-end key where the
// end to end is not kept in the nv_paths entry (total_in_paths: bpf/nvmeof_maps.h).
std::uint64_t HistMapBytes(const NvmeofSnapshot& snap, int cpus, bool total_in_paths) {
  std::set<std::string> totals, paths;
  for (const auto& s : snap.series) {
    nvmeof_series k = s.key;
    if (k.kind == NVMEOF_KIND_TOTAL && !total_in_paths) {
      totals.emplace(reinterpret_cast<const char*>(&k), sizeof(k));
    } else if (k.kind == NVMEOF_KIND_STAGE) {
      k.from = k.to = 0;
      paths.emplace(reinterpret_cast<const char*>(&k), sizeof(k));
    }
  }
  return totals.size() * (sizeof(nvmeof_series) + sizeof(nvmeof_hist) * std::uint64_t(cpus)) +
         paths.size() * (sizeof(nvmeof_series) + sizeof(nvmeof_path_hists) * std::uint64_t(cpus));
}

constexpr std::uint64_t kDiskBase = 0xffff888001000000;
constexpr std::uint64_t kSubsysBase = 0xffff888002000000;

class CardinalityTest : public ScratchTree {
 protected:
  void SetUp() override {
    ScratchTree::SetUp();
    options_.paths.sysfs = root_;
    options_.paths.configfs = root_ + "/kernel/config";
  }

  void Add(FakeNvmeof& src, nvmeof_series key, std::uint64_t count) {
    NvmeofSeries s;
    s.key = key;
    s.hist.count = count;
    s.hist.sum_ns = count * 50000;
    // A realistic spread: 31 populated fine buckets (the VM scrape's median).
    for (int b = 0; b < 31; ++b) s.hist.buckets[60 + b] = count / 31 + (b < int(count % 31));
    src.snap.series.push_back(s);
  }

  // The series of one (namespace or subsystem port, op): its command count (8,000 commands)
  // keyed `commands`, and 1,000 commands from the first of `points` to the last (the end to end)
  // and between each two neighbours (the stages), keyed `stage`: the key at the stage detail,
  // where the end to end is kept too when it is in the nv_paths entry. At controller detail the
  // kernel has one stage key per controller: a host's 8 namespaces add to it 8 times over.
  void AddCommands(FakeNvmeof& src, nvmeof_series commands, const nvmeof_series& stage,
                   const std::vector<std::uint8_t>& points) {
    commands.kind = NVMEOF_KIND_COMMANDS;
    Add(src, commands, 8000);
    nvmeof_series k = NvmeofTotalInPaths(options_.bpf) ? stage : commands;
    k.kind = NVMEOF_KIND_TOTAL;
    k.from = points.front();
    k.to = points.back();
    Add(src, k, 1000);
    k = stage;
    k.kind = NVMEOF_KIND_STAGE;
    for (std::size_t p = 0; p + 1 < points.size(); ++p) {
      k.from = points[p];
      k.to = points[p + 1];
      Add(src, k, 1000);
    }
  }

  // The host: RDMA path disks nvme0c<ctrl>n<ns>, 6 host stages per (namespace, op).
  void Host(FakeNvmeof& src, std::uint8_t detail) {
    const std::vector<std::uint8_t> points = {
        NVMEOF_HP_ALLOC,    NVMEOF_HP_SETUP,    NVMEOF_HP_POSTED, NVMEOF_HP_SENT,
        NVMEOF_HP_RESPONSE, NVMEOF_HP_COMPLETE, NVMEOF_HP_END};
    for (int c = 0; c < 4; ++c) {
      Write("class/nvme/nvme" + std::to_string(c) + "/transport", "rdma\n");
      for (int n = 1; n <= 8; ++n) {
        const std::string disk = "nvme0c" + std::to_string(c) + "n" + std::to_string(n);
        std::filesystem::create_directories(root_ + "/block/" + disk);
        std::filesystem::create_symlink("../../class/nvme/nvme" + std::to_string(c),
                                        root_ + "/block/" + disk + "/device");
        const std::uint64_t id = kDiskBase + std::uint64_t(c) * 64 + std::uint64_t(n);
        src.snap.names.emplace_back(id, disk);
        for (std::uint8_t op : {NVMEOF_OP_READ, NVMEOF_OP_WRITE}) {
          nvmeof_series k{};
          k.id = id;
          k.role = NVMEOF_ROLE_HOST;
          k.op = op;
          nvmeof_series stage = k;
          if (detail == NVMEOF_DETAIL_CONTROLLER) {
            stage.id = static_cast<std::uint64_t>(c);
            stage.detail = NVMEOF_DETAIL_CONTROLLER;
          }
          AddCommands(src, k, stage, points);
        }
      }
    }
  }

  // The target: 16 subsystems x 2 ports over RDMA; reads: receive, submit, storage, response;
  // writes add data_transfer.
  void Target(FakeNvmeof& src, std::uint8_t detail) {
    for (int s = 0; s < 16; ++s) {
      const std::string nqn = "nqn.2024-01.io.example:sub" + std::to_string(s);
      Write("kernel/config/nvmet/subsystems/" + nqn + "/attr_serial", "1\n");
      const std::uint64_t id = kSubsysBase + 0x400 * std::uint64_t(s);  // kmalloc-1k objects
      src.snap.names.emplace_back(nvmeof_name_key(id, NVMEOF_ROLE_TARGET), nqn);
      for (std::uint16_t port : {1, 2}) {
        for (std::uint8_t op : {NVMEOF_OP_READ, NVMEOF_OP_WRITE}) {
          nvmeof_series k{};
          k.id = id;
          k.role = NVMEOF_ROLE_TARGET;
          k.trtype = NVMEOF_TRTYPE_RDMA;
          k.port = port;
          k.op = op;
          nvmeof_series stage = k;
          if (detail == NVMEOF_DETAIL_CONTROLLER) {
            stage.port = 0;
            stage.detail = NVMEOF_DETAIL_CONTROLLER;
          }
          std::vector<std::uint8_t> pts = {NVMEOF_TP_RECV, NVMEOF_TP_INIT};
          if (op == NVMEOF_OP_WRITE) pts.push_back(NVMEOF_TP_DATA);
          pts.insert(pts.end(), {NVMEOF_TP_EXEC, NVMEOF_TP_DONE, NVMEOF_TP_SENT});
          AddCommands(src, k, stage, pts);
        }
      }
    }
  }

  Series Collect(std::unique_ptr<FakeNvmeof> src) {
    return Count(CollectNvmeof(options_, std::move(src)));
  }

  CollectorOptions options_;
};

// Issue 12's budget: at most 1,000 series to a native-histogram scraper and 10,000 to a text
// scraper per node, at the default configuration.
constexpr std::size_t kNativeBudget = 1000;
constexpr std::size_t kTextBudget = 10000;

// Issue 12's memory budget: BPF map memory for the host at most 16 MiB at 64 CPUs.
constexpr std::uint64_t kMemoryBudget = 16ULL << 20;

// Fails where `n` is over either series budget; prints its counts, named `what`.
void ExpectWithinSeriesBudget(const Series& n, const char* what) {
  EXPECT_LE(n.native, kNativeBudget) << what;
  EXPECT_LE(n.text, kTextBudget) << what;
  std::printf("%s: %zu histograms, %zu native series, %zu text series\n", what, n.histograms,
              n.native, n.text);
}

// The bytes of nv_hists and nv_paths at 64 CPUs, the end to end in the nv_paths entries (the
// default); prints them, named `what`.
std::uint64_t MapBytesAt64Cpus(const NvmeofSnapshot& snap, const char* what) {
  const std::uint64_t bytes = HistMapBytes(snap, 64, true);
  std::printf("%s: nv_hists + nv_paths %.1f MiB at 64 CPUs\n", what, double(bytes) / (1 << 20));
  return bytes;
}

TEST_F(CardinalityTest, HostWithinBudgetAtDefaultDetail) {
  ASSERT_EQ(options_.bpf.stage_detail, "controller");  // the default
  auto src = std::make_unique<FakeNvmeof>();
  Host(*src, NVMEOF_DETAIL_CONTROLLER);
  ASSERT_TRUE(NvmeofTotalInPaths(options_.bpf));  // the end to end per controller too
  const std::uint64_t bytes = MapBytesAt64Cpus(src->snap, "host, controller detail");
  EXPECT_EQ(bytes, 8u * (24 + 7 * 1760 * 64));
  EXPECT_LE(bytes, kMemoryBudget);
  Series n = Collect(std::move(src));
  RecordProperty("histograms", std::to_string(n.histograms));
  RecordProperty("text", std::to_string(n.text));
  ASSERT_EQ(options_.bpf.command_detail, "controller");  // the default
  EXPECT_EQ(n.histograms, 4u * 2 * 6 + 4 * 2);           // stages and end to end per controller
  EXPECT_EQ(n.native, n.histograms + 64);  // + nvmeof_commands_total per namespace and op
  ExpectWithinSeriesBudget(n, "host, controller detail");
}

// Stage detail per namespace still fits the series budget, but not the memory budget: why
// controller detail is the default.
TEST_F(CardinalityTest, NamespaceDetailFitsTheSeriesButNotTheMemoryBudget) {
  options_.bpf.stage_detail = "namespace";
  options_.bpf.command_detail = "namespace";
  auto src = std::make_unique<FakeNvmeof>();
  Host(*src, NVMEOF_DETAIL_NAMESPACE);
  ASSERT_TRUE(NvmeofTotalInPaths(options_.bpf));
  const std::uint64_t bytes = MapBytesAt64Cpus(src->snap, "host, namespace detail");
  EXPECT_EQ(bytes, 64u * (24 + 7 * 1760 * 64));
  EXPECT_GT(bytes, kMemoryBudget);
  Series n = Collect(std::move(src));
  EXPECT_EQ(n.histograms, 32u * 2 * 7);
  ExpectWithinSeriesBudget(n, "host, namespace detail");
}

TEST_F(CardinalityTest, TargetAndHostAndTargetWithinBudgetAtDefaultDetail) {
  auto target = std::make_unique<FakeNvmeof>();
  Target(*target, NVMEOF_DETAIL_CONTROLLER);
  Series t = Collect(std::move(target));
  EXPECT_EQ(t.histograms, 16u * (4 + 5) + 16 * 2);  // end to end per subsystem, not port
  ExpectWithinSeriesBudget(t, "target, controller detail");

  auto both = std::make_unique<FakeNvmeof>();
  Host(*both, NVMEOF_DETAIL_CONTROLLER);
  Target(*both, NVMEOF_DETAIL_CONTROLLER);
  // Never map_full: the default ceiling at 64 CPUs holds both roles' nv_paths entries (the
  // stages and the end to end of a controller's or a subsystem's commands per op).
  std::set<std::string> entries;
  for (const auto& s : both->snap.series) {
    nvmeof_series k = s.key;
    if (k.kind != NVMEOF_KIND_STAGE) continue;
    k.from = k.to = 0;
    entries.emplace(reinterpret_cast<const char*>(&k), sizeof(k));
  }
  EXPECT_EQ(entries.size(), 4u * 2 + 16 * 2);
  EXPECT_LT(entries.size(), HistMapEntries(options_.bpf.map_memory_max, sizeof(nvmeof_series),
                                           sizeof(nvmeof_path_hists), 64, 16, NVMEOF_SERIES_MAX));
  EXPECT_EQ(HistMapBytes(both->snap, 64, true), 40u * (24 + 7 * 1760 * 64));
  ExpectWithinSeriesBudget(Collect(std::move(both)), "host and target, controller detail");
}

TEST_F(CardinalityTest, NodeDetailKeepsOneStageSeriesPerTransport) {
  options_.bpf.stage_detail = "node";
  auto src = std::make_unique<FakeNvmeof>();
  Host(*src, NVMEOF_DETAIL_CONTROLLER);  // node detail is controller detail in the kernel
  Series n = Collect(std::move(src));
  EXPECT_EQ(n.histograms, 2u * 6 + 4 * 2);
}

}  // namespace
}  // namespace nvmeof
