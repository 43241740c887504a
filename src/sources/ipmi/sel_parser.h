// IPMI SEL text -> Observations: `ipmitool sel elist` and FreeIPMI `ipmi-sel` output.
// The fallback for BMCs without a usable Redfish log (DESIGN.md "ipmi").
//
// Accepted rows (pipe-separated, surrounding spaces and trailing blanks ignored):
//   ipmitool:  id(hex) | MM/DD/YYYY | HH:MM:SS | <SensorType> <SensorName> | <event> | Asserted|Deasserted
//              [| Reading X > Threshold Y <units>]
//              with "Pre-Init" dates (time unknown: time_ns = 0, attrs["time_quality"] = "pre-init").
//   ipmi-sel:  a header "ID | Date | Time | Name | Type | [State |] [Event Direction |] Event" names the
//              columns; dates "Jan-01-2020"; "PostInit"/"N/A" dates mean unknown time.
// Each row becomes a kSelEntry with layer kOob, source kIpmi and attrs sensor_type,
// sensor, entry_code, assertion ("asserted"/"deasserted"), entry_id, raw_time, and when
// present reading, threshold, severity (ipmi-sel State). The same attrs as Redfish SEL
// entries, so the OOB event detector treats both alike.
//
// Bad rows never abort the parse: each becomes an error "line N: why" and is skipped.
// Thread-safe (pure).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/types.h"

namespace faultline::ipmi {

struct SelParseOptions {
  std::string node;              // Observation::node
  size_t max_line_bytes = 4096;  // longer lines are rejected (hostile input)
  size_t max_rows = 1'000'000;   // rows after this are dropped with one error
  int64_t bmc_offset_ns = 0;     // BMC clock minus host clock, subtracted from times
};

struct SelParseResult {
  std::vector<Observation> observations;
  std::vector<std::string> errors;
};

SelParseResult ParseSelText(std::string_view text, const SelParseOptions& options = {});

// Splits "<SensorType> <SensorName>" as ipmitool prints it, using the IPMI sensor type
// names; {"", field} when no known type prefixes it.
std::pair<std::string, std::string> SplitSensorField(std::string_view field);

}  // namespace faultline::ipmi
