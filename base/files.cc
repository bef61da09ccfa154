#include "base/files.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>

namespace nvmeof {

std::string FileFailure(const std::string& path) {
  const int err = errno;
  char buf[128];
  // GNU strerror_r: returns the message, in buf or static; thread-safe, unlike strerror.
  return path + ": " + (err ? strerror_r(err, buf, sizeof buf) : "unreadable");
}

std::optional<std::string> ReadFile(const std::string& path, size_t max_bytes) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return std::nullopt;
  std::string data;
  char buf[4096];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {  // e.g. EINVAL on an empty gid_attrs/ndevs slot, EIO from a driver
      ::close(fd);
      return std::nullopt;
    }
    if (n == 0) break;
    data.append(buf, static_cast<size_t>(n));
    if (data.size() > max_bytes) {
      ::close(fd);
      errno = EFBIG;  // for FileFailure
      return std::nullopt;
    }
    // A short read is the end (files.h): saves the read that would return 0, one syscall of
    // the four an attribute costs.
    if (static_cast<size_t>(n) < sizeof buf) break;
  }
  ::close(fd);
  data.resize(TrimAttribute(data).size());
  return data;
}

std::string_view TrimAttribute(std::string_view text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ' || text.back() == '\t' ||
                           text.back() == '\0')) {
    text.remove_suffix(1);
  }
  return text;
}

std::string ReadFileOr(const std::string& path) {
  auto v = ReadFile(path);
  return v ? *v : "";
}

std::optional<std::uint64_t> ParseU64(std::string_view text) {
  if (text.empty()) return std::nullopt;
  std::uint64_t v = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || ptr != text.data() + text.size()) return std::nullopt;
  return v;
}

std::optional<std::uint64_t> ReadU64(const std::string& path) {
  auto text = ReadFile(path);
  if (!text) return std::nullopt;
  return ParseU64(*text);
}

std::vector<std::string> ListDir(const std::string& path) {
  std::vector<std::string> names;
  DIR* dir = ::opendir(path.c_str());
  if (!dir) return names;
  while (const dirent* e = ::readdir(dir)) {
    std::string_view n = e->d_name;
    if (n == "." || n == "..") continue;
    names.emplace_back(n);
  }
  ::closedir(dir);
  std::sort(names.begin(), names.end());
  return names;
}

bool IsDir(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

bool Exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

std::optional<std::string> ReadLinkBase(const std::string& path) {
  char buf[4096];
  ssize_t n = ::readlink(path.c_str(), buf, sizeof buf - 1);
  if (n <= 0) return std::nullopt;
  std::string target(buf, static_cast<size_t>(n));
  while (!target.empty() && target.back() == '/') target.pop_back();
  auto slash = target.rfind('/');
  return slash == std::string::npos ? target : target.substr(slash + 1);
}

}  // namespace nvmeof
