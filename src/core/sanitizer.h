// Whether this build runs under AddressSanitizer. Tests that sweep many seeds or nodes for
// accuracy or scale run a smaller sweep there: a Debug ASan build runs CPU-bound code about
// 50 times slower, and the normal build runs the full sweep on the same code.
#pragma once

namespace faultline {

// gcc says it with __SANITIZE_ADDRESS__, clang with __has_feature.
#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool kBuiltWithAsan = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
inline constexpr bool kBuiltWithAsan = true;
#else
inline constexpr bool kBuiltWithAsan = false;
#endif
#else
inline constexpr bool kBuiltWithAsan = false;
#endif

}  // namespace faultline
