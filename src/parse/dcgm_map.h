// Maps a parsed dcgm-exporter scrape (Prometheus text) to faultline Observations,
// following the GPU-layer observation conventions shared with the NVML collector
// (docs/gpu-detectors.md): component gpu/<index> with uuid/bdf keys, one kind per
// DCGM_FI_DEV_* field, counters as cumulative values. A parser: a pure function of the
// scrape, no I/O (sources/dcgm_exporter fetches; offline `diagnose` maps saved scrapes).
//
// Facts relied on (DCGM 4.x dcgm_fields.h / dcgm_structs.h, dcgm-exporter defaults):
//  - series are labelled gpu (NVML index), UUID, pci_bus_id ("00000000:17:00.0"),
//    device ("nvidia0"), modelName and Hostname (older releases: hostname);
//  - a field DCGM has no value for can leak through as a "blank" sentinel: integers
//    at or above DCGM_INT64_BLANK = 0x7ffffffffffffff0 (9223372036854775792; NOT_FOUND,
//    NOT_SUPPORTED = ...794 and NOT_PERMISSIONED follow it), 32-bit fields at or above
//    DCGM_INT32_BLANK = 0x7ffffff0 (2147483632), floats at or above DCGM_FP64_BLANK =
//    2^47. Such values, and NaN, produce no observation.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/types.h"
#include "parse/prometheus.h"

namespace faultline {

struct DcgmMapOptions {
  std::string node;  // node name; empty = take it from the Hostname/hostname label
};

struct DcgmMapResult {
  std::vector<Observation> observations;
  std::vector<std::string> warnings;  // series that could not be attributed to a GPU
  size_t blank_values = 0;            // sentinel/NaN values skipped
  size_t unmapped_series = 0;         // samples of metrics faultline does not use
};

// True for DCGM's blank sentinels (and NaN): the value is "missing", not a reading.
bool IsDcgmBlank(double value);

// `scrape_time_ns` stamps samples without their own timestamp. Never fails: anything it
// cannot map is counted or reported in the result.
DcgmMapResult MapDcgmScrape(const PromScrape& scrape, int64_t scrape_time_ns, const DcgmMapOptions& options = {});

}  // namespace faultline
