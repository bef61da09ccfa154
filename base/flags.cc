#include "base/flags.h"

#include <string_view>

namespace nvmeof {
namespace {

const FlagSpec* Find(const std::vector<FlagSpec>& specs, std::string_view name, char alias) {
  for (const auto& s : specs) {
    if (alias ? s.alias == alias : s.kind != FlagSpec::kFamily && name == s.name) return &s;
  }
  if (alias) return nullptr;
  for (const auto& s : specs) {
    const std::string_view family = s.name;
    if (s.kind == FlagSpec::kFamily && name.size() > family.size() &&
        name.substr(0, family.size()) == family)
      return &s;
  }
  return nullptr;
}

}  // namespace

const std::string* ParsedArgs::Get(const std::string& name) const {
  for (auto it = flags.rbegin(); it != flags.rend(); ++it) {
    if (it->name == name) return &it->value;
  }
  return nullptr;
}

bool ParsedArgs::On(const std::string& name) const {
  const std::string* v = Get(name);
  return v && *v == "true";
}

bool ParseFlags(const std::vector<std::string>& args, const std::vector<FlagSpec>& specs,
                ParsedArgs* out, std::string* error) {
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg.empty() || arg[0] != '-' || arg == "-") {
      out->positional.push_back(arg);
      continue;
    }
    const bool is_long = arg.rfind("--", 0) == 0;
    const size_t eq = arg.find('=');
    const std::string shown = arg.substr(0, eq);  // -s or --name, as typed
    const std::string name = shown.substr(is_long ? 2 : 1);
    const bool has_value = eq != std::string::npos;
    const FlagSpec* spec = nullptr;
    if (is_long) {
      spec = Find(specs, name, 0);
    } else if (name.size() == 1) {
      spec = Find(specs, "", name[0]);
    }
    if (!spec) {
      *error = shown + ": unknown flag (see --help)";
      return false;
    }
    ParsedFlag flag{spec->kind == FlagSpec::kFamily ? name : spec->name, ""};
    if (spec->kind == FlagSpec::kFamily) {
      if (has_value) {
        *error = shown + ": takes no value";
        return false;
      }
    } else if (spec->kind == FlagSpec::kSwitch) {
      flag.value = has_value ? arg.substr(eq + 1) : "true";
      if (flag.value != "true" && flag.value != "false") {
        *error = shown + ": \"" + flag.value + "\" is not true or false";
        return false;
      }
    } else if (has_value) {
      flag.value = arg.substr(eq + 1);
    } else if (i + 1 < args.size()) {
      flag.value = args[++i];
    } else {
      *error = shown + ": missing value";
      return false;
    }
    out->flags.push_back(std::move(flag));
  }
  return true;
}

std::string FlagsHelp(const std::vector<FlagSpec>& specs) {
  std::string text;
  for (const auto& s : specs) {
    if (!s.help) continue;
    text += "  ";
    if (s.alias) text += std::string("-") + s.alias + ", ";
    text += std::string("--") + s.name;
    if (s.kind == FlagSpec::kValue) text += std::string("=") + s.value_name;
    text += "\n";
    std::string_view help = s.help;
    while (!help.empty()) {
      const size_t nl = help.find('\n');
      text += "      ";
      text += help.substr(0, nl);
      text += "\n";
      help = nl == std::string_view::npos ? "" : help.substr(nl + 1);
    }
  }
  return text;
}

}  // namespace nvmeof
