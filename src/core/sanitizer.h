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

// How many seeds, lines or nodes a sweep takes: `full` in the normal build, `sanitized`
// under ASan (still enough to run every branch the sweep is there for).
constexpr unsigned long long SweepSize(unsigned long long full, unsigned long long sanitized) {
  return kBuiltWithAsan ? sanitized : full;
}

}  // namespace faultline
