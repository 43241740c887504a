// Human-readable rendering of diagnoses and findings for the terminal. The engine never
// prints (STYLE.md rule 7); every command renders through here so output looks the same.
//
// Repeats are folded on the terminal only (--json keeps every item): findings, diagnoses
// and evidence lines that are the same but for their numbers (a counter read again, an XID
// storm's GPC/TPC, a temperature re-stored as it climbs) print once, with the latest text, a
// count ("x12") and, when a single number is what changed, its range ("80 .. 90").
#pragma once

#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "core/types.h"

namespace faultline::cli {

// "gpu/3 (bdf 0000:b5:00.0, serial 1320...)".
std::string DescribeComponent(const ComponentRef& c);
// One evidence line: time (UTC, or "+123.456789s" since boot), source, text, "(x800000)".
std::string DescribeEvidence(const Evidence& e);

// `text` with each number (decimal, or 0x hex) replaced by '#', and those numbers in order.
// A PCI address ("0000:3b:00.0", "3b:00.0") names a device, not a reading: it stays whole,
// so lines about two devices never fold together.
struct MaskedText {
  std::string mask;
  std::vector<double> numbers;
};
MaskedText MaskNumbers(std::string_view text);

// Evidence lines of the same source and component whose texts differ only in numbers print
// as one: the latest line, "(xN since <first time>[, min .. max])". Lines without a component
// never fold (their text may name different devices).
void RenderEvidence(std::ostream& out, const std::vector<Evidence>& evidence, size_t max_lines);

// Diagnoses that are the same but for numbers (class, layer, component, action, severity,
// summary) print once, the first (most important) of them, with "xN" on its heading.
void RenderDiagnoses(std::ostream& out, const std::vector<Diagnosis>& diagnoses);
// Findings folded likewise into one line; versions of one finding (same key and start, as the
// agent re-stores it) count once, at their latest count. The summary shown is the latest.
void RenderFindings(std::ostream& out, const std::vector<Finding>& findings);

}  // namespace faultline::cli
