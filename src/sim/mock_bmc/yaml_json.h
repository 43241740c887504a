// YAML text to nlohmann::json, so scenario files in either syntax go through one schema
// check. Plain scalars become null/bool/integer/number when they read as one; quoted
// scalars stay strings. Bounded against hostile input: depth and total node count
// (aliases are expanded, so an alias bomb hits the node limit instead of memory).
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string_view>

#include "core/status.h"

namespace faultline::sim {

// Errors: kCorrupt with yaml-cpp's message (line/column) or the limit that was hit.
Result<nlohmann::json> YamlToJson(std::string_view text, int max_depth, size_t max_nodes);

}  // namespace faultline::sim
