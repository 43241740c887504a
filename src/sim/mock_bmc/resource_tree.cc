#include "sim/mock_bmc/resource_tree.h"

#include <exception>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace faultline::sim {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr std::string_view kServiceRoot = "/redfish/v1";
constexpr uintmax_t kMaxFileBytes = 64u << 20;

Result<std::string> ReadFile(const fs::path& path) {
  std::error_code ec;
  uintmax_t size = fs::file_size(path, ec);
  if (ec) return Status(StatusCode::kIoError, path.string() + ": " + ec.message());
  if (size > kMaxFileBytes) return Status(StatusCode::kInvalidArgument, path.string() + ": file too large");
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status(StatusCode::kIoError, path.string() + ": cannot open");
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

Result<fs::path> FindRoot(const std::string& mockup_dir) {
  std::error_code ec;
  const fs::path dir(mockup_dir);
  if (fs::exists(dir / "redfish" / "v1" / "index.json", ec)) return dir / "redfish" / "v1";
  if (fs::exists(dir / "index.json", ec)) return dir;
  return Status(StatusCode::kNotFound,
                "mockup: no redfish/v1/index.json or index.json (service root) under '" + mockup_dir + "'");
}

Resource MakeResource(std::string text, bool xml) {
  Resource r;
  if (xml) {
    r.is_json = false;
    r.content_type = "application/xml";
    r.raw = std::move(text);
    return r;
  }
  r.doc = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (r.doc.is_discarded()) {
    // A mockup file that does not parse is a quirk worth serving unchanged.
    r.is_json = false;
    r.raw = std::move(text);
  }
  return r;
}

std::string NextMemberId(const json& members) {
  long long next = static_cast<long long>(members.size()) + 1;
  for (const json& m : members) {
    if (!m.is_object() || !m.contains("@odata.id") || !m["@odata.id"].is_string()) continue;
    std::string id = m["@odata.id"].get<std::string>();
    id = id.substr(id.find_last_of('/') + 1);
    try {
      size_t used = 0;
      long long n = std::stoll(id, &used);
      if (used == id.size() && n >= next) next = n + 1;
    } catch (const std::exception&) {
      // Not numeric: ignore for numbering.
    }
  }
  return std::to_string(next);
}

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

}  // namespace

std::string DumpJson(const json& doc) { return doc.dump(-1, ' ', false, json::error_handler_t::replace); }

std::string ResourceTree::Canonical(std::string_view path) {
  std::string out;
  out.reserve(path.size());
  for (char c : path) {
    if (c == '/' && !out.empty() && out.back() == '/') continue;
    out.push_back(c);
  }
  while (out.size() > 1 && out.back() == '/') out.pop_back();
  return out;
}

Result<ResourceTree> ResourceTree::Load(const std::string& mockup_dir) {
  Result<fs::path> root = FindRoot(mockup_dir);
  if (!root.ok()) return root.status();
  ResourceTree tree;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(*root, ec), end; !ec && it != end; it.increment(ec)) {
    const fs::path& p = it->path();
    const std::string name = p.filename().string();
    if (!it->is_regular_file() || (name != "index.json" && name != "index.xml")) continue;
    std::string rel = fs::relative(p.parent_path(), *root, ec).generic_string();
    if (ec) break;
    std::string uri = std::string(kServiceRoot) + (rel == "." || rel.empty() ? "" : "/" + rel);
    // index.json wins when a folder holds both.
    if (name == "index.xml" && tree.resources_.count(uri)) continue;
    Result<std::string> text = ReadFile(p);
    if (!text.ok()) return text.status();
    tree.resources_[uri] = MakeResource(std::move(*text), name == "index.xml");
  }
  if (ec) return Status(StatusCode::kIoError, "mockup: walking '" + mockup_dir + "': " + ec.message());
  return tree;
}

const Resource* ResourceTree::Find(const std::string& uri) const {
  auto it = resources_.find(Canonical(uri));
  return it == resources_.end() ? nullptr : &it->second;
}

