// NVMe-oF stages: span names, and the bpf collector's NVMe-oF series over a fake kernel side
// (NvmeofSource) and a fixture sysfs tree.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <memory>
#include <set>

#include "collectors/bpf.h"
#include "collectors/registry.h"
#include "loader/nvmeof.h"
#include "tests/unit/fake_nvmeof.h"
#include "tests/unit/scratch_tree.h"
#include "tests/unit/sink_query.h"

namespace nvmeof {
namespace {

constexpr std::uint8_t kHost = NVMEOF_ROLE_HOST;
constexpr std::uint8_t kTarget = NVMEOF_ROLE_TARGET;

// nv_paths (one entry per set of points passed) back to (from, to) stage series: two RDMA
// commands, one with the send completion and one without, share setup -> posted.
TEST(BpfNvmeofPaths, PointSetsBecomeSpansAndSharedSpansAreSummed) {
  nvmeof_series with{}, without{};
  with.id = without.id = 7;
  with.points = (1 << NVMEOF_HP_SETUP) | (1 << NVMEOF_HP_POSTED) | (1 << NVMEOF_HP_SENT) |
                (1 << NVMEOF_HP_RESPONSE);
  without.points = (1 << NVMEOF_HP_SETUP) | (1 << NVMEOF_HP_POSTED) | (1 << NVMEOF_HP_RESPONSE);
  std::vector<std::pair<nvmeof_series, nvmeof_path_hists>> entries(2);
  entries[0].first = with;
  entries[1].first = without;
  for (auto& [key, h] : entries) {
    for (int i = 1; i < NVMEOF_POINTS; ++i) {
      if (!(key.points & (1U << i))) continue;
      h.stage[i - 1].count = 1;
      h.stage[i - 1].sum_ns = 100 * static_cast<unsigned>(i);
      h.stage[i - 1].buckets[i] = 1;
    }
  }
  std::map<std::pair<int, int>, nvmeof_hist> got;
  for (const auto& s : PathSpans(entries)) {
    EXPECT_EQ(s.key.points, 0);
    EXPECT_EQ(s.key.id, 7u);
    got[{s.key.from, s.key.to}] = s.hist;
  }
  ASSERT_EQ(got.size(), 4u);  // setup-posted, posted-sent, sent-response, posted-response
  EXPECT_EQ(got[std::make_pair(int(NVMEOF_HP_SETUP), int(NVMEOF_HP_POSTED))].count, 2u);
  EXPECT_EQ(got[std::make_pair(int(NVMEOF_HP_SETUP), int(NVMEOF_HP_POSTED))].sum_ns, 400u);
  EXPECT_EQ(
      got[std::make_pair(int(NVMEOF_HP_SETUP), int(NVMEOF_HP_POSTED))].buckets[NVMEOF_HP_POSTED],
      2u);
  EXPECT_EQ(got[std::make_pair(int(NVMEOF_HP_POSTED), int(NVMEOF_HP_SENT))].count, 1u);
  EXPECT_EQ(got[std::make_pair(int(NVMEOF_HP_SENT), int(NVMEOF_HP_RESPONSE))].count, 1u);
  EXPECT_EQ(got[std::make_pair(int(NVMEOF_HP_POSTED), int(NVMEOF_HP_RESPONSE))].count, 1u);
  EXPECT_EQ(got[std::make_pair(int(NVMEOF_HP_POSTED), int(NVMEOF_HP_RESPONSE))].sum_ns, 400u);
}

// An entry's end to end (total_in_paths) becomes the series of kind TOTAL from its first point
// to its last, with the entry's identity; entries with the same span are summed, and an empty
// one (the end to end kept in nv_hists) makes none.
TEST(BpfNvmeofPaths, EntryTotalsBecomeEndToEndSeries) {
  std::vector<std::pair<nvmeof_series, nvmeof_path_hists>> entries(3);
  for (auto& [key, h] : entries) {
    key.id = 3;
    key.detail = NVMEOF_DETAIL_CONTROLLER;
    key.points = (1 << NVMEOF_HP_ALLOC) | (1 << NVMEOF_HP_SETUP) | (1 << NVMEOF_HP_COMPLETE) |
                 (1 << NVMEOF_HP_END);
    h.total.count = 2;
    h.total.sum_ns = 500;
    h.total.buckets[9] = 2;
  }
  entries[1].first.points |= 1 << NVMEOF_HP_RESPONSE;  // another set, the same first and last
  entries[2].second.total = {};                        // kept in nv_hists
  entries[2].first.points &= ~(1U << NVMEOF_HP_ALLOC);
  std::vector<NvmeofSeries> totals;
  for (const auto& s : PathSpans(entries)) {
    if (s.key.kind == NVMEOF_KIND_TOTAL) totals.push_back(s);
  }
  ASSERT_EQ(totals.size(), 1u);
  EXPECT_EQ(totals[0].key.id, 3u);
  EXPECT_EQ(totals[0].key.detail, NVMEOF_DETAIL_CONTROLLER);
  EXPECT_EQ(totals[0].key.points, 0);
  EXPECT_EQ(totals[0].key.from, NVMEOF_HP_ALLOC);
  EXPECT_EQ(totals[0].key.to, NVMEOF_HP_END);
  EXPECT_EQ(totals[0].hist.count, 4u);
  EXPECT_EQ(totals[0].hist.sum_ns, 1000u);
  EXPECT_EQ(totals[0].hist.buckets[9], 4u);
}

TEST(NvmeofStageName, ConsecutivePointsNameOneStage) {
  EXPECT_EQ(NvmeofStageName(kHost, "rdma", NVMEOF_HP_ALLOC, NVMEOF_HP_SETUP), "block_submit");
  EXPECT_EQ(NvmeofStageName(kHost, "rdma", NVMEOF_HP_SETUP, NVMEOF_HP_POSTED), "driver_submit");
  EXPECT_EQ(NvmeofStageName(kHost, "rdma", NVMEOF_HP_POSTED, NVMEOF_HP_SENT), "command_send");
  EXPECT_EQ(NvmeofStageName(kHost, "rdma", NVMEOF_HP_SENT, NVMEOF_HP_RESPONSE),
            "target_and_response");
  EXPECT_EQ(NvmeofStageName(kHost, "tcp", NVMEOF_HP_RESPONSE, NVMEOF_HP_COMPLETE), "host_receive");
  EXPECT_EQ(NvmeofStageName(kHost, "tcp", NVMEOF_HP_COMPLETE, NVMEOF_HP_END), "block_complete");
  EXPECT_EQ(NvmeofStageName(kTarget, "rdma", NVMEOF_TP_RECV, NVMEOF_TP_INIT), "receive");
  EXPECT_EQ(NvmeofStageName(kTarget, "rdma", NVMEOF_TP_INIT, NVMEOF_TP_DATA), "data_transfer");
  EXPECT_EQ(NvmeofStageName(kTarget, "rdma", NVMEOF_TP_EXEC, NVMEOF_TP_DONE), "storage");
  EXPECT_EQ(NvmeofStageName(kTarget, "tcp", NVMEOF_TP_DONE, NVMEOF_TP_SENT), "response");
}

TEST(NvmeofStageName, SkippablePointsKeepTheWiderStageName) {
  // No send completion before the response: the whole span is network and target.
  EXPECT_EQ(NvmeofStageName(kHost, "tcp", NVMEOF_HP_POSTED, NVMEOF_HP_RESPONSE),
            "network_and_target");
  // No data to pull from the host (reads): init to execute is submission.
  EXPECT_EQ(NvmeofStageName(kTarget, "rdma", NVMEOF_TP_INIT, NVMEOF_TP_EXEC), "submit");
  // PCIe: setup to the completion is the drive.
  EXPECT_EQ(NvmeofStageName(kHost, "pcie", NVMEOF_HP_SETUP, NVMEOF_HP_RESPONSE), "device");
}

TEST(NvmeofStageName, TheDefaultTiersSpansHaveNamesOfTheirOwn) {
  // Tracepoints only: the whole frame between them, on every transport.
  EXPECT_EQ(NvmeofStageName(kHost, "rdma", NVMEOF_HP_SETUP, NVMEOF_HP_COMPLETE), "round_trip");
  EXPECT_EQ(NvmeofStageName(kHost, "tcp", NVMEOF_HP_SETUP, NVMEOF_HP_COMPLETE), "round_trip");
  EXPECT_EQ(NvmeofStageName(kHost, "pcie", NVMEOF_HP_SETUP, NVMEOF_HP_COMPLETE), "device");
  EXPECT_EQ(NvmeofStageName(kTarget, "rdma", NVMEOF_TP_INIT, NVMEOF_TP_DONE), "residence");
  EXPECT_EQ(NvmeofStageName(kTarget, "tcp", NVMEOF_TP_INIT, NVMEOF_TP_DONE), "residence");
  // The block stages keep theirs; a span reaching past the frame is a chain.
  EXPECT_EQ(NvmeofStageName(kHost, "tcp", NVMEOF_HP_ALLOC, NVMEOF_HP_COMPLETE),
            "block_submit+driver_submit+network_and_target+host_receive");
  EXPECT_EQ(NvmeofStageName(kTarget, "tcp", NVMEOF_TP_RECV, NVMEOF_TP_DONE),
            "receive+submit+storage");
}

TEST(NvmeofStageName, MissingHooksMergeStagesUnderAJoinedName) {
  // nvme_tcp_try_send_cmd_pdu is inlined in 6.1.
  EXPECT_EQ(NvmeofStageName(kHost, "tcp", NVMEOF_HP_SETUP, NVMEOF_HP_RESPONSE),
            "driver_submit+network_and_target");
  // The RDMA target without its data and execute hooks (a kernel that inlines them).
  EXPECT_EQ(NvmeofStageName(kTarget, "rdma", NVMEOF_TP_INIT, NVMEOF_TP_EXEC), "submit");
  EXPECT_EQ(NvmeofStageName(kHost, "rdma", NVMEOF_HP_POSTED, NVMEOF_HP_COMPLETE),
            "network_and_target+host_receive");
  EXPECT_EQ(NvmeofStageName(kHost, "rdma", NVMEOF_HP_END, NVMEOF_HP_SETUP), "invalid");
  EXPECT_EQ(NvmeofStageName(kTarget, "rdma", 0, NVMEOF_TP_COUNT), "invalid");
}

// Host transport hooks are held only while a controller of that transport exists, so that
// `nvme disconnect-all; rmmod nvme_rdma` works beside a running exporter.
TEST(NvmeofHookRelease, HostTransportHooksAreWantedOnlyWithAController) {
  ScratchDir sys;
  Paths paths;
  paths.sysfs = sys.path();
  EXPECT_EQ(WhyNotHooked(paths, "nvme_rdma", true), "module nvme_rdma not loaded");
  for (const char* m : {"nvme_rdma", "nvme_tcp", "nvme_core", "nvmet_rdma"}) {
    sys.Write(std::string("module/") + m + "/refcnt", "1\n");
  }
  EXPECT_EQ(WhyNotHooked(paths, "nvme_rdma", true),
            "no rdma controller (released so that nvme_rdma can be unloaded)");
  EXPECT_EQ(WhyNotHooked(paths, "nvme_rdma", false), "");  // `probe` plans them anyway
  sys.Write("class/nvme/nvme0/transport", "pcie\n");
  sys.Write("class/nvme/nvme1/transport", "tcp\n");
  EXPECT_NE(WhyNotHooked(paths, "nvme_rdma", true), "");
  EXPECT_EQ(WhyNotHooked(paths, "nvme_tcp", true), "");
  // Not host transports: wanted whenever loaded, controllers or not.
  EXPECT_EQ(WhyNotHooked(paths, "nvme_core", true), "");
  EXPECT_EQ(WhyNotHooked(paths, "nvmet_rdma", true), "");
  EXPECT_EQ(WhyNotHooked(paths, "", true), "");
  EXPECT_EQ(ReleasableTransport("nvme_rdma"), "rdma");
  EXPECT_EQ(ReleasableTransport("nvmet_rdma"), "");
}

class BpfNvmeofCollectorTest : public ScratchTree {
 protected:
  void SetUp() override {
    ScratchTree::SetUp();
    // A multipath path disk of controller nvme1 (RDMA), hidden: no dev_t, only /sys/block.
    Write("class/nvme/nvme1/transport", "rdma\n");
    std::filesystem::create_directories(root_ + "/block/nvme0c1n1");
    std::filesystem::create_symlink("../../class/nvme/nvme1", root_ + "/block/nvme0c1n1/device");
    options_.paths.sysfs = root_;
  }

