#include "exporter/privileges.h"

#include <linux/capability.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <iterator>
#include <optional>
#include <set>
#include <string_view>
#include <thread>

#include "base/fd.h"
#include "base/files.h"
#include "base/log.h"

namespace nvmeof {

namespace {

// The target every thread applies to itself, written before any signal is sent (the
// signal's delivery orders it before the handler's reads).
struct Target {
  CapMask keep = 0;
  int last_cap = 0;
};
Target g_target;
std::atomic<int> g_answered{0};
std::atomic<int> g_failed_errno{0};

int Capget(CapMask* permitted) {
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2] = {};
  if (syscall(SYS_capget, &header, data) != 0) return errno;
  *permitted = (CapMask{data[1].permitted} << 32) | data[0].permitted;
  return 0;
}

// Async-signal-safe: only raw system calls. Returns 0 or an errno.
int ApplyToThisThread() {
  const Target t = g_target;
  // Ambient capabilities only matter across execve, which the exporter never does; cleared so
  // nothing survives one anyway. EINVAL on kernels before 4.3 (no ambient set): nothing to do.
  prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2] = {};
  if (syscall(SYS_capget, &header, data) != 0) return errno;
  // The bounding set needs CAP_SETPCAP to shrink (root has it; file capabilities usually not).
  if (data[0].effective & CapBit(kCapSetpcap)) {
    for (int c = 0; c <= t.last_cap && c < 64; ++c) {
      if (!(t.keep & CapBit(c)) && prctl(PR_CAPBSET_READ, c, 0, 0, 0) == 1 &&
          prctl(PR_CAPBSET_DROP, c, 0, 0, 0) != 0) {
        return errno;
      }
    }
  }
  const CapMask held = (CapMask{data[1].permitted} << 32) | data[0].permitted;
  const CapMask effective = (CapMask{data[1].effective} << 32) | data[0].effective;
  const bool inheritable = data[0].inheritable || data[1].inheritable;
  const CapMask want = held & t.keep;
  // Already there: no capset (a seccomp filter without it, e.g. an older unit, then still works).
  if (held == want && effective == want && !inheritable) return 0;
  for (int i = 0; i < 2; ++i) {
    data[i].permitted = data[i].effective = static_cast<std::uint32_t>(want >> (32 * i));
    data[i].inheritable = 0;
  }
  header = {_LINUX_CAPABILITY_VERSION_3, 0};
  if (syscall(SYS_capset, &header, data) != 0) return errno;
  return 0;
}

void OnDropSignal(int) {
  const int saved = errno;
  if (int err = ApplyToThisThread()) g_failed_errno.store(err);
  g_answered.fetch_add(1);
  errno = saved;
}

std::set<pid_t> ThreadIds() {
  std::set<pid_t> tids;
  for (const auto& name : ListDir("/proc/self/task")) {
    if (auto tid = ParseU64(name)) tids.insert(static_cast<pid_t>(*tid));
  }
  return tids;
}

// "CapPrm:\t0000000000000000" lines of one thread's status.
bool ThreadSets(pid_t tid, CapMask* permitted, CapMask* effective, CapMask* ambient) {
  auto text = ReadFile("/proc/self/task/" + std::to_string(tid) + "/status");
  if (!text) return false;
  auto field = [&](std::string_view key, CapMask* out) {
    auto v = ParseCapLine(*text, key);
    if (!v) return key == "CapAmb" && text->find("CapAmb:") == std::string::npos;  // before 4.3
    *out = *v;
    return true;
  };
  *ambient = 0;
  return field("CapPrm", permitted) && field("CapEff", effective) && field("CapAmb", ambient);
}

int LastCap() {
  auto v = ReadFile("/proc/sys/kernel/cap_last_cap");
  auto n = v ? ParseU64(*v) : std::nullopt;
  return n ? static_cast<int>(*n) : kCapBpf;
}

}  // namespace

