#include "loader/lifecycle.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <map>

#include "base/fd.h"
#include "base/log.h"

namespace nvmeof {

namespace {

// One hook per function (entry) or its return; kprobe first (see lifecycle.bpf.c: fentry pins
// the module), fentry where kprobes are missing.
HookSpec Fn(std::string_view name, std::string_view module, std::string_view target,
            std::string_view kprobe, std::string_view fentry) {
  return {.name = name,
          .required = false,
          .module = module,
          .variants = {{Mechanism::kKprobe, target, kprobe}, {Mechanism::kFentry, target, fentry}},
          .gate = module};
}

HookSpec With(HookSpec hook, std::string_view partner) {
  hook.with = partner;
  return hook;
}

// A classic tracepoint hook: its program reads `fields` of the event's record.
HookSpec Tp(std::string_view name, std::string_view module, std::string_view event,
            std::string_view program, std::string_view fields) {
  return {.name = name,
          .required = false,
          .module = module,
          .variants = {{.mechanism = Mechanism::kTracepoint,
                        .target = event,
                        .program = program,
                        .fields = fields}},
          .gate = module,
          .without_module_btf = true};
}

}  // namespace

const std::vector<HookSpec>& LifecycleHooks() {
  static const std::vector<HookSpec> hooks = {
      // The tracepoint sits exactly at the event; kprobe on the function that fires it after.
      {.name = "rdma_cm_event_handler",
       .required = false,
       .module = "rdma_cm",
       .variants = {{Mechanism::kKprobe, "cma_cm_event_handler", "lc_cm_kprobe"},
                    {Mechanism::kFentry, "cma_cm_event_handler", "lc_cm_fentry"},
                    {Mechanism::kTpBtf, "cm_event_handler", "lc_cm_tp_btf"},
                    {Mechanism::kRawTp, "cm_event_handler", "lc_cm_raw_tp"}},
       .gate = "rdma_cm"},
      Fn("nvme_change_ctrl_state", "nvme_core", "nvme_change_ctrl_state", "lc_state_kprobe",
         "lc_state_fentry"),
      Fn("nvme_change_ctrl_state_return", "nvme_core", "nvme_change_ctrl_state",
         "lc_state_ret_kretprobe", "lc_state_ret_fexit"),
      Fn("nvme_keep_alive_end_io", "nvme_core", "nvme_keep_alive_end_io", "lc_ka_end_kprobe",
         "lc_ka_end_fentry"),
      // Multipath (nvme_core's multipath.c): run per failed-over command or ANA log read.
      Fn("nvme_failover_req", "nvme_core", "nvme_failover_req", "lc_failover_kprobe",
         "lc_failover_fentry"),
      Fn("nvme_update_ana_state", "nvme_core", "nvme_update_ana_state", "lc_ana_kprobe",
         "lc_ana_fentry"),
      // Multipath stalls and I/O without a usable path: per I/O routed anew or requeued. The
      // find_path programs read no nvme_core type, so they load without its BTF (5.10), where
      // the requeue programs do not: alone they would open stalls nothing closes.
      With(Fn("__nvme_find_path", "nvme_core", "__nvme_find_path", "lc_findpath_kprobe",
              "lc_findpath_fentry"),
           "nvme_requeue_work"),
      With(Fn("__nvme_find_path_return", "nvme_core", "__nvme_find_path",
              "lc_findpath_ret_kretprobe", "lc_findpath_ret_fexit"),
           "nvme_requeue_work"),
      Fn("nvme_requeue_work", "nvme_core", "nvme_requeue_work", "lc_requeue_kprobe",
         "lc_requeue_fentry"),
      Fn("nvme_requeue_work_return", "nvme_core", "nvme_requeue_work", "lc_requeue_ret_kretprobe",
         "lc_requeue_ret_fexit"),
      Fn("nvmf_dev_write", "nvme_fabrics", "nvmf_dev_write", "lc_devwrite_kprobe",
         "lc_devwrite_fentry"),
      Fn("nvmf_dev_write_return", "nvme_fabrics", "nvmf_dev_write", "lc_devwrite_ret_kretprobe",
         "lc_devwrite_ret_fexit"),
      Fn("nvmf_connect_admin_queue", "nvme_fabrics", "nvmf_connect_admin_queue", "lc_adminq_kprobe",
         "lc_adminq_fentry"),
      Fn("nvmf_connect_admin_queue_return", "nvme_fabrics", "nvmf_connect_admin_queue",
         "lc_adminq_ret_kretprobe", "lc_adminq_ret_fexit"),
      Fn("nvmet_execute_admin_connect", "nvmet", "nvmet_execute_admin_connect", "lc_aconn_kprobe",
         "lc_aconn_fentry"),
      Fn("nvmet_execute_admin_connect_return", "nvmet", "nvmet_execute_admin_connect",
         "lc_aconn_ret_kretprobe", "lc_aconn_ret_fexit"),
      Fn("nvmet_execute_io_connect", "nvmet", "nvmet_execute_io_connect", "lc_iconn_kprobe",
         "lc_iconn_fentry"),
      Fn("nvmet_execute_io_connect_return", "nvmet", "nvmet_execute_io_connect",
         "lc_iconn_ret_kretprobe", "lc_iconn_ret_fexit"),
      Fn("nvmet_alloc_ctrl", "nvmet", "nvmet_alloc_ctrl", "lc_alloc_kprobe", "lc_alloc_fentry"),
      Fn("nvmet_alloc_ctrl_return", "nvmet", "nvmet_alloc_ctrl", "lc_alloc_ret_kretprobe",
         "lc_alloc_ret_fexit"),
      Fn("nvmet_ctrl_free", "nvmet", "nvmet_ctrl_free", "lc_free_kprobe", "lc_free_fentry"),
      Fn("nvmet_keep_alive_timer", "nvmet", "nvmet_keep_alive_timer", "lc_ka_timer_kprobe",
         "lc_ka_timer_fentry"),
      // Without module BTF (5.10): the target's Connects from its command tracepoints (not the
      // host's keep-alives: bpf/lifecycle_tp.bpf.h).
      Tp("nvmet_req_init_connect", "nvmet", "nvmet/nvmet_req_init", "lc_tinit_tp",
         kLcTargetInitFields),
      Tp("nvmet_req_complete_connect", "nvmet", "nvmet/nvmet_req_complete", "lc_tdone_tp",
         kLcTargetDoneFields),
  };
  return hooks;
}

std::vector<HookSpec> LifecycleModuleHooks(std::string_view module, bool module_btf) {
  std::vector<HookSpec> hooks;
  for (const auto& h : LifecycleHooks()) {
    if (h.module == module && !(h.without_module_btf && module_btf)) hooks.push_back(h);
  }
  return hooks;
}

std::string_view CmEventName(std::uint32_t event) {
  static constexpr std::string_view kNames[] = {
      "addr_resolved",   "addr_error",       "route_resolved", "route_error",
      "connect_request", "connect_response", "connect_error",  "unreachable",
      "rejected",        "established",      "disconnected",   "device_removal",
      "multicast_join",  "multicast_error",  "addr_change",    "timewait_exit"};
  return event < std::size(kNames) ? kNames[event] : "other";
}

namespace {

// IB CM reject reasons (enum ib_cm_rej_reason, IBTA 12.6.7.2): what a REJECTED event carries.
std::string_view RejectReasonName(std::int32_t reason) {
  static constexpr std::string_view kNames[] = {"",
                                                "no_qp",
                                                "no_eec",
                                                "no_resources",
                                                "timeout",
                                                "unsupported",
                                                "invalid_comm_id",
                                                "invalid_comm_instance",
                                                "invalid_service_id",
                                                "invalid_transport_type",
                                                "stale_conn",
                                                "rdc_not_exist",
                                                "invalid_gid",
                                                "invalid_lid",
                                                "invalid_sl",
                                                "invalid_traffic_class",
                                                "invalid_hop_limit",
                                                "invalid_packet_rate",
                                                "invalid_alt_gid",
                                                "invalid_alt_lid",
                                                "invalid_alt_sl",
                                                "invalid_alt_traffic_class",
                                                "invalid_alt_hop_limit",
                                                "invalid_alt_packet_rate",
                                                "port_cm_redirect",
                                                "port_redirect",
                                                "invalid_mtu",
                                                "insufficient_resp_resources",
                                                "consumer_defined",
                                                "invalid_rnr_retry",
                                                "duplicate_local_comm_id",
                                                "invalid_class_version",
                                                "invalid_flow_label",
                                                "invalid_alt_flow_label"};
  if (reason == 35) return "vendor_option_not_supported";
  return reason > 0 && static_cast<std::size_t>(reason) < std::size(kNames) ? kNames[reason]
                                                                            : "other";
}

}  // namespace

std::string ErrnoLabel(std::int32_t negative_errno) {
  switch (-negative_errno) {
    case ECONNREFUSED:
    case ETIMEDOUT:
    case ECONNRESET:
    case ECONNABORTED:
    case EHOSTUNREACH:
    case ENETUNREACH:
    case EADDRNOTAVAIL:
    case EIO:
    case EINVAL:
    case ENOMEM:
    case EALREADY:
    case EBUSY:
    case ENODEV:
    case ENXIO:
    case ENOENT:
    case EPROTO:
    case EINTR:
    case EAGAIN:
    case EPERM:
    case EACCES:
    case EKEYREJECTED:
    case ENOTCONN:
    case EADDRINUSE:
    case ENETDOWN:
      return ErrnoName(-negative_errno);
    default:
      return "other";
  }
}

std::string CmEventStatus(std::uint32_t event, std::int32_t status) {
  if (status == 0) return "ok";
  if (event == 8 /* RDMA_CM_EVENT_REJECTED */ && status > 0) {
    return std::string(RejectReasonName(status));
  }
  return status < 0 ? ErrnoLabel(status) : "other";
}

std::string_view CtrlStateName(std::uint32_t state) {
  static constexpr std::string_view kNames[] = {
      "new", "live", "resetting", "connecting", "deleting", "deleting_noio", "dead"};
  return state < std::size(kNames) ? kNames[state] : "unknown";
}

std::string_view AnaStateName(std::uint32_t state) {
  switch (state) {
    case 0x01:
      return "optimized";
    case 0x02:
      return "non-optimized";
    case 0x03:
      return "inaccessible";
    case 0x04:
      return "persistent-loss";
    case 0x0f:
      return "change";
    default:
      return "other";
  }
}

std::string_view ConnectStatusName(std::uint32_t status, std::uint32_t result) {
  // IPO_IATTR_CONNECT_DATA(subsysnqn): bit 16 = in the data, offset 256 = subsysnqn.
  constexpr std::uint32_t kIattrSubsysnqn = (1U << 16) | 256;
  switch (status) {
    case 0x000:
      return "success";
    case 0x002:
      return "invalid_field";
    case 0x006:
      return "internal_error";
    case 0x180:
      return "incompatible_format";
    case 0x181:
      return "controller_busy";
    case 0x182:
      return result == kIattrSubsysnqn ? "invalid_subsystem" : "invalid_parameters";
    case 0x183:
      return "restart_discovery";
    case 0x184:
      return "invalid_host";
    case 0x190:
      return "invalid_queue_type";
    default:
      return "other";
  }
}

// A plain address or service id (IPv4/IPv6/FC names, port numbers): else "other".
std::string PlainAddress(std::string_view v) {
  if (v.empty()) return "";
  if (v.size() > 64) return "other";
  for (char c : v) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == ':' || c == '-' ||
          c == '_' || c == '%' || c == '[' || c == ']')) {
      return "other";
    }
  }
  return std::string(v);
}

