#include "exporter/profile/record.h"

#include <charconv>
#include <fstream>
#include <map>
#include <sstream>
#include <variant>

namespace nvmeof::profile {

namespace {

void WriteString(std::ostream& out, const std::string& s) {
  out << '"';
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out << '\\' << c;
    } else if (c < 0x20) {
      static const char kHex[] = "0123456789abcdef";
      out << "\\u00" << kHex[c >> 4] << kHex[c & 15];
    } else {
      out << c;
    }
  }
  out << '"';
}

// A flat JSON object: string, unsigned integer, bool or array of unsigned integers per key.
using Value = std::variant<std::string, std::uint64_t, bool, std::vector<std::uint64_t>>;
using Object = std::map<std::string, Value>;

class Parser {
 public:
  explicit Parser(std::string_view text) : s_(text) {}

  bool ParseObject(Object* out, std::string* error) {
    Ws();
    if (!Eat('{')) return Fail("expected '{'", error);
    Ws();
    if (Eat('}')) return End(error);
    for (;;) {
      std::string key;
      Ws();
      if (!String(&key)) return Fail("expected a key string", error);
      Ws();
      if (!Eat(':')) return Fail("expected ':'", error);
      Ws();
      Value v;
      if (!ParseValue(&v)) return Fail("bad value for \"" + key + "\"", error);
      if (out->count(key)) return Fail("duplicate key \"" + key + "\"", error);
      (*out)[key] = std::move(v);
      Ws();
      if (Eat(',')) continue;
      if (Eat('}')) return End(error);
      return Fail("expected ',' or '}'", error);
    }
  }

 private:
  bool End(std::string* error) {
    Ws();
    if (i_ != s_.size()) return Fail("trailing characters", error);
    return true;
  }
  bool Fail(const std::string& what, std::string* error) {
    *error = what + " at column " + std::to_string(i_ + 1);
    return false;
  }
  void Ws() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\r')) ++i_;
  }
  bool Eat(char c) {
    if (i_ < s_.size() && s_[i_] == c) {
      ++i_;
      return true;
    }
    return false;
  }
  bool Number(std::uint64_t* v) {
    const char* b = s_.data() + i_;
    const char* e = s_.data() + s_.size();
    auto [p, ec] = std::from_chars(b, e, *v);
    if (ec != std::errc() || p == b) return false;
    i_ += static_cast<size_t>(p - b);
    return true;
  }
  bool String(std::string* out) {
    if (!Eat('"')) return false;
    while (i_ < s_.size()) {
      const char c = s_[i_++];
      if (c == '"') return true;
      if (static_cast<unsigned char>(c) < 0x20) return false;
      if (c != '\\') {
        out->push_back(c);
        continue;
      }
      if (i_ >= s_.size()) return false;
      const char e = s_[i_++];
      switch (e) {
        case '"':
          out->push_back('"');
          break;
        case '\\':
          out->push_back('\\');
          break;
        case '/':
          out->push_back('/');
          break;
        case 'n':
          out->push_back('\n');
          break;
        case 't':
          out->push_back('\t');
          break;
        case 'r':
          out->push_back('\r');
          break;
        case 'u': {
          if (i_ + 4 > s_.size()) return false;
          unsigned code = 0;
          auto [p, ec] = std::from_chars(s_.data() + i_, s_.data() + i_ + 4, code, 16);
          if (ec != std::errc() || p != s_.data() + i_ + 4) return false;
          i_ += 4;
          if (code >= 0x80) return false;  // the writer escapes control characters only
          out->push_back(static_cast<char>(code));
          break;
        }
        default:
          return false;
      }
    }
    return false;
  }
  bool ParseValue(Value* v) {
    if (i_ >= s_.size()) return false;
    const char c = s_[i_];
    if (c == '"') {
      std::string s;
      if (!String(&s)) return false;
      *v = std::move(s);
      return true;
    }
    if (s_.substr(i_, 4) == "true") {
      i_ += 4;
      *v = true;
      return true;
    }
    if (s_.substr(i_, 5) == "false") {
      i_ += 5;
      *v = false;
      return true;
    }
    if (c == '[') {
      ++i_;
      std::vector<std::uint64_t> a;
      Ws();
      if (Eat(']')) {
        *v = std::move(a);
        return true;
      }
      for (;;) {
        Ws();
        std::uint64_t n = 0;
        if (!Number(&n)) return false;
        a.push_back(n);
        if (a.size() > 64) return false;
        Ws();
        if (Eat(',')) continue;
        if (Eat(']')) break;
        return false;
      }
      *v = std::move(a);
      return true;
    }
    std::uint64_t n = 0;
    if (!Number(&n)) return false;
    *v = n;
    return true;
  }

  std::string_view s_;
  size_t i_ = 0;
};

