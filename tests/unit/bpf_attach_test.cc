// The attach layer without a kernel: planning against a fake prober, availability checks
// against fixture trees, the probe output.
#include "loader/attach.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <unistd.h>

#include "loader/block.h"

namespace nvmeof {
namespace {

namespace fs = std::filesystem;

// Answers from a table: (program) -> reason, "" = attachable; absent = attachable.
class FakeProber : public VariantProber {
 public:
  std::map<std::string, std::string> refuse;
  std::vector<std::string> probed;
  std::string Probe(const HookSpec&, const Variant& v) override {
    probed.emplace_back(v.program);
    auto it = refuse.find(std::string(v.program));
    return it == refuse.end() ? "" : it->second;
  }
};

const std::vector<HookSpec>& TestHooks() {
  static const std::vector<HookSpec> hooks = {
      {"submit",
       true,
       "",
       {{Mechanism::kFentry, "f_submit", "submit_fentry"},
        {Mechanism::kKprobe, "f_submit", "submit_kprobe"},
        {Mechanism::kTpBtf, "tp_submit", "submit_tp_btf"},
        {Mechanism::kRawTp, "tp_submit", "submit_raw_tp"}}},
      {"middle",
       false,
       "somemod",
       {{Mechanism::kFentry, "f_mid", "mid_fentry"}, {Mechanism::kKprobe, "f_mid", "mid_kprobe"}}},
  };
  return hooks;
}

TEST(BpfAttachTest, ParseMechanism) {
  std::optional<Mechanism> m = Mechanism::kKprobe;
  EXPECT_TRUE(ParseMechanism("auto", &m));
  EXPECT_FALSE(m);
  EXPECT_TRUE(ParseMechanism("", &m));
  EXPECT_FALSE(m);
  for (auto name : {"fentry", "kprobe", "tp_btf", "raw_tp"}) {
    ASSERT_TRUE(ParseMechanism(name, &m)) << name;
    ASSERT_TRUE(m);
    EXPECT_EQ(MechanismName(*m), name);
  }
  EXPECT_FALSE(ParseMechanism("uprobe", &m));
}

TEST(BpfAttachTest, FirstAttachableVariantWins) {
  FakeProber prober;
  prober.refuse = {{"submit_fentry", "load: EPERM"}, {"submit_kprobe", "no kprobe support"}};
  AttachPlan plan = PlanAttach(TestHooks(), std::nullopt, prober);
  ASSERT_EQ(plan.hooks.size(), 2u);
  const HookPlan* submit = plan.Find("submit");
  ASSERT_TRUE(submit && submit->chosen);
  EXPECT_EQ(submit->chosen->mechanism, Mechanism::kTpBtf);
  ASSERT_EQ(submit->rejected.size(), 2u);
  EXPECT_EQ(submit->rejected[0].first, Mechanism::kFentry);
  EXPECT_EQ(submit->rejected[0].second, "load: EPERM");
  // Stops at the first success: raw_tp never probed.
  EXPECT_EQ(std::count(prober.probed.begin(), prober.probed.end(), "submit_raw_tp"), 0);
  EXPECT_TRUE(plan.RequiredOk());
  EXPECT_EQ(plan.Programs(), (std::vector<std::string_view>{"submit_tp_btf", "mid_fentry"}));
}

TEST(BpfAttachTest, RefusedKfuncVariantIsNotReported) {
  const std::vector<HookSpec> hooks = {
      {"posted",
       false,
       "somemod",
       {{Mechanism::kFentry, "f_post", "post_cast", "bpf_rdonly_cast"},
        {Mechanism::kFentry, "f_post", "post_fentry"},
        {Mechanism::kKprobe, "f_post", "post_kprobe"}}}};
  FakeProber prober;
  prober.refuse = {{"post_cast", "kfunc bpf_rdonly_cast not in the kernel's BTF"}};
  AttachPlan plan = PlanAttach(hooks, std::nullopt, prober);
  ASSERT_TRUE(plan.Find("posted")->chosen);
  EXPECT_EQ(plan.Find("posted")->chosen->program, "post_fentry");
  EXPECT_TRUE(plan.Find("posted")->rejected.empty());
  // Where the plain variant is refused too, its own reason is the one listed.
  prober.refuse["post_fentry"] = "f_post not in BTF";
  plan = PlanAttach(hooks, std::nullopt, prober);
  EXPECT_EQ(plan.Find("posted")->chosen->program, "post_kprobe");
  ASSERT_EQ(plan.Find("posted")->rejected.size(), 1u);
  EXPECT_EQ(plan.Find("posted")->rejected[0].second, "f_post not in BTF");
}

TEST(BpfAttachTest, AHookUselessAloneAttachesOnlyWithItsPartner) {
  std::vector<HookSpec> hooks = {
      {"opens", false, "m", {{Mechanism::kKprobe, "f_open", "open_kprobe"}}},
      {"closes", false, "m", {{Mechanism::kKprobe, "f_close", "close_kprobe"}}}};
  hooks[0].with = "closes";
  FakeProber prober;
  AttachPlan plan = PlanAttach(hooks, std::nullopt, prober);
  EXPECT_EQ(plan.Programs(), (std::vector<std::string_view>{"open_kprobe", "close_kprobe"}));
  prober.refuse = {{"close_kprobe", "no BTF for module m"}};
  plan = PlanAttach(hooks, std::nullopt, prober);
  EXPECT_TRUE(plan.Programs().empty());
  ASSERT_EQ(plan.Find("opens")->rejected.size(), 1u);
  EXPECT_EQ(plan.Find("opens")->rejected[0].first, Mechanism::kKprobe);
  EXPECT_EQ(plan.Find("opens")->rejected[0].second, "needs closes");
}

TEST(BpfAttachTest, MissingOptionalHookIsNotFatal) {
  FakeProber prober;
  prober.refuse = {{"mid_fentry", "no BTF for somemod"}, {"mid_kprobe", "no kprobe support"}};
  AttachPlan plan = PlanAttach(TestHooks(), std::nullopt, prober);
  EXPECT_TRUE(plan.RequiredOk());
  EXPECT_FALSE(plan.Find("middle")->chosen);
  EXPECT_EQ(plan.Find("middle")->rejected.size(), 2u);
  EXPECT_EQ(plan.Programs(), (std::vector<std::string_view>{"submit_fentry"}));
}

TEST(BpfAttachTest, MissingRequiredHookFailsThePlan) {
  FakeProber prober;
  for (auto p : {"submit_fentry", "submit_kprobe", "submit_tp_btf", "submit_raw_tp"}) {
    prober.refuse[p] = "nope";
  }
  AttachPlan plan = PlanAttach(TestHooks(), std::nullopt, prober);
  EXPECT_FALSE(plan.RequiredOk());
  EXPECT_EQ(plan.Find("submit")->rejected.size(), 4u);
}

TEST(BpfAttachTest, ForcedMechanismOnlyTriesThatVariant) {
  FakeProber prober;
  AttachPlan plan = PlanAttach(TestHooks(), Mechanism::kRawTp, prober);
  EXPECT_EQ(plan.Find("submit")->chosen->program, "submit_raw_tp");
  // "middle" has no raw_tp variant: missing, and the reason says so.
  EXPECT_FALSE(plan.Find("middle")->chosen);
  ASSERT_EQ(plan.Find("middle")->rejected.size(), 1u);
  EXPECT_EQ(plan.Find("middle")->rejected[0].second, "hook has no such variant");
  EXPECT_EQ(prober.probed, (std::vector<std::string>{"submit_raw_tp"}));
}

TEST(BpfAttachTest, BlockHooksHaveEveryMechanism) {
  for (const auto& hook : BlockHooks()) {
    std::set<Mechanism> seen;
    for (const auto& v : hook.variants) seen.insert(v.mechanism);
    EXPECT_EQ(seen.size(), 4u) << hook.name;
  }
  EXPECT_FALSE(BlockHooks()[0].required);  // issue: optional, merges queue + device
  EXPECT_TRUE(BlockHooks()[1].required);   // complete
}

class BpfAvailabilityTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("bpf_avail_" + std::to_string(getpid()));
    fs::remove_all(root_);
    paths_.sysfs = root_ / "sys";
    paths_.procfs = root_ / "proc";
    fs::create_directories(root_ / "sys/kernel/btf");
    fs::create_directories(root_ / "sys/kernel/security");
    fs::create_directories(root_ / "proc/self");
    Write("sys/kernel/btf/vmlinux", "BTF");
    Write("proc/self/status", "Name:\tx\nCapEff:\t000001ffffffffff\n");
  }
  void TearDown() override { fs::remove_all(root_); }
  void Write(const std::string& rel, const std::string& text) {
    std::ofstream(root_ / rel) << text;
  }
  fs::path root_;
  Paths paths_;
  BpfOptions options_;
};

