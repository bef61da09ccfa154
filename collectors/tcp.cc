// tcp: per NVMe/TCP connection counts and retransmits (sock_diag, always), and with
// `tcp: {node_counters: true}` node-wide TCP retransmit, timeout and ECN counters from procfs
// (off by default: node_exporter's netstat collector serves the same numbers).
//   <procfs>/net/snmp     "Tcp:" header/value line pairs (RetransSegs, OutSegs, ...)
//   <procfs>/net/netstat  "TcpExt:" / "IpExt:" pairs (TCPTimeouts, InCEPkts, ...)
//   <procfs>/net/snmp6    "Ip6InCEPkts  N" lines (IPv6 ECN; absent without IPv6)
// Columns differ between kernels, so values are looked up by header name. A counter this
// kernel does not have is simply absent; a section whose value line is missing or does not
// match its header is skipped (counted with Skip()), never guessed.
// These counters cover every TCP connection of the network namespace, not only NVMe/TCP.
//
// Per NVMe/TCP connection retransmits come from sock_diag (NETLINK_SOCK_DIAG, the interface
// of `ss -ti`): every TCP socket of the namespace with tcp_info, kept only if its local or
// remote port is an NVMe/TCP port (4420, discovery 8009, trsvcid of tcp host controllers in
// sysfs, tcp ports of nvmet in configfs), and summed per {role, port} so labels stay bounded.
// netlink has no root to inject: this part always reads the running kernel.
#include <atomic>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "base/fd.h"
#include "base/files.h"
#include "base/log.h"
#include "base/yaml.h"
#include "collectors/collector_options.h"
#include "readers/proc_net.h"
#include "readers/sock_diag.h"

