#include "profile/cli.h"

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

}  // namespace nvmeof::profile