Resource* ResourceTree::FindMutable(const std::string& uri) {
  auto it = resources_.find(Canonical(uri));
  return it == resources_.end() ? nullptr : &it->second;
}

Status ResourceTree::Set(const std::string& uri, const std::string& pointer, const json& value) {
  Resource* r = FindMutable(uri);
  if (r == nullptr) return Status(StatusCode::kNotFound, "no resource " + uri);
  if (!r->is_json || !r->doc.is_object()) return Status(StatusCode::kInvalidArgument, uri + " is not a JSON object");
  // Only existing containers are written into: a typo must not silently grow the resource
  // (nlohmann would pad an array with nulls up to the index). nlohmann throws on pointers
  // that cross a scalar; that stops here.
  try {
    const json::json_pointer ptr(pointer);
    const json::json_pointer parent = ptr.parent_pointer();
    if (!r->doc.contains(parent)) return Status(StatusCode::kInvalidArgument, uri + pointer + ": no parent");
    json& container = r->doc[parent];
    if (container.is_array()) {
      json& slot = r->doc.at(ptr);  // throws past the end
      slot = value;
    } else if (container.is_object()) {
      container[ptr.back()] = value;
    } else {
      return Status(StatusCode::kInvalidArgument, uri + pointer + ": parent is not an object or array");
    }
  } catch (const std::exception& e) {
    return Status(StatusCode::kInvalidArgument, uri + pointer + ": " + e.what());
  }
  return Status::Ok();
}

Result<json> ResourceTree::Get(const std::string& uri, const std::string& pointer) const {
  const Resource* r = Find(uri);
  if (r == nullptr) return Status(StatusCode::kNotFound, "no resource " + uri);
  if (!r->is_json) return Status(StatusCode::kInvalidArgument, uri + " is not JSON");
  try {
    return r->doc.at(json::json_pointer(pointer));
  } catch (const std::exception& e) {
    return Status(StatusCode::kNotFound, uri + pointer + ": " + e.what());
  }
}

Result<std::string> ResourceTree::Append(const std::string& collection, json member, const std::string& created_iso) {
  const std::string coll = Canonical(collection);
  Resource* r = FindMutable(coll);
  if (r == nullptr) return Status(StatusCode::kNotFound, "no collection " + coll);
  if (!r->is_json || !r->doc.is_object()) return Status(StatusCode::kInvalidArgument, coll + " is not JSON");
  if (!member.is_object()) return Status(StatusCode::kInvalidArgument, "member must be a JSON object");
  json& members = r->doc["Members"];
  if (!members.is_array()) members = json::array();  // absent or a null Members quirk
  std::string id =
      member.contains("Id") && member["Id"].is_string() ? member["Id"].get<std::string>() : NextMemberId(members);
  if (id.empty() || id.find('/') != std::string::npos) return Status(StatusCode::kInvalidArgument, "bad member Id");
  const std::string uri = coll + "/" + id;
  if (Find(uri) != nullptr) return Status(StatusCode::kInvalidArgument, uri + " already exists");
  member["Id"] = id;
  member["@odata.id"] = uri;
  if (EndsWith(coll, "/Entries")) {
    if (!member.contains("@odata.type")) member["@odata.type"] = "#LogEntry.v1_15_0.LogEntry";
    if (!member.contains("Created")) member["Created"] = created_iso;
    if (!member.contains("Name")) member["Name"] = "Log Entry " + id;
  }
  members.push_back(json{{"@odata.id", uri}});
  r->doc["Members@odata.count"] = members.size();
  Resource m;
  m.doc = std::move(member);
  resources_[uri] = std::move(m);
  return uri;
}

std::vector<std::string> ResourceTree::Uris() const {
  std::vector<std::string> out;
  out.reserve(resources_.size());
  for (const auto& [uri, unused] : resources_) out.push_back(uri);
  return out;
}

}  // namespace faultline::sim
