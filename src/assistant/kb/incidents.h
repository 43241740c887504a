// Past incidents for the knowledge base: every diagnosis an operator closed with
// `faultline resolve --diagnosis ID --fixed-by TEXT` (policy/resolve.h) becomes an
// "incident" document, so a recurring fault retrieves how it was fixed last time.
#pragma once

#include <cstddef>
#include <vector>

#include "assistant/kb/knowledge_base.h"
#include "core/status.h"

namespace faultline {
class Store;
}

namespace faultline::assistant::kb {

// The resolved incidents in `store`: action rows with attrs.state = "resolved", a
// non-empty attrs.fixed_by and a diagnosis id, joined with that diagnosis (fault class,
// component, summary, first time). The newest resolution of a diagnosis wins; a row whose
// diagnosis is gone (retention) is skipped. Rows the store could not decode are skipped
// too (the store reports them as bad rows).
Result<std::vector<Incident>> ResolvedIncidents(Store& store);

// ResolvedIncidents(store), each added to `kb` (idempotent: an incident replaces itself).
// Returns how many were indexed.
Result<size_t> IndexResolvedIncidents(Store& store, KnowledgeBase& kb);

}  // namespace faultline::assistant::kb
