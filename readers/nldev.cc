#include "readers/nldev.h"

#include <arpa/inet.h>
#include <linux/netlink.h>
#include <netinet/in.h>
#include <rdma/rdma_netlink.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>

namespace nvmeof::rdmanl {
namespace {

constexpr std::size_t kMaxNameLen = 64;

// ---- reading: attribute walks never trust a length without checking it against the buffer ----

struct Attr {
  std::uint16_t type;
  Bytes payload;
};

// Calls fn(Attr) for each attribute; false if the attribute stream is malformed.
template <typename Fn>
bool ForEachAttr(Bytes buf, Fn fn) {
  while (!buf.empty()) {
    if (buf.size() < NLA_HDRLEN) return false;
    nlattr hdr;
    std::memcpy(&hdr, buf.data(), sizeof hdr);
    if (hdr.nla_len < NLA_HDRLEN || hdr.nla_len > buf.size()) return false;
    const Attr a{static_cast<std::uint16_t>(hdr.nla_type & NLA_TYPE_MASK),
                 buf.subspan(NLA_HDRLEN, hdr.nla_len - NLA_HDRLEN)};
    if (!fn(a)) return false;
    // The last attribute may lack its alignment padding.
    buf = buf.subspan(std::min<std::size_t>(NLA_ALIGN(hdr.nla_len), buf.size()));
  }
  return true;
}

bool GetU8(const Attr& a, std::uint8_t* v) {
  if (a.payload.size() < sizeof *v) return false;
  *v = a.payload[0];
  return true;
}
bool GetU32(const Attr& a, std::uint32_t* v) {
  if (a.payload.size() < sizeof *v) return false;
  std::memcpy(v, a.payload.data(), sizeof *v);
  return true;
}
bool GetU64(const Attr& a, std::uint64_t* v) {
  if (a.payload.size() < sizeof *v) return false;
  std::memcpy(v, a.payload.data(), sizeof *v);  // only 4-byte aligned in the message
  return true;
}
// NUL-terminated, clean, at most kMaxNameLen: anything else is malformed.
bool GetName(const Attr& a, std::string* s) {
  const auto* p = reinterpret_cast<const char*>(a.payload.data());
  const void* nul = std::memchr(p, 0, a.payload.size());
  if (!nul) return false;
  std::string v(p, static_cast<const char*>(nul) - p);
  if (!IsCleanName(v)) return false;
  *s = std::move(v);
  return true;
}
// Kernel objects carry their module's name; user objects a PID, which stays out of labels.
bool GetOwner(const Attr& a, std::string* owner) {
  if (a.type == RDMA_NLDEV_ATTR_RES_KERN_NAME) return GetName(a, owner);
  if (a.type == RDMA_NLDEV_ATTR_RES_PID) {
    if (owner->empty()) *owner = "user";
    return a.payload.size() >= 4;
  }
  return true;
}

// STAT_HWCOUNTERS: entries {ENTRY_NAME, ENTRY_VALUE | INDEX, DYNAMIC}.
bool DecodeHwCounters(const Attr& nest, std::vector<HwCounter>* out, std::size_t* bad) {
  return ForEachAttr(nest.payload, [&](const Attr& e) {
    if (e.type != RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY) return true;
    HwCounter c;
    bool ok = true, named = false;
    const bool wellformed = ForEachAttr(e.payload, [&](const Attr& a) {
      switch (a.type) {
        case RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_NAME:
          named = ok = ok && GetName(a, &c.name);
          break;
        case RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_VALUE: {
          std::uint64_t v;
          if (GetU64(a, &v))
            c.value = v;
          else
            ok = false;
          break;
        }
        case RDMA_NLDEV_ATTR_STAT_HWCOUNTER_INDEX: {
          std::uint32_t v;
          if (GetU32(a, &v))
            c.index = v;
          else
            ok = false;
          break;
        }
        case RDMA_NLDEV_ATTR_STAT_HWCOUNTER_DYNAMIC: {
          std::uint8_t v;
          if (GetU8(a, &v))
            c.optional_enabled = v != 0;
          else
            ok = false;
          break;
        }
      }
      return true;
    });
    if (wellformed && ok && named) {
      out->push_back(std::move(c));
    } else {
      ++*bad;
    }
    return true;  // one bad entry does not spoil its neighbours
  });
}

std::string FormatSockaddr(const Attr& a) {
  sockaddr_storage ss{};
  if (a.payload.size() < sizeof(sa_family_t)) return "";
  std::memcpy(&ss, a.payload.data(), std::min(a.payload.size(), sizeof ss));
  char host[INET6_ADDRSTRLEN] = "";
  if (ss.ss_family == AF_INET && a.payload.size() >= sizeof(sockaddr_in)) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(&ss);
    if (!inet_ntop(AF_INET, &in->sin_addr, host, sizeof host)) return "";
    return std::string(host) + ":" + std::to_string(ntohs(in->sin_port));
  }
  if (ss.ss_family == AF_INET6 && a.payload.size() >= sizeof(sockaddr_in6)) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(&ss);
    if (!inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof host)) return "";
    return "[" + std::string(host) + "]:" + std::to_string(ntohs(in6->sin6_port));
  }
  return "";  // AF_IB and unset addresses
}

