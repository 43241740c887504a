#include "sim/mock_bmc/yaml_json.h"

#include <yaml-cpp/yaml.h>

#include <charconv>
#include <cmath>
#include <exception>
#include <string>

namespace faultline::sim {
namespace {

using nlohmann::json;

struct Budget {
  int max_depth;
  size_t nodes_left;
};

json PlainScalar(const std::string& s) {
  if (s.empty() || s == "~" || s == "null" || s == "Null" || s == "NULL") return nullptr;
  if (s == "true" || s == "True" || s == "TRUE") return true;
  if (s == "false" || s == "False" || s == "FALSE") return false;
  const char* end = s.data() + s.size();
  int64_t i = 0;
  auto ri = std::from_chars(s.data(), end, i);
  if (ri.ec == std::errc() && ri.ptr == end) return i;
  double d = 0;
  auto rd = std::from_chars(s.data(), end, d);
  if (rd.ec == std::errc() && rd.ptr == end && std::isfinite(d)) return d;
  return s;
}

Status Convert(const YAML::Node& node, int depth, Budget& budget, json& out) {
  if (depth > budget.max_depth) return Status(StatusCode::kCorrupt, "YAML nested deeper than the limit");
  if (budget.nodes_left == 0) return Status(StatusCode::kCorrupt, "YAML has more nodes than the limit");
  --budget.nodes_left;
  switch (node.Type()) {
    case YAML::NodeType::Undefined:
    case YAML::NodeType::Null:
      out = nullptr;
      return Status::Ok();
    case YAML::NodeType::Scalar:
      // yaml-cpp tags quoted (non-plain) scalars "!": those are strings whatever they read as.
      out = node.Tag() == "!" ? json(node.Scalar()) : PlainScalar(node.Scalar());
      return Status::Ok();
    case YAML::NodeType::Sequence:
      out = json::array();
      for (const auto& item : node) {
        json child;
        if (Status s = Convert(item, depth + 1, budget, child); !s.ok()) return s;
        out.push_back(std::move(child));
      }
      return Status::Ok();
    case YAML::NodeType::Map:
      out = json::object();
      for (const auto& kv : node) {
        if (!kv.first.IsScalar()) return Status(StatusCode::kCorrupt, "YAML map key is not a scalar");
        json child;
        if (Status s = Convert(kv.second, depth + 1, budget, child); !s.ok()) return s;
        out[kv.first.Scalar()] = std::move(child);
      }
      return Status::Ok();
  }
  return Status(StatusCode::kCorrupt, "unknown YAML node type");
}

}  // namespace

Result<json> YamlToJson(std::string_view text, int max_depth, size_t max_nodes) {
  // yaml-cpp reports syntax errors (and its own recursion guard) by throwing; they stop here.
  try {
    YAML::Node root = YAML::Load(std::string(text));
    Budget budget{max_depth, max_nodes};
    json out;
    if (Status s = Convert(root, 0, budget, out); !s.ok()) return s;
    return out;
  } catch (const std::exception& e) {
    return Status(StatusCode::kCorrupt, std::string("YAML: ") + e.what());
  }
}

}  // namespace faultline::sim
