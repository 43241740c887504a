#include "cli/kb_open.h"

#include <stdlib.h>

#include <system_error>
#include <utility>

#include "assistant/kb/incidents.h"
#include "assistant/kb/knowledge_base.h"

namespace faultline::cli {
namespace {

// <dir of this binary>/../share/faultline/kb: where `cmake --install` and the .deb put the kb
// beside bin/, so a relocated install (any prefix, an extracted package) reads its own copy.
std::filesystem::path KbBesideBinary() {
  std::error_code ec;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec || exe.empty()) return {};
  return (exe.parent_path() / ".." / "share" / "faultline" / "kb").lexically_normal();
}

std::string FindKbDir(const std::string& given) {
  if (!given.empty()) return given;
  const std::filesystem::path candidates[] = {KbBesideBinary(), "/usr/share/faultline/kb", "kb"};
  for (const std::filesystem::path& candidate : candidates) {
    std::error_code ec;
    if (!candidate.empty() && std::filesystem::is_directory(candidate, ec)) return candidate.string();
  }
  return "";
}

}  // namespace

OpenedKnowledgeBase::~OpenedKnowledgeBase() {
  kb_.reset();  // the index first, or it would write its files back into the removed directory
  if (temp_index_.empty()) return;
  std::error_code ec;
  std::filesystem::remove_all(temp_index_, ec);
}

OpenedKnowledgeBase OpenKnowledgeBase(const std::string& kb_dir, const std::string& kb_index, Store& store) {
  OpenedKnowledgeBase out;
  const std::string dir = FindKbDir(kb_dir);
  if (dir.empty()) {
    out.note_ = "no knowledge base found (--kb DIR): answering without runbook sections";
    return out;
  }
  std::string index = kb_index;
  if (index.empty()) {
    // mkdtemp: a fresh directory only we can write, never one someone prepared for us.
    std::string pattern = (std::filesystem::temp_directory_path() / "faultline-kb-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) {
      out.note_ = "knowledge base unavailable: no temporary index directory";
      return out;
    }
    out.temp_index_ = pattern;
    index = pattern;
  }
  auto kb = assistant::kb::KnowledgeBase::Open(dir, index);
  if (!kb.ok()) {
    out.note_ = "knowledge base unavailable: " + kb.status().message();
    return out;
  }
  auto stats = (*kb)->Reindex();
  if (!stats.ok()) {
    out.note_ = "knowledge base could not be indexed: " + stats.status().message();
    return out;
  }
  if (auto incidents = assistant::kb::IndexResolvedIncidents(store, **kb); !incidents.ok()) {
    out.note_ = "past incidents not searched: " + incidents.status().message();
  }
  out.kb_ = std::move(kb).value();
  return out;
}

}  // namespace faultline::cli