  static NvmeofSeries Series(std::uint64_t id, std::uint8_t role, std::uint8_t kind,
                             std::uint8_t from, std::uint8_t to, std::uint64_t count,
                             std::uint64_t ns) {
    NvmeofSeries s;
    s.key.id = id;
    s.key.role = role;
    s.key.op = NVMEOF_OP_READ;
    s.key.kind = kind;
    s.key.from = from;
    s.key.to = to;
    if (role == kTarget) {
      s.key.trtype = NVMEOF_TRTYPE_TCP;
      s.key.port = 2;
    }
    s.hist.count = count;
    s.hist.sum_ns = count * ns;
    s.hist.buckets[nvmeof_hist_index(ns)] = count;
    return s;
  }

  MetricSink Collect(std::unique_ptr<FakeNvmeof> fake) {
    return CollectNvmeof(options_, std::move(fake));
  }

  CollectorOptions options_;
};

constexpr std::uint64_t kDisk = 0xffff888001000000;
constexpr std::uint64_t kSubsys = 0xffff888002000000;
constexpr std::uint64_t kSubsys2 = kSubsys + 0x400;
// Target names are kept under the subsystem's address | 1 (nvmeof_name_key).
const std::uint64_t kSubsysName = nvmeof_name_key(kSubsys, NVMEOF_ROLE_TARGET);
const std::uint64_t kSubsys2Name = nvmeof_name_key(kSubsys2, NVMEOF_ROLE_TARGET);

TEST_F(BpfNvmeofCollectorTest, HostSeriesNamedByNamespaceAndController) {
  MetricSink sink = Collect(MakeFakeNvmeof(
      {{kDisk, "nvme0c1n1"}},
      {
          Series(kDisk, kHost, NVMEOF_KIND_COMMANDS, 0, 0, 800, 0),
          Series(kDisk, kHost, NVMEOF_KIND_STAGE, NVMEOF_HP_SETUP, NVMEOF_HP_POSTED, 100, 2000),
          // Two spans naming the same stage are one series: the send completion came after the
          // response for 10 commands.
          Series(kDisk, kHost, NVMEOF_KIND_STAGE, NVMEOF_HP_POSTED, NVMEOF_HP_RESPONSE, 10, 50000),
          Series(kDisk, kHost, NVMEOF_KIND_STAGE, NVMEOF_HP_POSTED, NVMEOF_HP_SENT, 90, 10000),
          Series(kDisk, kHost, NVMEOF_KIND_STAGE, NVMEOF_HP_SENT, NVMEOF_HP_RESPONSE, 90, 40000),
          Series(kDisk, kHost, NVMEOF_KIND_TOTAL, NVMEOF_HP_SETUP, NVMEOF_HP_RESPONSE, 100, 52000),
      }));
  LabelMap host = {{"role", "host"},
                   {"transport", "rdma"},
                   {"op", "read"},
                   {"nvme_namespace", "nvme0n1"},
                   {"controller", "nvme1"}};
  EXPECT_EQ(Value(sink, "nvmeof_commands_total", host), 800);
  auto stages = Select(sink, "nvmeof_stage_latency_seconds", host);
  ASSERT_EQ(stages.size(), 4u);
  LabelMap net = host;
  net["stage"] = "network_and_target";
  auto n = Select(sink, "nvmeof_stage_latency_seconds", net);
  ASSERT_EQ(n.size(), 1u);
  EXPECT_EQ(n[0]->histogram.sample_count, 10u);
  net["stage"] = "command_send";
  ASSERT_EQ(Select(sink, "nvmeof_stage_latency_seconds", net).size(), 1u);
  // The end to end per controller (bpf.command_detail, default): no namespace label.
  LabelMap controller = host;
  controller.erase("nvme_namespace");
  auto total = Select(sink, "nvmeof_command_latency_seconds", controller);
  ASSERT_EQ(total.size(), 1u);
  EXPECT_EQ(total[0]->histogram.sample_count, 100u);
  EXPECT_NEAR(total[0]->histogram.sample_sum, 100 * 52e-6, 1e-9);
  for (const auto& l : total[0]->label) EXPECT_NE(l.name, "nvme_namespace");
}

TEST_F(BpfNvmeofCollectorTest, TargetSeriesCarrySubsystemNqnAndPort) {
  MetricSink sink = Collect(MakeFakeNvmeof(
      {{kSubsysName, "nqn.2024-01.io.example:sub1"}},
      {Series(kSubsys, kTarget, NVMEOF_KIND_COMMANDS, 0, 0, 42, 0),
       Series(kSubsys, kTarget, NVMEOF_KIND_STAGE, NVMEOF_TP_INIT, NVMEOF_TP_DONE, 5, 3000)}));
  LabelMap target = {{"role", "target"},
                     {"transport", "tcp"},
                     {"nqn", "nqn.2024-01.io.example:sub1"},
                     {"nvmet_port", "2"}};
  EXPECT_EQ(Value(sink, "nvmeof_commands_total", target), 42);
  target["stage"] = "residence";
  EXPECT_EQ(Select(sink, "nvmeof_stage_latency_seconds", target).size(), 1u);
}

TEST_F(BpfNvmeofCollectorTest, UnnamedDisksAreSkippedNotGuessed) {
  auto fake = MakeFakeNvmeof(
      {{kDisk + 2, "../../etc"}},  // hostile
      {
          Series(kDisk, kHost, NVMEOF_KIND_COMMANDS, 0, 0, 1, 0),  // no name at all
          Series(kDisk + 2, kHost, NVMEOF_KIND_COMMANDS, 0, 0, 1, 0),
          Series(kSubsys, kTarget, NVMEOF_KIND_COMMANDS, 0, 0, 1, 0),  // NQN not known yet
      });
  auto forgotten = fake->forgotten;
  MetricSink sink = Collect(std::move(fake));
  EXPECT_TRUE(Select(sink, "nvmeof_commands_total").empty());
  EXPECT_EQ(sink.skipped(), 3u);
  EXPECT_TRUE(forgotten->empty());
}

TEST_F(BpfNvmeofCollectorTest, VanishedDisksAndSubsystemsAreForgotten) {
  Write("kernel/config/nvmet/subsystems/nqn.live/attr_serial", "1\n");
  options_.paths.configfs = root_ + "/kernel/config";
  auto fake = MakeFakeNvmeof(
      {{kDisk, "nvme0c1n1"},
       {kDisk + 1, "nvme9c9n9"},
       {kSubsysName, "nqn.live"},
       {kSubsys2Name, "nqn.deleted"}},
      {
          Series(kDisk, kHost, NVMEOF_KIND_COMMANDS, 0, 0, 1, 0),
          Series(kDisk + 1, kHost, NVMEOF_KIND_COMMANDS, 0, 0, 1, 0),  // disconnected
          Series(kSubsys, kTarget, NVMEOF_KIND_COMMANDS, 0, 0, 1, 0),
          Series(kSubsys2, kTarget, NVMEOF_KIND_COMMANDS, 0, 0, 1, 0),  // deleted
      });
  auto forgotten = fake->forgotten;
  MetricSink sink = Collect(std::move(fake));
  EXPECT_EQ(Select(sink, "nvmeof_commands_total").size(), 2u);
  EXPECT_EQ(sink.skipped(), 0u);
  EXPECT_EQ(*forgotten, (std::vector<std::uint64_t>{kDisk + 1, kSubsys2Name}));
}

// A host disk and a target subsystem are both kmalloc-1k objects: a subsystem made at a freed
// disk's address has the same series id. Each keeps its own name, and the disk's going away
// forgets the disk's series only (the 2 h VM soak saw a recreated subsystem's counts drop and
// double while a disconnected disk's leftovers were forgotten by the same id).
TEST_F(BpfNvmeofCollectorTest, AHostDiskAndASubsystemAtOneAddressStayApart) {
  Write("kernel/config/nvmet/subsystems/nqn.live/attr_serial", "1\n");
  options_.paths.configfs = root_ + "/kernel/config";
  auto fake = MakeFakeNvmeof(
      {{kDisk, "nvme9c9n9"}, {nvmeof_name_key(kDisk, NVMEOF_ROLE_TARGET), "nqn.live"}},
      {
          Series(kDisk, kHost, NVMEOF_KIND_COMMANDS, 0, 0, 5, 0),    // disconnected
          Series(kDisk, kTarget, NVMEOF_KIND_COMMANDS, 0, 0, 7, 0),  // the new subsystem
      });
  auto forgotten = fake->forgotten;
  MetricSink sink = Collect(std::move(fake));
  EXPECT_EQ(Value(sink, "nvmeof_commands_total", {{"role", "target"}, {"nqn", "nqn.live"}}), 7);
  EXPECT_EQ(Count(sink, "nvmeof_commands_total"), 1);
  EXPECT_EQ(*forgotten, (std::vector<std::uint64_t>{kDisk}));
  EXPECT_NE(nvmeof_name_key(kDisk, NVMEOF_ROLE_HOST), nvmeof_name_key(kDisk, NVMEOF_ROLE_TARGET));
}

TEST_F(BpfNvmeofCollectorTest, ControllerDetailStagesCarryTheControllerNotTheNamespace) {
  Write("class/nvme/nvme2/transport", "pcie\n");
  auto stage = Series(1, kHost, NVMEOF_KIND_STAGE, NVMEOF_HP_SETUP, NVMEOF_HP_POSTED, 7, 2000);
  stage.key.detail = NVMEOF_DETAIL_CONTROLLER;
  auto pcie = Series(2, kHost, NVMEOF_KIND_STAGE, NVMEOF_HP_SETUP, NVMEOF_HP_RESPONSE, 3, 9000);
  pcie.key.detail = NVMEOF_DETAIL_CONTROLLER;
  auto gone = Series(5, kHost, NVMEOF_KIND_STAGE, NVMEOF_HP_SETUP, NVMEOF_HP_POSTED, 1, 2000);
  gone.key.detail = NVMEOF_DETAIL_CONTROLLER;  // nvme5 has no sysfs entry: disconnected
  auto fake = MakeFakeNvmeof(
      {{kDisk, "nvme0c1n1"}},
      {Series(kDisk, kHost, NVMEOF_KIND_COMMANDS, 0, 0, 56, 0),
       Series(kDisk, kHost, NVMEOF_KIND_TOTAL, NVMEOF_HP_SETUP, NVMEOF_HP_END, 7, 9000), stage,
       pcie, gone});
  auto forgotten = fake->forgotten;
  MetricSink sink = Collect(std::move(fake));
  EXPECT_EQ(Value(sink, "nvmeof_commands_total", {{"nvme_namespace", "nvme0n1"}}), 56);
  EXPECT_EQ(Select(sink, "nvmeof_command_latency_seconds", {{"controller", "nvme1"}}).size(), 1u);
  auto s = Select(sink, "nvmeof_stage_latency_seconds",
                  {{"role", "host"},
                   {"transport", "rdma"},
                   {"controller", "nvme1"},
                   {"stage", "driver_submit"}});
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0]->histogram.sample_count, 7u);
  for (const auto* m : Select(sink, "nvmeof_stage_latency_seconds")) {
    for (const auto& l : m->label) EXPECT_NE(l.name, "nvme_namespace");
  }
  // A controller's transport comes from its own sysfs entry: local PCIe stays apart.
  EXPECT_EQ(Select(sink, "nvmeof_stage_latency_seconds",
                   {{"transport", "pcie"}, {"controller", "nvme2"}, {"stage", "device"}})
                .size(),
            1u);
  EXPECT_EQ(*forgotten, (std::vector<std::uint64_t>{5}));
}

