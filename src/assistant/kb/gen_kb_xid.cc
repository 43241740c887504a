// faultline-gen-kb-xid KB_DIR: writes KB_DIR/xid/{xid,sxid}-<code>.md from the project's
// catalog (xid_entries.h) and removes entries for codes the catalog no longer has. Files
// whose content is already right are left untouched (their mtime too), so the knowledge
// base's incremental re-index only sees real changes.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "assistant/kb/xid_entries.h"

namespace fs = std::filesystem;

namespace {

bool SameContent(const fs::path& p, const std::string& content) {
  std::ifstream in(p, std::ios::binary);
  if (!in) return false;
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str() == content;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: faultline-gen-kb-xid KB_DIR\n");
    return 2;
  }
  const fs::path kb = argv[1];
  std::error_code ec;
  fs::create_directories(kb / "xid", ec);
  if (ec) {
    std::fprintf(stderr, "faultline-gen-kb-xid: %s: %s\n", (kb / "xid").c_str(), ec.message().c_str());
    return 1;
  }
  size_t written = 0, unchanged = 0, removed = 0;
  std::set<std::string> names;
  for (const auto& e : faultline::assistant::kb::RenderCatalogEntries()) {
    const fs::path p = kb / e.rel_path;
    names.insert(p.filename().string());
    if (SameContent(p, e.content)) {
      ++unchanged;
      continue;
    }
    std::ofstream out(p, std::ios::binary | std::ios::trunc);
    out << e.content;
    if (!out) {
      std::fprintf(stderr, "faultline-gen-kb-xid: cannot write %s\n", p.c_str());
      return 1;
    }
    ++written;
  }
  for (const auto& d : fs::directory_iterator(kb / "xid", ec)) {
    const std::string name = d.path().filename().string();
    const bool ours = (name.starts_with("xid-") || name.starts_with("sxid-")) && name.ends_with(".md");
    if (ours && names.count(name) == 0 && fs::remove(d.path(), ec)) ++removed;
  }
  std::printf("kb/xid: %zu written, %zu unchanged, %zu removed\n", written, unchanged, removed);
  return 0;
}
