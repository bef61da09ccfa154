// The nldev codec's framing half: requests out, and replies split into messages.
#include <linux/netlink.h>
#include <rdma/rdma_netlink.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "readers/nldev.h"

namespace nvmeof::rdmanl {
namespace {

void Put(std::vector<std::uint8_t>* buf, std::uint16_t type, const void* data, std::size_t len) {
  const std::size_t start = buf->size();
  nlattr hdr{static_cast<std::uint16_t>(NLA_HDRLEN + len), type};
  buf->resize(start + NLA_ALIGN(NLA_HDRLEN + len));
  std::memcpy(buf->data() + start, &hdr, sizeof hdr);
  if (len) std::memcpy(buf->data() + start + NLA_HDRLEN, data, len);
}

void PutU32(std::vector<std::uint8_t>* buf, std::uint16_t type, std::uint32_t v) {
  Put(buf, type, &v, sizeof v);
}

}  // namespace

std::vector<std::uint8_t> BuildRequest(const Request& req, std::uint32_t seq) {
  std::vector<std::uint8_t> buf(NLMSG_HDRLEN);
  if (req.dev_index) PutU32(&buf, RDMA_NLDEV_ATTR_DEV_INDEX, *req.dev_index);
  if (req.port) PutU32(&buf, RDMA_NLDEV_ATTR_PORT_INDEX, *req.port);
  if (req.stat_res) PutU32(&buf, RDMA_NLDEV_ATTR_STAT_RES, *req.stat_res);
  if (req.enable_indices) {
    std::vector<std::uint8_t> nest;
    for (auto i : *req.enable_indices) PutU32(&nest, RDMA_NLDEV_ATTR_STAT_HWCOUNTER_INDEX, i);
    Put(&buf, NLA_F_NESTED | RDMA_NLDEV_ATTR_STAT_HWCOUNTERS, nest.data(), nest.size());
  }
  nlmsghdr hdr{};
  hdr.nlmsg_len = static_cast<std::uint32_t>(buf.size());
  hdr.nlmsg_type = RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, req.cmd);
  hdr.nlmsg_flags = NLM_F_REQUEST | (req.dump ? NLM_F_DUMP : 0);
  // STAT_SET answers nothing on success unless asked: the ACK tells success from silence.
  if (req.enable_indices) hdr.nlmsg_flags |= NLM_F_ACK;
  hdr.nlmsg_seq = seq;
  std::memcpy(buf.data(), &hdr, sizeof hdr);
  return buf;
}

std::string RequestKey(const Request& req) {
  std::string name;
  switch (req.cmd) {
    case RDMA_NLDEV_CMD_GET:
      name = "get";
      break;
    case RDMA_NLDEV_CMD_PORT_GET:
      name = "port_get";
      break;
    case RDMA_NLDEV_CMD_RES_GET:
      name = "res_get";
      break;
    case RDMA_NLDEV_CMD_RES_QP_GET:
      name = "res_qp_get";
      break;
    case RDMA_NLDEV_CMD_RES_CM_ID_GET:
      name = "res_cm_id_get";
      break;
    case RDMA_NLDEV_CMD_STAT_GET:
      name = req.stat_res ? "stat_get_qp" : "stat_get";
      break;
    case RDMA_NLDEV_CMD_STAT_SET:
      name = "stat_set";
      break;
    case RDMA_NLDEV_CMD_STAT_GET_STATUS:
      name = "stat_get_status";
      break;
    default:
      name = "cmd" + std::to_string(req.cmd);
  }
  if (req.dev_index) name += "-d" + std::to_string(*req.dev_index);
  if (req.port) name += "-p" + std::to_string(*req.port);
  return name;
}

bool SplitMessages(Bytes buf, std::vector<Bytes>* out) {
  while (!buf.empty()) {
    nlmsghdr hdr;
    if (buf.size() < sizeof hdr) return false;
    std::memcpy(&hdr, buf.data(), sizeof hdr);
    if (hdr.nlmsg_len < NLMSG_HDRLEN || hdr.nlmsg_len > buf.size()) return false;
    out->push_back(buf.first(hdr.nlmsg_len));
    buf = buf.subspan(std::min<std::size_t>(NLMSG_ALIGN(hdr.nlmsg_len), buf.size()));
  }
  return true;
}

Scan ScanMessages(Bytes buf) {
  Scan scan;
  while (!buf.empty() && !scan.done) {
    nlmsghdr hdr;
    if (buf.size() < sizeof hdr) {
      scan.malformed = true;
      break;
    }
    std::memcpy(&hdr, buf.data(), sizeof hdr);
    if (hdr.nlmsg_len < NLMSG_HDRLEN || hdr.nlmsg_len > buf.size()) {
      scan.malformed = true;
      break;
    }
    const Bytes raw = buf.first(hdr.nlmsg_len);
    const Bytes payload = raw.subspan(NLMSG_HDRLEN);
    if (hdr.nlmsg_type == NLMSG_ERROR || hdr.nlmsg_type == NLMSG_DONE) {
      // NLMSG_ERROR: int error + the request's header; DONE of a dump: int error (may be 0).
      int err = 0;
      if (payload.size() >= sizeof err) {
        std::memcpy(&err, payload.data(), sizeof err);
      } else if (hdr.nlmsg_type == NLMSG_ERROR) {
        scan.malformed = true;
      }
      // The kernel sends -errno (MAX_ERRNO is 4095); anything else (INT_MIN, found by the
      // fuzzer, cannot even be negated) is not an answer we understand.
      if (err <= 0 && err > -4096) {
        scan.error = -err;
      } else {
        scan.error = EBADMSG;
        scan.malformed = true;
      }
      scan.done = true;
    } else if (hdr.nlmsg_type >= NLMSG_MIN_TYPE) {
      scan.data.push_back({hdr.nlmsg_type, payload, raw});
    }  // NLMSG_NOOP, NLMSG_OVERRUN: nothing to decode
    buf = buf.subspan(std::min<std::size_t>(NLMSG_ALIGN(hdr.nlmsg_len), buf.size()));
  }
  return scan;
}

}  // namespace nvmeof::rdmanl
