// The bpf collector on the running kernel (root only; skipped elsewhere): every mechanism the
// kernel allows loads and counts real block I/O, two instances coexist, the block and NVMe-oF
// objects share the NVMe-oF stage maps, and destruction detaches and unloads every program.
#ifdef NVMEOF_HAVE_BPF
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <set>
#include <sstream>

#include "collectors/bpf.h"
#include "collectors/registry.h"
#include "loader/libbpf.h"
#include "tests/unit/scratch_tree.h"
#include "tests/unit/sink_query.h"

namespace nvmeof {
namespace {

// IDs of loaded BPF programs whose name starts with nvf_ (ours).
std::set<std::uint32_t> OurPrograms() {
  std::set<std::uint32_t> ids;
  std::uint32_t id = 0;
  while (bpf_prog_get_next_id(id, &id) == 0) {
    int fd = bpf_prog_get_fd_by_id(id);
    if (fd < 0) continue;
    bpf_prog_info info{};
    std::uint32_t len = sizeof(info);
    if (bpf_obj_get_info_by_fd(fd, &info, &len) == 0 && strncmp(info.name, "nvf_", 4) == 0) {
      ids.insert(id);
    }
    close(fd);
  }
  return ids;
}

// IDs of loaded BPF maps named `name`.
std::set<std::uint32_t> MapsNamed(const char* name) {
  std::set<std::uint32_t> ids;
  std::uint32_t id = 0;
  while (bpf_map_get_next_id(id, &id) == 0) {
    int fd = bpf_map_get_fd_by_id(id);
    if (fd < 0) continue;
    bpf_map_info info{};
    std::uint32_t len = sizeof(info);
    if (bpf_obj_get_info_by_fd(fd, &info, &len) == 0 && strcmp(info.name, name) == 0) {
      ids.insert(id);
    }
    close(fd);
  }
  return ids;
}

bool Loaded(std::uint32_t id) {
  int fd = bpf_prog_get_fd_by_id(id);
  if (fd < 0) return false;
  close(fd);
  return true;
}

double Value(const MetricSink& sink, const std::string& family, const std::string& label,
             const std::string& value) {
  auto found = Select(sink, family, {{label, value}});
  if (found.empty()) return -1;
  const auto* f = sink.Find(family);
  return f->type == prometheus::MetricType::Counter ? found[0]->counter.value
                                                    : found[0]->gauge.value;
}

// Completed read requests summed over every disk.
double Reads(Collector& c) {
  MetricSink sink;
  EXPECT_TRUE(c.Collect(sink));
  double total = 0;
  if (const auto* f = sink.Find("nvmeof_block_requests_total")) {
    for (const auto& m : f->metric) {
      for (const auto& l : m.label) {
        if (l.name == "op" && l.value == "read") total += m.counter.value;
      }
    }
  }
  return total;
}

// 16 O_DIRECT 4 KiB reads of a file on a disk-backed filesystem (not tmpfs).
bool DirectReads() {
  char path[] = "/var/tmp/nvmeof_bpf_XXXXXX";
  int fd = mkstemp(path);
  if (fd < 0) return false;
  std::string data(1 << 20, 'x');
  bool ok = write(fd, data.data(), data.size()) == ssize_t(data.size()) && fsync(fd) == 0;
  close(fd);
  fd = open(path, O_RDONLY | O_DIRECT);
  unlink(path);
  if (!ok || fd < 0) return false;
  void* buf = nullptr;
  if (posix_memalign(&buf, 4096, 4096) != 0) return false;
  for (int i = 0; i < 16 && ok; ++i) ok = pread(fd, buf, 4096, i * 65536) == 4096;
  free(buf);
  close(fd);
  return ok;
}

class BpfKernelTest : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "needs root";
    options_.bpf.mechanism = GetParam();
    options_.bpf.enable_stats = true;
    std::ostringstream probe;
    if (RunProbe(options_, probe) != 0) {
      // EACCES is the verifier rejecting our program: a bug of ours on this kernel (it once
      // hid a histogram index the verifier could not bound), never a kernel without BPF.
      if (probe.str().find("EACCES") != std::string::npos) {
        GTEST_FAIL() << "the verifier rejected a program:\n" << probe.str();
      }
      GTEST_SKIP() << "kernel refuses:\n" << probe.str();
    }
  }
  CollectorOptions options_;
};

