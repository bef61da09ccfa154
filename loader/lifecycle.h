// Connection lifecycle (bpf/lifecycle.bpf.c): the hook table, the decoding of its counter keys
// into bounded label values, and the loader. Every hook is optional and gated on its module;
// hooks of modules loaded later are attached by the source's watcher thread, and detached when
// the module goes (kprobes, the first choice, do not pin it: `rmmod` works).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/collector.h"
#include "base/metric_sink.h"
#include "bpf/lifecycle_maps.h"
#include "loader/attach.h"

namespace nvmeof {

const std::vector<HookSpec>& LifecycleHooks();
// The hooks of `module` to plan: its classic tracepoint hooks (without_module_btf) only when it
// has no BTF of its own.
std::vector<HookSpec> LifecycleModuleHooks(std::string_view module, bool module_btf);

// The record fields the classic tracepoint programs read (bpf/lifecycle_tp.bpf.h), by the names
// in their format files.
inline constexpr std::string_view kLcTargetInitFields = "cid,opcode,fctype,cdw10";
inline constexpr std::string_view kLcTargetDoneFields = "qid,cid,result,status";

// Bounded label values; anything not in the tables is "other".
std::string_view CmEventName(std::uint32_t event);  // established, rejected, ... (snake_case)
// The `status` of a CM event: the IB CM reject reason for `rejected` (consumer_defined,
// invalid_service_id, ...), else an errno name (ETIMEDOUT) or ok for 0.
std::string CmEventStatus(std::uint32_t event, std::int32_t status);
std::string_view CtrlStateName(std::uint32_t state);  // new live ... dead; else unknown
// An ANA state (NVME_ANA_*, the log page's values) as the kernel names it in sysfs (ana_state,
// so the same values as nvmeof_path_ana_state): optimized, non-optimized, inaccessible,
// persistent-loss, change; else other.
std::string_view AnaStateName(std::uint32_t state);
// ECONNREFUSED, ETIMEDOUT, ... for a negative errno (the table of common connect errors);
// "other" for the rest.
std::string ErrnoLabel(std::int32_t negative_errno);
// NVMe status (SCT << 8 | SC) of a Connect: invalid_host, controller_busy, ... (snake_case);
// result: the completion's dword 0, whose IATTR tells invalid_subsystem from another invalid
// parameter. 0 is success.
std::string_view ConnectStatusName(std::uint32_t status, std::uint32_t result);

// A connect failure's target address, from `nvme connect`'s option string or the fields of a
// reconnect (NVMEOF_LC_OPTS_*). Values that are not plain addresses become "other".
// A plain address or service id (IPv4/IPv6/FC names, port numbers), else "other".
std::string PlainAddress(std::string_view v);
// A NUL-padded name of a map key or value, up to `max` bytes.
std::string_view LcString(const char* p, std::size_t max);

struct ConnectTarget {
  std::string transport, traddr, trsvcid;
};
ConnectTarget ParseConnectTarget(const nvmeof_lc_key& key);

struct LifecycleSnapshot {
  std::vector<std::pair<nvmeof_lc_key, std::uint64_t>> counts;
  std::vector<nvmeof_lc_ctrl> ctrls;
  std::uint64_t lost[NVMEOF_LC_LOST_COUNT] = {};
};

class LifecycleSource {
 public:
  virtual ~LifecycleSource() = default;
  virtual bool Read(LifecycleSnapshot* out) = 0;
  virtual AttachPlan Plan() const = 0;  // hooks of loaded modules, attached or not
};

struct LifecycleLoad {
  Availability availability;
  std::unique_ptr<LifecycleSource> source;
};

// Never throws and never exits; source is null when BPF cannot be used.
LifecycleLoad LoadLifecycle(const Paths& paths, const BpfOptions& options);

}  // namespace nvmeof
