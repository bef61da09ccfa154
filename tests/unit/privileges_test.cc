// The capability drop after start-up: what is kept for which options, and the drop itself on
// every thread of a real process (a forked child, so this test process keeps its own sets).
#include "exporter/privileges.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

namespace nvmeof {
namespace {

constexpr CapMask kBpfPerfmon = (CapMask{1} << 39) | (CapMask{1} << 38);
constexpr CapMask kNetAdmin = CapMask{1} << 12;
constexpr CapMask kSysAdmin = CapMask{1} << 21;

Options WithCollectors(bool bpf, bool rdma_netlink) {
  Options o;
  o.collectors = {{"bpf", bpf}, {"rdma_netlink", rdma_netlink}, {"rdma", true}};
  return o;
}

TEST(Privileges, KeepsWhatTheModuleWatcherNeeds) {
  // CAP_SYS_ADMIN where held: module BTF (DropCapabilities intersects with what is held).
  EXPECT_EQ(CapabilitiesToKeep(WithCollectors(true, true), 40), kBpfPerfmon | kSysAdmin);
  // Before CAP_BPF (Linux 5.8) only CAP_SYS_ADMIN loads tracing programs.
  EXPECT_EQ(CapabilitiesToKeep(WithCollectors(true, true), 37), kSysAdmin);
  EXPECT_EQ(CapabilitiesToKeep(WithCollectors(false, true), 40), 0U);
}

TEST(Privileges, NetAdminOnlyForConfiguredOptionalCounters) {
  Options o = WithCollectors(false, true);
  o.collector.rdma_netlink.enable_optional_counters = {"cc_rx_ce_pkts"};
  EXPECT_EQ(CapabilitiesToKeep(o, 40), kNetAdmin);
  o.collectors["rdma_netlink"] = false;  // configured but the collector is off
  EXPECT_EQ(CapabilitiesToKeep(o, 40), 0U);
  o.collectors["bpf"] = true;
  o.collectors["rdma_netlink"] = true;
  EXPECT_EQ(CapabilitiesToKeep(o, 40), kBpfPerfmon | kSysAdmin | kNetAdmin);
}

TEST(Privileges, NamesAsCapshPrintsThem) {
  EXPECT_EQ(CapNames(kBpfPerfmon), "cap_perfmon,cap_bpf");
  EXPECT_EQ(CapNames(kNetAdmin | 1), "cap_chown,cap_net_admin");
  EXPECT_EQ(CapNames(CapMask{1} << 45), "cap_45");
  EXPECT_EQ(CapNames(0), "");
}

CapMask StatusMask(const std::string& path, const std::string& key) {
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key + ":\t", 0) == 0)
      return std::strtoull(line.c_str() + key.size() + 2, nullptr, 16);
  }
  return ~CapMask{0};
}

// In a child: threads blocked in read(2) and one spinning; drop to two capabilities; every
// thread, and one made afterwards, has exactly those; the blocked reads resume (SA_RESTART)
// and get their byte instead of EINTR. Exit status 0 or the number of the failed step.
int ChildDrop() {
  constexpr CapMask kKeep = (CapMask{1} << 10) | (CapMask{1} << 5);  // net_bind_service, kill
  int fds[2];
  if (pipe(fds) != 0) return 10;
  std::vector<std::thread> threads;
  std::vector<int> got(3, -1);
  for (int i = 0; i < 3; ++i) {
    threads.emplace_back([&, i] {
      char c = 0;
      got[i] = static_cast<int>(read(fds[0], &c, 1));
    });
  }
  usleep(100 * 1000);  // let them block in read
  CapDropResult r = DropCapabilities(kKeep);
  if (!r.ok) return 11;
  if (r.kept != kKeep || r.threads != 4) return 12;
  int checked = 0;
  std::thread later([&] {
    const std::string self = "/proc/thread-self/status";
    checked = StatusMask(self, "CapEff") == kKeep && StatusMask(self, "CapPrm") == kKeep;
  });
  later.join();
  if (!checked) return 13;
  if (write(fds[1], "abc", 3) != 3) return 14;
  for (auto& t : threads) t.join();
  for (int n : got) {
    if (n != 1) return 15;
  }
  // The permitted set is the ceiling: what was dropped cannot come back.
  if (StatusMask("/proc/self/status", "CapPrm") != kKeep) return 16;
  return 0;
}

TEST(Privileges, DropReachesEveryThread) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root (capabilities to drop)";
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) _exit(ChildDrop());
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status)) << "child ended by signal " << WTERMSIG(status);
  EXPECT_EQ(WEXITSTATUS(status), 0) << "failed step (see ChildDrop)";
}

}  // namespace
}  // namespace nvmeof