TEST_P(BpfKernelTest, CountsRealIoAndDetachesCleanly) {
  std::set<std::uint32_t> before = OurPrograms();
  const std::set<std::uint32_t> inflight_before = MapsNamed("nv_inflight");
  std::set<std::uint32_t> ours;
  {
    auto first = NewBpfCollector(options_);
    auto second = NewBpfCollector(options_);  // a second instance coexists
    for (auto id : OurPrograms()) {
      if (!before.count(id)) ours.insert(id);
    }
    EXPECT_EQ(ours.size(), 4u);  // issue + complete, twice
    // The block programs set up and end NVMe-oF host commands in the NVMe-oF part's in-flight
    // table: one table per collector, shared by its two objects (not one each).
    std::size_t tables = 0;
    for (auto id : MapsNamed("nv_inflight")) tables += !inflight_before.count(id);
    EXPECT_EQ(tables, 2u);

    MetricSink sink;
    ASSERT_TRUE(first->Collect(sink));
    EXPECT_EQ(Value(sink, "nvmeof_exporter_bpf_available", "reason", "ok"), 1);
    EXPECT_EQ(Value(sink, "nvmeof_exporter_bpf_hook_attached", "mechanism", GetParam()), 1);

    double first_before = Reads(*first), second_before = Reads(*second);
    ASSERT_TRUE(DirectReads());
    EXPECT_GE(Reads(*first) - first_before, 16);
    EXPECT_GE(Reads(*second) - second_before, 16);

    MetricSink stats;
    ASSERT_TRUE(first->Collect(stats));
    EXPECT_GT(Value(stats, "nvmeof_exporter_bpf_program_runs_total", "hook", "block_rq_complete"),
              0);
  }
  // The kernel frees programs after an RCU grace period: give it a moment.
  for (auto id : ours) {
    for (int i = 0; i < 100 && Loaded(id); ++i) usleep(20000);
    EXPECT_FALSE(Loaded(id)) << "program " << id << " still loaded";
  }
}

// A loaded module without BTF of its own while the kernel has BTF (5.10: no
// CONFIG_DEBUG_INFO_BTF_MODULES) is named as the reason: tp_btf and fentry before any trial,
// and a failed kprobe or raw_tp trial (whose programs read the module's types) says it too.
TEST(KernelProber, NamesAModuleWithoutBtf) {
  if (access("/sys/kernel/btf/vmlinux", R_OK) != 0) GTEST_SKIP() << "no /sys/kernel/btf/vmlinux";
  char dir[] = "/tmp/nvmeof-prober-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string root = dir;
  ASSERT_EQ(system(("mkdir -p " + root + "/kernel/btf " + root + "/module/nvmet " + root +
                    "/module/nvme_core && touch " + root + "/module/nvmet/initstate " + root +
                    "/module/nvme_core/initstate " + root + "/kernel/btf/nvme_core && ln -s " +
                    "/sys/kernel/btf/vmlinux " + root + "/kernel/btf/vmlinux")
                       .c_str()),
            0);
  int trials = 0;
  Paths paths;
  paths.sysfs = root;
  KernelProber prober(paths, [&](const Variant&, std::string* error) {
    ++trials;
    *error = "load: EINVAL";
    return -22;
  });
  const std::string why = "no BTF for module nvmet (CONFIG_DEBUG_INFO_BTF_MODULES, Linux 5.11+)";
  const HookSpec nvmet{.name = "h", .required = false, .module = "nvmet", .variants = {}};
  EXPECT_EQ(prober.Probe(nvmet, Variant{Mechanism::kTpBtf, "nvmet_req_init", "p"}), why);
  EXPECT_EQ(prober.Probe(nvmet, Variant{Mechanism::kFentry, "nvmet_req_init", "p"}), why);
  EXPECT_EQ(trials, 0);
  EXPECT_EQ(prober.Probe(nvmet, Variant{Mechanism::kRawTp, "nvmet_req_init", "p"}),
            "load: EINVAL: " + why);
  EXPECT_EQ(trials, 1);
  // A module with its BTF file, and a hook of no module: the trial's own error, unchanged.
  const HookSpec core{.name = "h", .required = false, .module = "nvme_core", .variants = {}};
  EXPECT_EQ(prober.Probe(core, Variant{Mechanism::kRawTp, "nvme_setup_cmd", "p"}), "load: EINVAL");
  const HookSpec block{.name = "h", .required = false, .module = "", .variants = {}};
  EXPECT_EQ(prober.Probe(block, Variant{Mechanism::kRawTp, "block_rq_issue", "p"}), "load: EINVAL");
  EXPECT_EQ(system(("rm -rf " + root).c_str()), 0);
}

