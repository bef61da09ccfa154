#include "readers/sock_diag.h"

#include <arpa/inet.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/time.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "base/fd.h"

namespace nvmeof {
namespace {

bool SendDump(int fd, std::uint8_t family) {
  struct {
    nlmsghdr nlh;
    inet_diag_req_v2 req;
  } msg = {};
  msg.nlh.nlmsg_len = sizeof(msg);
  msg.nlh.nlmsg_type = SOCK_DIAG_BY_FAMILY;
  msg.nlh.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
  msg.nlh.nlmsg_seq = family;
  msg.req.sdiag_family = family;
  msg.req.sdiag_protocol = IPPROTO_TCP;
  msg.req.idiag_ext = 1 << (INET_DIAG_INFO - 1);
  msg.req.idiag_states = 0xFFF & ~(1u << TCP_LISTEN) & ~(1u << TCP_TIME_WAIT);
  sockaddr_nl kernel = {};
  kernel.nl_family = AF_NETLINK;
  return ::sendto(fd, &msg, sizeof(msg), 0, reinterpret_cast<sockaddr*>(&kernel), sizeof(kernel)) ==
         static_cast<ssize_t>(sizeof(msg));
}

int Dump(int fd, std::uint8_t family, std::vector<TcpSocket>* out) {
  if (!SendDump(fd, family)) return errno ? errno : EIO;
  alignas(nlmsghdr) char buf[32768];
  for (;;) {
    ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno == EAGAIN || errno == EWOULDBLOCK ? ETIMEDOUT : errno;
    if (n == 0) return EBADMSG;
    switch (ParseTcpDiag(buf, static_cast<std::size_t>(n), family, out)) {
      case DiagParse::kMore:
        continue;
      case DiagParse::kDone:
        return 0;
      case DiagParse::kError:
        return EBADMSG;
    }
  }
}

}  // namespace

DiagParse ParseTcpDiag(const void* buf, std::size_t len, std::uint32_t seq,
                       std::vector<TcpSocket>* out) {
  // NLMSG_OK/NLMSG_NEXT spelled out: the macros compare the u32 nlmsg_len with an int
  // (-Wsign-compare under clang).
  std::size_t left = len;
  const nlmsghdr* next = nullptr;
  for (auto* h = static_cast<const nlmsghdr*>(buf);
       left >= sizeof(nlmsghdr) && h->nlmsg_len >= sizeof(nlmsghdr) && h->nlmsg_len <= left;
       h = next) {
    // Aligned in size_t (NLMSG_ALIGN masks in 32 bits); a step past the end (the last
    // message's padding missing) ends the loop.
    const std::size_t step =
        (std::size_t{h->nlmsg_len} + NLMSG_ALIGNTO - 1) & ~std::size_t{NLMSG_ALIGNTO - 1};
    next = step < left ? reinterpret_cast<const nlmsghdr*>(reinterpret_cast<const char*>(h) + step)
                       : nullptr;
    left = step < left ? left - step : 0;
    if (h->nlmsg_seq != seq) continue;
    if (h->nlmsg_type == NLMSG_DONE) return DiagParse::kDone;
    if (h->nlmsg_type == NLMSG_ERROR) return DiagParse::kError;
    if (h->nlmsg_len < NLMSG_LENGTH(sizeof(inet_diag_msg))) continue;
    inet_diag_msg d;
    std::memcpy(&d, NLMSG_DATA(h), sizeof d);
    TcpSocket sock;
    sock.local_port = ntohs(d.id.idiag_sport);
    sock.remote_port = ntohs(d.id.idiag_dport);
    bool have_info = false;
    int alen = static_cast<int>(h->nlmsg_len - NLMSG_LENGTH(sizeof d));
    auto* a = reinterpret_cast<const rtattr*>(static_cast<const char*>(NLMSG_DATA(h)) +
                                              NLMSG_ALIGN(sizeof d));
    for (; RTA_OK(a, alen); a = RTA_NEXT(a, alen)) {
      if (a->rta_type != INET_DIAG_INFO) continue;
      // tcp_info grows over kernel versions: copy what both sides know.
      tcp_info info = {};
      const size_t have = RTA_PAYLOAD(a);
      if (have < offsetof(tcp_info, tcpi_total_retrans) + sizeof(info.tcpi_total_retrans)) break;
      std::memcpy(&info, RTA_DATA(a), std::min(have, sizeof(info)));
      sock.total_retrans = info.tcpi_total_retrans;
      have_info = true;
      break;
    }
    if (have_info) out->push_back(sock);
  }
  return DiagParse::kMore;
}

int DumpTcpSockets(std::vector<TcpSocket>* out) {
  UniqueFd fd(::socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG));
  if (!fd.valid()) return errno;
  timeval timeout = {2, 0};
  ::setsockopt(fd.get(), SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  for (std::uint8_t family : {std::uint8_t{AF_INET}, std::uint8_t{AF_INET6}}) {
    if (int err = Dump(fd.get(), family, out)) return err;
  }
  return 0;
}

}  // namespace nvmeof
