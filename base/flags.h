// The command line of nvmeof_exporter and of its subcommands (probe, record, report, top): one
// parser, so every command spells flags the same way.
//   --name=VALUE and --name VALUE; a one-letter alias the same way: -s N, -s=N, -o FILE
//   a switch: --name, or --name=true / --name=false
//   a family: a name ending in '.' (collector.) matches --collector.rdma, --collector.tcp, ...;
//     it takes no value, and the caller checks the rest of the name
//   anything not starting with '-' is positional (a file, a subcommand)
// Errors are one line naming the argument, e.g. `--role: missing value`,
// `--bogus: unknown flag (see --help)`.
#pragma once

#include <string>
#include <vector>

namespace nvmeof {

struct FlagSpec {
  enum Kind { kValue, kSwitch, kFamily };
  const char* name;  // without the dashes: "web.listen-address", "sample-every", "collector."
  Kind kind;
  const char* help;                  // one line or more (\n); nullptr hides the flag from FlagsHelp
  char alias = 0;                    // 's' for -s
  const char* value_name = "VALUE";  // in FlagsHelp: --role=ROLE
};

struct ParsedFlag {
  std::string name;   // the spec's name; for a family the whole name given (collector.rdma)
  std::string value;  // a switch: "true" or "false"; a family: ""
};

struct ParsedArgs {
  std::vector<ParsedFlag> flags;  // in the order given
  std::vector<std::string> positional;
  // The last value given for `name` (a switch: "true"/"false"), or nullptr.
  const std::string* Get(const std::string& name) const;
  bool On(const std::string& name) const;  // a switch given and not =false
};

bool ParseFlags(const std::vector<std::string>& args, const std::vector<FlagSpec>& specs,
                ParsedArgs* out, std::string* error);

// "  -s, --sample-every=N\n      help\n" per flag with help, in spec order.
std::string FlagsHelp(const std::vector<FlagSpec>& specs);

}  // namespace nvmeof
