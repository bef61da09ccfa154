#include "collectors/bpf/kernel.h"

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdarg>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <mutex>

#include "block_legacy.skel.h"  // bpf/CMakeLists.txt: the builds without fetch atomics
#include "bpf/nvmeof_maps.h"
#include "collectors/base/files.h"
#include "collectors/base/log.h"
#include "collectors/bpf/options.h"
#include "collectors/kernel/block_queues.h"
#include "collectors/kernel/tracepoint_format.h"
#include "nvmeof_legacy.skel.h"
#include "record_legacy.skel.h"

namespace nvmeof {

namespace {
// The ELF of skeleton `name` built with NVMEOF_BPF_BEFORE_5_12; nullptr for objects
// that need none (lifecycle: no fetch atomics, no global functions).
const void* Before512Elf(std::string_view name, size_t* size) {
  if (name == "block_bpf") return block_legacy_bpf__elf_bytes(size);
  if (name == "nvmeof_bpf") return nvmeof_legacy_bpf__elf_bytes(size);
  if (name == "record_bpf") return record_legacy_bpf__elf_bytes(size);
  return nullptr;
}

int LibbpfPrint(enum libbpf_print_level level, const char* format, va_list args) {
  // NVMEOF_LIBBPF_LOG=1: libbpf's warnings (a refused load's verifier log) straight to stderr,
  // also from subcommands without --log.level (record, top).
  static const bool to_stderr = getenv("NVMEOF_LIBBPF_LOG") != nullptr;
  if (to_stderr && level != LIBBPF_DEBUG) return vfprintf(stderr, format, args);
  if (level == LIBBPF_DEBUG || !LogEnabled(LogLevel::kDebug)) return 0;
  // A verifier log says why at its end: keep its head and its tail.
  va_list copy;
  va_copy(copy, args);
  int n = vsnprintf(nullptr, 0, format, copy);
  va_end(copy);
  std::string buf(n < 0 ? 0 : static_cast<size_t>(n) + 1, '\0');
  if (n > 0) vsnprintf(buf.data(), buf.size(), format, args);
  std::string_view msg(buf.data(), n < 0 ? 0 : static_cast<size_t>(n));
  std::string cut;
  if (msg.size() > 4096) {
    cut = std::string(msg.substr(0, 1024)) + "\n...\n" + std::string(msg.substr(msg.size() - 3072));
    msg = cut;
  }
  while (!msg.empty() && msg.back() == '\n') msg.remove_suffix(1);
  LogDebug("libbpf", Kv("msg", msg));
  return n;
}
}  // namespace

bool BpfHasFetchAtomics() {
  static const bool have = [] {
    // *(u64 *)(r10 - 8) = 0; r0 = 0; r1 = 1; r0 = cmpxchg_64(r10 - 8, r0, r1); r0 = 0; exit
    const bpf_insn insns[] = {
        {BPF_ST | BPF_MEM | BPF_DW, BPF_REG_10, 0, -8, 0},
        {BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_0, 0, 0, 0},
        {BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_1, 0, 0, 1},
        {BPF_STX | BPF_ATOMIC | BPF_DW, BPF_REG_10, BPF_REG_1, -8, BPF_CMPXCHG},
        {BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_0, 0, 0, 0},
        {BPF_JMP | BPF_EXIT, 0, 0, 0, 0},
    };
    int fd = bpf_prog_load(BPF_PROG_TYPE_SOCKET_FILTER, "nvf_atomics", "GPL", insns,
                           sizeof(insns) / sizeof(insns[0]), nullptr);
    // Only the verifier's EINVAL says "no": without the rights to load anything, the objects'
    // own loads say why.
    const bool ok = fd >= 0 || errno != EINVAL;
    if (fd >= 0) close(fd);
    if (!ok) {
      LogInfo(
          "eBPF: the kernel has no BPF compare-and-swap (5.12+): loading the builds "
          "without it (claims by atomic add)",
          "");
    }
    return ok;
  }();
  return have;
}

int AdaptToKernel(bpf_object_skeleton* skeleton, const bpf_object_open_opts* opts) {
  size_t size = 0;
  const void* elf = BpfHasFetchAtomics() ? nullptr : Before512Elf(skeleton->name, &size);
  if (elf) {
    bpf_object__close(*skeleton->obj);
    *skeleton->obj = nullptr;
    skeleton->data = elf;
    skeleton->data_sz = size;
    if (int err = bpf_object__open_skeleton(skeleton, opts); err < 0) return err;
  }
  // Run-time allocated hash maps are safe in every program type from 6.1 (bpf_mem_alloc);
  // before, 5.x verifiers WARN ("trace type BPF program uses run-time allocation") for kprobe
  // and raw_tp programs. Preallocated, they reserve at load what bpf.map_memory_max sized.
  struct utsname u {};
  int major = 0, minor = 0;
  if (uname(&u) == 0 && sscanf(u.release, "%d.%d", &major, &minor) == 2 &&
      (major < 6 || (major == 6 && minor < 1))) {
    bpf_map* map = nullptr;
    bpf_object__for_each_map(map, *skeleton->obj) {
      const __u32 flags = bpf_map__map_flags(map);
      if (flags & BPF_F_NO_PREALLOC) bpf_map__set_map_flags(map, flags & ~BPF_F_NO_PREALLOC);
    }
  }
  return 0;
}

void InstallLibbpfLogger() {
  static std::once_flag once;
  std::call_once(once, [] { libbpf_set_print(LibbpfPrint); });
}

int LoadAndAttach(const bpf_object_skeleton* skeleton,
                  const std::vector<std::string_view>& programs, std::string* error) {
  auto wanted = [&](const char* name) {
    for (auto p : programs) {
      if (p == name) return true;
    }
    return false;
  };
  for (int i = 0; i < skeleton->prog_cnt; ++i) {
    const auto& ps = skeleton->progs[i];
    bpf_program__set_autoload(*ps.prog, wanted(ps.name));
  }
  int err = bpf_object__load(*skeleton->obj);
  if (err) {
    *error = "load: " + ErrnoName(err);
    return err < 0 ? err : -err;
  }
  for (int i = 0; i < skeleton->prog_cnt; ++i) {
    const auto& ps = skeleton->progs[i];
    if (!wanted(ps.name)) continue;
    bpf_link* link = bpf_program__attach(*ps.prog);
    if (!link) {
      err = -errno;
      *error = std::string("attach ") + ps.name + ": " + ErrnoName(err);
      return err;
    }
    *ps.link = link;
  }
  return 0;
}

void DetachPrograms(const bpf_object_skeleton* skeleton,
                    const std::vector<std::string_view>& programs) {
  for (int i = 0; i < skeleton->prog_cnt; ++i) {
    const auto& ps = skeleton->progs[i];
    if (std::find(programs.begin(), programs.end(), ps.name) == programs.end() || !*ps.link) {
      continue;
    }
    bpf_link__destroy(*ps.link);
    *ps.link = nullptr;
  }
}

KernelProber::KernelProber(Paths paths, Trial trial)
    : paths_(std::move(paths)), trial_(std::move(trial)) {}

KernelProber::~KernelProber() {
  for (auto& [name, b] : modules_) btf__free(b);
  btf__free(vmlinux_);
}

struct btf* KernelProber::Btf(std::string_view module) {
  if (!vmlinux_tried_) {
    vmlinux_tried_ = true;
    std::string path = paths_.sysfs + "/kernel/btf/vmlinux";
    if (Exists(path)) {
      vmlinux_ = btf__parse(path.c_str(), nullptr);  // nullptr on error (libbpf >= 1.0)
    }
  }
  if (!vmlinux_ || module.empty()) return vmlinux_;
  for (auto& [name, b] : modules_) {
    if (name == module) return b;
  }
  // A built-in "module" has no BTF file of its own: its types are in vmlinux.
  std::string path = paths_.sysfs + "/kernel/btf/" + std::string(module);
  if (!Exists(path)) return vmlinux_;
  struct btf* b = btf__parse_split(path.c_str(), vmlinux_);
  modules_.emplace_back(std::string(module), b);
  return b;
}

std::string KernelProber::MissingModuleBtf(std::string_view module) const {
  if (module.empty() || !Exists(paths_.sysfs + "/kernel/btf/vmlinux")) return "";
  const std::string m(module);
  // A loadable module has an initstate; a built-in one's types are in vmlinux.
  if (!Exists(paths_.sysfs + "/module/" + m + "/initstate") ||
      Exists(paths_.sysfs + "/kernel/btf/" + m))
    return "";
  return "no BTF for module " + m + " (CONFIG_DEBUG_INFO_BTF_MODULES, Linux 5.11+)";
}

bool KernelProber::KprobesSupported() const {
  // libbpf attaches kprobes through the perf "kprobe" PMU, else tracefs kprobe_events.
  return Exists(paths_.sysfs + "/bus/event_source/devices/kprobe/type") ||
         Exists(paths_.sysfs + "/kernel/tracing/kprobe_events") ||
         Exists(paths_.sysfs + "/kernel/debug/tracing/kprobe_events");
}

bool KernelProber::KallsymsHas(std::string_view symbol) {
  if (!kallsyms_read_) {  // once per prober: /proc/kallsyms has ~150k lines
    kallsyms_read_ = true;
    std::ifstream in(paths_.procfs + "/kallsyms");
    std::string line;
    while (std::getline(in, line)) {
      // "ffffffff81b47cb0 T blk_mq_start_request [module]"
      auto sp = line.find(' ', 17);
      if (sp == std::string::npos) continue;
      std::string_view name = std::string_view(line).substr(sp + 1);
      kallsyms_.emplace(name.substr(0, name.find_first_of(" \t")));
    }
  }
  return kallsyms_.count(std::string(symbol)) != 0;
}

std::string KernelProber::Probe(const HookSpec& hook, const Variant& v) {
  std::string target(v.target);
  if (v.accounted) {  // a kernel without it is no finding (PlanAttach): the reason is logged
    std::string why;
    struct btf* b = Btf("");
    if (!b) {
      why = "no kernel BTF to find tracepoint " + target + " in";
    } else if (btf__find_by_name_kind(b, ("btf_trace_" + target).c_str(), BTF_KIND_TYPEDEF) < 0) {
      why = "tracepoint " + target + " not in BTF (Linux 6.5+)";
    } else if (auto off = DisksWithoutIostats(paths_.sysfs); !off.empty()) {
      why =
          "queue/iostats is 0 on " + off[0] + ": the kernel skips " + target + " for its requests";
    }
    if (!why.empty()) {
      LogInfo("eBPF hook ends at the next variant's point",
              Kv("hook", hook.name) + " " + Kv("variant", v.program) + " " + Kv("why", why));
      return why;
    }
  }
  if (!v.kfunc.empty()) {
    struct btf* b = Btf("");
    if (!b) return "no kernel BTF";
    if (btf__find_by_name_kind(b, std::string(v.kfunc).c_str(), BTF_KIND_FUNC) < 0)
      return "kfunc " + std::string(v.kfunc) + " not in the kernel's BTF";
  }
  switch (v.mechanism) {
    case Mechanism::kFentry: {
      struct btf* b = Btf(hook.module);
      if (!b)
        return hook.module.empty() ? "no kernel BTF" : "no BTF for " + std::string(hook.module);
      if (auto why = MissingModuleBtf(hook.module); !why.empty()) return why;
      if (btf__find_by_name_kind(b, target.c_str(), BTF_KIND_FUNC) < 0) {
        return target + " not in BTF";
      }
      break;
    }
    case Mechanism::kKprobe:
      if (!KprobesSupported()) return "no kprobe support";
      if (!KallsymsHas(target)) return target + " not in kallsyms";
      break;
    case Mechanism::kTpBtf: {
      struct btf* b = Btf(hook.module);
      if (!b) return "no kernel BTF";
      if (auto why = MissingModuleBtf(hook.module); !why.empty()) return why;
      if (btf__find_by_name_kind(b, ("btf_trace_" + target).c_str(), BTF_KIND_TYPEDEF) < 0) {
        return "tracepoint " + target + " not in BTF";
      }
      break;
    }
    case Mechanism::kRawTp:
      break;  // no cheap check without tracefs; the trial tells
    case Mechanism::kTracepoint: {
      std::string why;
      const auto format = ReadTracepointFormat(paths_.sysfs, target, &why);
      if (format.empty()) return why;
      for (std::string_view rest = v.fields; !rest.empty();) {
        const auto comma = rest.find(',');
        const std::string field(rest.substr(0, comma));
        rest.remove_prefix(comma == std::string_view::npos ? rest.size() : comma + 1);
        if (!format.count(field)) return "tracepoint " + target + ": no field " + field;
      }
      break;
    }
  }
  std::string error;
  auto t0 = std::chrono::steady_clock::now();
  if (trial_(v, &error) >= 0) {
    error.clear();
  } else if (auto why = MissingModuleBtf(hook.module); !why.empty()) {
    // kprobe and raw_tp programs of a module's hooks read its types through CO-RE.
    error += ": " + why;
  }
  LogDebug("eBPF trial load",
           Kv("program", v.program) + " " + Kv("error", error) + " " +
               Kv("ms", std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(
                                           std::chrono::steady_clock::now() - t0)
                                           .count())));
  return error;
}

