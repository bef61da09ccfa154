#include "profile/record_scan.h"

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <limits>
#include <sstream>

namespace nvmeof::profile {

namespace {

// One line, consumed from the front. Each step is false where the line is not exactly what the
// writer writes there; the caller then leaves the whole body to ReadRecords.
class Line {
 public:
  explicit Line(std::string_view text) : p_(text.data()), end_(text.data() + text.size()) {}

  bool Done() const { return p_ == end_; }
  bool Lit(std::string_view s) {
    if (static_cast<size_t>(end_ - p_) < s.size() || std::memcmp(p_, s.data(), s.size()) != 0)
      return false;
    p_ += s.size();
    return true;
  }
  // The rest of a string whose opening quote is consumed: printable ASCII, no escape. `last`:
  // the same field's string on the line before (checked then), which it mostly is again.
  bool Str(std::string* out, std::string* last) {
    const size_t n = last->size();
    if (static_cast<size_t>(end_ - p_) > n && p_[n] == '"' &&
        std::memcmp(p_, last->data(), n) == 0) {
      *out = *last;
      p_ += n + 1;
      return true;
    }
    if (!Str(out)) return false;
    *last = *out;
    return true;
  }
  bool Str(std::string* out) {
    const auto* q = static_cast<const char*>(std::memchr(p_, '"', static_cast<size_t>(end_ - p_)));
    if (!q) return false;
    bool other = false;  // no early exit: the loop vectorizes
    for (const char* c = p_; c < q; ++c) {
      const auto u = static_cast<unsigned char>(*c);
      other |= (u < 0x20) | (u >= 0x7f) | (u == '\\');
    }
    if (other) return false;
    out->assign(p_, q);
    p_ = q + 1;
    return true;
  }
  // An unsigned integer as JSON writes one (no sign, no leading zero, no fraction) up to max.
  template <typename T>
  bool Num(T* out, std::uint64_t max = std::numeric_limits<T>::max()) {
    const auto digit = [](char c) { return static_cast<unsigned char>(c - '0') < 10; };
    const char* p = p_;  // a local: the loop below keeps it in a register
    if (p == end_ || !digit(*p)) return false;
    if (*p == '0' && p + 1 < end_ && digit(p[1])) return false;
    std::uint64_t v = 0;
    // 19 digits never overflow; a 20th is checked; a 21st always overflows.
    for (const char* lim = p + std::min<std::ptrdiff_t>(end_ - p, 19); p < lim && digit(*p); ++p)
      v = v * 10 + static_cast<std::uint64_t>(*p - '0');
    if (p < end_ && digit(*p) &&
        (__builtin_mul_overflow(v, 10u, &v) ||
         __builtin_add_overflow(v, static_cast<std::uint64_t>(*p++ - '0'), &v) ||
         (p < end_ && digit(*p))))
      return false;
    if (v > max || (p < end_ && (*p == '.' || *p == 'e' || *p == 'E'))) return false;
    p_ = p;
    *out = static_cast<T>(v);
    return true;
  }

