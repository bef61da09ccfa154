// The rdma_netlink collector: RDMA netlink ("nldev", NETLINK_RDMA), what iproute2's
// `rdma statistic` and `rdma resource` print.
//
// Per scrape: GET dump (devices), per port PORT_GET (netdev), STAT_GET_STATUS (which optional
// counters exist and are on; 5.16+), STAT_GET (port counters), RES_GET dump (resource summary);
// with per_qp also RES_QP_GET, RES_CM_ID_GET and the bound-counter STAT_GET dumps. All of it is
// readable without privileges. STAT_SET (enabling optional counters) needs CAP_NET_ADMIN and is
// sent only for counters named in rdma_netlink.enable_optional_counters.
#include "collectors/rdma_netlink.h"

#include <linux/netlink.h>
#include <rdma/rdma_netlink.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <utility>

#include "base/fd.h"
#include "base/files.h"
#include "base/log.h"
#include "base/yaml.h"
#include "collectors/collector_options.h"

namespace nvmeof {
namespace {

using rdmanl::Bytes;
using rdmanl::Request;
using Clock = std::chrono::steady_clock;

// Bounds on what one device may claim: a switch has at most a few dozen ports.
constexpr std::uint32_t kMaxPorts = 256;

// The session's self-metrics: what it read and what failed.
void EmitSessionMetrics(const RdmaNetlinkSession& session, MetricSink& out) {
  out.Gauge("nvmeof_exporter_rdma_netlink_reply_bytes",
            "RDMA netlink reply bytes read this scrape (bounded by "
            "rdma_netlink.max_reply_bytes).",
            {}, static_cast<double>(session.budget().bytes_read));
  out.Gauge("nvmeof_exporter_rdma_netlink_budget_exhausted",
            "1 if this scrape ran out of its RDMA netlink time or byte budget (series after "
            "that point were skipped).",
            {}, session.budget().exhausted ? 1 : 0);
  for (const auto& [key, n] : session.failures()) {
    out.Gauge("nvmeof_exporter_rdma_netlink_request_failures",
              "RDMA netlink requests that failed this scrape, by request and reason (errno "
              "name, or time_budget, byte_budget, truncated, malformed).",
              {{"request", key.first}, {"reason", key.second}}, static_cast<double>(n));
  }
}

constexpr std::string_view kPortStatHelp =
    "RDMA port statistics by counter name (netlink STAT_GET, what `rdma statistic show` prints; "
    "includes counters bound to QPs and enabled optional counters).";
constexpr std::string_view kQpStatHelp =
    "Counters of a counter set bound to QPs (`rdma statistic qp show`), by counter name; "
    "per-QP mode only.";

class RdmaNetlinkCollector : public Collector {
 public:
  RdmaNetlinkCollector(const CollectorOptions& options,
                       std::unique_ptr<RdmaNetlinkTransport> transport)
      : devices_(options.rdma.devices), o_(options.rdma_netlink), t_(std::move(transport)) {
    want_enabled_.insert(o_.enable_optional_counters.begin(), o_.enable_optional_counters.end());
  }

  std::string_view Name() const override { return "rdma_netlink"; }

  bool Collect(MetricSink& out) override {
    // Serialized: concurrent scrapes would interleave STAT_SET and the log-once state.
    std::lock_guard<std::mutex> lock(mu_);
    int err = t_->Open();
    if (err == EPROTONOSUPPORT || err == EAFNOSUPPORT) {
      LogDebug(
          "no RDMA netlink (no ib_core: no sysfs class/infiniband, or a kernel without "
          "RDMA): no rdma_netlink series",
          Kv("err", RdmaNetlinkErrName(err)));
      return true;
    }
    if (err) {
      out.Fail("rdma netlink socket: " + RdmaNetlinkErrName(err));  // the scraper warns once
      return false;
    }
    struct CloseOnExit {
      RdmaNetlinkTransport* t;
      ~CloseOnExit() { t->Close(); }
    } close_on_exit{t_.get()};

    qp_emitted_ = 0;
    qp_dropped_ = 0;
    RdmaNetlinkSession s(*t_, o_.timeout_seconds, o_.max_reply_bytes);
    bool ok = CollectAll(s, out);
    EmitSessionMetrics(s, out);
    return ok;
  }

