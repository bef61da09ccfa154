// IEEE 802.1Qbb PFC state of a netdev over DCB netlink (rtnetlink RTM_GETDCB, DCB_CMD_IEEE_GET):
// what `dcb pfc show dev X` prints. A read, so no privileges are needed.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

namespace nvmeof {

// struct ieee_pfc from <linux/dcbnl.h>, index = priority.
struct IeeePfc {
  std::uint8_t pfc_cap = 0;  // how many traffic classes may have PFC at once
  std::uint8_t pfc_en = 0;   // bit N set: PFC enabled on priority N
  std::uint8_t mbc = 0;
  std::uint16_t delay = 0;
  std::array<std::uint64_t, 8> requests{};     // PFC frames sent (we asked the peer to pause)
  std::array<std::uint64_t, 8> indications{};  // PFC frames received (the peer paused us)
};

// Returns 0 and fills *out, or an errno value. ENODEV: no such netdev; EOPNOTSUPP: the driver
// has no DCB (veth, virtio_net, or a kernel without CONFIG_DCB); ENOENT: DCB but no IEEE PFC
// (a CEE-only driver, or its ieee_getpfc failed). The collector treats those three as "no DCB".
int ReadIeeePfc(const std::string& netdev, IeeePfc* out);

// Parses a buffer of netlink messages answering DCB_CMD_IEEE_GET (exposed for tests): 0, ENOENT
// when there is no DCB_ATTR_IEEE_PFC, EBADMSG when malformed, or the errno of an NLMSG_ERROR.
int ParseIeeePfcReply(const void* buf, std::size_t len, IeeePfc* out);

}  // namespace nvmeof
