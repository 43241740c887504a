// Time parsing and formatting shared by every source. All results are UTC nanoseconds
// since the Unix epoch. Parsers return nullopt on anything they do not fully
// understand: a wrong time is worse than a missing one for cross-layer correlation.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace faultline {

constexpr int64_t kNsPerSec = 1'000'000'000;
constexpr int64_t kNsPerMs = 1'000'000;
constexpr int64_t kNsPerUs = 1'000;

// ISO 8601 / RFC 3339: "2025-01-21T04:41:44,283302+00:00", "2025-01-21T04:41:44.5Z",
// "2025-01-21 04:41:44", offsets "+0530"/"-06:00"; no offset means UTC.
// Rejects placeholder dates (year < 1971, e.g. "0000-00-00T00:00:00").
std::optional<int64_t> ParseIso8601(std::string_view s);

// `dmesg -T` / ctime form: "Sun Feb 23 16:24:18 2025" (taken as UTC; dmesg -T is local
// time and drifts, which is why kernel monotonic time is preferred when present).
std::optional<int64_t> ParseCtime(std::string_view s);

// syslog form without a year: "Dec 02 09:56:04" / "Dec  2 09:56:04". The year is taken
// from `reference_ns` (the latest year that does not put the time more than a day ahead).
std::optional<int64_t> ParseSyslogTime(std::string_view s, int64_t reference_ns);

// Duration like "90s", "15m", "2h", "7d", "500ms" -> nanoseconds.
std::optional<int64_t> ParseDuration(std::string_view s);

// A --since/--until argument: ISO 8601 time, or a duration meaning "that long before now".
std::optional<int64_t> ParseTimeArg(std::string_view s, int64_t now_ns);

// "2025-01-21T04:41:44.283302Z" (microsecond precision); "-" for 0 (unknown).
std::string FormatIso8601(int64_t ns);

// Days since 1970-01-01 for a proleptic Gregorian date (no time zone involved).
int64_t DaysFromCivil(int64_t y, unsigned m, unsigned d);

}  // namespace faultline