 private:
  bool CollectAll(RdmaNetlinkSession& s, MetricSink& out) {
    int err = 0;
    std::vector<rdmanl::Device> devices;
    for (Bytes m : s.Call({RDMA_NLDEV_CMD_GET, true, {}, {}, {}, {}}, &err)) {
      rdmanl::Device d;
      if (rdmanl::DecodeDevice(m, &d)) {
        devices.push_back(std::move(d));
      } else {
        out.Skip();
      }
    }
    // Without the device list nothing else can be asked: the source failed as a whole.
    if (err && devices.empty()) return out.Fail("RDMA_NLDEV_CMD_GET: " + RdmaNetlinkErrName(err));
    if (err) out.Skip();

    std::set<std::uint32_t> wanted;
    for (const auto& d : devices) {
      if (!devices_.Allows(d.name)) continue;
      wanted.insert(d.index);
      out.Gauge("nvmeof_rdma_netlink_device_info",
                "RDMA device seen over netlink, with its protocol (roce, ib, iw; \"\" on kernels "
                "before 5.9); value is always 1.",
                {{"rdma_device", d.name}, {"protocol", d.protocol}}, 1);
      CollectPorts(s, d, out);
      if (o_.per_qp) CollectQps(s, d, out);
    }
    if (!wanted.empty()) CollectResources(s, wanted, out);
    if (o_.per_qp) {
      out.Gauge("nvmeof_exporter_rdma_netlink_qp_series_dropped",
                "Per-QP series left out this scrape because of rdma_netlink.max_qp_series.", {},
                static_cast<double>(qp_dropped_));
    }
    return true;
  }

  void CollectPorts(RdmaNetlinkSession& s, const rdmanl::Device& d, MetricSink& out) {
    std::uint32_t ports = d.ports;
    if (ports > kMaxPorts) {
      out.Skip(ports - kMaxPorts);
      ports = kMaxPorts;
    }
    for (std::uint32_t port = 1; port <= ports; ++port) {
      int err = 0;
      const std::string p = std::to_string(port);
      auto msgs = s.Call({RDMA_NLDEV_CMD_PORT_GET, false, d.index, port, {}, {}}, &err);
      rdmanl::Port info;
      if (!err && msgs.size() == 1 && rdmanl::DecodePort(msgs[0], &info) && info.port == port) {
        out.Gauge("nvmeof_rdma_netlink_port_info",
                  "RDMA port seen over netlink with its netdev (\"\" for none); value is always 1.",
                  {{"rdma_device", d.name}, {"rdma_port", p}, {"netdev", info.netdev}}, 1);
      } else {
        out.Skip();
      }
      CollectOptional(s, d, port, out);
      CollectPortStats(s, d, port, out);
    }
  }

  // STAT_GET_STATUS: every hw counter with its index; optional ones say whether they are on.
  // Returns the decoded counters (empty when the kernel or device has no such command).
  std::vector<rdmanl::HwCounter> ReadStatus(RdmaNetlinkSession& s, const rdmanl::Device& d,
                                            std::uint32_t port, MetricSink& out, bool* failed) {
    int err = 0;
    auto msgs = s.Call({RDMA_NLDEV_CMD_STAT_GET_STATUS, false, d.index, port, {}, {}}, &err,
                       {EINVAL, EOPNOTSUPP});
    *failed = false;
    if (err == EINVAL || err == EOPNOTSUPP) {
      // Before 5.16 the command does not exist (EINVAL); devices without hw counters refuse it.
      LogDebug("rdma netlink: no optional counter status",
               Kv("device", d.name) + " " + Kv("port", std::to_string(port)));
      return {};
    }
    rdmanl::PortStats st;
    if (err || msgs.size() != 1 || !rdmanl::DecodePortStats(msgs[0], &st) || st.port != port) {
      out.Skip();
      *failed = true;
      return {};
    }
    out.Skip(st.bad_entries);
    return st.counters;
  }