TEST_F(BpfNvmeofCollectorTest, TargetStagesAtControllerDetailHaveNoPort) {
  auto stage = Series(kSubsys, kTarget, NVMEOF_KIND_STAGE, NVMEOF_TP_INIT, NVMEOF_TP_DONE, 5, 3000);
  stage.key.detail = NVMEOF_DETAIL_CONTROLLER;
  stage.key.port = 0;
  MetricSink sink =
      Collect(MakeFakeNvmeof({{kSubsysName, "nqn.2024-01.io.example:sub1"}},
                             {Series(kSubsys, kTarget, NVMEOF_KIND_COMMANDS, 0, 0, 42, 0), stage}));
  EXPECT_EQ(Value(sink, "nvmeof_commands_total", {{"nvmet_port", "2"}}), 42);
  auto s = Select(sink, "nvmeof_stage_latency_seconds",
                  {{"nqn", "nqn.2024-01.io.example:sub1"}, {"stage", "residence"}});
  ASSERT_EQ(s.size(), 1u);
  for (const auto& l : s[0]->label) EXPECT_NE(l.name, "nvmet_port");
}

TEST_F(BpfNvmeofCollectorTest, NodeDetailSumsStagesOverControllersPerTransport) {
  Write("class/nvme/nvme3/transport", "rdma\n");
  options_.bpf.stage_detail = "node";
  auto a = Series(1, kHost, NVMEOF_KIND_STAGE, NVMEOF_HP_SETUP, NVMEOF_HP_POSTED, 7, 2000);
  auto b = Series(3, kHost, NVMEOF_KIND_STAGE, NVMEOF_HP_SETUP, NVMEOF_HP_POSTED, 4, 2000);
  a.key.detail = b.key.detail = NVMEOF_DETAIL_CONTROLLER;
  MetricSink sink = Collect(MakeFakeNvmeof(
      {{kDisk, "nvme0c1n1"}}, {Series(kDisk, kHost, NVMEOF_KIND_COMMANDS, 0, 0, 56, 0), a, b}));
  auto s = Select(sink, "nvmeof_stage_latency_seconds", {{"stage", "driver_submit"}});
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0]->histogram.sample_count, 11u);
  for (const auto& l : s[0]->label) EXPECT_NE(l.name, "controller");
  // Counts keep the namespace at every detail.
  EXPECT_EQ(Value(sink, "nvmeof_commands_total", {{"nvme_namespace", "nvme0n1"}}), 56);
}

