// libFuzzer target: the `report` record reader (loader/record_file.cc) on arbitrary bytes,
// and the report built from whatever it accepts. It must reject with a message, never crash.
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>

#include "loader/record_file.h"
#include "profile/report_data.h"
#include "profile/report_render.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::istringstream in(std::string(reinterpret_cast<const char*>(data), size));
  nvmeof::RecordFile file;
  std::string error;
  if (!nvmeof::ReadRecords(in, &file, &error)) {
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
