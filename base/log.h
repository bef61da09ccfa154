// Minimal leveled logfmt logger on stderr (the format Prometheus' own tools use).
#pragma once

#include <string>
#include <string_view>

namespace nvmeof {

enum class LogLevel { kDebug = 0, kInfo = 1, kWarn = 2, kError = 3 };

bool ParseLogLevel(std::string_view text, LogLevel* level);
void SetLogLevel(LogLevel level);
bool LogEnabled(LogLevel level);
void Log(LogLevel level, std::string_view msg, std::string_view kv = {});

inline void LogDebug(std::string_view msg, std::string_view kv = {}) {
  if (LogEnabled(LogLevel::kDebug)) Log(LogLevel::kDebug, msg, kv);
}
inline void LogInfo(std::string_view msg, std::string_view kv = {}) {
  Log(LogLevel::kInfo, msg, kv);
}
inline void LogWarn(std::string_view msg, std::string_view kv = {}) {
  Log(LogLevel::kWarn, msg, kv);
}
inline void LogError(std::string_view msg, std::string_view kv = {}) {
  Log(LogLevel::kError, msg, kv);
}

// key="value" with quotes and backslashes escaped, for building kv strings.
std::string Kv(std::string_view key, std::string_view value);

}  // namespace nvmeof