bool ReadProgramStats(const bpf_program* program, ProgramStats* stats) {
  int fd = bpf_program__fd(program);
  if (fd < 0) return false;
  bpf_prog_info info{};
  __u32 len = sizeof(info);
  if (bpf_obj_get_info_by_fd(fd, &info, &len) != 0) return false;
  stats->run_count = info.run_cnt;
  stats->run_time_ns = info.run_time_ns;
  stats->recursion_misses = info.recursion_misses;
  // The kernel writes the fields it has and sets len to their size.
  stats->recursion_known =
      len >= offsetof(bpf_prog_info, recursion_misses) + sizeof(info.recursion_misses);
  return true;
}

bool BpfStatsSysctlEnabled(const Paths& paths) {
  auto v = ReadU64(paths.procfs + "/sys/kernel/bpf_stats_enabled");
  return v && *v != 0;
}

UniqueFd EnableRunTimeStats() {
  const int fd = bpf_enable_stats(BPF_STATS_RUN_TIME);
  if (fd < 0) {
    LogWarn("cannot enable BPF run-time stats", Kv("err", ErrnoName(fd)));
    return UniqueFd();
  }
  return UniqueFd(fd);
}

std::vector<MapSize> LoadedMapSizes(const bpf_object* obj, std::string_view part,
                                    std::string_view skip_prefix) {
  std::vector<MapSize> sizes;
  const int ncpus = libbpf_num_possible_cpus();
  std::uint64_t total = 0;
  const bpf_map* map = nullptr;
  bpf_object__for_each_map(map, obj) {
    if (bpf_map__is_internal(map)) continue;
    if (!skip_prefix.empty() && std::string_view(bpf_map__name(map)).starts_with(skip_prefix))
      continue;
    const bpf_map_type type = bpf_map__type(map);
    const bool percpu = type == BPF_MAP_TYPE_PERCPU_HASH || type == BPF_MAP_TYPE_PERCPU_ARRAY ||
                        type == BPF_MAP_TYPE_LRU_PERCPU_HASH;
    const std::uint64_t value = bpf_map__value_size(map);
    const std::uint64_t bytes =
        std::uint64_t{bpf_map__max_entries(map)} *
        (bpf_map__key_size(map) + (percpu ? value * static_cast<std::uint64_t>(ncpus) : value));
    sizes.push_back({bpf_map__name(map), bytes, std::nullopt});
    total += bytes;
  }
  LogInfo("eBPF maps (most memory they can take)",
          Kv("part", part) + " " + Kv("maps", std::to_string(sizes.size())) + " " +
              Kv("bytes", std::to_string(total)) + " " + Kv("cpus", std::to_string(ncpus)));
  return sizes;
}

