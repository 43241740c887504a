// Small helpers the CLI's commands share (collect sysfs / ethernet / amd / nvml, diagnose,
// ask), so each command file keeps only what is its own.
#pragma once

#include <map>
#include <string>

#include "core/status.h"
#include "parse/topology.h"

namespace faultline::cli {

// This host's name, or `fallback` when gethostname fails.
std::string HostNameOr(const char* fallback);
// Reads and parses a node topology file (at most kMaxTopologyBytes are read; more is
// refused by the parser). kNotFound when it cannot be opened.
Result<Topology> LoadTopologyFile(const std::string& path);
// The value of `key` in `m`, "" when absent.
std::string MapValue(const std::map<std::string, std::string>& m, const char* key);
// A number as an ostream prints it by default ("400", "0.5", "1e+06").
std::string FormatNumber(double v);

}  // namespace faultline::cli
