#include "store/records.h"

#include <stdexcept>

namespace faultline {

void to_json(Json& j, const ActionRecord& v) {
  j = Json{{"time_ns", v.time_ns}, {"node", v.node},       {"action", ToString(v.action)},
           {"dry_run", v.dry_run}, {"outcome", v.outcome}, {"reason", v.reason}};
  if (v.diagnosis_id) j["diagnosis_id"] = *v.diagnosis_id;
  if (!v.attrs.empty()) j["attrs"] = v.attrs;
}

void from_json(const Json& j, ActionRecord& v) {
  const std::string name = j.at("action").get<std::string>();
  auto action = ParseAction(name);
  if (!action) throw std::invalid_argument("unknown action '" + name + "'");
  v.action = *action;
  if (auto it = j.find("time_ns"); it != j.end()) v.time_ns = JsonInt<int64_t>(*it);
  v.node = j.value("node", std::string());
  v.dry_run = j.value("dry_run", true);
  v.outcome = j.value("outcome", std::string());
  v.reason = j.value("reason", std::string());
  if (auto it = j.find("diagnosis_id"); it != j.end() && !it->is_null()) v.diagnosis_id = JsonInt<int64_t>(*it);
  if (auto it = j.find("attrs"); it != j.end()) v.attrs = it->get<std::map<std::string, std::string>>();
}

}  // namespace faultline
