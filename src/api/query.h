// Query-string parsing for the HTTP API (docs/api.md "Parameters"): the raw query of a
// request target is split and percent-decoded here, then checked parameter by parameter
// into typed requests. Pure functions, no I/O; the libFuzzer target
// fuzz/api_query_fuzzer.cc drives them with arbitrary bytes.
//
// Every refusal names the parameter (ParamError::param) so the 400 reply can say which
// one was wrong. Refused: unknown parameters, a parameter given twice, bad % escapes,
// control bytes, more than max_params parameters, names or values over their caps, and
// values that do not parse (unknown layer/kind names, a limit that is not a number, a
// cursor that was not made by this server, since after until).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/types.h"

namespace faultline::api {

struct ParamError {
  std::string param;    // the parameter at fault ("" when the query as a whole is)
  std::string message;  // why, without echoing more than a short, cleaned prefix of the value
};

struct QueryLimits {
  size_t max_query_bytes = 4096;
  size_t max_params = 16;
  size_t max_name_bytes = 32;
  size_t max_value_bytes = 512;
};

// Decoded name/value pairs in the order given.
using QueryParams = std::vector<std::pair<std::string, std::string>>;

// Splits "a=1&b=x%20y" (the part after '?', without it) into decoded pairs. '+' is a
// space. An empty query gives no pairs; "a" (no '=') is a with an empty value; empty
// pieces ("a=1&&b=2") are skipped.
std::optional<ParamError> ParseQueryString(std::string_view query, QueryParams& out, const QueryLimits& limits = {});

// Paging: the position after the last row of a page. Rows are ordered by (time_ns, id);
// the cursor is "<time_ns>.<id>" in decimal, opaque to clients.
struct PageCursor {
  int64_t time_ns = 0;
  int64_t id = 0;
  bool operator==(const PageCursor&) const = default;
};
std::string FormatCursor(const PageCursor& c);
std::optional<PageCursor> ParseCursor(std::string_view text);

struct PageLimits {
  size_t default_limit = 100;
  size_t max_limit = 1000;
};

// GET /api/v1/observations?layer=&component=&kind=&source=&since=&until=&limit=&cursor=
struct ObservationsRequest {
  std::optional<Layer> layer;
  std::optional<std::string> component;  // canonical id, e.g. "gpu/3"
  std::optional<ObsKind> kind;
  std::optional<Source> source;
  int64_t since_ns = 0;  // 0 = open
  int64_t until_ns = 0;  // 0 = open
  size_t limit = 0;
  std::optional<PageCursor> cursor;
};

// GET /api/v1/findings, /diagnoses, /actions: ?since=&until=&limit=&cursor=
struct RecordsRequest {
  int64_t since_ns = 0;
  int64_t until_ns = 0;
  size_t limit = 0;
  std::optional<PageCursor> cursor;
};

// GET /api/v1/why-slow?since=&until=
struct WhySlowRequest {
  int64_t since_ns = 0;
  int64_t until_ns = 0;
};

// `now_ns` anchors relative times ("2h" = two hours before now). Times are ISO 8601
// (2026-03-01T10:00:00Z), a duration ago (90s, 15m, 2h, 7d) or integer nanoseconds since
// the epoch.
std::optional<ParamError> ParseObservationsRequest(const QueryParams& params, int64_t now_ns, const PageLimits& limits,
                                                   ObservationsRequest& out);
std::optional<ParamError> ParseRecordsRequest(const QueryParams& params, int64_t now_ns, const PageLimits& limits,
                                              RecordsRequest& out);
std::optional<ParamError> ParseWhySlowRequest(const QueryParams& params, int64_t now_ns, WhySlowRequest& out);
// Routes without parameters refuse any.
std::optional<ParamError> ExpectNoParams(const QueryParams& params);

// A path segment that must be a row id (/api/v1/diagnoses/{id}): 1..2^63-1, digits only.
std::optional<int64_t> ParseRowId(std::string_view text);

}  // namespace faultline::api