// The handle every nldev message starts with: DEV_INDEX, DEV_NAME (and PORT_INDEX).
struct Handle {
  std::uint32_t dev_index = 0;
  std::string dev_name;
  std::optional<std::uint32_t> port;
  bool has_index = false;
};

bool HandleAttr(const Attr& a, Handle* h, bool* ok) {
  switch (a.type) {
    case RDMA_NLDEV_ATTR_DEV_INDEX:
      h->has_index = GetU32(a, &h->dev_index);
      *ok = *ok && h->has_index;
      return true;
    case RDMA_NLDEV_ATTR_DEV_NAME:
      *ok = *ok && GetName(a, &h->dev_name);
      return true;
    case RDMA_NLDEV_ATTR_PORT_INDEX: {
      std::uint32_t p;
      if (GetU32(a, &p))
        h->port = p;
      else
        *ok = false;
      return true;
    }
  }
  return false;
}

bool HandleComplete(const Handle& h) { return h.has_index && !h.dev_name.empty(); }

// The skeleton of every per-entry table (QPs, CM IDs, bound counters): the device handle around
// the nest `table` of `entry` attributes. decode(entry attr, T*) is false for a bad entry, which
// is counted in *bad while its neighbours are kept. False when the message itself is malformed.
template <typename T, typename Decode>
bool DecodeEntries(Bytes payload, std::uint16_t table, std::uint16_t entry, std::vector<T>* out,
                   std::size_t* bad, Decode decode) {
  Handle h;
  bool ok = true;
  std::vector<T> found;
  const bool wellformed = ForEachAttr(payload, [&](const Attr& a) {
    if (HandleAttr(a, &h, &ok)) return true;
    if (a.type != table) return true;
    return ForEachAttr(a.payload, [&](const Attr& e) {
      if (e.type != entry) return true;
      T item;
      if (decode(e, &item)) {
        found.push_back(std::move(item));
      } else {
        ++*bad;
      }
      return true;
    });
  });
  if (!wellformed || !ok || !HandleComplete(h)) return false;
  for (auto& item : found) out->push_back(std::move(item));
  return true;
}

}  // namespace

bool IsCleanName(const std::string& s) {
  if (s.empty() || s.size() > kMaxNameLen) return false;
  for (unsigned char c : s) {
    if (c < 0x20 || c > 0x7e || c == '"' || c == '\\') return false;
  }
  return true;
}

bool DecodeDevice(Bytes payload, Device* out) {
  Handle h;
  bool ok = true;
  Device d;
  const bool wellformed = ForEachAttr(payload, [&](const Attr& a) {
    if (a.type == RDMA_NLDEV_ATTR_PORT_INDEX) {
      ok = ok && GetU32(a, &d.ports);
    } else if (a.type == RDMA_NLDEV_ATTR_DEV_PROTOCOL) {
      ok = ok && GetName(a, &d.protocol);
    } else {
      HandleAttr(a, &h, &ok);
    }
    return true;
  });
  if (!wellformed || !ok || !HandleComplete(h)) return false;
  d.index = h.dev_index;
  d.name = h.dev_name;
  *out = std::move(d);
  return true;
}