CapMask CapabilitiesToKeep(const Options& options, int cap_last_cap) {
  CapMask keep = 0;
  auto enabled = [&](const char* name) {
    auto it = options.collectors.find(name);
    return it != options.collectors.end() && it->second;
  };
  // The watcher attaches hooks of NVMe-oF modules loaded later for as long as the exporter runs.
  // CAP_SYS_ADMIN too, where held: libbpf opens module BTF objects (BPF_BTF_GET_FD_BY_ID, which
  // needs it on every kernel) for CO-RE relocations against module types (nvmet's structs) and
  // for fentry/tp_btf in modules; without it the 6.12 VM's hotload attached no target hook
  // (load: EPERM for each mechanism). Before Linux 5.8 it is the only way to load at all.
  if (enabled("bpf")) {
    keep |= CapBit(kCapSysAdmin);
    if (cap_last_cap >= kCapBpf) keep |= CapBit(kCapBpf) | CapBit(kCapPerfmon);
  }
  if (enabled("rdma_netlink") && !options.collector.rdma_netlink.enable_optional_counters.empty())
    keep |= CapBit(kCapNetAdmin);
  return keep;
}

CapDropResult DropCapabilities(CapMask keep) {
  CapDropResult r;
  CapMask before = 0;
  if (int err = Capget(&before)) {
    r.error = "capget: " + ErrnoName(err);
    return r;
  }
  g_target = {keep, LastCap()};
  g_answered.store(0);
  g_failed_errno.store(0);
  const int sig = SIGRTMIN + 2;  // glibc keeps the ones below SIGRTMIN; nothing here uses this
  struct sigaction action = {};
  action.sa_handler = OnDropSignal;
  action.sa_flags = SA_RESTART;  // the other threads' blocking calls resume afterwards
  sigemptyset(&action.sa_mask);
  // The handler stays installed: a late delivery (a thread that was slow to answer) then
  // applies the same, idempotent drop instead of the default action of ending the process.
  if (sigaction(sig, &action, nullptr) != 0) {
    r.error = "sigaction: " + ErrnoName(errno);
    return r;
  }
  if (int err = ApplyToThisThread()) {
    r.error = "this thread: " + ErrnoName(err);
    return r;
  }
  // Threads made meanwhile by a thread not yet dropped show up in the next listing; threads
  // made by a dropped one inherit its sets. So: signal, wait, list again until none is new.
  const pid_t self = static_cast<pid_t>(syscall(SYS_gettid));
  std::set<pid_t> done{self};
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  int sent = 0;
  for (;;) {
    bool any = false;
    for (pid_t tid : ThreadIds()) {
      if (!done.insert(tid).second) continue;
      if (syscall(SYS_tgkill, getpid(), tid, sig) == 0) {
        ++sent;
        any = true;
      }  // else ESRCH: it ended in between
    }
    if (!any) break;
    while (g_answered.load() < sent && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    if (g_answered.load() < sent) {
      r.error = std::to_string(sent - g_answered.load()) + " thread(s) did not answer in 5 s";
      return r;
    }
  }
  if (int err = g_failed_errno.load()) {
    r.error = "capset in another thread: " + ErrnoName(err);
    return r;
  }
  // Read back what the kernel reports for every thread, rather than trusting the calls.
  const CapMask want = before & keep;
  for (pid_t tid : ThreadIds()) {
    CapMask prm = 0, eff = 0, amb = 0;
    if (!ThreadSets(tid, &prm, &eff, &amb)) continue;  // ended in between
    if (prm != want || eff != want || amb != 0) {
      r.error = "thread " + std::to_string(tid) + " still has permitted " + CapNames(prm) +
                " effective " + CapNames(eff);
      return r;
    }
    ++r.threads;
  }
  r.ok = true;
  r.kept = want;
  r.dropped = before & ~want;
  return r;
}

void DropCapabilitiesAfterStartup(const Options& options) {
  const CapMask keep = CapabilitiesToKeep(options, LastCap());
  const CapDropResult r = DropCapabilities(keep);
  if (!r.ok) {
    LogWarn("cannot drop capabilities after start-up; running with those granted",
            Kv("err", r.error) + " " + Kv("wanted", CapNames(keep)));
    return;
  }
  LogInfo("capabilities after start-up", Kv("kept", CapNames(r.kept)) + " " +
                                             Kv("dropped", CapNames(r.dropped)) + " " +
                                             Kv("threads", std::to_string(r.threads)));
}

}  // namespace nvmeof
