// Collection paging for the mock BMC: $skip/$top from the client, plus server-driven
// pages (page_size) announced with @odata.nextLink, as large BMC collections (SEL
// entries, sensors) are served by real firmware.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace faultline::sim {

struct PageRequest {
  size_t skip = 0;
  std::optional<size_t> top;  // the client's $top
  size_t page_size = 0;       // server limit; 0 = none
};

// Returns `doc` unchanged when it has no Members array, or when neither the client nor the
// server limits the page. Otherwise Members is the requested slice, Members@odata.count
// stays the full size and @odata.nextLink (`uri?$skip=N[&$top=M]`) is set when the server
// limit cut the client's request short.
nlohmann::json PageCollection(const nlohmann::json& doc, const std::string& uri, const PageRequest& page);

// Parses a $skip/$top query value: decimal digits only, at most 9 of them.
std::optional<size_t> ParseQueryCount(const std::string& value);

}  // namespace faultline::sim