  void CollectOptional(RdmaNetlinkSession& s, const rdmanl::Device& d, std::uint32_t port,
                       MetricSink& out) {
    bool failed = false;
    auto counters = ReadStatus(s, d, port, out, &failed);
    if (!want_enabled_.empty() && !failed && MaybeEnable(s, d, port, counters)) {
      counters = ReadStatus(s, d, port, out, &failed);  // show the state after the change
    }
    const std::string p = std::to_string(port);
    for (const auto& c : counters) {
      if (!c.optional_enabled) continue;  // not an optional counter: always on
      out.Gauge("nvmeof_rdma_netlink_optional_stat_enabled",
                "Optional RDMA counter (5.16+, e.g. mlx5 cc_rx_ce_pkts): 1 if enabled on the "
                "port, 0 if it exists but is off (`rdma statistic mode supported`).",
                {{"rdma_device", d.name}, {"rdma_port", p}, {"counter", c.name}},
                *c.optional_enabled ? 1 : 0);
    }
  }

  // Sends STAT_SET when a configured optional counter exists here and is off. The request names
  // every optional counter that should be on afterwards (the kernel turns the unnamed ones off),
  // so counters somebody else enabled stay on. Returns whether the set was accepted.
  bool MaybeEnable(RdmaNetlinkSession& s, const rdmanl::Device& d, std::uint32_t port,
                   const std::vector<rdmanl::HwCounter>& counters) {
    std::vector<std::uint32_t> on;
    std::vector<std::string> turning_on;
    for (const auto& c : counters) {
      if (!c.optional_enabled || !c.index) continue;
      if (*c.optional_enabled) {
        on.push_back(*c.index);
      } else if (want_enabled_.count(c.name)) {
        on.push_back(*c.index);
        turning_on.push_back(c.name);
      }
    }
    if (turning_on.empty()) return false;
    std::string names;
    for (const auto& n : turning_on) names += (names.empty() ? "" : ",") + n;
    const std::string where = d.name + "/" + std::to_string(port);
    int err = 0;
    s.Call({RDMA_NLDEV_CMD_STAT_SET, false, d.index, port, {}, on}, &err);
    if (err) {
      // EPERM without CAP_NET_ADMIN: said once per port and reason, then only counted.
      if (warned_.insert(where + " " + RdmaNetlinkErrName(err)).second) {
        LogWarn("cannot enable optional RDMA counters (needs CAP_NET_ADMIN)",
                Kv("device", d.name) + " " + Kv("port", std::to_string(port)) + " " +
                    Kv("counters", names) + " " + Kv("err", RdmaNetlinkErrName(err)));
      }
      return false;
    }
    LogInfo("enabled optional RDMA counters (rdma_netlink.enable_optional_counters)",
            Kv("device", d.name) + " " + Kv("port", std::to_string(port)) + " " +
                Kv("counters", names));
    return true;
  }

  void CollectPortStats(RdmaNetlinkSession& s, const rdmanl::Device& d, std::uint32_t port,
                        MetricSink& out) {
    int err = 0;
    auto msgs = s.Call({RDMA_NLDEV_CMD_STAT_GET, false, d.index, port, {}, {}}, &err);
    rdmanl::PortStats st;
    if (err || msgs.size() != 1 || !rdmanl::DecodePortStats(msgs[0], &st) || st.port != port) {
      out.Skip();
      return;
    }
    out.Skip(st.bad_entries);
    const std::string p = std::to_string(port);
    for (const auto& c : st.counters) {
      if (!c.value) {
        out.Skip();
        continue;
      }
      out.Counter("nvmeof_rdma_netlink_port_stat_total", kPortStatHelp,
                  {{"rdma_device", d.name}, {"rdma_port", p}, {"counter", c.name}},
                  static_cast<double>(*c.value));
    }
  }