bool DecodePort(Bytes payload, Port* out) {
  Handle h;
  bool ok = true;
  Port p;
  const bool wellformed = ForEachAttr(payload, [&](const Attr& a) {
    if (a.type == RDMA_NLDEV_ATTR_NDEV_NAME) {
      ok = ok && GetName(a, &p.netdev);
    } else {
      HandleAttr(a, &h, &ok);
    }
    return true;
  });
  if (!wellformed || !ok || !HandleComplete(h) || !h.port) return false;
  p.dev_index = h.dev_index;
  p.dev_name = h.dev_name;
  p.port = *h.port;
  *out = std::move(p);
  return true;
}

bool DecodePortStats(Bytes payload, PortStats* out) {
  Handle h;
  bool ok = true, has_table = false;
  PortStats s;
  const bool wellformed = ForEachAttr(payload, [&](const Attr& a) {
    if (HandleAttr(a, &h, &ok)) return true;
    if (a.type != RDMA_NLDEV_ATTR_STAT_HWCOUNTERS) return true;
    has_table = true;
    return DecodeHwCounters(a, &s.counters, &s.bad_entries);
  });
  if (!wellformed || !ok || !HandleComplete(h) || !h.port || !has_table) return false;
  s.dev_index = h.dev_index;
  s.dev_name = h.dev_name;
  s.port = *h.port;
  *out = std::move(s);
  return true;
}

bool DecodeResources(Bytes payload, Resources* out) {
  Handle h;
  bool ok = true, has_table = false;
  Resources r;
  const bool wellformed = ForEachAttr(payload, [&](const Attr& a) {
    if (HandleAttr(a, &h, &ok)) return true;
    if (a.type != RDMA_NLDEV_ATTR_RES_SUMMARY) return true;
    has_table = true;
    return ForEachAttr(a.payload, [&](const Attr& e) {
      if (e.type != RDMA_NLDEV_ATTR_RES_SUMMARY_ENTRY) return true;
      std::string name;
      std::optional<std::uint64_t> curr;
      bool entry_ok = true;
      const bool entry_wellformed = ForEachAttr(e.payload, [&](const Attr& f) {
        if (f.type == RDMA_NLDEV_ATTR_RES_SUMMARY_ENTRY_NAME) {
          entry_ok = entry_ok && GetName(f, &name);
        } else if (f.type == RDMA_NLDEV_ATTR_RES_SUMMARY_ENTRY_CURR) {
          std::uint64_t v;
          if (GetU64(f, &v))
            curr = v;
          else
            entry_ok = false;
        }
        return true;
      });
      if (entry_wellformed && entry_ok && !name.empty() && curr) {
        r.counts.emplace_back(std::move(name), *curr);
      } else {
        ++r.bad_entries;
      }
      return true;
    });
  });
  if (!wellformed || !ok || !HandleComplete(h) || !has_table) return false;
  r.dev_index = h.dev_index;
  r.dev_name = h.dev_name;
  *out = std::move(r);
  return true;
}

bool DecodeBoundCounters(Bytes payload, std::vector<BoundCounter>* out, std::size_t* bad) {
  return DecodeEntries<BoundCounter>(
      payload, RDMA_NLDEV_ATTR_STAT_COUNTER, RDMA_NLDEV_ATTR_STAT_COUNTER_ENTRY, out, bad,
      [](const Attr& e, BoundCounter* c) {
        bool ok = true, has_port = false, has_id = false;
        const bool wellformed = ForEachAttr(e.payload, [&](const Attr& a) {
          switch (a.type) {
            case RDMA_NLDEV_ATTR_PORT_INDEX:
              has_port = GetU32(a, &c->port);
              break;
            case RDMA_NLDEV_ATTR_STAT_COUNTER_ID:
              has_id = GetU32(a, &c->id);
              break;
            case RDMA_NLDEV_ATTR_RES_KERN_NAME:
            case RDMA_NLDEV_ATTR_RES_PID:
              ok = ok && GetOwner(a, &c->owner);
              break;
            case RDMA_NLDEV_ATTR_RES_QP:
              ok = ok && ForEachAttr(a.payload, [&](const Attr& q) {
                     if (q.type != RDMA_NLDEV_ATTR_RES_QP_ENTRY) return true;
                     return ForEachAttr(q.payload, [&](const Attr& f) {
                       std::uint32_t n;
                       if (f.type != RDMA_NLDEV_ATTR_RES_LQPN) return true;
                       if (!GetU32(f, &n)) return false;
                       c->qpns.push_back(n);
                       return true;
                     });
                   });
              break;
            case RDMA_NLDEV_ATTR_STAT_HWCOUNTERS:
              ok = ok && DecodeHwCounters(a, &c->counters, &c->bad_entries);
              break;
          }
          return true;
        });
        return wellformed && ok && has_port && has_id;
      });
}

