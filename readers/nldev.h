// RDMA netlink (NETLINK_RDMA, the "nldev" client behind iproute2's `rdma`) messages: request
// building and bounds-checked decoding of the kernel's replies, with no socket, so unit tests and
// the fuzzer (tests/fuzz/) feed it recorded or arbitrary bytes.
//
// Layout (drivers/infiniband/core/nldev.c): a netlink header of type
// RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, cmd), then attributes directly (no family header). u64 values
// are only 4-byte aligned (nla_put_u64_64bit pads with attribute 0), nests may or may not carry
// NLA_F_NESTED, strings are NUL-terminated.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace nvmeof::rdmanl {

using Bytes = std::span<const std::uint8_t>;

// Request: one nldev command. Doit commands are answered by one message (or NLMSG_ERROR);
// dumps by messages up to NLMSG_DONE.
struct Request {
  std::uint16_t cmd = 0;  // RDMA_NLDEV_CMD_*
  bool dump = false;
  std::optional<std::uint32_t> dev_index;
  std::optional<std::uint32_t> port;
  std::optional<std::uint32_t> stat_res;  // RDMA_NLDEV_ATTR_STAT_RES (RES_QP for bound counters)
  // STAT_SET only: the complete set of optional counters to have enabled (by index).
  std::optional<std::vector<std::uint32_t>> enable_indices;
};

std::vector<std::uint8_t> BuildRequest(const Request& req, std::uint32_t seq);
// Short stable name of a request, used for fixture files and log lines: "stat_get-d1-p1".
std::string RequestKey(const Request& req);

// One netlink message of a reply buffer.
struct Message {
  std::uint16_t type = 0;
  Bytes payload;  // after the netlink header
  Bytes raw;      // header and payload
};

// The whole messages of a buffer (header included); false if one is cut off (the ones before
// it are in *out).
bool SplitMessages(Bytes buf, std::vector<Bytes>* out);

// A buffer of netlink messages split up. A truncated header or a length that runs past the
// buffer makes it malformed; the messages before that are kept.
struct Scan {
  std::vector<Message> data;  // nldev messages (type >= NLMSG_MIN_TYPE)
  bool done = false;          // NLMSG_DONE or NLMSG_ERROR seen
  int error = 0;              // errno of an NLMSG_ERROR (or of a failed dump's DONE)
  bool malformed = false;
};
Scan ScanMessages(Bytes buf);

// ---- decoded objects; anything missing or malformed leaves the fields unset ----

struct Device {
  std::uint32_t index = 0;
  std::string name;
  std::uint32_t ports = 0;  // PORT_INDEX in GET: the last port number (rdma_end_port)
  std::string protocol;     // DEV_PROTOCOL: roce, ib, iw, usnic, opa ("" on old kernels)
};

struct Port {
  std::uint32_t dev_index = 0;
  std::string dev_name;
  std::uint32_t port = 0;
  std::string netdev;  // NDEV_NAME; absent for IB or a netdev in another namespace
};

struct HwCounter {
  std::string name;
  std::optional<std::uint64_t> value;    // STAT_GET
  std::optional<std::uint32_t> index;    // STAT_GET_STATUS
  std::optional<bool> optional_enabled;  // STAT_GET_STATUS: only optional counters carry it
};

struct PortStats {
  std::uint32_t dev_index = 0;
  std::string dev_name;
  std::uint32_t port = 0;
  std::vector<HwCounter> counters;
  std::size_t bad_entries = 0;  // entries without a usable name
};

struct Resources {
  std::uint32_t dev_index = 0;
  std::string dev_name;
  std::vector<std::pair<std::string, std::uint64_t>> counts;  // "qp" -> 7
  std::size_t bad_entries = 0;
};

// A counter set bound to QPs (`rdma statistic qp show`): STAT_GET dump with STAT_RES=RES_QP.
struct BoundCounter {
  std::uint32_t port = 0;
  std::uint32_t id = 0;
  std::string owner;  // KERN_NAME of a kernel user ("nvme_rdma"), "user" for a process
  std::vector<std::uint32_t> qpns;
  std::vector<HwCounter> counters;
  std::size_t bad_entries = 0;
};

struct Qp {
  std::uint32_t port = 0;  // 0: not bound to a port yet
  std::uint32_t lqpn = 0;
  std::optional<std::uint8_t> type;   // enum ib_qp_type
  std::optional<std::uint8_t> state;  // enum ib_qp_state
  std::string owner;                  // KERN_NAME, or "user"
};

struct CmId {
  std::uint32_t port = 0;
  std::optional<std::uint32_t> lqpn;
  std::string src, dst;  // "10.10.10.1:4420", "[fe80::1]:4420"; "" when unset
  std::string owner;
};

// Decoders of one message's payload. false: malformed (the message is skipped).
bool DecodeDevice(Bytes payload, Device* out);
bool DecodePort(Bytes payload, Port* out);
bool DecodePortStats(Bytes payload, PortStats* out);  // STAT_GET and STAT_GET_STATUS
bool DecodeResources(Bytes payload, Resources* out);
// A dump message lists several objects; bad entries are counted in *bad and left out.
bool DecodeBoundCounters(Bytes payload, std::vector<BoundCounter>* out, std::size_t* bad);
bool DecodeQps(Bytes payload, std::vector<Qp>* out, std::size_t* bad);
bool DecodeCmIds(Bytes payload, std::vector<CmId>* out, std::size_t* bad);

std::string QpTypeName(std::uint8_t type);    // "rc", "ud", "gsi", ... or the number
std::string QpStateName(std::uint8_t state);  // "rts", "err", ... or the number
// Printable ASCII without quotes or backslashes, at most 64 bytes: what may become a label.
bool IsCleanName(const std::string& s);

}  // namespace nvmeof::rdmanl
