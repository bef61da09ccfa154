#include "profile/cli.h"

#include <cmath>
#include <cstdlib>

#include "base/files.h"
#include "loader/bpf_options.h"

namespace nvmeof::profile {

const FlagSpec kHelpFlag = {"help", FlagSpec::kSwitch, "Print this help and exit.", 'h'};

std::string Usage(const char* synopsis, const char* about, const std::vector<FlagSpec>& flags) {
  return std::string("usage: nvmeof_exporter ") + synopsis + "\n\n" + about + "\n\nflags:\n" +
         FlagsHelp(flags);
}

int UsageError(const char* cmd, const std::string& error, std::ostream& err) {
  err << "nvmeof_exporter " << cmd << ": " << error << "\n";
  return 2;
}

int ParseCommand(const char* cmd, const std::vector<std::string>& args,
                 const std::vector<FlagSpec>& flags, const std::string& usage,
                 size_t max_positional, ParsedArgs* parsed, std::ostream& out, std::ostream& err) {
  std::string error;
  if (!ParseFlags(args, flags, parsed, &error)) return UsageError(cmd, error, err);
  if (parsed->On("help")) {
    out << usage;
    return 0;
  }
  if (parsed->positional.size() > max_positional) {
    return UsageError(
        cmd, "unexpected argument \"" + parsed->positional[max_positional] + "\" (see --help)",
        err);
  }
  return -1;
}

bool ParseCount(const std::string& text, std::uint64_t max, std::uint64_t* out) {
  const auto v = ParseU64(text);
  if (!v || *v == 0 || *v > max) return false;
  *out = *v;
  return true;
}

bool GetSampleEvery(const ParsedArgs& parsed, std::uint64_t* sample_every, std::string* error) {
  const std::string* v = parsed.Get("sample-every");
  if (v && !ParseCount(*v, 1u << 20, sample_every)) {
    *error = "-s: \"" + *v + "\" is not a whole number in [1, 2^20]";
    return false;
  }
  return true;
}

bool GetFormatJson(const ParsedArgs& parsed, bool* json, std::string* error) {
  const std::string* v = parsed.Get("format");
  if (!v) return true;
  if (*v != "text" && *v != "json") {
    *error = "--format: \"" + *v + "\" is not text or json";
    return false;
  }
  *json = *v == "json";
  return true;
}

const std::vector<FlagSpec>& HttpClientFlags() {
  static const std::vector<FlagSpec> flags = {
      {"from.ca-file", FlagSpec::kValue,
       "https: verify the server against this PEM CA bundle. Default: the system trust.", 0, "PEM"},
      {"from.insecure-skip-verify", FlagSpec::kSwitch, "https: accept any certificate (testing)."},
      {"from.username", FlagSpec::kValue, "Basic auth user, with --from.password-file.", 0, "USER"},
      {"from.password-file", FlagSpec::kValue, "Basic auth password: the file's first line.", 0,
       "FILE"},
  };
  return flags;
}

bool GetHttpClientOptions(const ParsedArgs& parsed, HttpClientOptions* options,
                          std::string* error) {
  for (auto [flag, dst] : {std::pair{"from.ca-file", &options->ca_file},
                           std::pair{"from.password-file", &options->password_file}}) {
    const std::string* v = parsed.Get(flag);
    if (!v) continue;
    if (!Exists(*v)) {
      *error = std::string("--") + flag + ": \"" + *v + "\" does not exist";
      return false;
    }
    *dst = *v;
  }
  if (auto v = parsed.Get("from.username")) options->username = *v;
  options->insecure_skip_verify = parsed.On("from.insecure-skip-verify");
  return true;
}

bool ParseDurationSeconds(const std::string& text, double max_seconds, double* seconds) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || end == text.c_str() || !std::isfinite(v)) return false;
  const std::string unit = end;
  double scale = 0;
  if (unit.empty() || unit == "s") {
    scale = 1;
  } else if (unit == "ms") {
    scale = 1e-3;
  } else if (unit == "m") {
    scale = 60;
  } else if (unit == "h") {
    scale = 3600;
  } else {
    return false;
  }
  const double s = v * scale;
  if (!(s > 0) || s > max_seconds) return false;
  *seconds = s;
  return true;
}

}  // namespace nvmeof::profile
