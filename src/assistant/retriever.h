// What the assistant asks the knowledge base (docs/assistant.md): passages for a query,
// best first. The Xapian index (assistant/kb) implements it; tests may use a fixed one.
// Runbook text and past incidents are data written by people (or copied from logs): the
// assistant passes them to a model as quoted data, never as instructions.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace faultline::assistant {

struct KbHit {
  std::string doc_id;   // stable: "runbook/hbm_uncorrectable#what-confirms-it", "xid/79", "incident/42"
  std::string kind;     // "runbook", "xid", "sxid", "reference", "incident"
  std::string title;    // the document's title
  std::string section;  // the section heading the passage is under ("" = the whole document)
  std::string path;     // file the passage came from, relative to the kb root ("" for incidents)
  std::string text;     // the passage (bounded: a section, cut at kMaxPassageBytes)
  double score = 0;     // higher is better; only comparable within one answer
};

inline constexpr size_t kMaxPassageBytes = 4096;

class Retriever {
 public:
  virtual ~Retriever() = default;
  // Up to `k` passages for a free-text query, best first. An empty or all-stopword query
  // answers an empty list, not an error.
  virtual Result<std::vector<KbHit>> Search(std::string_view query, size_t k) const = 0;
};

}  // namespace faultline::assistant
