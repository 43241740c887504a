#include "api/query.h"

#include <charconv>
#include <limits>

#include "core/time.h"

namespace faultline::api {
namespace {

// A short, printable prefix of a value for an error message: enough to recognise it,
// never a control byte or a long echo of hostile input.
std::string Shown(std::string_view v) {
  std::string out;
  for (char c : v.substr(0, 40)) out += (static_cast<unsigned char>(c) < 0x20 || c == 0x7f || c == '"') ? '?' : c;
  if (v.size() > 40) out += "...";
  return out;
}

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Percent-decodes one name or value; false on a bad escape or a control byte.
bool Decode(std::string_view in, std::string& out) {
  out.clear();
  for (size_t i = 0; i < in.size(); ++i) {
    char c = in[i];
    if (c == '+') {
      c = ' ';
    } else if (c == '%') {
      if (i + 2 >= in.size()) return false;
      const int hi = HexDigit(in[i + 1]);
      const int lo = HexDigit(in[i + 2]);
      if (hi < 0 || lo < 0) return false;
      c = static_cast<char>(hi * 16 + lo);
      i += 2;
    }
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) return false;
    out += c;
  }
  return true;
}

template <typename T>
bool ParseInteger(std::string_view text, T& out) {
  if (text.empty() || text.size() > 20) return false;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc() && ptr == text.data() + text.size();
}

bool AllDigits(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

// ISO 8601, a duration ago, or integer nanoseconds since the epoch (what the API returns).
std::optional<int64_t> ParseTime(std::string_view text, int64_t now_ns) {
  if (AllDigits(text)) {
    int64_t ns = 0;
    if (!ParseInteger(text, ns)) return std::nullopt;
    return ns;
  }
  return ParseTimeArg(text, now_ns);
}

ParamError Error(std::string_view param, std::string message) {
  return ParamError{std::string(param), std::move(message)};
}

// Fills the fields every list route shares; returns the error or nullopt. `handled` is
// set when the parameter was one of them.
std::optional<ParamError> ParseCommon(const std::string& name, const std::string& value, int64_t now_ns,
                                      const PageLimits& limits, int64_t& since, int64_t& until, size_t& limit,
                                      std::optional<PageCursor>* cursor, bool& handled) {
  handled = true;
  if (name == "since" || name == "until") {
    auto t = ParseTime(value, now_ns);
    if (!t) {
      return Error(name, "\"" + Shown(value) +
                             "\" is not a time: use ISO 8601 (2026-03-01T10:00:00Z), a duration ago (15m, 2h, 7d) "
                             "or nanoseconds since the epoch");
    }
    (name == "since" ? since : until) = *t;
    return std::nullopt;
  }
  if (name == "limit") {
    uint64_t n = 0;
    if (!ParseInteger(value, n) || n == 0) {
      return Error(name,
                   "\"" + Shown(value) + "\" is not a positive integer (1.." + std::to_string(limits.max_limit) + ")");
    }
    if (n > limits.max_limit) {
      return Error(name, std::to_string(n) + " is above the maximum of " + std::to_string(limits.max_limit) +
                             "; page with cursor");
    }
    limit = static_cast<size_t>(n);
    return std::nullopt;
  }
  if (name == "cursor" && cursor != nullptr) {
    auto c = ParseCursor(value);
    if (!c) return Error(name, "\"" + Shown(value) + "\" is not a cursor this server returned (next_cursor)");
    *cursor = *c;
    return std::nullopt;
  }
  handled = false;
  return std::nullopt;
}

std::optional<ParamError> CheckWindow(int64_t since, int64_t until) {
  if (since != 0 && until != 0 && since > until) return Error("since", "since is after until");
  return std::nullopt;
}

std::optional<ParamError> Unknown(const std::string& name, std::string_view accepted) {
  return Error(name.size() > 40 ? Shown(name) : name,
               "unknown parameter \"" + Shown(name) + "\" (accepted: " + std::string(accepted) + ")");
}

// Canonical component ids are short printable ASCII: "gpu/3", "ib/mlx5_0/1".
bool PlausibleComponent(std::string_view id) {
  if (id.empty() || id.size() > 200) return false;
  for (char c : id) {
    if (static_cast<unsigned char>(c) <= 0x20 || static_cast<unsigned char>(c) >= 0x7f) return false;
  }
  return ParseComponentId(id).has_value();
}

}  // namespace

std::optional<ParamError> ParseQueryString(std::string_view query, QueryParams& out, const QueryLimits& limits) {
  out.clear();
  if (query.size() > limits.max_query_bytes) {
    return Error("", "query string longer than " + std::to_string(limits.max_query_bytes) + " bytes");
  }
  size_t start = 0;
  while (start <= query.size()) {
    size_t end = query.find('&', start);
    if (end == std::string_view::npos) end = query.size();
    const std::string_view piece = query.substr(start, end - start);
    start = end + 1;
    if (piece.empty()) continue;
    const size_t eq = piece.find('=');
    const std::string_view raw_name = piece.substr(0, eq);
    const std::string_view raw_value = eq == std::string_view::npos ? std::string_view() : piece.substr(eq + 1);
    std::string name;
    std::string value;
    if (!Decode(raw_name, name) || name.empty()) {
      return Error(Shown(raw_name), "parameter name \"" + Shown(raw_name) + "\" is empty or badly %-escaped");
    }
    if (name.size() > limits.max_name_bytes) return Error(Shown(name), "parameter name too long");
    if (!Decode(raw_value, value)) return Error(name, "value is badly %-escaped or has control characters");
    if (value.size() > limits.max_value_bytes) {
      return Error(name, "value longer than " + std::to_string(limits.max_value_bytes) + " bytes");
    }
    for (const auto& [seen, unused] : out) {
      if (seen == name) return Error(name, "given more than once");
    }
    if (out.size() == limits.max_params) {
      return Error("", "more than " + std::to_string(limits.max_params) + " parameters");
    }
    out.emplace_back(std::move(name), std::move(value));
  }
  return std::nullopt;
}

std::string FormatCursor(const PageCursor& c) { return std::to_string(c.time_ns) + "." + std::to_string(c.id); }

std::optional<PageCursor> ParseCursor(std::string_view text) {
  const size_t dot = text.find('.');
  if (dot == std::string_view::npos) return std::nullopt;
  std::string_view time = text.substr(0, dot);
  const bool negative = !time.empty() && time.front() == '-';
  if (!AllDigits(negative ? time.substr(1) : time) || !AllDigits(text.substr(dot + 1))) return std::nullopt;
  PageCursor c;
  if (!ParseInteger(time, c.time_ns) || !ParseInteger(text.substr(dot + 1), c.id) || c.id <= 0) return std::nullopt;
  return c;
}

std::optional<ParamError> ParseObservationsRequest(const QueryParams& params, int64_t now_ns, const PageLimits& limits,
                                                   ObservationsRequest& out) {
  out = ObservationsRequest{};
  out.limit = limits.default_limit;
  for (const auto& [name, value] : params) {
    bool handled = false;
    if (auto e = ParseCommon(name, value, now_ns, limits, out.since_ns, out.until_ns, out.limit, &out.cursor, handled))
      return e;
    if (handled) continue;
    if (name == "layer") {
      out.layer = ParseLayer(value);
      if (!out.layer) return Error(name, "\"" + Shown(value) + "\" is not a layer (oob, gpu, os, fabric, workload)");
    } else if (name == "kind") {
      out.kind = ParseObsKind(value);
      if (!out.kind) return Error(name, "\"" + Shown(value) + "\" is not an observation kind (e.g. ecc_sbe, xid)");
    } else if (name == "source") {
      out.source = ParseSource(value);
      if (!out.source) return Error(name, "\"" + Shown(value) + "\" is not a source (e.g. nvml, kmsg, redfish)");
    } else if (name == "component") {
      if (!PlausibleComponent(value)) {
        return Error(name, "\"" + Shown(value) + "\" is not a component id (e.g. gpu/3, psu/1, ib/mlx5_0/1)");
      }
      out.component = value;
    } else {
      return Unknown(name, "layer, component, kind, source, since, until, limit, cursor");
    }
  }
  return CheckWindow(out.since_ns, out.until_ns);
}

std::optional<ParamError> ParseRecordsRequest(const QueryParams& params, int64_t now_ns, const PageLimits& limits,
                                              RecordsRequest& out) {
  out = RecordsRequest{};
  out.limit = limits.default_limit;
  for (const auto& [name, value] : params) {
    bool handled = false;
    if (auto e = ParseCommon(name, value, now_ns, limits, out.since_ns, out.until_ns, out.limit, &out.cursor, handled))
      return e;
    if (!handled) return Unknown(name, "since, until, limit, cursor");
  }
  return CheckWindow(out.since_ns, out.until_ns);
}

std::optional<ParamError> ParseWhySlowRequest(const QueryParams& params, int64_t now_ns, WhySlowRequest& out) {
  out = WhySlowRequest{};
  for (const auto& [name, value] : params) {
    if (name != "since" && name != "until") return Unknown(name, "since, until");
    size_t unused_limit = 0;
    bool handled = false;
    if (auto e =
            ParseCommon(name, value, now_ns, PageLimits{}, out.since_ns, out.until_ns, unused_limit, nullptr, handled))
      return e;
  }
  return CheckWindow(out.since_ns, out.until_ns);
}

std::optional<ParamError> ExpectNoParams(const QueryParams& params) {
  if (params.empty()) return std::nullopt;
  return Unknown(params.front().first, "none");
}

std::optional<int64_t> ParseRowId(std::string_view text) {
  int64_t id = 0;
  if (!AllDigits(text) || !ParseInteger(text, id) || id <= 0) return std::nullopt;
  return id;
}

}  // namespace faultline::api
