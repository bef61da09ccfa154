// The command lines of record, report, top and explain, on the exporter's parser
// (base/flags.h): their usage text, and the flags they share (-s, --bpf.mechanism, --format,
// --help, the HTTP client's --from.*) with one check and one message each.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "base/flags.h"
#include "profile/http_get.h"

namespace nvmeof::profile {

extern const FlagSpec kHelpFlag;

// "usage: nvmeof_exporter SYNOPSIS\n\nABOUT\n\nflags:\n" and the flags' help.
std::string Usage(const char* synopsis, const char* about, const std::vector<FlagSpec>& flags);

// Parses a subcommand's args. Returns -1 to go on; else the exit status, having printed the
// usage on `out` (--help: 0) or one line "nvmeof_exporter CMD: ERROR" on `err` (bad usage: 2).
// Positional arguments are an error unless max_positional allows them.
int ParseCommand(const char* cmd, const std::vector<std::string>& args,
                 const std::vector<FlagSpec>& flags, const std::string& usage,
                 size_t max_positional, ParsedArgs* parsed, std::ostream& out, std::ostream& err);

// One line "nvmeof_exporter CMD: ERROR" on err; returns 2.
int UsageError(const char* cmd, const std::string& error, std::ostream& err);

// A whole number in [1, max]: -s, --duration, --ring-size.
bool ParseCount(const std::string& text, std::uint64_t max, std::uint64_t* out);

// The shared flags, if given. False with one line in *error for a bad value.
bool GetSampleEvery(const ParsedArgs& parsed, std::uint64_t* sample_every, std::string* error);
bool GetFormatJson(const ParsedArgs& parsed, bool* json, std::string* error);

// How top --from and explain reach an exporter behind its web config: --from.ca-file,
// --from.insecure-skip-verify, --from.username, --from.password-file.
const std::vector<FlagSpec>& HttpClientFlags();
// Those flags into *options; false with one line in *error (a file that does not exist).
bool GetHttpClientOptions(const ParsedArgs& parsed, HttpClientOptions* options, std::string* error);

// A duration: a number with a unit (500ms, 60s, 5m, 2h) or seconds alone (90, 0.5), in
// (0, max_seconds]. False where it is not one.
bool ParseDurationSeconds(const std::string& text, double max_seconds, double* seconds);

}  // namespace nvmeof::profile
