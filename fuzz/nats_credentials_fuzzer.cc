// libFuzzer target for the fleet transport's credentials file parser and URL helpers
// (fleet/nats/client.h): never crashes, and what parses has exactly one kind of secret.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "fleet/nats/client.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto c = faultline::fleet::nats::ParseCredentials(text);
  if (c.ok()) {
    const int kinds = (c->creds_file ? 1 : 0) + (c->token.empty() ? 0 : 1) + (c->user.empty() ? 0 : 1);
    if (kinds != 1) std::abort();
    if (!c->user.empty() && c->password.empty()) std::abort();
  }
  for (const auto& url : faultline::fleet::nats::SplitUrls(text)) {
    const std::string redacted = faultline::fleet::nats::RedactUrl(url);
    if (redacted.size() > url.size() + 4) std::abort();
  }
  return 0;
}
