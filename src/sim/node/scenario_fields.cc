#include "sim/node/scenario_fields.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

namespace faultline::sim {

Status ScenarioError(const std::string& where, const std::string& why) {
  return Status(StatusCode::kCorrupt, where + ": " + why);
}

Status CheckKeys(const nlohmann::json& j, const std::string& where, std::initializer_list<std::string_view> allowed) {
  if (!j.is_object()) return ScenarioError(where, "expected a mapping");
  for (const auto& item : j.items()) {
    if (std::find(allowed.begin(), allowed.end(), item.key()) == allowed.end()) {
      return ScenarioError(where, "unknown key '" + item.key() + "'");
    }
  }
  return Status::Ok();
}

Status ReadNumber(const nlohmann::json& j, const char* key, const std::string& where, double lo, double hi,
                  double& out) {
  auto it = j.find(key);
  if (it == j.end()) return Status::Ok();
  if (!it->is_number() || !std::isfinite(it->get<double>())) {
    return ScenarioError(where + "." + key, "expected a number");
  }
  const double v = it->get<double>();
  if (v < lo || v > hi) {
    std::ostringstream os;
    os << "out of range [" << lo << ", " << hi << "]";
    return ScenarioError(where + "." + key, os.str());
  }
  out = v;
  return Status::Ok();
}

Status ReadInt(const nlohmann::json& j, const char* key, const std::string& where, int lo, int hi, int& out) {
  double v = out;
  if (Status s = ReadNumber(j, key, where, lo, hi, v); !s.ok()) return s;
  if (j.contains(key) && v != std::floor(v)) return ScenarioError(where + "." + key, "expected an integer");
  out = static_cast<int>(v);
  return Status::Ok();
}

Status ReadBool(const nlohmann::json& j, const char* key, const std::string& where, bool& out) {
  auto it = j.find(key);
  if (it == j.end()) return Status::Ok();
  if (!it->is_boolean()) return ScenarioError(where + "." + key, "expected true or false");
  out = it->get<bool>();
  return Status::Ok();
}

Result<std::string> ReadScenarioFile(const std::string& path, size_t max_bytes) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status(StatusCode::kNotFound, path + ": cannot open");
  std::string text;
  text.resize(max_bytes + 1);
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<size_t>(in.gcount()));
  return text;
}

}  // namespace faultline::sim
