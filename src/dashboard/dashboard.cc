#include "dashboard/dashboard.h"

#include <string_view>

namespace faultline::dashboard {
namespace {

struct EmbeddedFile {
  std::string_view path;
  std::string_view body;
};

#include "dashboard_assets.inc"

std::string_view ContentType(std::string_view name) {
  if (name.ends_with(".html")) return "text/html; charset=utf-8";
  if (name.ends_with(".js")) return "text/javascript; charset=utf-8";
  if (name.ends_with(".css")) return "text/css; charset=utf-8";
  return "application/octet-stream";
}

}  // namespace

std::optional<Asset> Find(std::string_view path) {
  std::string_view name;
  if (path == "/" || path == "/ui" || path == "/ui/") {
    name = "index.html";
  } else if (path.starts_with("/ui/")) {
    name = path.substr(4);
  } else {
    return std::nullopt;
  }
  for (const EmbeddedFile& f : kEmbedded) {
    if (f.path == name) return Asset{f.body, ContentType(name)};
  }
  return std::nullopt;
}

}  // namespace faultline::dashboard