 private:
  const char* p_;
  const char* end_;
};

// The strings of the line before, per field.
struct LastStrings {
  std::string transport, op, subsys, hostnqn, device;
};

// A record line as WriteRecord writes it, checked as ReadRecords checks it.
bool ScanRecord(std::string_view text, bool host_file, LastStrings* before, Record* r) {
  Line l(text);
  if (!l.Lit("{\"role\":\"")) return false;
  if (l.Lit("host\"")) {
    r->role = NVMEOF_ROLE_HOST;
  } else if (l.Lit("target\"")) {
    r->role = NVMEOF_ROLE_TARGET;
  } else {
    return false;
  }
  if ((r->role == NVMEOF_ROLE_HOST) != host_file) return false;
  if (!l.Lit(",\"transport\":\"") || !l.Str(&r->transport, &before->transport) ||
      !l.Lit(",\"op\":\"") || !l.Str(&r->op, &before->op) || !l.Lit(",\"size\":") ||
      !l.Num(&r->size) || !l.Lit(",\"qid\":") || !l.Num(&r->qid) || !l.Lit(",\"cid\":") ||
      !l.Num(&r->cid) || !l.Lit(",\"cntlid\":") || !l.Num(&r->cntlid) || !l.Lit(",\"subsys\":\"") ||
      !l.Str(&r->subsys, &before->subsys) || !l.Lit(",\"hostnqn\":\"") ||
      !l.Str(&r->hostnqn, &before->hostnqn) || !l.Lit(",\"device\":\"") ||
      !l.Str(&r->device, &before->device) || !l.Lit(",\"slba\":") || !l.Num(&r->slba) ||
      !l.Lit(",\"nlb\":") || !l.Num(&r->nlb) || !l.Lit(",\"ts\":["))
    return false;
  const size_t points = host_file ? size_t{NVMEOF_HP_COUNT} : size_t{NVMEOF_TP_COUNT};
  r->ts.resize(points);
  std::uint64_t last = 0;
  for (size_t i = 0; i < points; ++i) {
    if ((i && !l.Lit(",")) || !l.Num(&r->ts[i])) return false;
    if (r->ts[i] == 0) continue;
    if (r->ts[i] < last) return false;  // ReadRecords: "ts" points go back in time
    last = r->ts[i];
  }
  if (!l.Lit("]")) return false;
  if (l.Lit(",\"time_ns\":") && !l.Num(&r->time_ns)) return false;
  if (l.Lit(",\"ref\":\"") && !l.Str(&r->ref)) return false;
  return l.Lit("}") && l.Done();
}

// The end line as WriteEnd writes it.
bool ScanEnd(std::string_view text, RecordFile* file, std::uint64_t* records) {
  Line l(text);
  if (!l.Lit("{\"end\":true,\"records\":") || !l.Num(records) || !l.Lit(",\"lost\":") ||
      !l.Num(&file->lost))
    return false;
  if (l.Lit(",\"commands\":") && !l.Num(&file->commands)) return false;
  return l.Lit("}") && l.Done();
}

bool Slow(std::string_view body, RecordFile* file, std::string* error) {
  std::istringstream in{std::string(body)};
  return ReadRecords(in, file, error);
}

constexpr size_t kMaxLine = 1u << 16;  // ReadRecords refuses longer lines

// The fast path: false where it does not apply (not an error: ReadRecords decides).
bool Fast(std::string_view body, RecordFile* file) {
  size_t nl = body.find('\n');
  if (nl == std::string_view::npos || nl > kMaxLine || body.back() != '\n') return false;
  std::string error;
  if (!Slow(body.substr(0, nl + 1), file, &error)) return false;  // the header, by ReadRecords
  const bool host = file->header.role == "host";
  size_t lines = 0;  // memchr, not std::count: that is a byte at a time at -O2
  for (const char* p = body.data();
       (p = static_cast<const char*>(std::memchr(p, '\n', body.size() - (p - body.data())))); ++p)
    ++lines;
  file->records.reserve(lines);
  LastStrings last;
  for (size_t at = nl + 1; at < body.size(); at = nl + 1) {
    nl = body.find('\n', at);
    const std::string_view line = body.substr(at, nl - at);
    if (line.size() > kMaxLine || file->has_end) return false;
    if (line.starts_with("{\"end\"")) {
      std::uint64_t records = 0;
      if (!ScanEnd(line, file, &records) || records != file->records.size()) return false;
      file->has_end = true;
      continue;
    }
    Record& r = file->records.emplace_back();
    if (!ScanRecord(line, host, &last, &r)) return false;
  }
  return true;
}

}  // namespace

bool ReadRecordBody(std::string_view body, RecordFile* file, std::string* error, bool* fast) {
  const bool took = Fast(body, file);
  if (fast) *fast = took;
  if (took) return true;
  return Slow(body, file, error);
}

}  // namespace nvmeof::profile
