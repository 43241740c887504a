// How the knowledge base turns text into index terms, the same way for documents and
// queries (so a word always meets itself): split on anything that is not a letter or digit
// (bytes of multi-byte UTF-8 characters count as letters), lower-case, drop English stop
// words and words longer than kMaxWordBytes, then stem with Xapian's English stemmer.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace Xapian {
class Stem;
}

namespace faultline::assistant::kb {

// Term prefixes of the boosted fields (Xapian's convention: upper-case letters).
inline constexpr const char* kPrefixTitle = "S";
inline constexpr const char* kPrefixClass = "XC";
inline constexpr const char* kPrefixClassExact = "XL";
inline constexpr const char* kPrefixComponent = "XM";
inline constexpr const char* kPrefixCode = "XD";
inline constexpr const char* kPrefixPrimaryCode = "XP";  // a catalog entry's own code

inline constexpr size_t kMaxWordBytes = 64;
inline constexpr size_t kMaxTermsPerText = 20000;  // bounds a document's (or query's) terms

// Lower-cased words of `text`, stop words removed, in order.
std::vector<std::string> Words(std::string_view text);

// Words(text), each stemmed.
std::vector<std::string> StemmedTerms(std::string_view text, const Xapian::Stem& stem);

// Catalog codes named in free text: "XID 79", "xid79", "Xid: 119", "SXid 20034", "sxid-12028"
// -> "xid:79", "sxid:20034". Numbers without the word are not codes ("gpu 3").
std::vector<std::string> CodesInQuery(std::string_view text);

bool IsStopWord(std::string_view lower_word);

}  // namespace faultline::assistant::kb
