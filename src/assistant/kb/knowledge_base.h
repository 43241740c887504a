// The knowledge base (docs/assistant.md "Knowledge base"): a Xapian index over kb/**/*.md,
// one document per section (markdown.h), plus resolved incidents from the store, answering
// the assistant's Retriever::Search.
//
// Indexing: English stemming; the query is matched against the text and, with boosts,
// against four fields: code (exact "xid:79" / "sxid:20034" terms, from front matter `codes`
// and from "XID 79" / "SXid 20034" written in the query), class (fault class names and their
// words), component and title. Reindex() is incremental: each file's mtime, size and content
// hash live in the index's metadata; an unchanged file is skipped, a changed one has its
// documents replaced, a deleted one has them removed. A file that cannot be read or parsed
// keeps the documents it had (bad input never loses what is indexed) and is reported.
//
// Thread safety: every method takes an internal mutex. One process may hold the index open
// for writing at a time (Xapian's lock); others open it with KbOptions::read_only.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "assistant/retriever.h"
#include "core/status.h"
#include "core/types.h"

namespace faultline::assistant::kb {

struct KbOptions {
  // Open an existing index for searching only: Reindex and AddIncident answer
  // kPermissionDenied. Use it where another process owns the index (the agent).
  bool read_only = false;
  // Files past this many are not indexed (reported in ReindexStats::errors).
  size_t max_files = 10000;
};

struct ReindexStats {
  size_t files_seen = 0;
  size_t files_indexed = 0;    // new or changed: documents (re)written
  size_t files_unchanged = 0;  // same mtime and size, or same content hash
  size_t files_removed = 0;    // gone from kb_dir: documents deleted
  size_t sections_indexed = 0;
  std::vector<std::string> errors;  // "<path>: <why>", one per file not (re)indexed
};

// A resolved diagnosis (policy/resolve.h): what it was and what fixed it.
struct Incident {
  int64_t diagnosis_id = 0;
  std::string node;
  FaultClass fault_class = FaultClass::kNone;
  std::string component;  // canonical id ("gpu/3", "psu/2")
  std::string summary;
  std::string fixed_by;
  int64_t first_ns = 0;     // when the fault began (0 = unknown)
  int64_t resolved_ns = 0;  // when it was closed (0 = unknown)
};

// Bytes kept of an incident's summary and fixed_by each (they are operator / log text).
inline constexpr size_t kMaxIncidentFieldBytes = 2048;

class KnowledgeBase : public Retriever {
 public:
  // Opens (creating unless read_only) the index in `index_dir` over the Markdown tree at
  // `kb_dir`. Does not index: call Reindex(). An index written with another schema version is
  // emptied at the next Reindex (re-add incidents afterwards). Errors: kNotFound (kb_dir, or
  // a read-only index that does not exist), kUnavailable (another writer holds the lock),
  // kCorrupt (not a Xapian index), kIoError.
  static Result<std::unique_ptr<KnowledgeBase>> Open(const std::string& kb_dir, const std::string& index_dir,
                                                     const KbOptions& options = {});
  ~KnowledgeBase() override;

  Result<ReindexStats> Reindex();

  // Up to `k` passages (at most 100), best first. Empty or all-stopword query: empty list.
  Result<std::vector<KbHit>> Search(std::string_view query, size_t k) const override;

  // Indexes (or replaces, by diagnosis id) one resolved incident as document
  // "incident/<diagnosis_id>", kind "incident". Reindex never removes incidents.
  Status AddIncident(const Incident& incident);

  // Documents in the index (sections + incidents).
  Result<size_t> DocumentCount() const;

 private:
  struct Impl;
  explicit KnowledgeBase(std::unique_ptr<Impl> impl);
  mutable std::mutex mu_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace faultline::assistant::kb
