// The libbpf-facing part of the attach layer: move-only RAII owners for skeletons and file
// descriptors, loading a skeleton with exactly the chosen programs, the real VariantProber,
// and per-program run statistics. Only built with NVMEOF_BPF (needs libbpf).
#pragma once

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <array>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <unordered_set>
#include <utility>
#include <vector>

#include "base/fd.h"
#include "bpf/count_cache.h"
#include "bpf/sample.h"  // the loaders set their objects' sample_every_hash_limit
#include "loader/attach.h"

namespace nvmeof {

// Owns a bpftool-generated skeleton (S is e.g. block_bpf): destroy() detaches every link,
// unloads the programs and frees the maps.
template <typename S>
class Skeleton {
 public:
  Skeleton() = default;
  explicit Skeleton(S* s) : s_(s) {}
  ~Skeleton() { reset(); }
  Skeleton(Skeleton&& other) noexcept : s_(std::exchange(other.s_, nullptr)) {}
  Skeleton& operator=(Skeleton&& other) noexcept {
    if (this != &other) {
      reset();
      s_ = std::exchange(other.s_, nullptr);
    }
    return *this;
  }
  Skeleton(const Skeleton&) = delete;
  Skeleton& operator=(const Skeleton&) = delete;

  S* get() const { return s_; }
  S* operator->() const { return s_; }
  explicit operator bool() const { return s_ != nullptr; }
  void reset() {
    if (s_) S::destroy(std::exchange(s_, nullptr));
  }

 private:
  S* s_ = nullptr;
};

// Routes libbpf's messages to the debug log (once per process).
void InstallLibbpfLogger();

// True when the running kernel's verifier takes BPF compare-and-swap and exchange (5.12+, the
// release that also took pointer arguments in global functions); probed once with a
// 6-instruction program.
bool BpfHasFetchAtomics();

// Adapts an opened skeleton to the running kernel: before 5.12, reopens it from its build for
// those kernels (NVMEOF_BPF_BEFORE_5_12: no fetch atomics, which they refuse with "BPF_STX uses
// reserved fields"); before 6.1, preallocates its hash maps (kprobe and raw_tp programs with a
// run-time allocated one make those verifiers WARN, tainting the kernel). 0 or -errno.
int AdaptToKernel(bpf_object_skeleton* skeleton, const bpf_object_open_opts* opts);

// Opens skeleton S (bpftool's S::open) with CO-RE against `btf_path` ("" = the running
// kernel's BTF), adapted to the running kernel (AdaptToKernel); empty with *error set on
// failure.
template <typename S>
Skeleton<S> OpenSkeleton(const std::string& btf_path, std::string* error) {
  LIBBPF_OPTS(bpf_object_open_opts, opts);
  if (!btf_path.empty()) opts.btf_custom_path = btf_path.c_str();
  Skeleton<S> skel(S::open(&opts));
  if (!skel) {
    *error = "open: " + ErrnoName(errno);
  } else if (int err = AdaptToKernel(skel->skeleton, &opts); err < 0) {
    *error = "open (build for kernels before 5.12): " + ErrnoName(-err);
    skel.reset();
  }
  return skel;
}

// Enables exactly `programs` (by name) of an opened skeleton, loads it and attaches them,
// storing the links in the skeleton so destroy() detaches them. Returns 0 or -errno with
// *error saying which step failed ("load: EPERM", "attach nvf_cpl_tp_btf: ENOENT").
int LoadAndAttach(const bpf_object_skeleton* skeleton,
                  const std::vector<std::string_view>& programs, std::string* error);

// Destroys the links of `programs` (by name) in a loaded skeleton; the programs stay loaded.
void DetachPrograms(const bpf_object_skeleton* skeleton,
                    const std::vector<std::string_view>& programs);

// Real VariantProber: static checks first (kernel BTF has the function or tracepoint, kprobes
// exist, kallsyms has the symbol), then `trial` loads and attaches that one program.
class KernelProber : public VariantProber {
 public:
  using Trial = std::function<int(const Variant& variant, std::string* error)>;
  KernelProber(Paths paths, Trial trial);
  ~KernelProber() override;  // frees the BTF objects it owns: not copyable
  KernelProber(const KernelProber&) = delete;
  KernelProber& operator=(const KernelProber&) = delete;
  std::string Probe(const HookSpec& hook, const Variant& variant) override;
  // "no BTF for module M (...)" when M is a loaded module without its own BTF while the kernel
  // has BTF (before 5.11, CONFIG_DEBUG_INFO_BTF_MODULES); "" otherwise (built in, or has it).
  std::string MissingModuleBtf(std::string_view module) const;

