// TCP sockets of this network namespace from sock_diag (NETLINK_SOCK_DIAG, the interface of
// `ss -ti`), with the tcp_info fields the tcp collector needs. netlink has no root to inject:
// this always reads the running kernel; the reply parser is separate so it can be fuzzed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace nvmeof {

struct TcpSocket {
  std::uint16_t local_port = 0;
  std::uint16_t remote_port = 0;
  std::uint32_t total_retrans = 0;  // tcpi_total_retrans
};

// Every TCP socket, IPv4 and IPv6, in all states but LISTEN and TIME_WAIT (those carry no
// retransmits). 0, or an errno: ETIMEDOUT after 2 s (never hang a scrape on netlink), EBADMSG
// for an NLMSG_ERROR or a malformed reply.
int DumpTcpSockets(std::vector<TcpSocket>* out);

enum class DiagParse { kMore, kDone, kError };
// One recv() buffer of a SOCK_DIAG_BY_FAMILY dump with sequence number `seq`: appends its
// sockets; kDone at NLMSG_DONE, kError at NLMSG_ERROR.
DiagParse ParseTcpDiag(const void* buf, std::size_t len, std::uint32_t seq,
                       std::vector<TcpSocket>* out);

}  // namespace nvmeof