  void CollectResources(RdmaNetlinkSession& s, const std::set<std::uint32_t>& wanted,
                        MetricSink& out) {
    int err = 0;
    auto msgs = s.Call({RDMA_NLDEV_CMD_RES_GET, true, {}, {}, {}, {}}, &err);
    std::set<std::uint32_t> seen;
    for (Bytes m : msgs) {
      rdmanl::Resources r;
      if (!rdmanl::DecodeResources(m, &r)) {
        out.Skip();
        continue;
      }
      if (!wanted.count(r.dev_index)) continue;
      seen.insert(r.dev_index);
      out.Skip(r.bad_entries);
      for (const auto& [type, count] : r.counts) {
        out.Gauge("nvmeof_rdma_resources",
                  "RDMA resources in use on the device by type (qp, cq, mr, pd, cm_id, ctx, "
                  "srq): what `rdma resource show` prints.",
                  {{"rdma_device", r.dev_name}, {"type", type}}, static_cast<double>(count));
      }
    }
    // A device whose summary never came (error or budget) costs one skipped series.
    if (err) out.Skip(wanted.size() - seen.size());
  }

  bool QpBudget(MetricSink& out) {
    if (qp_emitted_ < o_.max_qp_series) {
      ++qp_emitted_;
      return true;
    }
    ++qp_dropped_;
    out.Skip();
    return false;
  }

  // Per-QP mode: the QP table (owner, type, state), the cm_id table (addresses: which NVMe-oF
  // connection a QP carries) and the counter sets bound to QPs.
  void CollectQps(RdmaNetlinkSession& s, const rdmanl::Device& d, MetricSink& out) {
    int err = 0;
    std::size_t bad = 0;
    std::vector<rdmanl::Qp> qps;
    for (Bytes m : s.Call({RDMA_NLDEV_CMD_RES_QP_GET, true, d.index, {}, {}, {}}, &err)) {
      if (!rdmanl::DecodeQps(m, &qps, &bad)) ++bad;
    }
    if (err) ++bad;
    std::vector<rdmanl::CmId> cm_ids;
    for (Bytes m : s.Call({RDMA_NLDEV_CMD_RES_CM_ID_GET, true, d.index, {}, {}, {}}, &err)) {
      if (!rdmanl::DecodeCmIds(m, &cm_ids, &bad)) ++bad;
    }
    if (err) ++bad;  // QPs are still reported, without addresses
    std::map<std::uint32_t, const rdmanl::CmId*> by_qpn;
    for (const auto& c : cm_ids) {
      if (c.lqpn) by_qpn[*c.lqpn] = &c;
    }
    for (const auto& q : qps) {
      if (!QpBudget(out)) continue;
      const auto it = by_qpn.find(q.lqpn);
      const rdmanl::CmId* cm = it == by_qpn.end() ? nullptr : it->second;
      // rdma_cm creates the QPs of its ids, so the QP's own owner is "rdma_cm"; the id's owner
      // is the ULP that asked for the connection (nvme_rdma, nvmet_rdma).
      const std::string& owner = cm && !cm->owner.empty() ? cm->owner : q.owner;
      out.Gauge("nvmeof_rdma_netlink_qp_info",
                "RDMA queue pair (per-QP mode): owner is the kernel module of its rdma_cm id "
                "(nvme_rdma: NVMe-oF host queue, nvmet_rdma: target queue), else of the QP "
                "(ib_core, rdma_cm) or \"user\"; src/dst are the rdma_cm addresses; value is "
                "always 1.",
                {{"rdma_device", d.name},
                 {"rdma_port", std::to_string(q.port)},
                 {"qpn", std::to_string(q.lqpn)},
                 {"type", q.type ? rdmanl::QpTypeName(*q.type) : ""},
                 {"state", q.state ? rdmanl::QpStateName(*q.state) : ""},
                 {"owner", owner},
                 {"src", cm ? cm->src : ""},
                 {"dst", cm ? cm->dst : ""}},
                1);
    }

    std::vector<rdmanl::BoundCounter> bound;
    for (Bytes m :
         s.Call({RDMA_NLDEV_CMD_STAT_GET, true, d.index, {}, RDMA_NLDEV_ATTR_RES_QP, {}}, &err)) {
      if (!rdmanl::DecodeBoundCounters(m, &bound, &bad)) ++bad;
    }
    if (err) ++bad;
    out.Skip(bad);
    for (const auto& c : bound) {
      out.Skip(c.bad_entries);
      const std::string port = std::to_string(c.port), id = std::to_string(c.id);
      for (auto qpn : c.qpns) {
        if (!QpBudget(out)) continue;
        out.Gauge(
            "nvmeof_rdma_netlink_qp_bound",
            "QP bound to a counter set (per-QP mode); join with nvmeof_rdma_netlink_qp_info on "
            "qpn; value is always 1.",
            {{"rdma_device", d.name},
             {"rdma_port", port},
             {"counter_id", id},
             {"qpn", std::to_string(qpn)}},
            1);
      }
      for (const auto& hc : c.counters) {
        if (!hc.value) {
          out.Skip();
          continue;
        }
        if (!QpBudget(out)) continue;
        out.Counter("nvmeof_rdma_netlink_qp_stat_total", kQpStatHelp,
                    {{"rdma_device", d.name},
                     {"rdma_port", port},
                     {"counter_id", id},
                     {"counter", hc.name}},
                    static_cast<double>(*hc.value));
      }
    }
  }

