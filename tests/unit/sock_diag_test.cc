// ParseTcpDiag on hand-built SOCK_DIAG_BY_FAMILY replies: well-formed, truncated, unpadded.
#include "readers/sock_diag.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/sock_diag.h>
#include <netinet/tcp.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

namespace nvmeof {
namespace {

// One message of type `type`, sequence `seq`, with `payload`, padded to NLMSG_ALIGNTO.
std::vector<std::uint8_t> Message(std::uint16_t type, std::uint32_t seq,
                                  const std::vector<std::uint8_t>& payload) {
  nlmsghdr h = {};
  h.nlmsg_len = static_cast<std::uint32_t>(NLMSG_LENGTH(payload.size()));
  h.nlmsg_type = type;
  h.nlmsg_seq = seq;
  std::vector<std::uint8_t> out(NLMSG_ALIGN(h.nlmsg_len));
  std::memcpy(out.data(), &h, sizeof h);
  if (!payload.empty()) std::memcpy(out.data() + NLMSG_HDRLEN, payload.data(), payload.size());
  return out;
}

// A socket: inet_diag_msg plus an INET_DIAG_INFO attribute of `info_bytes` of tcp_info.
std::vector<std::uint8_t> Socket(std::uint16_t sport, std::uint16_t dport, std::uint32_t retrans,
                                 std::size_t info_bytes = sizeof(tcp_info)) {
  inet_diag_msg d = {};
  d.idiag_family = AF_INET;
  d.id.idiag_sport = htons(sport);
  d.id.idiag_dport = htons(dport);
  tcp_info info = {};
  info.tcpi_total_retrans = retrans;
  // Not padded after the attribute: the message's own length need not be aligned.
  std::vector<std::uint8_t> p(NLMSG_ALIGN(sizeof d) + RTA_LENGTH(info_bytes));
  std::memcpy(p.data(), &d, sizeof d);
  rtattr a = {};
  a.rta_len = static_cast<unsigned short>(RTA_LENGTH(info_bytes));
  a.rta_type = INET_DIAG_INFO;
  std::memcpy(p.data() + NLMSG_ALIGN(sizeof d), &a, sizeof a);
  std::memcpy(p.data() + NLMSG_ALIGN(sizeof d) + RTA_LENGTH(0), &info,
              std::min(info_bytes, sizeof info));
  return Message(SOCK_DIAG_BY_FAMILY, 1, p);
}

std::vector<std::uint8_t> Join(std::initializer_list<std::vector<std::uint8_t>> parts) {
  std::vector<std::uint8_t> out;
  for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

TEST(ParseTcpDiag, SocketsThenDone) {
  const auto buf = Join({Socket(4420, 51000, 3), Message(SOCK_DIAG_BY_FAMILY, 7, {}),
                         Socket(51001, 4420, 0), Message(NLMSG_DONE, 1, {0, 0, 0, 0})});
  std::vector<TcpSocket> out;
  EXPECT_EQ(ParseTcpDiag(buf.data(), buf.size(), 1, &out), DiagParse::kDone);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].local_port, 4420);
  EXPECT_EQ(out[0].remote_port, 51000);
  EXPECT_EQ(out[0].total_retrans, 3u);
  EXPECT_EQ(out[1].local_port, 51001);
}

TEST(ParseTcpDiag, ErrorMessage) {
  const auto buf = Message(NLMSG_ERROR, 1, std::vector<std::uint8_t>(sizeof(nlmsgerr)));
  std::vector<TcpSocket> out;
  EXPECT_EQ(ParseTcpDiag(buf.data(), buf.size(), 1, &out), DiagParse::kError);
}

TEST(ParseTcpDiag, TruncatedAndUnpaddedBuffers) {
  std::vector<TcpSocket> out;
  // The last message without its padding still counts; one cut short is dropped.
  auto buf = Socket(1, 2, 5, 101);  // tcp_info up to tcpi_total_retrans (offset 100) is cut
  EXPECT_EQ(ParseTcpDiag(buf.data(), buf.size(), 1, &out), DiagParse::kMore);
  EXPECT_TRUE(out.empty());
  buf = Socket(1, 2, 5, 105);  // 105 bytes: 3 bytes of padding at the end
  buf.resize(buf.size() - 3);
  EXPECT_EQ(ParseTcpDiag(buf.data(), buf.size(), 1, &out), DiagParse::kMore);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].total_retrans, 5u);
  out.clear();
  buf = Join({Socket(1, 2, 5), Socket(3, 4, 6)});
  buf.resize(buf.size() - 1);  // the second message claims more than is left
  EXPECT_EQ(ParseTcpDiag(buf.data(), buf.size(), 1, &out), DiagParse::kMore);
  EXPECT_EQ(out.size(), 1u);
  for (std::size_t n = 0; n < sizeof(nlmsghdr); ++n) {
    EXPECT_EQ(ParseTcpDiag(buf.data(), n, 1, &out), DiagParse::kMore);
  }
}

}  // namespace
}  // namespace nvmeof
