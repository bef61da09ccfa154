// The command lines of record, report and top, on the exporter's parser (base/flags.h):
// their usage text, and the flags they share (-s, --bpf.mechanism, --format, --help) with one
// check and one message each.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "base/flags.h"

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

}  // namespace nvmeof::profile
