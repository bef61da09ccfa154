#include "collectors/base/counter_dirs.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <string_view>

#include "collectors/base/files.h"

namespace nvmeof {
namespace {

constexpr size_t kMaxBytes = 64 * 1024;  // as ReadFile: an attribute, not a data file

// An open attribute file's value, read from offset 0 as ReadU64 reads the file. A sysfs
// attribute comes whole from its first read, and a short read of a regular file is its end, so
// a u64 with its newline takes one pread; a file that fills the buffer is read on. *failed: the
// read itself failed (ENODEV, EIO, EISDIR), as opposed to a file that is not a number.
std::optional<std::uint64_t> PreadU64(int fd, bool* failed) {
  char buf[128];
  std::string data;
  off_t offset = 0;
  for (;;) {
    const ssize_t n = ::pread(fd, buf, sizeof buf, offset);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      *failed = true;
      return std::nullopt;
    }
    data.append(buf, static_cast<size_t>(n));
    offset += n;
    if (n < static_cast<ssize_t>(sizeof buf) || data.size() > kMaxBytes) break;
  }
  if (data.size() > kMaxBytes) return std::nullopt;
  return ParseU64(TrimAttribute(data));
}

}  // namespace

std::vector<std::pair<std::string, std::optional<std::uint64_t>>> CounterDirs::Read(
    const std::string& path) {
  std::vector<std::pair<std::string, std::optional<std::uint64_t>>> entries;
  auto it = dirs_.find(path);
  DIR* listing = nullptr;
  const int dir_fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd >= 0) {
    listing = ::fdopendir(dir_fd);
    if (!listing) ::close(dir_fd);
  }
  if (!listing) {
    if (it != dirs_.end()) {
      Close(it->second);
      dirs_.erase(it);
    }
    return entries;
  }
  std::vector<std::pair<std::string, ino_t>> names;
  while (const dirent* e = ::readdir(listing)) {
    std::string_view n = e->d_name;
    if (n == "." || n == "..") continue;
    names.emplace_back(std::string(n), e->d_ino);
  }
  std::sort(names.begin(), names.end());

  Dir& dir = it != dirs_.end() ? it->second : dirs_[path];
  dir.read = true;
  std::map<std::string, File> kept;
  entries.reserve(names.size());
  for (auto& [name, ino] : names) {
    File file;
    if (auto old = dir.files.find(name); old != dir.files.end() && old->second.ino == ino) {
      file = std::move(old->second);  // leaves an invalid fd behind: not closed again below
    }
    bool failed = false;
    std::optional<std::uint64_t> value;
    if (file.fd.valid()) {
      value = PreadU64(file.fd.get(), &failed);
      if (failed) {
        file.fd.Reset();
        --open_;
      }
    }
    if (!file.fd.valid()) {  // new, replaced, failed on the kept fd, or over the bound
      UniqueFd fresh(::openat(dir_fd, name.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
      failed = !fresh.valid();
      if (!failed) value = PreadU64(fresh.get(), &failed);
      if (!failed && open_ < max_open_) {
        file.fd = std::move(fresh);
        file.ino = ino;
        ++open_;
      }
    }
    entries.emplace_back(std::move(name), failed ? std::nullopt : value);
    if (file.fd.valid()) kept.emplace(entries.back().first, std::move(file));
  }
  Close(dir);  // files no longer listed, or replaced
  dir.files = std::move(kept);
  ::closedir(listing);  // closes dir_fd
  return entries;
}

void CounterDirs::Sweep() {
  for (auto it = dirs_.begin(); it != dirs_.end();) {
    if (it->second.read) {
      it->second.read = false;
      ++it;
    } else {
      Close(it->second);
      it = dirs_.erase(it);
    }
  }
}

void CounterDirs::Close(Dir& dir) {
  for (auto& [name, file] : dir.files) {
    if (file.fd.valid()) --open_;
  }
  dir.files.clear();
}

}  // namespace nvmeof