// bpf.command_detail controller (the default) sums the end to end of a controller's
// namespaces and of a subsystem's ports; namespace keeps them apart. Counts keep full detail.
TEST_F(BpfNvmeofCollectorTest, CommandDetailSumsNamespacesAndPorts) {
  std::filesystem::create_directories(root_ + "/block/nvme0c1n2");
  std::filesystem::create_symlink("../../class/nvme/nvme1", root_ + "/block/nvme0c1n2/device");
  auto snapshot = [&] {
    auto port3 =
        Series(kSubsys, kTarget, NVMEOF_KIND_TOTAL, NVMEOF_TP_INIT, NVMEOF_TP_DONE, 6, 4000);
    port3.key.port = 3;
    auto port3_count = Series(kSubsys, kTarget, NVMEOF_KIND_COMMANDS, 0, 0, 60, 0);
    port3_count.key.port = 3;
    return MakeFakeNvmeof(
        {{kDisk, "nvme0c1n1"},
         {kDisk + 1, "nvme0c1n2"},
         {kSubsysName, "nqn.2024-01.io.example:sub1"}},
        {Series(kDisk, kHost, NVMEOF_KIND_COMMANDS, 0, 0, 80, 0),
         Series(kDisk + 1, kHost, NVMEOF_KIND_COMMANDS, 0, 0, 30, 0),
         Series(kDisk, kHost, NVMEOF_KIND_TOTAL, NVMEOF_HP_SETUP, NVMEOF_HP_END, 8, 9000),
         Series(kDisk + 1, kHost, NVMEOF_KIND_TOTAL, NVMEOF_HP_SETUP, NVMEOF_HP_END, 3, 20000),
         Series(kSubsys, kTarget, NVMEOF_KIND_COMMANDS, 0, 0, 50, 0),
         Series(kSubsys, kTarget, NVMEOF_KIND_TOTAL, NVMEOF_TP_INIT, NVMEOF_TP_DONE, 5, 3000),
         port3_count, port3});
  };
  MetricSink sink = Collect(snapshot());
  auto host = Select(sink, "nvmeof_command_latency_seconds", {{"role", "host"}});
  ASSERT_EQ(host.size(), 1u);
  EXPECT_EQ(host[0]->histogram.sample_count, 11u);
  EXPECT_NEAR(host[0]->histogram.sample_sum, 8 * 9e-6 + 3 * 20e-6, 1e-9);
  auto target = Select(sink, "nvmeof_command_latency_seconds", {{"role", "target"}});
  ASSERT_EQ(target.size(), 1u);
  EXPECT_EQ(target[0]->histogram.sample_count, 11u);
  for (const auto* m : Select(sink, "nvmeof_command_latency_seconds")) {
    for (const auto& l : m->label) {
      EXPECT_NE(l.name, "nvme_namespace");
      EXPECT_NE(l.name, "nvmet_port");
    }
  }
  EXPECT_EQ(Value(sink, "nvmeof_commands_total", {{"nvme_namespace", "nvme0n2"}}), 30);
  EXPECT_EQ(Value(sink, "nvmeof_commands_total", {{"nvmet_port", "3"}}), 60);

  options_.bpf.command_detail = "namespace";
  MetricSink detail = Collect(snapshot());
  EXPECT_EQ(Select(detail, "nvmeof_command_latency_seconds", {{"role", "host"}}).size(), 2u);
  auto n2 = Select(detail, "nvmeof_command_latency_seconds", {{"nvme_namespace", "nvme0n2"}});
  ASSERT_EQ(n2.size(), 1u);
  EXPECT_EQ(n2[0]->histogram.sample_count, 3u);
  EXPECT_EQ(Select(detail, "nvmeof_command_latency_seconds", {{"nvmet_port", "3"}}).size(), 1u);
}