void AddCountSlots(const std::vector<nvmeof_count_slot>& percpu, CountsByKey* counts) {
  for (const auto& slot : percpu) {
    if ((slot.tag & 1) == 0 || slot.count == 0) continue;
    CountKey key;
    std::copy(std::begin(slot.key), std::end(slot.key), key.begin());
    (*counts)[key] += slot.count;
  }
}

bool ReadCountSlots(int map_fd, int ncpus, CountsByKey* counts) {
  std::vector<nvmeof_count_slot> percpu(static_cast<size_t>(ncpus));
  for (std::uint32_t i = 0; i < NVMEOF_COUNT_SLOTS; ++i) {
    if (bpf_map_lookup_elem(map_fd, &i, percpu.data()) != 0) return false;
    AddCountSlots(percpu, counts);
  }
  return true;
}

bool ShareMaps(bpf_object* mine, const bpf_object* theirs, std::string* error, bool only_common) {
  bpf_map* map = nullptr;
  bpf_object__for_each_map(map, mine) {
    if (bpf_map__is_internal(map)) continue;
    const bpf_map* same = bpf_object__find_map_by_name(theirs, bpf_map__name(map));
    if (!same && only_common) continue;
    int err = same ? bpf_map__reuse_fd(map, bpf_map__fd(same)) : -ENOENT;
    if (err) {
      *error = std::string("reuse map ") + bpf_map__name(map) + ": " + ErrnoName(err);
      return false;
    }
  }
  return true;
}

