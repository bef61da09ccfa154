#include "loader/record_file.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <charconv>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string_view>
#include <variant>

namespace nvmeof {

namespace {

// A flat JSON object: string, unsigned integer, bool or array of unsigned integers per key.
using Value = std::variant<std::string, std::uint64_t, bool, std::vector<std::uint64_t>>;
using Object = std::map<std::string, Value>;

// One line as an Object (nlohmann/json parses it). Refused, as the format has none of them: a
// duplicate key (nlohmann would keep the last one silently), and any other value type
// (negative or fractional numbers, null, nested objects).
bool ParseObject(const std::string& line, Object* out, std::string* error) {
  using Json = nlohmann::json;
  std::vector<std::set<std::string>> keys;  // per object being parsed
  std::string duplicate;
  const Json::parser_callback_t note_keys = [&](int, Json::parse_event_t event, Json& parsed) {
    if (event == Json::parse_event_t::object_start) {
      keys.emplace_back();
    } else if (event == Json::parse_event_t::object_end) {
      keys.pop_back();
    } else if (event == Json::parse_event_t::key && !keys.empty() &&
               !keys.back().insert(parsed.get<std::string>()).second && duplicate.empty()) {
      duplicate = parsed.get<std::string>();
    }
    return true;
  };
  Json json;
  try {
    json = Json::parse(line, note_keys);
  } catch (const Json::exception& e) {
    // "[json.exception.parse_error.101] parse error at line 1, column 16: ...": the message.
    const std::string_view what = e.what();
    const size_t tag = what.find("] ");
    *error = std::string(tag == std::string_view::npos ? what : what.substr(tag + 2));
    return false;
  }
  if (!duplicate.empty()) {
    *error = "duplicate key \"" + duplicate + "\"";
    return false;
  }
  if (!json.is_object()) {
    *error = "expected an object";
    return false;
  }
  for (const auto& [key, v] : json.items()) {
    if (v.is_string()) {
      (*out)[key] = v.get<std::string>();
    } else if (v.is_number_unsigned()) {
      (*out)[key] = v.get<std::uint64_t>();
    } else if (v.is_boolean()) {
      (*out)[key] = v.get<bool>();
    } else if (v.is_array() && std::all_of(v.begin(), v.end(),
                                           [](const Json& x) { return x.is_number_unsigned(); })) {
      (*out)[key] = v.get<std::vector<std::uint64_t>>();
    } else {
      *error = "bad value for \"" + key + "\"";
      return false;
    }
  }
  return true;
}

// One line of the file: the keys in the order given, non-UTF-8 bytes as U+FFFD.
void WriteLine(const nlohmann::ordered_json& line, std::ostream& out) {
  out << line.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace) << '\n';
}

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
      !Field<std::vector<std::uint64_t>>(o, "ts", true, &r->ts, error) ||
      !Field<std::uint64_t>(o, "time_ns", false, &r->time_ns, error) ||
      !Field<std::string>(o, "ref", false, &r->ref, error))
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
  WriteLine({{"format", kRecordFormat},
             {"version", h.version},
             {"hostname", h.hostname},
             {"kernel", h.kernel},
             {"role", h.role},
             {"mechanism", h.mechanism},
             {"sample_every", h.sample_every},
             {"clock", h.clock}},
            out);
}

// A record line goes out per sampled command while `record` runs beside the load, so it is
// written field by field: an ordered_json costs a heap node per key and value, many times the
// eBPF side of a command (tests/bench/README.md). Its strings repeat (a few
// subsystems, disks and hosts), so each field keeps its last string's JSON text, made by the
// library (escapes, and invalid UTF-8 replaced as in the other lines). The bytes are those of
// the ordered_json dump (a unit test compares the two).
void WriteRecord(const Record& r, std::ostream& out) {
  struct Text {
    std::string raw, json;
    const std::string& Of(const std::string& s) {
      if (json.empty() || s != raw) {
        raw = s;
        json = nlohmann::json(s).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
      }
      return json;
    }
  };
  thread_local Text transport, op, subsys, hostnqn, device, ref;
  thread_local std::string line;
  char digits[24];
  auto number = [&](std::string_view key, std::uint64_t v) {
    line += key;
    line.append(digits, std::to_chars(digits, digits + sizeof digits, v).ptr);
  };
  auto text = [&](std::string_view key, Text& cache, const std::string& v) {
    line += key;
    line += cache.Of(v);
  };
  line.assign(r.role == NVMEOF_ROLE_HOST ? "{\"role\":\"host\"" : "{\"role\":\"target\"");
  text(",\"transport\":", transport, r.transport);
  text(",\"op\":", op, r.op);
  number(",\"size\":", r.size);
  number(",\"qid\":", r.qid);
  number(",\"cid\":", r.cid);
  number(",\"cntlid\":", r.cntlid);
  text(",\"subsys\":", subsys, r.subsys);
  text(",\"hostnqn\":", hostnqn, r.hostnqn);
  text(",\"device\":", device, r.device);
  number(",\"slba\":", r.slba);
  number(",\"nlb\":", r.nlb);
  line += ",\"ts\":[";
  for (size_t i = 0; i < r.ts.size(); ++i) number(i ? "," : "", r.ts[i]);
  line += ']';
  if (r.time_ns) number(",\"time_ns\":", r.time_ns);
  if (!r.ref.empty()) text(",\"ref\":", ref, r.ref);
  line += "}\n";
  out.write(line.data(), static_cast<std::streamsize>(line.size()));
}

void WriteEnd(std::uint64_t records, std::uint64_t lost, std::ostream& out) {
  WriteLine({{"end", true}, {"records", records}, {"lost", lost}}, out);
}

void WriteEnd(std::uint64_t records, std::uint64_t lost, std::ostream& out,
              std::uint64_t commands) {
  WriteLine({{"end", true}, {"records", records}, {"lost", lost}, {"commands", commands}}, out);
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
    if (!ParseObject(line, &o, &why)) {
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

}  // namespace nvmeof