bool DecodeQps(Bytes payload, std::vector<Qp>* out, std::size_t* bad) {
  return DecodeEntries<Qp>(payload, RDMA_NLDEV_ATTR_RES_QP, RDMA_NLDEV_ATTR_RES_QP_ENTRY, out, bad,
                           [](const Attr& e, Qp* q) {
                             bool ok = true, has_qpn = false;
                             const bool wellformed = ForEachAttr(e.payload, [&](const Attr& a) {
                               std::uint8_t v8;
                               switch (a.type) {
                                 case RDMA_NLDEV_ATTR_PORT_INDEX:
                                   ok = ok && GetU32(a, &q->port);
                                   break;
                                 case RDMA_NLDEV_ATTR_RES_LQPN:
                                   has_qpn = GetU32(a, &q->lqpn);
                                   break;
                                 case RDMA_NLDEV_ATTR_RES_TYPE:
                                   if (GetU8(a, &v8))
                                     q->type = v8;
                                   else
                                     ok = false;
                                   break;
                                 case RDMA_NLDEV_ATTR_RES_STATE:
                                   if (GetU8(a, &v8))
                                     q->state = v8;
                                   else
                                     ok = false;
                                   break;
                                 case RDMA_NLDEV_ATTR_RES_KERN_NAME:
                                 case RDMA_NLDEV_ATTR_RES_PID:
                                   ok = ok && GetOwner(a, &q->owner);
                                   break;
                               }
                               return true;
                             });
                             return wellformed && ok && has_qpn;
                           });
}

bool DecodeCmIds(Bytes payload, std::vector<CmId>* out, std::size_t* bad) {
  return DecodeEntries<CmId>(payload, RDMA_NLDEV_ATTR_RES_CM_ID, RDMA_NLDEV_ATTR_RES_CM_ID_ENTRY,
                             out, bad, [](const Attr& e, CmId* c) {
                               bool ok = true;
                               const bool wellformed = ForEachAttr(e.payload, [&](const Attr& a) {
                                 std::uint32_t v;
                                 switch (a.type) {
                                   case RDMA_NLDEV_ATTR_PORT_INDEX:
                                     ok = ok && GetU32(a, &c->port);
                                     break;
                                   case RDMA_NLDEV_ATTR_RES_LQPN:
                                     if (GetU32(a, &v))
                                       c->lqpn = v;
                                     else
                                       ok = false;
                                     break;
                                   case RDMA_NLDEV_ATTR_RES_SRC_ADDR:
                                     c->src = FormatSockaddr(a);
                                     break;
                                   case RDMA_NLDEV_ATTR_RES_DST_ADDR:
                                     c->dst = FormatSockaddr(a);
                                     break;
                                   case RDMA_NLDEV_ATTR_RES_KERN_NAME:
                                   case RDMA_NLDEV_ATTR_RES_PID:
                                     ok = ok && GetOwner(a, &c->owner);
                                     break;
                                 }
                                 return true;
                               });
                               return wellformed && ok;
                             });
}

std::string QpTypeName(std::uint8_t type) {
  // enum ib_qp_type (include/rdma/ib_verbs.h), the names `rdma res show qp` prints; 7 is unused.
  static const char* const kNames[] = {
      "smi",           "gsi",   "rc",         "uc",      "ud",     "raw_ipv6",
      "raw_ethertype", nullptr, "raw_packet", "xrc_ini", "xrc_tgt"};
  if (type == 0xff) return "driver";
  return type < std::size(kNames) && kNames[type] ? kNames[type] : std::to_string(type);
}

std::string QpStateName(std::uint8_t state) {
  static const char* const kNames[] = {"reset", "init", "rtr", "rts", "sqd", "sqe", "err"};
  return state < std::size(kNames) ? kNames[state] : std::to_string(state);
}

}  // namespace nvmeof::rdmanl
