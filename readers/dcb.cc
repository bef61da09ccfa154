#include "readers/dcb.h"

#include <libmnl/libmnl.h>
#include <linux/dcbnl.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <sys/socket.h>
#include <sys/time.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <memory>
#include <vector>

namespace nvmeof {
namespace {

struct ParseState {
  IeeePfc* out;
  bool found = false;
  int err = 0;
};

int IeeeAttr(const struct nlattr* attr, void* data) {
  auto* st = static_cast<ParseState*>(data);
  if (mnl_attr_get_type(attr) != DCB_ATTR_IEEE_PFC) return MNL_CB_OK;
  if (mnl_attr_get_payload_len(attr) < sizeof(struct ieee_pfc)) {
    st->err = EBADMSG;
    return MNL_CB_ERROR;
  }
  struct ieee_pfc pfc;
  std::memcpy(&pfc, mnl_attr_get_payload(attr), sizeof pfc);  // payload is only 4-byte aligned
  st->out->pfc_cap = pfc.pfc_cap;
  st->out->pfc_en = pfc.pfc_en;
  st->out->mbc = pfc.mbc;
  st->out->delay = pfc.delay;
  for (int i = 0; i < 8; ++i) {
    st->out->requests[i] = pfc.requests[i];
    st->out->indications[i] = pfc.indications[i];
  }
  st->found = true;
  return MNL_CB_OK;
}

int TopAttr(const struct nlattr* attr, void* data) {
  auto* st = static_cast<ParseState*>(data);
  if (mnl_attr_get_type(attr) != DCB_ATTR_IEEE) return MNL_CB_OK;
  if (mnl_attr_validate(attr, MNL_TYPE_NESTED) < 0) {
    st->err = EBADMSG;
    return MNL_CB_ERROR;
  }
  return mnl_attr_parse_nested(attr, IeeeAttr, data);
}

int Message(const struct nlmsghdr* nlh, void* data) {
  auto* st = static_cast<ParseState*>(data);
  if (nlh->nlmsg_type != RTM_GETDCB) return MNL_CB_OK;
  if (mnl_nlmsg_get_payload_len(nlh) < sizeof(struct dcbmsg)) {
    st->err = EBADMSG;
    return MNL_CB_ERROR;
  }
  const auto* dcb = static_cast<const struct dcbmsg*>(mnl_nlmsg_get_payload(nlh));
  if (dcb->cmd != DCB_CMD_IEEE_GET) return MNL_CB_OK;
  int rc = mnl_attr_parse(nlh, sizeof(struct dcbmsg), TopAttr, data);
  // One answer is all we asked for.
  return rc == MNL_CB_ERROR ? MNL_CB_ERROR : MNL_CB_STOP;
}

// The length of the whole, padded messages at the start of `buf`; libmnl only ever sees those
// (both found by tests/fuzz/dcb_fuzz):
// - mnl_nlmsg_ok compares (int)nlmsg_len, so a length of 2^31 or more passes as negative and
//   mnl_cb_run walks off the buffer;
// - mnl_attr_parse walks attributes up to MNL_ALIGN(nlmsg_len), so a last message whose padding
//   is not in the buffer lets an attribute end up to 3 bytes past it.
std::size_t FramedLength(const void* buf, std::size_t len) {
  const auto* p = static_cast<const unsigned char*>(buf);
  std::size_t at = 0;
  while (len - at >= sizeof(struct nlmsghdr)) {
    struct nlmsghdr h;
    std::memcpy(&h, p + at, sizeof h);
    const std::size_t padded = MNL_ALIGN(std::size_t{h.nlmsg_len});
    if (h.nlmsg_len < sizeof h || padded > len - at) break;
    at += padded;
  }
  return at;
}

int Parse(const void* buf, std::size_t len, unsigned seq, unsigned portid, IeeePfc* out,
          bool* done) {
  IeeePfc pfc;
  ParseState st{&pfc};
  errno = 0;
  int rc = mnl_cb_run(buf, FramedLength(buf, len), seq, portid, Message, &st);
  if (rc == MNL_CB_ERROR) {
    if (st.err) return st.err;
    return errno ? errno : EBADMSG;  // errno from an NLMSG_ERROR, EPROTO for a stray sequence
  }
  *done = rc == MNL_CB_STOP || st.found;
  if (!st.found) return ENOENT;
  *out = pfc;
  return 0;
}

struct MnlClose {
  void operator()(struct mnl_socket* nl) const { mnl_socket_close(nl); }
};

}  // namespace

int ParseIeeePfcReply(const void* buf, std::size_t len, IeeePfc* out) {
  bool done = false;
  return Parse(buf, len, 0, 0, out, &done);
}

int ReadIeeePfc(const std::string& netdev, IeeePfc* out) {
  if (netdev.empty() || netdev.size() >= IFNAMSIZ) return ENODEV;
  std::unique_ptr<struct mnl_socket, MnlClose> nl(mnl_socket_open2(NETLINK_ROUTE, SOCK_CLOEXEC));
  if (!nl) return errno;
  if (mnl_socket_bind(nl.get(), 0, MNL_SOCKET_AUTOPID) < 0) return errno;
  // A driver stuck in firmware must not hang the scrape.
  struct timeval tv = {2, 0};
  ::setsockopt(mnl_socket_get_fd(nl.get()), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);

  // The reply carries ETS, PFC, buffers, APP tables and peer info: far below this.
  std::vector<char> buf(64 * 1024);
  struct nlmsghdr* nlh = mnl_nlmsg_put_header(buf.data());
  nlh->nlmsg_type = RTM_GETDCB;
  nlh->nlmsg_flags = NLM_F_REQUEST;
  const unsigned seq = static_cast<unsigned>(::time(nullptr));
  nlh->nlmsg_seq = seq;
  auto* dcb = static_cast<struct dcbmsg*>(mnl_nlmsg_put_extra_header(nlh, sizeof(struct dcbmsg)));
  dcb->dcb_family = AF_UNSPEC;
  dcb->cmd = DCB_CMD_IEEE_GET;
  mnl_attr_put_strz(nlh, DCB_ATTR_IFNAME, netdev.c_str());
  if (mnl_socket_sendto(nl.get(), nlh, nlh->nlmsg_len) < 0) return errno;

  const unsigned portid = mnl_socket_get_portid(nl.get());
  for (;;) {
    ssize_t n = mnl_socket_recvfrom(nl.get(), buf.data(), buf.size());
    if (n < 0) return errno == EAGAIN || errno == EWOULDBLOCK ? ETIMEDOUT : errno;
    bool done = false;
    int err = Parse(buf.data(), static_cast<std::size_t>(n), seq, portid, out, &done);
    if (err != ENOENT || done) return err;
  }
}

}  // namespace nvmeof