TEST(NvmeofCtrlInstance, ParsesPathAndPlainDiskNames) {
  EXPECT_EQ(nvmeof_ctrl_instance("nvme0c1n1"), 1);
  EXPECT_EQ(nvmeof_ctrl_instance("nvme3c12n40"), 12);
  EXPECT_EQ(nvmeof_ctrl_instance("nvme7n1"), 7);
  EXPECT_EQ(nvmeof_ctrl_instance("nvme0c"), -1);
  EXPECT_EQ(nvmeof_ctrl_instance("nvmec1n1"), -1);
  EXPECT_EQ(nvmeof_ctrl_instance("sda"), -1);
  EXPECT_EQ(nvmeof_ctrl_instance("nvme99999999999999n1"), -1);  // no overflow
}

TEST(HistMapEntries, FollowMemoryCeilingAndCpus) {
  // The sizing: 1,760-byte histograms, 64 MiB ceiling.
  EXPECT_EQ(HistMapEntries(64ULL << 20, 24, 1760, 64, 64, 4096), 595u);
  EXPECT_EQ(HistMapEntries(64ULL << 20, 24, 1760, 2, 64, 4096), 4096u);
  EXPECT_EQ(HistMapEntries(1ULL << 20, 24, 1760, 256, 64, 4096), 64u);
}

