#include "cli/collect_util.h"

#include <unistd.h>

#include <fstream>
#include <sstream>

namespace faultline::cli {

std::string HostNameOr(const char* fallback) {
  char buf[256] = {};
  if (::gethostname(buf, sizeof(buf) - 1) != 0) return fallback;
  return buf;
}

Result<Topology> LoadTopologyFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status(StatusCode::kNotFound, "cannot open topology file " + path);
  std::string text(kMaxTopologyBytes + 1, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<size_t>(in.gcount()));
  return ParseTopology(text);
}

std::string MapValue(const std::map<std::string, std::string>& m, const char* key) {
  auto it = m.find(key);
  return it == m.end() ? "" : it->second;
}

std::string FormatNumber(double v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

}  // namespace faultline::cli
