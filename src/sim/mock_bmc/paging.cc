#include "sim/mock_bmc/paging.h"

#include <algorithm>

namespace faultline::sim {

std::optional<size_t> ParseQueryCount(const std::string& value) {
  if (value.empty() || value.size() > 9) return std::nullopt;
  size_t n = 0;
  for (char c : value) {
    if (c < '0' || c > '9') return std::nullopt;
    n = n * 10 + static_cast<size_t>(c - '0');
  }
  return n;
}

nlohmann::json PageCollection(const nlohmann::json& doc, const std::string& uri, const PageRequest& page) {
  if (!doc.is_object()) return doc;
  auto it = doc.find("Members");
  if (it == doc.end() || !it->is_array()) return doc;
  const size_t total = it->size();
  const bool client_limits = page.skip > 0 || page.top.has_value();
  const bool server_limits = page.page_size > 0 && total > page.page_size;
  if (!client_limits && !server_limits) return doc;

  const size_t skip = std::min(page.skip, total);
  const size_t wanted = std::min(total - skip, page.top.value_or(total));
  const size_t served = page.page_size > 0 ? std::min(wanted, page.page_size) : wanted;
  nlohmann::json out = doc;
  nlohmann::json& members = out["Members"];
  members = nlohmann::json(it->begin() + static_cast<std::ptrdiff_t>(skip),
                           it->begin() + static_cast<std::ptrdiff_t>(skip + served));
  out["Members@odata.count"] = total;
  out.erase("@odata.nextLink");
  if (served < wanted) {
    std::string next = uri + "?$skip=" + std::to_string(skip + served);
    if (page.top) next += "&$top=" + std::to_string(wanted - served);
    out["@odata.nextLink"] = next;
  }
  return out;
}

}  // namespace faultline::sim
