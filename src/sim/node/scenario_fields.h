// Typed readers for scenario files (node scenarios, fleet scenarios): an absent key keeps
// the caller's default; a wrong type, a value out of range or an unknown key is kCorrupt
// naming the place ("faults[2].at: out of range [0, 86400]"). Scenario files are input a
// user writes by hand, so every message says where and why.
#pragma once

#include <initializer_list>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "core/status.h"

namespace faultline::sim {

Status ScenarioError(const std::string& where, const std::string& why);
// Every key of the mapping `j` is one of `allowed`.
Status CheckKeys(const nlohmann::json& j, const std::string& where, std::initializer_list<std::string_view> allowed);
Status ReadNumber(const nlohmann::json& j, const char* key, const std::string& where, double lo, double hi,
                  double& out);
Status ReadInt(const nlohmann::json& j, const char* key, const std::string& where, int lo, int hi, int& out);
Status ReadBool(const nlohmann::json& j, const char* key, const std::string& where, bool& out);

// The file's first max_bytes + 1 bytes (one past the limit, so the parser can refuse an
// oversized file); kNotFound "<path>: cannot open".
Result<std::string> ReadScenarioFile(const std::string& path, size_t max_bytes);

}  // namespace faultline::sim
