// The mock BMC's in-memory copy of a DMTF mockup: one Resource per URI, loaded once at
// start from `<root>/.../index.json` and then edited by the scenario (set / append).
// Not thread-safe: the MockBmc serialises access under its own mutex.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace faultline::sim {

struct Resource {
  bool is_json = true;
  nlohmann::json doc;  // when is_json
  std::string raw;     // served as-is otherwise: an index.json that does not parse, $metadata XML
  std::string content_type = "application/json";
};

class ResourceTree {
 public:
  // Finds the service root (`<dir>/redfish/v1/index.json`, else `<dir>/index.json`) and
  // loads every index.json / index.xml below it. NotFound when neither root exists.
  static Result<ResourceTree> Load(const std::string& mockup_dir);

  // "/redfish/v1/Chassis/" and "/redfish/v1//Chassis" both become "/redfish/v1/Chassis".
  static std::string Canonical(std::string_view path);

  const Resource* Find(const std::string& uri) const;
  Resource* FindMutable(const std::string& uri);
  void Put(const std::string& uri, Resource resource) { resources_[Canonical(uri)] = std::move(resource); }

  // Writes `value` at `pointer`, whose parent must exist (an object gains or replaces the
  // member; an array element must exist). NotFound: no such resource; InvalidArgument: not
  // JSON or the pointer cannot be written.
  Status Set(const std::string& uri, const std::string& pointer, const nlohmann::json& value);
  Result<nlohmann::json> Get(const std::string& uri, const std::string& pointer) const;

  // Adds `member` to the collection's Members (Id = member's Id or the next free number),
  // updates Members@odata.count and creates the member resource. For a LogService's
  // Entries, @odata.type and a missing Created (= created_iso) are filled in. Returns the
  // member's URI.
  Result<std::string> Append(const std::string& collection, nlohmann::json member, const std::string& created_iso);

  std::vector<std::string> Uris() const;
  size_t size() const { return resources_.size(); }

 private:
  std::map<std::string, Resource> resources_;
};

// Serialises without throwing on invalid UTF-8 (scenario values may carry any bytes).
std::string DumpJson(const nlohmann::json& doc);

}  // namespace faultline::sim
