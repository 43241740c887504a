// libFuzzer target: arbitrary bytes -> one Redfish collection page read member by member
// (sources/redfish/collection_page.h), with a small and a large member cap. Must never
// crash or throw, keep at most the cap, and flag `more` only when it stopped at the cap.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "sources/redfish/collection_page.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace faultline;
  std::string_view body(reinterpret_cast<const char*>(data), size);
  for (const size_t cap : {size_t{2}, size_t{1000}}) {
    auto page = redfish::ParseCollectionPage(body, cap);
    if (!page.ok()) continue;
    if (page->members.size() > cap) std::abort();
    if (page->more && page->members.size() != cap) std::abort();
    for (const redfish::Json& m : page->members) (void)m.dump();
  }
  return 0;
}
