// The DCGM_FI_DEV_* series faultline reads, as data. Source: DCGM dcgm_fields.h field
// ids (listed in ../shared/reference/SIGNALS.md) and dcgm-exporter's metric names
// (DCGM_FI_<field name>). Rules that interpret the values live in src/engine/detect.
#pragma once

#include <span>
#include <string_view>

#include "core/types.h"

namespace faultline {

// What a series contributes: an observation of its own, or a fact attached to another
// observation of the same GPU (a limit such as the maximum PCIe generation).
enum class DcgmFieldRole { kObservation, kMaxPcieGen, kMaxPcieWidth, kGpuMaxOpTemp, kMemMaxOpTemp };

struct DcgmField {
  std::string_view metric;  // dcgm-exporter series name
  int field_id;             // DCGM field id
  DcgmFieldRole role;
  ObsKind kind;
  Layer layer;
  std::string_view attr_key;  // one fixed attribute for the observation ("" = none)
  std::string_view attr_value;
};

std::span<const DcgmField> DcgmFields();
const DcgmField* FindDcgmField(std::string_view metric);

}  // namespace faultline
