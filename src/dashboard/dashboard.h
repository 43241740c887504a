// The web dashboard (docs/dashboard.md): static HTML/JS/CSS compiled into the binary and
// served by the API server (src/api) at "/" and "/ui/...". The page reads only the JSON API,
// so it shows exactly what `faultline why-slow --json` and the API say.
#pragma once

#include <optional>
#include <string_view>

namespace faultline::dashboard {

struct Asset {
  std::string_view body;
  std::string_view content_type;
};

// The asset for a request path: "/" and "/ui/" -> the page, "/ui/<name>" -> that file;
// nullopt for anything else (no path is ever mapped to the file system).
std::optional<Asset> Find(std::string_view path);

}  // namespace faultline::dashboard