namespace nvmeof {
namespace {

constexpr const char* kEcnHelp =
    "IP packets received by ECN codepoint, node-wide, all protocols (IpExt In*Pkts for ipv4, "
    "snmp6 Ip6In*Pkts for ipv6); ecn=ce are congestion-marked";

struct Stat {
  const char* section;  // "Tcp", "TcpExt", "IpExt", "Ip6"
  const char* key;
  const char* metric;
  const char* help;
  bool counter;
  Labels labels;
};

// size-exception: a data table, one entry per exported kernel counter.
const std::vector<Stat>& Stats() {
  static const std::vector<Stat> stats = {
      {"Tcp",
       "InSegs",
       "nvmeof_tcp_segments_received_total",
       "TCP segments received, node-wide (all connections; Tcp InSegs)",
       true,
       {}},
      {"Tcp",
       "OutSegs",
       "nvmeof_tcp_segments_sent_total",
       "TCP segments sent excluding retransmissions, node-wide (Tcp OutSegs)",
       true,
       {}},
      {"Tcp",
       "RetransSegs",
       "nvmeof_tcp_retransmitted_segments_total",
       "TCP segments retransmitted, node-wide (Tcp RetransSegs)",
       true,
       {}},
      {"Tcp",
       "InErrs",
       "nvmeof_tcp_receive_errors_total",
       "TCP segments received in error, node-wide (Tcp InErrs)",
       true,
       {}},
      {"Tcp",
       "InCsumErrors",
       "nvmeof_tcp_checksum_errors_total",
       "TCP segments received with a bad checksum, node-wide (Tcp InCsumErrors)",
       true,
       {}},
      {"Tcp",
       "OutRsts",
       "nvmeof_tcp_resets_sent_total",
       "TCP segments sent with RST, node-wide (Tcp OutRsts)",
       true,
       {}},
      {"Tcp",
       "EstabResets",
       "nvmeof_tcp_established_resets_total",
       "Established TCP connections reset, node-wide (Tcp EstabResets)",
       true,
       {}},
      {"Tcp",
       "AttemptFails",
       "nvmeof_tcp_connection_failures_total",
       "Failed TCP connection attempts, node-wide (Tcp AttemptFails)",
       true,
       {}},
      {"Tcp",
       "CurrEstab",
       "nvmeof_tcp_connections_established",
       "TCP connections currently established or closing, node-wide (Tcp CurrEstab)",
       false,
       {}},
      {"TcpExt",
       "TCPTimeouts",
       "nvmeof_tcp_timeouts_total",
       "TCP retransmission timeouts (RTO expired), node-wide (TcpExt TCPTimeouts)",
       true,
       {}},
      {"TcpExt",
       "TCPSpuriousRTOs",
       "nvmeof_tcp_spurious_timeouts_total",
       "TCP retransmission timeouts later found spurious, node-wide (TCPSpuriousRTOs)",
       true,
       {}},
      {"TcpExt",
       "TCPLostRetransmit",
       "nvmeof_tcp_lost_retransmits_total",
       "TCP retransmissions that were lost again, node-wide (TcpExt TCPLostRetransmit)",
       true,
       {}},
      {"TcpExt",
       "TCPFastRetrans",
       "nvmeof_tcp_fast_retransmits_total",
       "TCP fast retransmits, node-wide (TcpExt TCPFastRetrans)",
       true,
       {}},
      {"TcpExt",
       "TCPSlowStartRetrans",
       "nvmeof_tcp_slow_start_retransmits_total",
       "TCP retransmits in slow start after a loss, node-wide (TCPSlowStartRetrans)",
       true,
       {}},
      {"TcpExt",
       "TCPRetransFail",
       "nvmeof_tcp_retransmit_failures_total",
       "TCP retransmits that failed to be sent, node-wide (TcpExt TCPRetransFail)",
       true,
       {}},
      {"TcpExt",
       "TCPSynRetrans",
       "nvmeof_tcp_syn_retransmits_total",
       "TCP SYN and SYN-ACK retransmits, node-wide (TcpExt TCPSynRetrans)",
       true,
       {}},
      {"TcpExt",
       "TCPLossProbes",
       "nvmeof_tcp_loss_probes_total",
       "TCP tail loss probes sent, node-wide (TcpExt TCPLossProbes)",
       true,
       {}},
      {"TcpExt",
       "TCPAbortOnTimeout",
       "nvmeof_tcp_aborts_on_timeout_total",
       "TCP connections aborted after too many retransmission timeouts, node-wide "
       "(TcpExt TCPAbortOnTimeout)",
       true,
       {}},
      {"TcpExt",
       "ListenDrops",
       "nvmeof_tcp_listen_drops_total",
       "Incoming TCP connection requests dropped by listeners, node-wide (TcpExt ListenDrops)",
       true,
       {}},
      {"TcpExt",
       "TCPDeliveredCE",
       "nvmeof_tcp_delivered_ce_total",
       "TCP data segments the peer acknowledged with an ECN congestion echo, node-wide "
       "(TcpExt TCPDeliveredCE)",
       true,
       {}},
      // ECN codepoint of received IP packets: ce / (sum over ecn) is the marking ratio.
      {"IpExt",
       "InNoECTPkts",
       "nvmeof_ip_received_packets_total",
       kEcnHelp,
       true,
       {{"family", "ipv4"}, {"ecn", "not_ect"}}},
      {"IpExt",
       "InECT1Pkts",
       "nvmeof_ip_received_packets_total",
       kEcnHelp,
       true,
       {{"family", "ipv4"}, {"ecn", "ect1"}}},
      {"IpExt",
       "InECT0Pkts",
       "nvmeof_ip_received_packets_total",
       kEcnHelp,
       true,
       {{"family", "ipv4"}, {"ecn", "ect0"}}},
      {"IpExt",
       "InCEPkts",
       "nvmeof_ip_received_packets_total",
       kEcnHelp,
       true,
       {{"family", "ipv4"}, {"ecn", "ce"}}},
      {"Ip6",
       "Ip6InNoECTPkts",
       "nvmeof_ip_received_packets_total",
       kEcnHelp,
       true,
       {{"family", "ipv6"}, {"ecn", "not_ect"}}},
      {"Ip6",
       "Ip6InECT1Pkts",
       "nvmeof_ip_received_packets_total",
       kEcnHelp,
       true,
       {{"family", "ipv6"}, {"ecn", "ect1"}}},
      {"Ip6",
       "Ip6InECT0Pkts",
       "nvmeof_ip_received_packets_total",
       kEcnHelp,
       true,
       {{"family", "ipv6"}, {"ecn", "ect0"}}},
      {"Ip6",
       "Ip6InCEPkts",
       "nvmeof_ip_received_packets_total",
       kEcnHelp,
       true,
       {{"family", "ipv6"}, {"ecn", "ce"}}},
  };
  return stats;
}

// --- NVMe/TCP connections (sock_diag) ---

constexpr std::uint16_t kDefaultPorts[] = {4420, 8009};  // IANA NVMe/TCP and discovery

std::optional<std::uint16_t> ParsePort(std::string_view text) {
  auto v = ParseU64(text);
  if (!v || *v == 0 || *v > 65535) return std::nullopt;
  return static_cast<std::uint16_t>(*v);
}

// trsvcid of NVMe/TCP host controllers ("traddr=..,trsvcid=4420,..").
std::set<std::uint16_t> HostPorts(const std::string& sysfs) {
  std::set<std::uint16_t> ports;
  const std::string root = sysfs + "/class/nvme";
  for (const auto& ctrl : ListDir(root)) {
    if (ReadFile(root + "/" + ctrl + "/transport").value_or("") != "tcp") continue;
    std::string addr = ReadFile(root + "/" + ctrl + "/address").value_or("");
    std::istringstream in(addr);
    for (std::string item; std::getline(in, item, ',');) {
      if (item.rfind("trsvcid=", 0) != 0) continue;
      if (auto p = ParsePort(std::string_view(item).substr(8))) ports.insert(*p);
    }
  }
  return ports;
}

// addr_trsvcid of nvmet ports with addr_trtype tcp.
std::set<std::uint16_t> TargetPorts(const std::string& configfs) {
  std::set<std::uint16_t> ports;
  const std::string root = configfs + "/nvmet/ports";
  for (const auto& port : ListDir(root)) {
    if (ReadFile(root + "/" + port + "/addr_trtype").value_or("") != "tcp") continue;
    if (auto p = ParsePort(ReadFile(root + "/" + port + "/addr_trsvcid").value_or(""))) {
      ports.insert(*p);
    }
  }
  return ports;
}

struct ConnStats {
  std::uint64_t connections = 0;
  std::uint64_t retransmits = 0;
};
using ConnKey = std::pair<std::string, std::uint16_t>;  // role, port

// Emits nvmeof_tcp_connections / nvmeof_tcp_connection_retransmits; zeros for ports the
// node is configured for (sysfs, configfs), so a lost connection shows as 0, not absence.
void CollectConnections(MetricSink& out, const Paths& paths) {
  std::set<std::uint16_t> host = HostPorts(paths.sysfs);
  std::set<std::uint16_t> target = TargetPorts(paths.configfs);
  std::map<ConnKey, ConnStats> stats;
  for (auto p : host) stats[{"host", p}];
  for (auto p : target) stats[{"target", p}];
  host.insert(std::begin(kDefaultPorts), std::end(kDefaultPorts));
  target.insert(std::begin(kDefaultPorts), std::end(kDefaultPorts));

  std::vector<TcpSocket> sockets;
  if (int err = DumpTcpSockets(&sockets)) {
    // One warning per distinct cause, not one per scrape.
    static std::atomic<int> last_err{0};
    if (last_err.exchange(err) != err) {
      LogWarn("sock_diag: cannot dump TCP sockets; NVMe/TCP connection series skipped",
              Kv("err", ErrnoName(err)));
    }
    out.Skip();  // partial dumps would undercount: report nothing
    return;
  }
  for (const auto& sock : sockets) {
    ConnKey key;
    if (target.count(sock.local_port)) {
      key = {"target", sock.local_port};
    } else if (host.count(sock.remote_port)) {
      key = {"host", sock.remote_port};
    } else {
      continue;
    }
    auto& st = stats[key];
    st.connections++;
    st.retransmits += sock.total_retrans;
  }
  for (const auto& [key, s] : stats) {
    Labels l = {{"role", key.first}, {"tcp_port", std::to_string(key.second)}};
    out.Gauge("nvmeof_tcp_connections",
              "Open NVMe/TCP connections (sock_diag) by role (host: remote port is an NVMe/TCP "
              "port; target: local port is) and NVMe/TCP port",
              l, static_cast<double>(s.connections));
    out.Gauge("nvmeof_tcp_connection_retransmits",
              "Sum of tcpi_total_retrans over the open NVMe/TCP connections (sock_diag); drops "
              "when connections close, so use delta()/increase() with care",
              std::move(l), static_cast<double>(s.retransmits));
  }
}

class TcpCollector : public Collector {
 public:
  explicit TcpCollector(const CollectorOptions& options)
      : paths_(options.paths),
        net_(options.paths.procfs + "/net"),
        node_counters_(options.tcp.node_counters) {}