std::string_view LcString(const char* p, std::size_t max) {
  return std::string_view(p, strnlen(p, max));
}

ConnectTarget ParseConnectTarget(const nvmeof_lc_key& key) {
  ConnectTarget t;
  if (key.a == NVMEOF_LC_OPTS_FIELDS) {
    t.transport = PlainAddress(LcString(key.name, NVMEOF_LC_TRADDR_AT));
    t.traddr = PlainAddress(
        LcString(key.name + NVMEOF_LC_TRADDR_AT, NVMEOF_LC_TRSVCID_AT - NVMEOF_LC_TRADDR_AT));
    t.trsvcid = PlainAddress(
        LcString(key.name + NVMEOF_LC_TRSVCID_AT, sizeof(key.name) - NVMEOF_LC_TRSVCID_AT));
  } else {
    // "nqn=...,transport=tcp,traddr=10.0.0.1,trsvcid=4420,hostnqn=...\n"
    std::string_view opts = LcString(key.name, sizeof(key.name));
    while (!opts.empty()) {
      std::size_t end = opts.find_first_of(",\n");
      std::string_view kv = opts.substr(0, end);
      opts = end == std::string_view::npos ? std::string_view() : opts.substr(end + 1);
      std::size_t eq = kv.find('=');
      if (eq == std::string_view::npos) continue;
      std::string_view k = kv.substr(0, eq), v = kv.substr(eq + 1);
      if (k == "transport") t.transport = PlainAddress(v);
      if (k == "traddr") t.traddr = PlainAddress(v);
      if (k == "trsvcid") t.trsvcid = PlainAddress(v);
    }
  }
  static const std::set<std::string> kTransports = {"rdma", "tcp", "fc", "loop", ""};
  if (!kTransports.count(t.transport)) t.transport = "other";
  return t;
}

}  // namespace nvmeof