TEST_F(BpfAvailabilityTest, RootWithBtfIsOk) {
  Availability a = CheckBpfAvailable(paths_, options_);
  EXPECT_TRUE(a.ok);
  EXPECT_EQ(a.reason, "ok");
}

TEST_F(BpfAvailabilityTest, CapBpfAndPerfmonSuffice) {
  // CAP_BPF (39) + CAP_PERFMON (38), nothing else.
  Write("proc/self/status", "CapEff:\t000000c000000000\n");
  EXPECT_TRUE(CheckBpfAvailable(paths_, options_).ok);
  Write("proc/self/status", "CapEff:\t0000008000000000\n");  // CAP_BPF only
  EXPECT_EQ(CheckBpfAvailable(paths_, options_).reason, "no_capability");
  Write("proc/self/status", "CapEff:\t0000000000000000\n");
  Availability a = CheckBpfAvailable(paths_, options_);
  EXPECT_FALSE(a.ok);
  EXPECT_EQ(a.reason, "no_capability");
  EXPECT_NE(a.detail.find("CAP_BPF"), std::string::npos);
}

TEST_F(BpfAvailabilityTest, Lockdown) {
  Write("sys/kernel/security/lockdown", "none [integrity] confidentiality\n");
  EXPECT_TRUE(CheckBpfAvailable(paths_, options_).ok);
  Write("sys/kernel/security/lockdown", "none integrity [confidentiality]\n");
  EXPECT_EQ(CheckBpfAvailable(paths_, options_).reason, "lockdown");
}