  std::string_view Name() const override { return "tcp"; }

  bool Collect(MetricSink& out) override {
    bool ok = true;
    if (node_counters_) ok = CollectNodeCounters(out);
    CollectConnections(out, paths_);
    return ok;
  }

 private:
  bool CollectNodeCounters(MetricSink& out) {
    NetStatTable t;
    // snmp and netstat exist whenever procfs is mounted: missing ones mean a wrong
    // --path.procfs or a broken mount, so the collector reports failure.
    bool ok = true;
    for (const char* file : {"/snmp", "/netstat"}) {
      if (auto text = ReadFile(net_ + file)) {
        ParseNetStatPairs(*text, &t);
      } else {
        out.Fail(FileFailure(net_ + file));  // the scraper warns once with it
        ok = false;
      }
    }
    if (auto text = ReadFile(net_ + "/snmp6")) ParseSnmp6(*text, &t);  // no IPv6: absent

    for (const auto& s : Stats()) {
      auto sec = t.values.find(s.section);
      const std::string* value = nullptr;
      if (sec != t.values.end()) {
        auto it = sec->second.find(s.key);
        if (it != sec->second.end()) value = &it->second;
      }
      if (!value) {
        // Unknown to this kernel: absent. Malformed section: skipped.
        if (t.broken.count(s.section)) out.Skip();
        continue;
      }
      auto v = ParseU64(*value);
      if (!v) {
        out.Skip();
        continue;
      }
      if (s.counter) {
        out.Counter(s.metric, s.help, s.labels, static_cast<double>(*v));
      } else {
        out.Gauge(s.metric, s.help, s.labels, static_cast<double>(*v));
      }
    }
    return ok;
  }

  Paths paths_;
  std::string net_;
  bool node_counters_;
};

}  // namespace

bool ParseTcpOptions(const YAML::Node& node, TcpOptions* o, std::string* error) {
  if (!CheckKeys(node, "tcp", {"node_counters"}, error)) return false;
  return !node["node_counters"] ||
         ReadBool(node["node_counters"], "tcp.node_counters", &o->node_counters, error);
}

std::unique_ptr<Collector> NewTcpCollector(const CollectorOptions& options) {
  return std::make_unique<TcpCollector>(options);
}

}  // namespace nvmeof
