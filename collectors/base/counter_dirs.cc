#include "collectors/base/counter_dirs.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
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

bool CounterDirs::List(Dir& dir, std::vector<std::pair<std::string, ino_t>>* names) {
  if (listing_.empty()) listing_.resize(32 * 1024);
  if (::lseek(dir.fd.get(), 0, SEEK_SET) != 0) return false;
  for (;;) {
    const ssize_t n = ::getdents64(dir.fd.get(), listing_.data(), listing_.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return false;
    if (n == 0) break;
    for (ssize_t at = 0; at < n;) {
      const auto* e = reinterpret_cast<const dirent64*>(listing_.data() + at);
      at += e->d_reclen;
      const std::string_view name = e->d_name;
      if (name != "." && name != "..") names->emplace_back(std::string(name), e->d_ino);
    }
  }
  std::sort(names->begin(), names->end());
  return true;
}

std::optional<CounterDirs::Entries> CounterDirs::Read(const std::string& path) {
  auto it = dirs_.find(path);
  auto gone = [&]() -> std::optional<Entries> {
    if (it != dirs_.end()) {
      Close(it->second);
      dirs_.erase(it);
    }
    return std::nullopt;
  };
  struct stat st;
  if (::stat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) return gone();
  if (it == dirs_.end()) it = dirs_.try_emplace(path).first;
  Dir& dir = it->second;
  if (!dir.fd.valid() || dir.ino != st.st_ino) {  // new, or re-created under the same path
    UniqueFd fd(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!fd.valid()) return gone();
    if (!dir.fd.valid()) ++open_;
    dir.fd = std::move(fd);
    dir.ino = st.st_ino;
  }
  std::vector<std::pair<std::string, ino_t>> names;
  if (!List(dir, &names)) return gone();

  dir.read = true;
  std::map<std::string, File> kept;
  Entries entries;
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
      UniqueFd fresh(::openat(dir.fd.get(), name.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
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
  for (auto& [name, file] : dir.files) {  // no longer listed, or replaced
    if (file.fd.valid()) --open_;
  }
  dir.files = std::move(kept);
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
  if (dir.fd.valid()) --open_;
  dir.fd.Reset();
}

}  // namespace nvmeof