  const NameFilter devices_;
  const RdmaNetlinkOptions o_;
  std::unique_ptr<RdmaNetlinkTransport> t_;
  std::set<std::string> want_enabled_;
  std::mutex mu_;
  std::set<std::string> warned_;  // log-once keys (needs mu_)
  // Per-scrape per-QP series accounting (reset in Collect under mu_).
  std::uint32_t qp_emitted_ = 0;
  std::uint64_t qp_dropped_ = 0;
};

}  // namespace

bool ParseRdmaNetlinkOptions(const YAML::Node& node, RdmaNetlinkOptions* o, std::string* error) {
  if (!CheckKeys(node, "rdma_netlink",
                 {"per_qp", "max_qp_series", "max_reply_bytes", "timeout_seconds",
                  "enable_optional_counters"},
                 error)) {
    return false;
  }
  if (node["per_qp"] && !ReadBool(node["per_qp"], "rdma_netlink.per_qp", &o->per_qp, error)) {
    return false;
  }
  std::uint64_t series = o->max_qp_series;
  if ((node["max_qp_series"] && !ReadUint(node["max_qp_series"], "rdma_netlink.max_qp_series", 0,
                                          1000000, &series, error)) ||
      (node["max_reply_bytes"] && !ReadUint(node["max_reply_bytes"], "rdma_netlink.max_reply_bytes",
                                            4096, 1ull << 30, &o->max_reply_bytes, error))) {
    return false;
  }
  o->max_qp_series = static_cast<std::uint32_t>(series);
  if (node["timeout_seconds"] &&
      !ReadSeconds(node["timeout_seconds"], "rdma_netlink.timeout_seconds", 60, &o->timeout_seconds,
                   error)) {
    return false;
  }
  if (const auto& list = node["enable_optional_counters"]) {
    if (!list.IsSequence()) {
      *error = "rdma_netlink.enable_optional_counters: expected a list of counter names";
      return false;
    }
    o->enable_optional_counters.clear();
    for (size_t i = 0; i < list.size(); ++i) {
      std::string name;
      const std::string where = "rdma_netlink.enable_optional_counters[" + std::to_string(i) + "]";
      if (!ReadScalar(list[i], where, &name, error)) return false;
      if (name.empty()) {
        *error = where + ": empty counter name";
        return false;
      }
      o->enable_optional_counters.push_back(name);
    }
  }
  return true;
}

std::unique_ptr<Collector> NewRdmaNetlinkCollector(
    const CollectorOptions& options, std::unique_ptr<RdmaNetlinkTransport> transport) {
  return std::make_unique<RdmaNetlinkCollector>(options, std::move(transport));
}

std::unique_ptr<Collector> NewRdmaNetlinkCollector(const CollectorOptions& options) {
  return NewRdmaNetlinkCollector(
      options, NewRdmaNetlinkSocket(options.rdma_netlink.record_dir, options.paths.sysfs));
}

}  // namespace nvmeof