// Module BTF: a module's own BTF file says yes (5.11+); loaded modules without one say no
// (5.10); no loaded module to tell says yes.
TEST(ModulesHaveBtf, FromKernelBtfAndLoadedModules) {
  ScratchDir with, without, none;
  with.Write("kernel/btf/vmlinux", "");
  with.Write("kernel/btf/nvme_core", "");
  with.Write("module/nvme_core/initstate", "live\n");
  without.Write("kernel/btf/vmlinux", "");
  without.Write("module/nvme_core/initstate", "live\n");
  without.Write("module/printk/parameters/time", "Y\n");  // built in: no initstate
  none.Write("kernel/btf/vmlinux", "");
  none.Write("module/printk/parameters/time", "Y\n");
  Paths p;
  p.sysfs = with.path();
  EXPECT_TRUE(ModulesHaveBtf(p));
  p.sysfs = without.path();
  EXPECT_FALSE(ModulesHaveBtf(p));
  p.sysfs = none.path();
  EXPECT_TRUE(ModulesHaveBtf(p));
}

// Count slots (bpf/count_cache.h): owned slots (odd tag) add up per key across CPUs, whichever
// slot index each CPU's copy sits at; free (0) and half-claimed (2) slots count nothing.
TEST(CountSlots, OwnedSlotsAddUpByKeyAcrossCpus) {
  CountsByKey counts;
  AddCountSlots({{7, {1, 2, 3}, 5}, {9, {4, 0, 0}, 2}, {0, {1, 2, 3}, 99}}, &counts);
  AddCountSlots({{7, {1, 2, 3}, 6}, {2, {4, 0, 0}, 50}, {1, {4, 0, 0}, 0}}, &counts);
  EXPECT_EQ(counts.size(), 2u);
  EXPECT_EQ((counts[{1, 2, 3}]), 11u);
  EXPECT_EQ((counts[{4, 0, 0}]), 2u);
}

