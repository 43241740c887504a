// One page of a Redfish collection read member by member, without building the document.
//
// A LogEntryCollection page is the one body a BMC makes as large as it likes: a page of
// 190,000 SEL entries parsed as one nlohmann::json value peaked at 395 MB (issue 25).
// ParseCollectionPage goes through the body with nlohmann's SAX interface and builds
// one member at a time: it keeps at most `max_members` of them, stops reading at the
// first one past that (`more`), and keeps nothing else of the page but its own links.
// Peak memory is the body plus the members kept.
//
// Errors: kCorrupt for malformed JSON (up to the point where reading stopped) and for
// nesting deeper than `max_depth` (checked as the parser goes, so a deep body is refused
// before anything deep is built). A body that is valid JSON but not an object is a page
// without members. Never throws.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "parse/redfish_map.h"

namespace faultline::redfish {

struct CollectionPage {
  std::string id;              // "@odata.id" of the page
  std::string next_link;       // "@odata.nextLink", else "Members@odata.nextLink"; "" when last
  bool members_array = false;  // "Members" was present and an array
  std::vector<Json> members;   // at most max_members, in page order
  bool more = false;           // the page lists more than max_members; the rest was not read
};

Result<CollectionPage> ParseCollectionPage(std::string_view body, size_t max_members, int max_depth = kMaxBmcJsonDepth);

}  // namespace faultline::redfish