TEST_F(BpfAvailabilityTest, NoBtfUnlessGivenByFlag) {
  fs::remove(root_ / "sys/kernel/btf/vmlinux");
  Availability a = CheckBpfAvailable(paths_, options_);
  EXPECT_EQ(a.reason, "no_btf");
  EXPECT_NE(a.detail.find("--bpf.btf-path"), std::string::npos);
  options_.btf_path = (root_ / "external.btf").string();
  EXPECT_EQ(CheckBpfAvailable(paths_, options_).reason, "no_btf");
  Write("external.btf", "BTF");
  EXPECT_TRUE(CheckBpfAvailable(paths_, options_).ok);
}

TEST_F(BpfAvailabilityTest, BtfDirectoryLayouts) {
  fs::create_directories(root_ / "btfs/6.1.0-9-amd64");
  std::string dir = (root_ / "btfs").string();
  EXPECT_EQ(ResolveBtfPath(dir, "6.1.0-9-amd64"), dir + "/vmlinux");  // missing: reported
  Write("btfs/6.1.0-9-amd64/vmlinux", "BTF");
  EXPECT_EQ(ResolveBtfPath(dir, "6.1.0-9-amd64"), dir + "/6.1.0-9-amd64/vmlinux");
  Write("btfs/6.1.0-9-amd64.btf", "BTF");
  EXPECT_EQ(ResolveBtfPath(dir, "6.1.0-9-amd64"), dir + "/6.1.0-9-amd64.btf");
  Write("btfs/vmlinux", "BTF");
  EXPECT_EQ(ResolveBtfPath(dir, "6.1.0-9-amd64"), dir + "/vmlinux");
  EXPECT_EQ(ResolveBtfPath("/some/file.btf", "x"), "/some/file.btf");
  EXPECT_EQ(ResolveBtfPath("", "x"), "");
}

TEST(BpfProbeOutputTest, Table) {
  FakeProber prober;
  prober.refuse = {{"submit_fentry", "load: EPERM"},
                   {"mid_fentry", "no BTF for somemod"},
                   {"mid_kprobe", "no kprobe support"}};
  AttachPlan plan = PlanAttach(TestHooks(), std::nullopt, prober);
  std::ostringstream out;
  PrintProbe({true, "ok", ""}, plan, out);
  EXPECT_EQ(
      out.str(),
      "bpf: available (ok)\n"
      "HOOK                            STATUS   MECHANISM  REQUIRED  TIER       NOTES\n"
      "submit                          ok       kprobe     yes       default    fentry: load: "
      "EPERM\n"
      "middle                          missing  -          no        default    fentry: no BTF "
      "for somemod; kprobe: no kprobe support\n"
      "result: ok\n");
}

TEST(BpfProbeOutputTest, HooksWaitingForTheirModuleDoNotFailTheResult) {
  FakeProber prober;
  AttachPlan plan = PlanAttach(TestHooks(), std::nullopt, prober);
  plan.hooks[0].chosen.reset();  // "submit" is required
  plan.hooks[0].waiting = "module nvme_core not loaded";
  EXPECT_TRUE(plan.RequiredOk());
  std::ostringstream out;
  PrintProbe({true, "ok", ""}, plan, out);
  EXPECT_NE(
      out.str().find("submit                          waiting  -          yes       default    "
                     "module nvme_core not loaded\n"),
      std::string::npos)
      << out.str();
  plan.hooks[0].waiting.clear();
  EXPECT_FALSE(plan.RequiredOk());
}

TEST(BpfProbeOutputTest, AHookOfATierThatIsOffShowsWhatWouldAttach) {
  FakeProber prober;
  std::vector<HookSpec> hooks = TestHooks();
  hooks[1].transport_tier = true;  // "middle"
  AttachPlan plan = PlanAttach(hooks, std::nullopt, prober);
  plan.hooks[1].tier_off = true;
  EXPECT_EQ(plan.Programs(), (std::vector<std::string_view>{"submit_fentry"}));
  std::ostringstream out;
  PrintProbe({true, "ok", ""}, plan, out);
  EXPECT_NE(
      out.str().find("middle                          off      fentry     no        transport  "
                     "off: bpf.transport_stages is false\n"),
      std::string::npos)
      << out.str();
}

TEST(BpfProbeOutputTest, Unavailable) {
  std::ostringstream out;
  PrintProbe({false, "no_capability", "needs CAP_BPF"}, {}, out);
  EXPECT_EQ(out.str(), "bpf: unavailable (no_capability): needs CAP_BPF\n");
}

}  // namespace
}  // namespace nvmeof
