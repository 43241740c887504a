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
// Exception for kernel lines dated only by their monotonic time: their time_ns is a
// boot-time estimate (wall clock - boot clock, read at the reader's start) plus mono_us,
// and that estimate differs by microseconds at every start. A source that knows the
// boot puts its id in attrs["boot_id"]; when that attr and mono_us are present the
// identity uses the boot id in place of time_ns (mono_us is in it anyway), so the same
// line read again after a restart, or from an identical copy of the log, is stored once,
// while the same text at the same monotonic time in another boot stays a separate fact.
//
// The key is the first 16 bytes of SHA-256 over a length-prefixed encoding of those
// fields, so it is stable across builds and platforms (it lives in the database file).
#pragma once

#include <string>
#include <string_view>

#include "core/types.h"

namespace faultline::store {

inline constexpr size_t kDedupKeyBytes = 16;
// The attr naming the boot whose monotonic clock an observation's mono_us counts.
inline constexpr std::string_view kBootIdAttr = "boot_id";

// Returns kDedupKeyBytes raw bytes.
std::string DedupKey(const Observation& obs);

}  // namespace faultline::store
