// libFuzzer target for ParseTcpDiag: the input is one recv() buffer of a SOCK_DIAG_BY_FAMILY
// dump (sequence number 1). Seeds: tests/fuzz/seeds.py builds replies like the kernel's.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "readers/sock_diag.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  // A recv() buffer is aligned (NLMSG_ALIGNTO); so is a fresh heap copy of exactly `size` bytes,
  // which lets ASan catch any read past its end.
  std::vector<std::uint8_t> buf(data, data + size);
  std::vector<nvmeof::TcpSocket> out;
  (void)nvmeof::ParseTcpDiag(buf.data(), buf.size(), 1, &out);
  return 0;
}
