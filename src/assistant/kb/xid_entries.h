// The kb/xid/ entries: one Markdown file per XID and SXid code in the project's catalog
// (parse/xid_catalog.h: NVIDIA's facts in xid_catalog_data.inc / sxid_catalog_data.inc and
// the project's reading in xid_rules.cc), rendered here so the files can be regenerated
// (`faultline-gen-kb-xid kb`) and a test can check the committed ones are up to date.
#pragma once

#include <string>
#include <vector>

namespace faultline::assistant::kb {

struct KbEntryFile {
  std::string rel_path;  // relative to the kb root: "xid/xid-79.md", "xid/sxid-20034.md"
  std::string content;
};

// Every entry, XIDs by code then SXids by code.
std::vector<KbEntryFile> RenderCatalogEntries();

}  // namespace faultline::assistant::kb
