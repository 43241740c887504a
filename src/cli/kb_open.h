// The knowledge base a one-shot command reads (`faultline ask`, `faultline serve`): --kb DIR
// (default <binary's dir>/../share/faultline/kb, then /usr/share/faultline/kb, else ./kb), indexed
// into --kb-index or a private temporary index removed when the command ends, plus the store's
// resolved incidents.
#pragma once

#include <filesystem>
#include <memory>
#include <string>

#include "assistant/retriever.h"

namespace faultline {
class Store;
}

namespace faultline::cli {

class OpenedKnowledgeBase {
 public:
  OpenedKnowledgeBase() = default;
  ~OpenedKnowledgeBase();  // closes the index, then removes a temporary one
  OpenedKnowledgeBase(OpenedKnowledgeBase&&) = default;
  OpenedKnowledgeBase& operator=(OpenedKnowledgeBase&&) = delete;

  const assistant::Retriever* get() const { return kb_.get(); }
  // Why there is no knowledge base, or what of it is missing ("" when all is well).
  const std::string& note() const { return note_; }

  friend OpenedKnowledgeBase OpenKnowledgeBase(const std::string& kb_dir, const std::string& kb_index, Store& store);

 private:
  std::filesystem::path temp_index_;
  std::unique_ptr<assistant::Retriever> kb_;
  std::string note_;
};

// Never fails: without a usable knowledge base, get() is null and note() says why.
OpenedKnowledgeBase OpenKnowledgeBase(const std::string& kb_dir, const std::string& kb_index, Store& store);

}  // namespace faultline::cli
