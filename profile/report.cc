// `nvmeof_exporter report`: its command line; the tables are report_data.h's and
// report_render.h's.
#include <fstream>
#include <ostream>
#include <sstream>
#include <string>
#include <vector>

#include "loader/record_file.h"
#include "profile/cli.h"
#include "profile/commands.h"
#include "profile/report_data.h"
#include "profile/report_render.h"

namespace nvmeof::profile {

namespace {

const std::vector<FlagSpec>& ReportFlags() {
  static const std::vector<FlagSpec> flags = {
      {"detail", FlagSpec::kSwitch, "Add n, p50, p99, p99.9 and a log2 histogram per component."},
      {"format", FlagSpec::kValue, "text or json. Default text.", 0, "FORMAT"},
      {"baseline", FlagSpec::kValue,
       "Compare with an earlier run: its host file, and its target file to join it with.", 0,
       "OLD[,OLD_TARGET]"},
      kHelpFlag,
  };
  return flags;
}

}  // namespace

int RunReport(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  static const std::string usage =
      Usage("report [flags] FILE [FILE]",
            "Tables of `record` files: per group each stage's mean, share and queue depth; a host\n"
            "and a target file are joined per command (docs/profiling.md).",
            ReportFlags());
  ParsedArgs p;
  if (int rc = ParseCommand("report", args, ReportFlags(), usage, 2, &p, out, err); rc >= 0)
    return rc;
  bool json = false;
  std::string error;
  if (!GetFormatJson(p, &json, &error)) return UsageError("report", error, err);
  const bool detail = p.On("detail");
  const std::vector<std::string>& files = p.positional;
  std::vector<std::string> baseline;
  if (auto v = p.Get("baseline")) {
    std::stringstream ss(*v);
    std::string f;
    while (std::getline(ss, f, ','))
      if (!f.empty()) baseline.push_back(f);
    if (baseline.size() > 2)
      return UsageError("report", "--baseline: \"" + *v + "\" names more than 2 files", err);
  }
  if (files.empty()) {
    return UsageError("report", "give a record file, or a host and a target file (see --help)",
                      err);
  }
  auto load = [&](const std::vector<std::string>& paths, Report* rep) {
    std::vector<RecordFile> f(paths.size());
    for (size_t i = 0; i < paths.size(); ++i) {
      std::string e;
      if (!ReadRecordFile(paths[i], &f[i], &e)) {
        err << "nvmeof_exporter report: " << paths[i] << ": " << e << "\n";
        return false;
      }
    }
    if (f.size() == 2 && f[0].header.role == f[1].header.role) {
      err << "nvmeof_exporter report: " << paths[0] << " and " << paths[1] << " are both "
          << f[0].header.role << " files; give one host file and one target file\n";
      return false;
    }
    *rep = BuildReport(f[0], f.size() == 2 ? &f[1] : nullptr);
    return true;
  };
  Report now;
  if (!load(files, &now)) return 2;
  if (!baseline.empty()) {
    Report old;
    if (!load(baseline, &old)) return 2;
    PrintComparison(old, now, json, out);
    return 0;
  }
  if (json)
    PrintReportJson(now, out);
  else
    PrintReportText(now, detail, out);
  return 0;
}

}  // namespace nvmeof::profile
