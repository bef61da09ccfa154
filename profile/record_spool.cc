#include "profile/record_spool.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <filesystem>

namespace nvmeof::profile {

namespace {

// The names are the record's last three fields; what comes before them is copied whole.
constexpr size_t kNamesAt = offsetof(nvmeof_record, disk);
static_assert(offsetof(nvmeof_record, nqn) == kNamesAt + sizeof(nvmeof_record::disk) &&
                  offsetof(nvmeof_record, hostnqn) ==
                      offsetof(nvmeof_record, nqn) + sizeof(nvmeof_record::nqn) &&
                  sizeof(nvmeof_record) - offsetof(nvmeof_record, hostnqn) <
                      sizeof(nvmeof_record::hostnqn) + 8,
              "the spool copies nvmeof_record up to its names, which end it");
constexpr char kName = 'n', kRecord = 'r';

// A name into its kernel field: NUL-padded, cut to the field (the spool's came from one).
void PutName(const std::string& name, char* field, size_t size) {
  std::memset(field, 0, size);
  std::memcpy(field, name.data(), std::min(name.size(), size));
}

}  // namespace

std::string RecordSpool::Open(const std::string& dir) {
  buf_ = std::make_unique<char[]>(kFlushAt + kSlack);
  fd_ = UniqueFd(::open(dir.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600));
  if (fd_.valid()) return "";
  std::string name = dir + "/.nvmeof-record-spool.XXXXXX";
  fd_ = UniqueFd(::mkostemp(name.data(), O_CLOEXEC));
  if (!fd_.valid()) return "cannot create a spool file in " + dir + ": " + ErrnoName(errno);
  ::unlink(name.c_str());
  return "";
}

std::string RecordSpool::OpenBeside(const std::string& output) {
  const std::filesystem::path dir = std::filesystem::path(output).parent_path();
  const std::string e = Open(dir.empty() ? "." : dir.string());
  if (e.empty()) return "";
  const char* tmp = std::getenv("TMPDIR");
  const std::string e2 = Open(tmp && *tmp ? tmp : "/tmp");
  return e2.empty() ? "" : e + "; " + e2;
}

void RecordSpool::Put(const void* p, size_t n) {
  std::memcpy(buf_.get() + used_, p, n);
  used_ += n;
}

std::uint32_t RecordSpool::Intern(int field, const char* name, size_t size) {
  const std::string_view text(name, ::strnlen(name, size));
  std::vector<Name>& recent = recent_[field];
  if (!recent.empty() && recent.front().text == text) return recent.front().id;
  for (size_t i = 1; i < recent.size(); ++i) {
    if (recent[i].text != text) continue;
    std::rotate(recent.begin(), recent.begin() + static_cast<std::ptrdiff_t>(i),
                recent.begin() + static_cast<std::ptrdiff_t>(i) + 1);
    return recent.front().id;
  }
  // A name not among the recent ones gets a new id, even one seen long ago: ids are never
  // looked up here, only in ForEach.
  const std::uint32_t id = next_id_++;
  const auto length = static_cast<std::uint16_t>(text.size());
  Put(&kName, 1);
  Put(&id, sizeof id);
  Put(&length, sizeof length);
  Put(text.data(), text.size());
  if (recent.size() == kRecent) recent.pop_back();
  recent.insert(recent.begin(), Name{std::string(text), id});
  return id;
}

bool RecordSpool::Add(const nvmeof_record& r) {
  if (error_) return false;
  const std::uint32_t ids[3] = {Intern(0, r.disk, sizeof r.disk), Intern(1, r.nqn, sizeof r.nqn),
                                Intern(2, r.hostnqn, sizeof r.hostnqn)};
  Put(&kRecord, 1);
  Put(&r, kNamesAt);
  Put(ids, sizeof ids);
  return used_ < kFlushAt || Flush();
}

bool RecordSpool::Flush() {
  if (error_) return false;
  const char* p = buf_.get();
  size_t left = used_;
  while (left > 0) {
    const ssize_t n = ::write(fd_.get(), p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      error_ = n < 0 ? errno : ENOSPC;
      return false;
    }
    p += n;
    left -= static_cast<size_t>(n);
    bytes_ += static_cast<std::uint64_t>(n);
  }
  used_ = 0;
  return true;
}

std::string RecordSpool::error() const { return "spool: write: " + ErrnoName(error_); }

std::string RecordSpool::ForEach(const std::function<void(const nvmeof_record&)>& fn) {
  if (!Flush()) return error();
  if (bytes_ == 0) return "";
  const auto size = static_cast<size_t>(bytes_);
  void* map = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd_.get(), 0);
  if (map == MAP_FAILED) return "spool: mmap: " + ErrnoName(errno);
  ::madvise(map, size, MADV_SEQUENTIAL);
  const char* p = static_cast<const char*>(map);
  const char* const end = p + size;
  std::vector<std::string> names;
  std::string why;
  nvmeof_record r{};
  auto take = [&](void* out, size_t n) {
    if (static_cast<size_t>(end - p) < n) return false;
    std::memcpy(out, p, n);
    p += n;
    return true;
  };
  while (p < end && why.empty()) {
    const char kind = *p++;
    if (kind == kName) {
      std::uint32_t id = 0;
      std::uint16_t length = 0;
      if (!take(&id, sizeof id) || !take(&length, sizeof length) ||
          static_cast<size_t>(end - p) < length || id != names.size()) {
        why = "spool: a corrupt name entry";
        break;
      }
      names.emplace_back(p, length);
      p += length;
    } else if (kind == kRecord) {
      std::uint32_t ids[3] = {};
      if (!take(&r, kNamesAt) || !take(ids, sizeof ids) ||
          std::any_of(ids, ids + 3, [&](std::uint32_t id) { return id >= names.size(); })) {
        why = "spool: a corrupt record entry";
        break;
      }
      PutName(names[ids[0]], r.disk, sizeof r.disk);
      PutName(names[ids[1]], r.nqn, sizeof r.nqn);
      PutName(names[ids[2]], r.hostnqn, sizeof r.hostnqn);
      fn(r);
    } else {
      why = "spool: an entry of unknown kind";
    }
  }
  ::munmap(map, size);
  return why;
}

}  // namespace nvmeof::profile