void SizeNvmeofStageMaps(bpf_object* obj, const BpfOptions& bpf) {
  // bpf.map_memory_max split by what an entry holds: the stages and the end to end in nv_paths,
  // or the stages in nv_paths (6/7) and one end-to-end histogram per series in nv_hists (1/7).
  const int cpus = libbpf_num_possible_cpus();
  const bool together = NvmeofTotalInPaths(bpf);
  bpf_map__set_max_entries(
      bpf_object__find_map_by_name(obj, "nv_paths"),
      HistMapEntries(together ? bpf.map_memory_max : bpf.map_memory_max / 7 * 6,
                     sizeof(nvmeof_series), sizeof(nvmeof_path_hists), cpus, 16,
                     NVMEOF_SERIES_MAX));
  bpf_map__set_max_entries(bpf_object__find_map_by_name(obj, "nv_hists"),
                           together
                               ? 1
                               : HistMapEntries(bpf.map_memory_max / 7, sizeof(nvmeof_series),
                                                sizeof(nvmeof_hist), cpus, 16, NVMEOF_SERIES_MAX));
}

void ReadNames(int map_fd, std::vector<std::pair<std::uint64_t, std::string>>* names) {
  std::uint64_t id = 0, next = 0;
  const void* prev = nullptr;
  char name[NVMEOF_NQN_SIZE];
  while (bpf_map_get_next_key(map_fd, prev, &next) == 0) {
    id = next;
    prev = &id;
    if (bpf_map_lookup_elem(map_fd, &id, name) != 0) continue;
    name[NVMEOF_NQN_SIZE - 1] = '\0';
    names->emplace_back(id, name);
  }
}

void ForgetCountSlots(int map_fd, int ncpus, const std::vector<std::uint64_t>& ids) {
  std::vector<nvmeof_count_slot> percpu(static_cast<size_t>(ncpus));
  for (std::uint32_t i = 0; i < NVMEOF_COUNT_SLOTS; ++i) {
    if (bpf_map_lookup_elem(map_fd, &i, percpu.data()) != 0) return;
    // An update writes every CPU's copy of slot i: only when none holds a live key, so no
    // increment of one can be lost between this read and that write.
    bool doomed = false, live = false;
    for (const auto& slot : percpu) {
      const bool gone = std::find(ids.begin(), ids.end(), slot.key[0]) != ids.end();
      doomed |= slot.tag != 0 && gone;
      live |= slot.tag != 0 && !gone;
    }
    if (!doomed || live) continue;
    std::fill(percpu.begin(), percpu.end(), nvmeof_count_slot{});
    bpf_map_update_elem(map_fd, &i, percpu.data(), BPF_ANY);
  }
}

}  // namespace nvmeof
