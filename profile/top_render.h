// `top`'s output: one frame as text or as one JSON object.
#pragma once

#include <cmath>
#include <ostream>
#include <vector>

#include "profile/top_frame.h"

namespace nvmeof::profile {

void PrintTopText(const std::vector<TopGroup>& groups, double seconds, std::ostream& out);
// at: when the frame ended, in CLOCK_MONOTONIC seconds ("at_monotonic_seconds"; NaN: left out).
void PrintTopJson(const std::vector<TopGroup>& groups, double seconds, std::ostream& out,
                  double at = NAN);

// One frame of `top`: JSON (one line), or text after clearing the screen unless `once`; flushed.
void PrintFrame(const std::vector<TopGroup>& groups, double seconds, bool json, bool once,
                std::ostream& out, double at = NAN);

}  // namespace nvmeof::profile