TEST_F(BpfNvmeofCollectorTest, HooksOfLoadedModulesAreReported) {
  auto fake = std::make_unique<FakeNvmeof>();
  for (const auto& h : NvmeofHooks()) {
    if (h.gate != "nvmet") continue;
    HookPlan hp;
    hp.hook = &h;
    if (h.required) hp.chosen = h.variants[0];
    fake->plan.hooks.push_back(hp);
  }
  MetricSink sink = Collect(std::move(fake));
  EXPECT_EQ(Value(sink, "nvmeof_exporter_bpf_hook_attached",
                  {{"hook", "nvmet_req_init"}, {"mechanism", "tp_btf"}, {"required", "true"}}),
            1);
  EXPECT_EQ(Value(sink, "nvmeof_exporter_bpf_hook_attached",
                  {{"hook", "nvmet_bdev_execute_rw"}, {"mechanism", "none"}}),
            0);
  EXPECT_TRUE(
      Select(sink, "nvmeof_exporter_bpf_hook_attached", {{"hook", "nvme_setup_cmd"}}).empty());
}

TEST(NvmeofHooks, EveryHookHasFentryAndKprobeAndUniqueNames) {
  std::set<std::string_view> names;
  for (const auto& h : NvmeofHooks()) {
    EXPECT_TRUE(names.insert(h.name).second) << h.name;
    bool fentry = false, kprobe = false;
    for (const auto& v : h.variants) {
      fentry |= v.mechanism == Mechanism::kFentry;
      kprobe |= v.mechanism == Mechanism::kKprobe;
    }
    EXPECT_TRUE(fentry && kprobe) << h.name;
    EXPECT_FALSE(h.gate.empty()) << h.name;
  }
  for (const auto& h : BlockHooks()) EXPECT_EQ(names.count(h.name), 0u) << h.name;
}

}  // namespace
}  // namespace nvmeof
