#include "readers/sysfs_files.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "base/files.h"

namespace nvmeof {
namespace {

constexpr size_t kMaxBytes = 64 * 1024;  // as ReadFile: an attribute, not a data file

bool SameTime(const timespec& a, const timespec& b) {
  return a.tv_sec == b.tv_sec && a.tv_nsec == b.tv_nsec;
}

std::chrono::nanoseconds SinceEpoch(const timespec& t) {
  return std::chrono::seconds(t.tv_sec) + std::chrono::nanoseconds(t.tv_nsec);
}

// The whole file from offset 0 into *out. A sysfs attribute comes whole from its first read and
// a short read of a regular file is its end (files.h), so an attribute takes one pread. False
// with *error set if a read fails (ENODEV on a device that went away, EINVAL on an unused
// gid_attrs/ndevs slot, EISDIR); a file over kMaxBytes reads as longer than kMaxBytes.
bool PreadAll(int fd, std::string* out, int* error) {
  constexpr size_t kChunk = 4096;
  out->clear();
  for (;;) {
    const size_t at = out->size();
    out->resize(at + kChunk);
    const ssize_t n = ::pread(fd, out->data() + at, kChunk, static_cast<off_t>(at));
    if (n < 0 && errno == EINTR) {
      out->resize(at);
      continue;
    }
    if (n < 0) {
      *error = errno;
      return false;
    }
    out->resize(at + static_cast<size_t>(n));
    if (static_cast<size_t>(n) < kChunk || out->size() > kMaxBytes) return true;
  }
}

}  // namespace

SysfsFiles::Dir* SysfsFiles::Look(const std::string& path, bool fresh) {
  auto it = dirs_.find(path);
  if (it != dirs_.end() && it->second.looked == scrape_) {
    Dir& dir = it->second;
    if (!fresh || dir.listed == scrape_) return &dir;
    if (Relist(dir)) return &dir;
    Close(dir);
    dirs_.erase(it);
    return nullptr;
  }
  struct stat st;
  if (::stat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    if (it != dirs_.end()) {
      Close(it->second);
      dirs_.erase(it);
    }
    return nullptr;
  }
  if (it == dirs_.end()) it = dirs_.try_emplace(path).first;
  Dir& dir = it->second;
  dir.looked = scrape_;
  if (!dir.fd.valid() || dir.ino != st.st_ino) {  // new, or re-created under the same path
    Close(dir);
    UniqueFd fd(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!fd.valid()) {
      dirs_.erase(it);
      return nullptr;
    }
    ++open_;
    dir.fd = std::move(fd);
    dir.ino = st.st_ino;
    dir.trusted = false;
  }
  if (dir.trusted && !fresh && SameTime(dir.mtime, st.st_mtim) && SameTime(dir.ctime, st.st_ctim) &&
      std::chrono::steady_clock::now() - dir.listed_at < max_age_) {
    return &dir;
  }
  dir.mtime = st.st_mtim;
  dir.ctime = st.st_ctim;
  timespec now{};
  ::clock_gettime(CLOCK_REALTIME, &now);
  dir.trusted = std::max(SinceEpoch(st.st_mtim), SinceEpoch(st.st_ctim)) + racy_ < SinceEpoch(now);
  if (!Relist(dir)) {
    Close(dir);
    dirs_.erase(it);
    return nullptr;
  }
  return &dir;
}

bool SysfsFiles::Relist(Dir& dir) {
  ++listings_;
  dir.listed = scrape_;
  dir.listed_at = std::chrono::steady_clock::now();
  if (listing_.empty()) listing_.resize(32 * 1024);
  if (::lseek(dir.fd.get(), 0, SEEK_SET) != 0) return false;
  std::vector<std::pair<std::string, ino_t>> names;
  for (;;) {
    const ssize_t n = ::getdents64(dir.fd.get(), listing_.data(), listing_.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return false;
    if (n == 0) break;
    for (ssize_t at = 0; at < n;) {
      const auto* e = reinterpret_cast<const dirent64*>(listing_.data() + at);
      at += e->d_reclen;
      const std::string_view name = e->d_name;
      if (name != "." && name != "..") names.emplace_back(std::string(name), e->d_ino);
    }
  }
  std::sort(names.begin(), names.end());
  std::vector<File> files;
  files.reserve(names.size());
  auto old = dir.files.begin();
  for (auto& [name, ino] : names) {
    File file{std::move(name), ino, {}};
    while (old != dir.files.end() && old->name < file.name) ++old;
    if (old != dir.files.end() && old->name == file.name && old->ino == ino) {
      file.fd = std::move(old->fd);  // leaves an invalid fd behind: not counted again below
    }
    files.push_back(std::move(file));
  }
  for (auto& file : dir.files) {  // no longer listed, or replaced
    if (file.fd.valid()) --open_;
  }
  dir.files = std::move(files);
  return true;
}

SysfsFiles::File* SysfsFiles::Find(Dir& dir, std::string_view name) {
  auto it = std::lower_bound(dir.files.begin(), dir.files.end(), name,
                             [](const File& f, std::string_view n) { return f.name < n; });
  return it != dir.files.end() && it->name == name ? &*it : nullptr;
}

bool SysfsFiles::Read(Dir& dir, File& file, std::string* out, bool keep) {
  int error = 0;
  if (file.fd.valid()) {
    if (PreadAll(file.fd.get(), out, &error)) return true;
    if (error != ENODEV && error != ENOENT) return false;  // the file's own answer: kept
    file.fd.Reset();  // gone under the kept fd: once more on a fresh open
    --open_;
  }
  UniqueFd fresh(::openat(dir.fd.get(), file.name.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
  if (!fresh.valid()) return false;
  const bool ok = PreadAll(fresh.get(), out, &error);
  if (keep && (ok || (error != ENODEV && error != ENOENT && error != EISDIR)) &&
      open_ < max_open_) {
    file.fd = std::move(fresh);
    ++open_;
  }
  return ok;
}

std::optional<SysfsFiles::Counters> SysfsFiles::ReadCounters(const std::string& path) {
  Dir* dir = Look(path);
  if (!dir) return std::nullopt;
  Counters counters;
  counters.reserve(dir->files.size());
  for (File& file : dir->files) {
    std::optional<std::uint64_t> value;
    if (Read(*dir, file, &text_) && text_.size() <= kMaxBytes) {
      value = ParseU64(TrimAttribute(text_));
    }
    counters.push_back({file.name, value});
  }
  return counters;
}

std::vector<std::string> SysfsFiles::List(const std::string& path) {
  std::vector<std::string> names;
  if (Dir* dir = Look(path, /*fresh=*/true)) {
    names.reserve(dir->files.size());
    for (const File& file : dir->files) names.push_back(file.name);
  }
  return names;
}

std::optional<std::string> SysfsFiles::ReadAttribute(const std::string& path,
                                                     std::string_view name) {
  Dir* dir = Look(path);
  if (!dir) return std::nullopt;
  File* file = Find(*dir, name);
  if (!file) {  // not in the kept listing: maybe added since (not kept until listed)
    File unlisted{std::string(name), 0, {}};
    if (!Read(*dir, unlisted, &text_, /*keep=*/false) || text_.size() > kMaxBytes) {
      return std::nullopt;
    }
    return std::string(TrimAttribute(text_));
  }
  if (!Read(*dir, *file, &text_) || text_.size() > kMaxBytes) return std::nullopt;
  return std::string(TrimAttribute(text_));
}

void SysfsFiles::Sweep() {
  for (auto it = dirs_.begin(); it != dirs_.end();) {
    if (it->second.looked == scrape_) {
      ++it;
    } else {
      Close(it->second);
      it = dirs_.erase(it);
    }
  }
  ++scrape_;
}

void SysfsFiles::Close(Dir& dir) {
  for (auto& file : dir.files) {
    if (file.fd.valid()) --open_;
  }
  dir.files.clear();
  if (dir.fd.valid()) --open_;
  dir.fd.Reset();
  dir.trusted = false;
}

}  // namespace nvmeof