template <typename T>
const T* Get(const Object& o, const std::string& key) {
  auto it = o.find(key);
  return it == o.end() ? nullptr : std::get_if<T>(&it->second);
}

// Reads a required/optional field of type T into *out; false (with *error) when it is missing
// (required) or of the wrong type.
template <typename T, typename Out>
bool Field(const Object& o, const std::string& key, bool required, Out* out, std::string* error) {
  auto it = o.find(key);
  if (it == o.end()) {
    if (!required) return true;
    *error = "missing field \"" + key + "\"";
    return false;
  }
  const T* v = std::get_if<T>(&it->second);
  if (!v) {
    *error = "field \"" + key + "\" has the wrong type";
    return false;
  }
  if constexpr (std::is_same_v<T, std::uint64_t> && !std::is_same_v<Out, std::uint64_t>) {
    if (*v > static_cast<std::uint64_t>(static_cast<Out>(~Out{0}))) {
      *error = "field \"" + key + "\" is out of range";
      return false;
    }
    *out = static_cast<Out>(*v);
  } else {
    *out = *v;
  }
  return true;
}

bool ParseHeader(const Object& o, RecordHeader* h, std::string* error) {
  const std::string* format = Get<std::string>(o, "format");
  if (!format || *format != kRecordFormat) {
    *error = "not an nvmeof record file (the first line has no \"format\":\"nvmeof-record\")";
    return false;
  }
  std::uint64_t version = 0;
  if (!Field<std::uint64_t>(o, "version", true, &version, error)) return false;
  if (version != static_cast<std::uint64_t>(kRecordVersion)) {
    *error = "version " + std::to_string(version) + " is not supported (this build reads version " +
             std::to_string(kRecordVersion) + ")";
    return false;
  }
  h->version = kRecordVersion;
  if (!Field<std::string>(o, "role", true, &h->role, error)) return false;
  if (h->role != "host" && h->role != "target") {
    *error = "header: role \"" + h->role + "\" is neither host nor target";
    return false;
  }
  if (!Field<std::uint64_t>(o, "sample_every", true, &h->sample_every, error)) return false;
  if (h->sample_every == 0) {
    *error = "header: sample_every is 0";
    return false;
  }
  return Field<std::string>(o, "hostname", false, &h->hostname, error) &&
         Field<std::string>(o, "kernel", false, &h->kernel, error) &&
         Field<std::string>(o, "mechanism", false, &h->mechanism, error) &&
         Field<std::string>(o, "clock", false, &h->clock, error);
}

bool ParseRecord(const Object& o, Record* r, std::string* error) {
  std::string role;
  if (!Field<std::string>(o, "role", true, &role, error)) return false;
  if (role != "host" && role != "target") {
    *error = "role \"" + role + "\" is neither host nor target";
    return false;
  }
  r->role = role == "host" ? NVMEOF_ROLE_HOST : NVMEOF_ROLE_TARGET;
  if (!Field<std::string>(o, "transport", true, &r->transport, error) ||
      !Field<std::string>(o, "op", true, &r->op, error) ||
      !Field<std::uint64_t>(o, "size", true, &r->size, error) ||
      !Field<std::uint64_t>(o, "qid", true, &r->qid, error) ||
      !Field<std::uint64_t>(o, "cid", true, &r->cid, error) ||
      !Field<std::uint64_t>(o, "cntlid", false, &r->cntlid, error) ||
      !Field<std::string>(o, "subsys", false, &r->subsys, error) ||
      !Field<std::string>(o, "hostnqn", false, &r->hostnqn, error) ||
      !Field<std::string>(o, "device", false, &r->device, error) ||
      !Field<std::uint64_t>(o, "slba", true, &r->slba, error) ||
      !Field<std::uint64_t>(o, "nlb", true, &r->nlb, error) ||
      !Field<std::vector<std::uint64_t>>(o, "ts", true, &r->ts, error))
    return false;
  const size_t points =
      r->role == NVMEOF_ROLE_HOST ? size_t{NVMEOF_HP_COUNT} : size_t{NVMEOF_TP_COUNT};
  if (r->ts.size() != points) {
    *error = "\"ts\" has " + std::to_string(r->ts.size()) + " points, a " + role + " record has " +
             std::to_string(points);
    return false;
  }
  std::uint64_t last = 0;
  for (auto t : r->ts) {
    if (t == 0) continue;
    if (t < last) {
      *error = "\"ts\" points go back in time";
      return false;
    }
    last = t;
  }
  return true;
}

}  // namespace

