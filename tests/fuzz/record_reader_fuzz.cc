// libFuzzer target: the `report` record reader (loader/record_file.cc) on arbitrary bytes,
// and the report built from whatever it accepts. It must reject with a message, never crash.
// `explain`'s fast reader (profile/record_scan.h) must give the same answer on the same bytes.
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>

#include "loader/record_file.h"
#include "profile/record_scan.h"
#include "profile/report_data.h"
#include "profile/report_render.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::istringstream in(std::string(reinterpret_cast<const char*>(data), size));
  nvmeof::RecordFile file;
  std::string error;
  const bool ok = nvmeof::ReadRecords(in, &file, &error);
  nvmeof::RecordFile fast;
  std::string fast_error;
  const bool fast_ok = nvmeof::profile::ReadRecordBody(
      std::string_view(reinterpret_cast<const char*>(data), size), &fast, &fast_error);
  if (ok != fast_ok || error != fast_error || fast.records.size() != file.records.size())
    __builtin_trap();  // the two readers disagree
  for (std::size_t i = 0; i < file.records.size(); ++i) {
    std::ostringstream a, b;
    nvmeof::WriteRecord(file.records[i], a);
    nvmeof::WriteRecord(fast.records[i], b);
    if (a.str() != b.str()) __builtin_trap();
  }
  if (!ok) {
    if (error.empty()) __builtin_trap();  // every rejection says why
    return 0;
  }
  // Accepted: the report and a self-join must not crash either.
  std::ostringstream out;
  const auto report = nvmeof::profile::BuildReport(file, nullptr);
  nvmeof::profile::PrintReportText(report, true, out);
  nvmeof::profile::PrintReportJson(report, out);
  return 0;
}
