// libFuzzer target for the exporter's YAML config (--config.file, ApplyConfigYaml) and the
// exporter-toolkit web config (ParseWebConfig). The first byte picks which; the rest is the
// YAML text. Seeds: deploy/*.yml and the examples of tests/fuzz/seeds.py.
#include <cstddef>
#include <cstdint>
#include <string>

#include "base/log.h"
#include "exporter/config.h"
#include "exporter/web_config.h"

// libFuzzer's once-per-process hook: only errors are logged while fuzzing.
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  nvmeof::SetLogLevel(nvmeof::LogLevel::kError);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  const std::string text(reinterpret_cast<const char*>(data + 1), size - 1);
  std::string error;
  if (data[0] & 1) {
    // Relative cert/key paths resolve against this directory: nothing to read there.
    nvmeof::WebConfig config;
    (void)nvmeof::ParseWebConfig(text, "/nonexistent", &config, &error);
  } else {
    nvmeof::Options options;
    (void)nvmeof::ApplyConfigYaml(text, "fuzz.yml", &options, &error);
  }
  return 0;
}
