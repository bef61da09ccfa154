// `report`'s output: text tables and bars, JSON, and the baseline comparison.
#pragma once

#include <ostream>

#include "profile/report_data.h"

namespace nvmeof::profile {

void PrintReportText(const Report& report, bool detail, std::ostream& out);
void PrintReportJson(const Report& report, std::ostream& out);
// Per group and component present in both: the mean's change; names the component that moved
// most (by absolute change of mean) per group and overall.
void PrintComparison(const Report& baseline, const Report& now, bool json, std::ostream& out);

}  // namespace nvmeof::profile
