// libFuzzer target for the HTTP API's query-string parser (api/query.h): any bytes must
// parse or be refused with a named reason, never crash; what is accepted keeps its
// invariants (caps, limit within bounds, window in order, cursors round-trip).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "api/query.h"

namespace {

void Check(bool ok) {
  if (!ok) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace faultline::api;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  constexpr int64_t kNow = 1764410400LL * 1'000'000'000;
  const QueryLimits limits;
  const PageLimits pages;
  QueryParams params;
  if (auto e = ParseQueryString(text, params, limits)) {
    Check(!e->message.empty());
  } else {
    Check(params.size() <= limits.max_params);
    for (const auto& [name, value] : params) {
      Check(!name.empty() && name.size() <= limits.max_name_bytes && value.size() <= limits.max_value_bytes);
    }
    ObservationsRequest o;
    if (auto e = ParseObservationsRequest(params, kNow, pages, o); !e) {
      Check(o.limit >= 1 && o.limit <= pages.max_limit);
      Check(o.since_ns == 0 || o.until_ns == 0 || o.since_ns <= o.until_ns);
    } else {
      Check(!e->message.empty());
    }
    RecordsRequest r;
    if (!ParseRecordsRequest(params, kNow, pages, r)) Check(r.limit >= 1 && r.limit <= pages.max_limit);
    WhySlowRequest w;
    (void)ParseWhySlowRequest(params, kNow, w);
  }
  if (auto c = ParseCursor(text)) Check(ParseCursor(FormatCursor(*c)) == c);
  if (auto id = ParseRowId(text)) Check(*id > 0);
  return 0;
}