void WriteHeader(const RecordHeader& h, std::ostream& out) {
  out << "{\"format\":\"" << kRecordFormat << "\",\"version\":" << h.version << ",\"hostname\":";
  WriteString(out, h.hostname);
  out << ",\"kernel\":";
  WriteString(out, h.kernel);
  out << ",\"role\":";
  WriteString(out, h.role);
  out << ",\"mechanism\":";
  WriteString(out, h.mechanism);
  out << ",\"sample_every\":" << h.sample_every << ",\"clock\":";
  WriteString(out, h.clock);
  out << "}\n";
}

void WriteRecord(const Record& r, std::ostream& out) {
  out << "{\"role\":\"" << (r.role == NVMEOF_ROLE_HOST ? "host" : "target") << "\",\"transport\":";
  WriteString(out, r.transport);
  out << ",\"op\":";
  WriteString(out, r.op);
  out << ",\"size\":" << r.size << ",\"qid\":" << r.qid << ",\"cid\":" << r.cid
      << ",\"cntlid\":" << r.cntlid << ",\"subsys\":";
  WriteString(out, r.subsys);
  out << ",\"hostnqn\":";
  WriteString(out, r.hostnqn);
  out << ",\"device\":";
  WriteString(out, r.device);
  out << ",\"slba\":" << r.slba << ",\"nlb\":" << r.nlb << ",\"ts\":[";
  for (size_t i = 0; i < r.ts.size(); ++i) out << (i ? "," : "") << r.ts[i];
  out << "]}\n";
}

void WriteEnd(std::uint64_t records, std::uint64_t lost, std::ostream& out) {
  out << "{\"end\":true,\"records\":" << records << ",\"lost\":" << lost << "}\n";
}

void WriteEnd(std::uint64_t records, std::uint64_t lost, std::ostream& out,
              std::uint64_t commands) {
  out << "{\"end\":true,\"records\":" << records << ",\"lost\":" << lost
      << ",\"commands\":" << commands << "}\n";
}

bool ReadRecords(std::istream& in, RecordFile* file, std::string* error) {
  *file = RecordFile{};
  std::string line;
  size_t n = 0;
  bool header = false;
  while (std::getline(in, line)) {
    ++n;
    const bool newline = !in.eof();
    auto fail = [&](const std::string& what) {
      *error = "line " + std::to_string(n) + ": " + what;
      return false;
    };
    if (line.size() > (1u << 16)) return fail("line longer than 64 KiB (corrupt file)");
    Object o;
    std::string why;
    if (!Parser(line).ParseObject(&o, &why)) {
      if (!newline) return fail("truncated (no newline at end of file; was `record` stopped?)");
      return fail("corrupt: " + why);
    }
    if (!header) {
      if (!ParseHeader(o, &file->header, &why)) return fail(why);
      header = true;
      continue;
    }
    if (file->has_end) return fail("data after the end line");
    if (Get<bool>(o, "end")) {
      std::uint64_t records = 0;
      if (!Field<std::uint64_t>(o, "records", true, &records, &why) ||
          !Field<std::uint64_t>(o, "lost", true, &file->lost, &why) ||
          !Field<std::uint64_t>(o, "commands", false, &file->commands, &why))
        return fail("end line: " + why);
      if (records != file->records.size())
        return fail("end line says " + std::to_string(records) + " records, the file has " +
                    std::to_string(file->records.size()));
      file->has_end = true;
      continue;
    }
    Record r;
    if (!ParseRecord(o, &r, &why)) return fail("corrupt record: " + why);
    if ((r.role == NVMEOF_ROLE_HOST) != (file->header.role == "host"))
      return fail("a " + std::string(r.role == NVMEOF_ROLE_HOST ? "host" : "target") +
                  " record in a " + file->header.role + " file");
    file->records.push_back(std::move(r));
  }
  if (in.bad()) {
    *error = "read error";
    return false;
  }
  if (!header) {
    *error = "empty file (no header line)";
    return false;
  }
  return true;
}

bool ReadRecordFile(const std::string& path, RecordFile* file, std::string* error) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    *error = "cannot open";
    return false;
  }
  return ReadRecords(in, file, error);
}

std::uint64_t EndToEnd(const Record& r) {
  std::uint64_t first = 0, last = 0;
  for (auto t : r.ts) {
    if (!t) continue;
    if (!first) first = t;
    last = t;
  }
  return last - first;
}

}  // namespace nvmeof::profile
