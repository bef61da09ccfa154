#include "base/fd.h"

#include <string.h>
#include <unistd.h>

namespace nvmeof {

void UniqueFd::Reset() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

std::string ErrnoName(int err) {
  if (err < 0) err = -err;
  const char* name = ::strerrorname_np(err);
  return name ? name : "errno_" + std::to_string(err);
}

}  // namespace nvmeof