 private:
  struct btf* Btf(std::string_view module);  // kernel BTF (+ module split BTF); nullptr if none
  bool KprobesSupported() const;
  bool KallsymsHas(std::string_view symbol);

  Paths paths_;
  Trial trial_;

  std::unordered_set<std::string> kallsyms_;
  bool kallsyms_read_ = false;
  struct btf* vmlinux_ = nullptr;
  bool vmlinux_tried_ = false;
  std::vector<std::pair<std::string, struct btf*>> modules_;
};

// BPF_ENABLE_STATS(BPF_STATS_RUN_TIME): run_count/run_time_ns move while the returned fd is
// open. Invalid (and one warning logged) when the kernel refuses.
UniqueFd EnableRunTimeStats();

// Most memory each map of a loaded object can take (MapSize) (not .rodata and the like), and one
// info line in the log with their sum, naming `part` ("block", "nvmeof"). Maps named with
// `skip_prefix` are another part's (shared with it) and left out.
std::vector<MapSize> LoadedMapSizes(const bpf_object* obj, std::string_view part,
                                    std::string_view skip_prefix = {});

bool ReadProgramStats(const bpf_program* program, ProgramStats* stats);

// True when kernel.bpf_stats_enabled is set system-wide (someone else enabled stats).
bool BpfStatsSysctlEnabled(const Paths& paths);

// Walks a per-CPU hash map: fn(key, values of every possible CPU) for each entry still there
// when looked up (entries deleted meanwhile are passed over).
template <typename K, typename V, typename Fn>
void ForEachPerCpu(int map_fd, int ncpus, Fn fn) {
  std::vector<V> percpu(static_cast<size_t>(ncpus));
  K key{}, next{};
  const void* prev = nullptr;
  while (bpf_map_get_next_key(map_fd, prev, &next) == 0) {
    key = next;
    prev = &key;
    if (bpf_map_lookup_elem(map_fd, &key, percpu.data()) == 0) fn(key, percpu);
  }
}

// Exact counts of a per-CPU count-slot array (bpf/count_cache.h): owned slots (odd tag), summed
// over CPUs by key. AddCountSlots adds one slot's per-CPU values; ReadCountSlots all slots
// (false if the map cannot be read).
using CountKey = std::array<std::uint64_t, NVMEOF_COUNT_KEY_WORDS>;
using CountsByKey = std::map<CountKey, std::uint64_t>;
void AddCountSlots(const std::vector<nvmeof_count_slot>& percpu, CountsByKey* counts);
bool ReadCountSlots(int map_fd, int ncpus, CountsByKey* counts);

// Adds a per-CPU count hash's entries (summed over CPUs) to `counts` under their key's words:
// the counts of keys whose slot another owns. Returns how many entries it read.
template <typename K>
std::size_t AddPerCpuCounts(int map_fd, int ncpus, CountsByKey* counts) {
  static_assert(sizeof(K) <= sizeof(CountKey), "a key of at most NVMEOF_COUNT_KEY_WORDS words");
  std::size_t entries = 0;
  ForEachPerCpu<K, std::uint64_t>(map_fd, ncpus, [&](const K& key, const auto& percpu) {
    CountKey k{};
    std::memcpy(k.data(), &key, sizeof key);
    for (auto v : percpu) (*counts)[k] += v;
    ++entries;
  });
  return entries;
}

// Makes the opened, not yet loaded object `mine` use the maps of the loaded object `theirs` with
// the same names (not .rodata and .bss: set per object): another instance of an object, loaded
// for the hooks of a module that came later, counts into the first one's maps. False with
// *error ("reuse map NAME: ERRNO") when one cannot be shared. only_common: share the maps both
// objects have and leave `mine`'s others alone (another object sharing part of its maps).
bool ShareMaps(bpf_object* mine, const bpf_object* theirs, std::string* error,
               bool only_common = false);

// The NVMe-oF stage maps that block.bpf.c shares with nvmeof.bpf.c (bpf/nvmeof_inflight.bpf.h):
// sizes nv_paths and nv_hists of an opened object from bpf.map_memory_max and the CPU count
// (nvmeof_loader.cc).
void SizeNvmeofStageMaps(bpf_object* obj, const BpfOptions& bpf);

// Appends each (id, name) of an id -> name hash (nv_names, rec_names: NUL-terminated strings of
// up to NVMEOF_NQN_SIZE bytes).
void ReadNames(int map_fd, std::vector<std::pair<std::uint64_t, std::string>>* names);

// Frees the slots whose key is `doomed` (the series of a disk or subsystem that went away: its
// address may come back as another's).
void ForgetCountSlots(int map_fd, int ncpus, const std::function<bool(const CountKey&)>& doomed);

}  // namespace nvmeof
