// libFuzzer target for the checks a server without a token makes on each request's Host
// and Origin headers (sources/workload/guarded_http_server.h): whatever the bytes, a header
// is accepted only when it names this machine's loopback, checked here independently of
// the code under test, so a DNS-rebinding or cross-site page can never pass.
#include <arpa/inet.h>

#include <cctype>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "sources/workload/guarded_http_server.h"

namespace {

void Check(bool ok) {
  if (!ok) __builtin_trap();
}

bool AllDigits(std::string_view s) {
  if (s.empty() || s.size() > 5) return false;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

// The oracle: "localhost", a dotted quad in 127/8 or "[<IPv6 loopback>]", each with an
// optional numeric port. Written apart from the server's parser on purpose.
bool OracleLoopbackHost(std::string_view h) {
  if (h.find('\0') != std::string_view::npos) return false;
  if (!h.empty() && h.front() == '[') {
    const size_t close = h.find(']');
    if (close == std::string_view::npos) return false;
    const std::string_view tail = h.substr(close + 1);
    if (!tail.empty() && (tail.front() != ':' || !AllDigits(tail.substr(1)))) return false;
    in6_addr a{};
    return inet_pton(AF_INET6, std::string(h.substr(1, close - 1)).c_str(), &a) == 1 && IN6_IS_ADDR_LOOPBACK(&a);
  }
  if (const size_t colon = h.find(':'); colon != std::string_view::npos) {
    if (!AllDigits(h.substr(colon + 1))) return false;
    h = h.substr(0, colon);
  }
  std::string lower(h);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (lower == "localhost" || lower == "localhost.") return true;
  in_addr a{};
  return inet_pton(AF_INET, lower.c_str(), &a) == 1 && (ntohl(a.s_addr) >> 24) == 127;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const bool host_ok = faultline::IsLoopbackHostHeader(text);
  Check(host_ok == OracleLoopbackHost(text));
  // An Origin is a scheme and a loopback authority, nothing after it (no path, user, query).
  const bool origin_ok = faultline::IsAllowedOrigin(text);
  if (text.empty()) {
    Check(origin_ok);
  } else {
    std::string_view authority;
    if (text.substr(0, 7) == "http://") authority = text.substr(7);
    if (text.substr(0, 8) == "https://") authority = text.substr(8);
    const bool plain = authority.find_first_of("/@?#") == std::string_view::npos;
    Check(origin_ok == (!authority.empty() && plain && OracleLoopbackHost(authority)));
  }
  // Whatever follows an accepted origin's host turns it into another site or a path.
  if (origin_ok && !text.empty()) Check(!faultline::IsAllowedOrigin(std::string(text) + "@evil.example"));
  return 0;
}
