// A record file held in memory (the body of GET /api/v1/commands), read as ReadRecords
// (loader/record_file.h) reads it, only faster: `explain` reads two windows of up to a few
// hundred thousand records each per refresh, and the general reader (a JSON DOM and a key map
// per line) takes about 22 us a record.
//
// The fast path reads the lines exactly as WriteHeader/WriteRecord/WriteEnd write them (keys in
// their order, strings of printable ASCII without escapes, numbers without leading zeros). Any
// other body, or any line the fast path does not take (an escaped or non-ASCII string, an
// unknown key, a truncated or corrupt line, a count that does not add up), is read again
// whole by ReadRecords, so the result and every error message are ReadRecords' own.
#pragma once

#include <string>
#include <string_view>

#include "loader/record_file.h"

namespace nvmeof::profile {

// ReadRecords on `body`. *fast (optional) says whether the fast path read it.
bool ReadRecordBody(std::string_view body, RecordFile* file, std::string* error,
                    bool* fast = nullptr);

}  // namespace nvmeof::profile
