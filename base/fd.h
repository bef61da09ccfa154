// The one file-descriptor owner, and errno names for bounded labels and log lines.
#pragma once

#include <string>
#include <utility>

namespace nvmeof {

// Move-only owner of a file descriptor: sockets, BPF_ENABLE_STATS (stats stay on while open).
class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  ~UniqueFd() { Reset(); }
  UniqueFd(UniqueFd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept {
    if (this != &other) {
      Reset();
      fd_ = std::exchange(other.fd_, -1);
    }
    return *this;
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  void Reset();

 private:
  int fd_ = -1;
};

// "EPERM" for EPERM or -EPERM; "errno_N" for a number the C library has no name for.
std::string ErrnoName(int err);

}  // namespace nvmeof
