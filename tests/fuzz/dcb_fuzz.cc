// libFuzzer target for ParseIeeePfcReply: the input is one rtnetlink buffer answering
// DCB_CMD_IEEE_GET. Seeds: tests/fuzz/seeds.py builds replies like the kernel's.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "readers/dcb.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::vector<std::uint8_t> buf(data, data + size);
  nvmeof::IeeePfc pfc;
  (void)nvmeof::ParseIeeePfcReply(buf.data(), buf.size(), &pfc);
  return 0;
}
