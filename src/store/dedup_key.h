// The identity of an observation for deduplication in the store.
//
// Two observations are "the same fact" when they agree on: node, source, kind,
// component id, time_ns, mono_us, seq, code, value, text and raw. That is exactly
// what a replayed kmsg record (same SEQ, same line) or a re-read SEL entry (same Id,
// same Created, same message) looks like, so those are stored once.
//
// `count` and `attrs` are deliberately NOT part of the identity:
//  - count: an upstream fold (kmsg "N identical lines") re-emits the same first
//    record with a growing cumulative count; the store keeps one row and raises its
//    count to the largest value seen (never sums, so replaying a fold is harmless).
//  - attrs: derived by parsers from the raw text; a newer parser may add attrs, and
//    re-ingesting the same raw record must still be recognised as a duplicate.
//
// The key is the first 16 bytes of SHA-256 over a length-prefixed encoding of those
// fields, so it is stable across builds and platforms (it lives in the database file).
#pragma once

#include <string>

#include "core/types.h"

namespace faultline::store {

inline constexpr size_t kDedupKeyBytes = 16;

// Returns kDedupKeyBytes raw bytes.
std::string DedupKey(const Observation& obs);

}  // namespace faultline::store
