// Bounds on the names and text the fleet analyzer keeps (docs/fleet.md "Memory"). Agents
// are not trusted to keep names short: the wire format allows 64 KiB strings, and a
// fleet of nodes with 60 KB names would otherwise hold gigabytes. What the analyzer keeps
// of a node, rack, site, job or component name is at most kMaxNameBytes; a longer name is
// cut to a prefix (at a UTF-8 character boundary), then "~" and the 16 hex digits of the
// FNV-1a hash of the whole name, so two long names that differ only past the cut stay
// two names, and a reader sees the name was cut. The topology file refuses longer names
// (fleet_topology.h). Free text (summaries, evidence) is cut with "..." instead: it
// identifies nothing.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace faultline::fleet {

inline constexpr size_t kMaxNameBytes = 256;
inline constexpr size_t kMaxTextBytes = 1024;     // a finding's or diagnosis' summary
inline constexpr size_t kMaxEvidenceBytes = 512;  // one evidence line's text

// `name` itself when it fits in `max` bytes; else its cut form (exactly `max` bytes or
// fewer, ending "~<16 hex digits>"). `max` below 24 is taken as 24.
std::string BoundName(std::string_view name, size_t max = kMaxNameBytes);
// Whether `name` needs cutting.
inline bool NameTooLong(std::string_view name, size_t max = kMaxNameBytes) { return name.size() > max; }
// Cuts `name` in place; true when it was cut.
bool BoundNameInPlace(std::string& name, size_t max = kMaxNameBytes);
// Cuts free text to at most `max` bytes, ending "..." when cut; true when it was cut.
bool CutText(std::string& text, size_t max);

}  // namespace faultline::fleet
