// Human-readable rendering of diagnoses and findings for the terminal. The engine never
// prints (STYLE.md rule 7); every command renders through here so output looks the same.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "core/types.h"

namespace faultline::cli {

// "gpu/3 (bdf 0000:b5:00.0, serial 1320...)".
std::string DescribeComponent(const ComponentRef& c);
// One evidence line: time (UTC, or "+123.456789s" since boot), source, text, "(x800000)".
std::string DescribeEvidence(const Evidence& e);

void RenderDiagnoses(std::ostream& out, const std::vector<Diagnosis>& diagnoses);
void RenderFindings(std::ostream& out, const std::vector<Finding>& findings);

}  // namespace faultline::cli