// A variant that calls a kfunc is planned only where the kernel's BTF has it, before any trial
// load (the NVMe-oF host driver hooks' bpf_rdonly_cast variants, 6.2+).
TEST(KernelProber, VariantNeedsItsKfuncInTheKernelsBtf) {
  if (access("/sys/kernel/btf/vmlinux", R_OK) != 0) GTEST_SKIP() << "no /sys/kernel/btf/vmlinux";
  int trials = 0;
  KernelProber prober(Paths{}, [&](const Variant&, std::string*) { return ++trials, 0; });
  const HookSpec hook{.name = "h", .required = false, .module = "", .variants = {}};
  // raw_tp has no static check of its own: the kfunc check, then the trial decide.
  const Variant missing{Mechanism::kRawTp, "block_rq_complete", "p", "bpf_no_such_kfunc"};
  EXPECT_EQ(prober.Probe(hook, missing), "kfunc bpf_no_such_kfunc not in the kernel's BTF");
  EXPECT_EQ(trials, 0);
  const Variant plain{Mechanism::kRawTp, "block_rq_complete", "p"};
  EXPECT_EQ(prober.Probe(hook, plain), "");
  EXPECT_EQ(trials, 1);
  struct btf* vmlinux = btf__load_vmlinux_btf();
  const bool has_cast =
      vmlinux && btf__find_by_name_kind(vmlinux, "bpf_rdonly_cast", BTF_KIND_FUNC) >= 0;
  btf__free(vmlinux);
  if (!has_cast) GTEST_SKIP() << "kernel without bpf_rdonly_cast (before 6.2)";
  const Variant cast{Mechanism::kRawTp, "block_rq_complete", "p", "bpf_rdonly_cast"};
  EXPECT_EQ(prober.Probe(hook, cast), "");
  EXPECT_EQ(trials, 2);
}

// block_io_done (6.5+) is planned where the kernel's BTF has it and every blk-mq disk has
// queue/iostats on: the kernel fires it only for the requests it accounts. Otherwise the prober
// refuses it, before any trial load, and the next variant (block_rq_complete) serves.
TEST(KernelProber, AccountedVariantNeedsItsTracepointAndIostats) {
  if (access("/sys/kernel/btf/vmlinux", R_OK) != 0) GTEST_SKIP() << "no /sys/kernel/btf/vmlinux";
  ScratchDir sysfs;
  sysfs.Write("block/vda/mq/0/cpu_list", "0\n");
  sysfs.Write("block/vda/queue/iostats", "1\n");
  sysfs.Write("block/nvme0n1/queue/iostats", "0\n");  // bio-based (no mq/): no requests
  std::filesystem::create_directories(sysfs.path() + "/kernel/btf");
  std::filesystem::create_symlink("/sys/kernel/btf/vmlinux", sysfs.path() + "/kernel/btf/vmlinux");
  int trials = 0;
  Paths paths;
  paths.sysfs = sysfs.path();
  const HookSpec hook{.name = "h", .required = false, .module = "", .variants = {}};
  const Variant absent{
      .mechanism = Mechanism::kRawTp, .target = "no_such_event", .program = "p", .accounted = true};
  const Variant done{
      .mechanism = Mechanism::kRawTp, .target = "block_io_done", .program = "p", .accounted = true};
  {
    KernelProber prober(paths, [&](const Variant&, std::string*) { return ++trials, 0; });
    EXPECT_EQ(prober.Probe(hook, absent), "tracepoint no_such_event not in BTF (Linux 6.5+)");
    EXPECT_EQ(trials, 0);
  }
  struct btf* vmlinux = btf__load_vmlinux_btf();
  const bool has_done =
      vmlinux && btf__find_by_name_kind(vmlinux, "btf_trace_block_io_done", BTF_KIND_TYPEDEF) >= 0;
  btf__free(vmlinux);
  if (!has_done) GTEST_SKIP() << "kernel without block_io_done (before 6.5)";
  {
    KernelProber prober(paths, [&](const Variant&, std::string*) { return ++trials, 0; });
    EXPECT_EQ(prober.Probe(hook, done), "");
    EXPECT_EQ(trials, 1);
  }
  sysfs.Write("block/vda/queue/iostats", "0\n");
  KernelProber prober(paths, [&](const Variant&, std::string*) { return ++trials, 0; });
  EXPECT_EQ(prober.Probe(hook, done),
            "queue/iostats is 0 on vda: the kernel skips block_io_done for its requests");
  EXPECT_EQ(trials, 1);
}

INSTANTIATE_TEST_SUITE_P(BpfKernel, BpfKernelTest,
                         ::testing::Values("tp_btf", "raw_tp", "fentry", "kprobe"));

}  // namespace
}  // namespace nvmeof
#endif  // NVMEOF_HAVE_BPF
