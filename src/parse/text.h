// Small string_view helpers shared by the parsers. No allocation unless a std::string
// is returned.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace faultline {

std::string_view Trim(std::string_view s);
bool StartsWith(std::string_view s, std::string_view prefix);
bool Contains(std::string_view s, std::string_view needle);
// Parses a whole string as a decimal (or 0x-prefixed hex when `allow_hex`) integer.
std::optional<int64_t> ParseInt(std::string_view s, bool allow_hex = false);
std::optional<uint64_t> ParseHex(std::string_view s);  // with or without 0x
std::optional<double> ParseDouble(std::string_view s);
// Text after `key` up to the first of `stops` (or the end); nullopt if key absent.
std::optional<std::string_view> After(std::string_view s, std::string_view key);

}  // namespace faultline
