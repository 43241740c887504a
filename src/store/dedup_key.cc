#include "store/dedup_key.h"

#include <openssl/evp.h>

#include <bit>
#include <cmath>
#include <cstring>

namespace faultline::store {
namespace {

// Field encoding: a tag byte, then for strings an 8-byte length and the bytes, for
// numbers 8 little-endian bytes; absent optionals encode as the tag alone. The tags
// keep "absent" distinct from 0 and prevent one field's bytes posing as another's.
class KeyBuilder {
 public:
  void Str(char tag, std::string_view s) {
    buf_.push_back(tag);
    U64(s.size());
    buf_.append(s);
  }
  void Num(char tag, uint64_t v) {
    buf_.push_back(tag);
    U64(v);
  }
  void Absent(char tag) { buf_.push_back(static_cast<char>(tag | 0x80)); }
  const std::string& bytes() const { return buf_; }

 private:
  void U64(uint64_t v) {
    for (int i = 0; i < 8; ++i) buf_.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
  }
  std::string buf_;
};

// One bit pattern per value: -0.0 equals 0.0 and every NaN is the same NaN.
uint64_t CanonicalDouble(double d) {
  if (d == 0.0) d = 0.0;
  if (std::isnan(d)) return 0x7ff8000000000000ULL;
  return std::bit_cast<uint64_t>(d);
}

// SHA-256 fetched once: EVP_sha256() makes EVP_Digest look the algorithm up again at
// every call, under OpenSSL's locks (a few percent of a simulated multi-day run). The
// fetched object is immutable and shared by all threads; it lives as long as the process.
const EVP_MD* Sha256() {
  static const EVP_MD* const md = [] {
    EVP_MD* fetched = EVP_MD_fetch(nullptr, "SHA256", nullptr);
    return fetched != nullptr ? static_cast<const EVP_MD*>(fetched) : EVP_sha256();
  }();
  return md;
}

}  // namespace

std::string DedupKey(const Observation& obs) {
  KeyBuilder k;
  k.Str('n', obs.node);
  k.Str('s', ToString(obs.source));
  k.Str('k', ToString(obs.kind));
  k.Str('c', obs.component.Id());
  // A time derived from a boot-time estimate moves at every start; the boot and the
  // kernel's monotonic time are what identify such a line (see the header).
  const auto boot = obs.attrs.find(std::string(kBootIdAttr));
  if (boot != obs.attrs.end() && obs.mono_us)
    k.Str('b', boot->second);
  else
    k.Num('t', static_cast<uint64_t>(obs.time_ns));
  if (obs.mono_us)
    k.Num('m', static_cast<uint64_t>(*obs.mono_us));
  else
    k.Absent('m');
  if (obs.seq)
    k.Num('q', *obs.seq);
  else
    k.Absent('q');
  if (obs.code)
    k.Num('d', static_cast<uint64_t>(*obs.code));
  else
    k.Absent('d');
  if (obs.value)
    k.Num('v', CanonicalDouble(*obs.value));
  else
    k.Absent('v');
  k.Str('x', obs.text);
  k.Str('r', obs.raw);

  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(k.bytes().data(), k.bytes().size(), digest, &len, Sha256(), nullptr);
  return std::string(reinterpret_cast<const char*>(digest), kDedupKeyBytes);
}

}  // namespace faultline::store
