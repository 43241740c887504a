#include "fleet/wire.h"

#include <algorithm>
#include <array>
#include <bit>
#include <charconv>
#include <cstring>
#include <exception>
#include <unordered_map>

#include "store/records.h"

namespace faultline::fleet {
namespace {

// The observation line's fields, in order (docs/fleet.md "Wire format").
enum Field : size_t {
  kId,
  kTime,
  kMono,
  kSeq,
  kNode,
  kLayer,
  kCompType,
  kCompName,
  kCompKeys,
  kKind,
  kValue,
  kCode,
  kText,
  kSource,
  kRaw,
  kAttrs,
  kCount,
  kFieldCount,
};

// Inside a map field: entries are separated by RS, a key from its value by US. Both are
// control characters, which string escaping never leaves bare, so no string can forge them.
constexpr char kEntrySep = '\x1e';
constexpr char kKeySep = '\x1f';

constexpr int kMaxJsonDepth = 32;

// Appends or only counts, so EncodedSize measures exactly what Encode writes.
struct Appender {
  std::string& out;
  void Put(char c) { out.push_back(c); }
  void Put(std::string_view s) { out.append(s); }
};
struct Counter {
  size_t n = 0;
  void Put(char) { ++n; }
  void Put(std::string_view s) { n += s.size(); }
};

constexpr char kHex[] = "0123456789abcdef";

// Backslash-escapes '\\' and every control character, so tabs, newlines and the map
// separators inside strings never split a line or a field. Other bytes (UTF-8) pass as-is.
template <typename Out>
void PutEscaped(Out& out, std::string_view s) {
  size_t start = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c != '\\') continue;
    out.Put(s.substr(start, i - start));
    out.Put('\\');
    switch (c) {
      case '\\':
        out.Put('\\');
        break;
      case '\t':
        out.Put('t');
        break;
      case '\n':
        out.Put('n');
        break;
      case '\r':
        out.Put('r');
        break;
      default:
        out.Put('x');
        out.Put(kHex[c >> 4]);
        out.Put(kHex[c & 15]);
    }
    start = i + 1;
  }
  out.Put(s.substr(start));
}

template <typename Out, typename T>
void PutNumber(Out& out, T v) {
  std::array<char, 40> buf;
  auto [end, ec] = std::to_chars(buf.data(), buf.data() + buf.size(), v);
  out.Put(std::string_view(buf.data(), ec == std::errc() ? static_cast<size_t>(end - buf.data()) : 0));
}

template <typename Out>
void PutMap(Out& out, const std::map<std::string, std::string>& m) {
  bool first = true;
  for (const auto& [k, v] : m) {
    if (!first) out.Put(kEntrySep);
    first = false;
    PutEscaped(out, k);
    out.Put(kKeySep);
    PutEscaped(out, v);
  }
}

template <typename Out>
void PutObservationLine(Out& out, const Observation& o, int64_t id) {
  PutNumber(out, id);
  out.Put('\t');
  PutNumber(out, o.time_ns);
  out.Put('\t');
  if (o.mono_us) PutNumber(out, *o.mono_us);
  out.Put('\t');
  if (o.seq) PutNumber(out, *o.seq);
  out.Put('\t');
  PutEscaped(out, o.node);
  out.Put('\t');
  out.Put(ToString(o.layer));
  out.Put('\t');
  out.Put(ToString(o.component.type));
  out.Put('\t');
  PutEscaped(out, o.component.name);
  out.Put('\t');
  PutMap(out, o.component.keys);
  out.Put('\t');
  out.Put(ToString(o.kind));
  out.Put('\t');
  if (o.value) PutNumber(out, *o.value);
  out.Put('\t');
  if (o.code) PutNumber(out, *o.code);
  out.Put('\t');
  PutEscaped(out, o.text);
  out.Put('\t');
  out.Put(ToString(o.source));
  out.Put('\t');
  PutEscaped(out, o.raw);
  out.Put('\t');
  PutMap(out, o.attrs);
  out.Put('\t');
  PutNumber(out, o.count);
  out.Put('\n');
}

// Name -> enum tables built once from the core's own lists (immutable after first use), so
// decoding an enum is one hash look-up rather than the core's linear scan.
template <typename E>
using NameMap = std::unordered_map<std::string_view, E>;

template <typename E, typename List>
NameMap<E> BuildNames(const List& values) {
  NameMap<E> m;
  for (E v : values) m.emplace(ToString(v), v);
  return m;
}

template <typename E>
std::vector<E> Range(E last) {
  std::vector<E> v;
  for (int i = 0; i <= static_cast<int>(last); ++i) v.push_back(static_cast<E>(i));
  return v;
}

const NameMap<ObsKind>& KindNames() {
  static const NameMap<ObsKind> m = BuildNames<ObsKind>(AllObsKinds());
  return m;
}
const NameMap<Layer>& LayerNames() {
  static const NameMap<Layer> m = BuildNames<Layer>(Range(Layer::kWorkload));
  return m;
}
const NameMap<Source>& SourceNames() {
  static const NameMap<Source> m = BuildNames<Source>(Range(Source::kAmdSmi));
  return m;
}
const NameMap<ComponentType>& TypeNames() {
  static const NameMap<ComponentType> m = BuildNames<ComponentType>(Range(ComponentType::kHost));
  return m;
}

// Why a line was refused; the caller prefixes the line number.
struct LineError {
  StatusCode code = StatusCode::kOk;
  std::string what;
};

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Reverses PutEscaped. `plain`: the caller's scan saw no backslash and no control byte,
// so the bytes are the string. Otherwise false on a dangling or unknown escape, or a bare
// control character (a writer that forgot to escape).
bool Unescape(std::string_view s, bool plain, std::string& out) {
  if (plain) {
    out.assign(s);
    return true;
  }
  out.clear();
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (static_cast<unsigned char>(c) < 0x20) return false;
    if (c != '\\') {
      out.push_back(c);
      continue;
    }
    if (++i >= s.size()) return false;
    switch (s[i]) {
      case '\\':
        out.push_back('\\');
        break;
      case 't':
        out.push_back('\t');
        break;
      case 'n':
        out.push_back('\n');
        break;
      case 'r':
        out.push_back('\r');
        break;
      case 'x': {
        if (i + 2 >= s.size()) return false;
        const int hi = HexDigit(s[i + 1]), lo = HexDigit(s[i + 2]);
        if (hi < 0 || lo < 0) return false;
        out.push_back(static_cast<char>(hi * 16 + lo));
        i += 2;
        break;
      }
      default:
        return false;
    }
  }
  return true;
}

// A byte the fast paths let through: printable and not an escape.
inline bool PlainByte(char c) { return static_cast<unsigned char>(c) >= 0x20 && c != '\\'; }

// The first byte in [p, end) that is not plain (a field, line or map separator, an escape,
// or a bare control byte), or `end`. Lines are mostly plain text, so it looks at eight
// bytes at a time: in each 64-bit word, a byte below 0x20 or equal to '\\' sets the top
// bit of its mask byte, and the lowest set bit is always a true hit (borrows run upwards
// only), so on a little-endian machine it names the byte itself.
inline const char* NextSpecial(const char* p, const char* end) {
  if constexpr (std::endian::native == std::endian::little) {
    constexpr uint64_t kOnes = 0x0101010101010101ULL, kHigh = 0x8080808080808080ULL;
    while (end - p >= 8) {
      uint64_t w;
      std::memcpy(&w, p, sizeof w);
      const uint64_t bs = w ^ (kOnes * '\\');
      const uint64_t mask = ((w - kOnes * 0x20) & ~w & kHigh) | ((bs - kOnes) & ~bs & kHigh);
      if (mask != 0) return p + std::countr_zero(mask) / 8;
      p += 8;
    }
  }
  while (p < end && PlainByte(*p)) ++p;
  return p;
}

// Exact, unlike NextSpecial's mask: the top bit of each byte of the result is set when
// that byte of `w` is below 0x20 or a backslash, and only then (no borrow or carry crosses
// a byte: each sum stays within its byte), so every special byte of a word can be taken.
inline uint64_t SpecialMask(uint64_t w) {
  constexpr uint64_t kOnes = 0x0101010101010101ULL, kLow7 = 0x7f7f7f7f7f7f7f7fULL, kHigh = 0x8080808080808080ULL;
  const uint64_t at_least_20 = ((w & kLow7) + kOnes * 0x60) | w;  // top bit: byte >= 0x20
  const uint64_t x = w ^ (kOnes * '\\');
  const uint64_t not_backslash = ((x & kLow7) + kLow7) | x;  // top bit: byte != '\\'
  return ~(at_least_20 & not_backslash) & kHigh;
}

template <typename T>
bool ParseNumber(std::string_view s, T& out) {
  if (s.empty()) return false;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && end == s.data() + s.size();
}

template <typename T>
bool ParseOptional(std::string_view s, std::optional<T>& out) {
  if (s.empty()) {
    out.reset();
    return true;
  }
  T v{};
  if (!ParseNumber(s, v)) return false;
  out = v;
  return true;
}

bool Corrupt(LineError& err, const char* what) {
  err = {StatusCode::kCorrupt, what};
  return false;
}

bool OverLimit(LineError& err, const char* what) {
  err = {StatusCode::kInvalidArgument, std::string(what) + " over the field limit"};
  return false;
}

using StringMap = std::map<std::string, std::string>;

// Map nodes taken from the maps an envelope held before and given to the ones it decodes
// next: decoding into a reused Envelope (DecodeInto) then allocates no map node and, as
// the strings keep their capacity, seldom a string.
class NodePool {
 public:
  void Take(StringMap& m) {
    while (!m.empty()) nodes_.push_back(m.extract(m.begin()));
  }
  StringMap::node_type Get() {
    if (nodes_.empty()) {
      StringMap one;
      one.emplace();
      return one.extract(one.begin());
    }
    StringMap::node_type n = std::move(nodes_.back());
    nodes_.pop_back();
    return n;
  }
  void Put(StringMap::node_type n) { nodes_.push_back(std::move(n)); }

 private:
  std::vector<StringMap::node_type> nodes_;
};

// One pass over a map field: pieces end at the key or entry separator. Entries are
// written in key order, so each goes in at the end; a repeated key keeps the first value.
bool ParseMap(std::string_view s, size_t max_field, StringMap& out, NodePool& pool, LineError& err) {
  pool.Take(out);
  if (s.empty()) return true;
  StringMap::node_type entry = pool.Get();
  bool have_key = false, plain = true;
  const char* start = s.data();
  const char* const end = s.data() + s.size();
  for (const char* p = NextSpecial(start, end);; p = NextSpecial(p, end)) {
    if (p < end && *p != kKeySep && *p != kEntrySep) {
      plain = false;  // an escape or a control byte: Unescape decides
      ++p;
      continue;
    }
    const std::string_view piece(start, static_cast<size_t>(p - start));
    const bool key_end = p < end && *p == kKeySep;
    if (key_end == have_key) {
      pool.Put(std::move(entry));
      return Corrupt(err, "malformed map entry");
    }
    std::string& into = key_end ? entry.key() : entry.mapped();
    const bool unescaped = Unescape(piece, plain, into);
    if (!unescaped || into.size() > max_field) {
      pool.Put(std::move(entry));
      return unescaped ? OverLimit(err, "map entry") : Corrupt(err, "malformed map entry");
    }
    if (key_end) {
      have_key = true;
    } else {
      // Entries come in key order: appending at the end is the common case.
      out.insert(out.end(), std::move(entry));
      if (!entry.empty()) pool.Put(std::move(entry));  // a repeated key: the first one stays
      entry = p == end ? StringMap::node_type() : pool.Get();
      have_key = false;
    }
    if (p == end) {
      if (!entry.empty()) pool.Put(std::move(entry));
      return true;
    }
    start = ++p;
    plain = true;
  }
}

bool ParseString(std::string_view s, bool plain, size_t max_field, std::string& out, const char* name, LineError& err) {
  if (s.size() > max_field * 4 + 4) return OverLimit(err, name);  // escapes at most quadruple a byte ("\xHH")
  if (!Unescape(s, plain, out)) {
    err = {StatusCode::kCorrupt, std::string(name) + ": bad escape or control character"};
    return false;
  }
  if (out.size() > max_field) return OverLimit(err, name);
  return true;
}

// Equality of two short names, inline: a library memcmp call costs more than the compare.
inline bool SameName(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i] != b[i]) return false;
  }
  return true;
}

// The last few names looked up for one enum field: a batch repeats the same few names
// (a GPU's clock, power, temperature, ...), so most look-ups are a comparison or two
// instead of a hash.
template <typename E>
struct EnumCache {
  static constexpr size_t kSlots = 8;
  const NameMap<E>& names;
  std::array<std::pair<std::string_view, E>, kSlots> recent{};
  size_t next = 0;
  bool Find(std::string_view s, E& out) {
    for (const auto& [name, value] : recent) {
      if (!name.empty() && SameName(name, s)) {
        out = value;
        return true;
      }
    }
    auto it = names.find(s);
    if (it == names.end()) return false;
    recent[next] = {it->first, it->second};  // it->first points at the core's static name table
    next = (next + 1) % kSlots;
    out = it->second;
    return true;
  }
};

// Parses the lines of one batch; holds the enum caches between lines.
class LineParser {
 public:
  explicit LineParser(size_t max_field) : max_field_(max_field) {}

  // One pass over the line at the start of `rest`, up to its newline: its fields, and for
  // each whether it holds no escape and no control byte. False when `rest` has no newline;
  // else `line_bytes` is the line's length without the newline.
  bool Split(std::string_view rest, size_t& line_bytes) {
    n_ = 0;
    const char* const begin = rest.data();
    const char* const end = begin + rest.size();
    start_ = begin;
    plain_now_ = true;
    // Eight bytes at a time, every special byte of the word taken from its exact mask (a
    // line's fields are short: a tab every few bytes, so taking them word by word beats
    // restarting the scan after each).
    for (const char* p = begin; p < end;) {
      const size_t width = std::min<size_t>(8, static_cast<size_t>(end - p));
      uint64_t mask = 0;
      if constexpr (std::endian::native == std::endian::little) {
        if (width == 8) {
          uint64_t w;
          std::memcpy(&w, p, sizeof w);
          mask = SpecialMask(w);
        } else {
          mask = SlowMask(p, width);
        }
      } else {
        mask = SlowMask(p, width);
      }
      for (; mask != 0; mask &= mask - 1) {
        const char* q = p + std::countr_zero(mask) / 8;
        if (Special(q, begin, line_bytes)) return true;
      }
      p += width;
    }
    return false;
  }

  // The line Split last found into `o` and its row id.
  bool Parse(Observation& o, int64_t& id, LineError& err) {
    if (n_ != kFieldCount) return Corrupt(err, n_ < kFieldCount ? "too few fields" : "too many fields");
    if (!ParseNumber(f_[kId], id)) return Corrupt(err, "bad row id");
    if (!ParseNumber(f_[kTime], o.time_ns)) return Corrupt(err, "bad time_ns");
    if (!ParseOptional(f_[kMono], o.mono_us)) return Corrupt(err, "bad mono_us");
    if (!ParseOptional(f_[kSeq], o.seq)) return Corrupt(err, "bad seq");
    if (!Str(kNode, o.node, "node", err)) return false;
    if (!layer_.Find(f_[kLayer], o.layer)) return Corrupt(err, "unknown layer");
    if (!type_.Find(f_[kCompType], o.component.type)) return Corrupt(err, "unknown component type");
    if (!Str(kCompName, o.component.name, "component name", err)) return false;
    if (!ParseMap(f_[kCompKeys], max_field_, o.component.keys, pool_, err)) return false;
    if (!kind_.Find(f_[kKind], o.kind)) return Corrupt(err, "unknown kind");
    if (!ParseOptional(f_[kValue], o.value)) return Corrupt(err, "bad value");
    if (!ParseOptional(f_[kCode], o.code)) return Corrupt(err, "bad code");
    if (!Str(kText, o.text, "text", err)) return false;
    if (!source_.Find(f_[kSource], o.source)) return Corrupt(err, "unknown source");
    if (!Str(kRaw, o.raw, "raw", err)) return false;
    if (!ParseMap(f_[kAttrs], max_field_, o.attrs, pool_, err)) return false;
    if (!ParseNumber(f_[kCount], o.count)) return Corrupt(err, "bad count");
    return true;
  }

 private:
  bool Str(Field field, std::string& out, const char* name, LineError& err) {
    return ParseString(f_[field], plain_[field], max_field_, out, name, err);
  }

  // Bit 8i+7 set for each of the `width` bytes at p that is not plain (byte order of the
  // word masks).
  static uint64_t SlowMask(const char* p, size_t width) {
    uint64_t mask = 0;
    for (size_t i = 0; i < width; ++i) {
      if (!PlainByte(p[i])) mask |= uint64_t{0x80} << (8 * i);
    }
    return mask;
  }

  // One special byte of the line at q: a field ends (tab), the line ends (newline: true,
  // with its length), or the field is not plain (an escape or a control byte).
  bool Special(const char* q, const char* begin, size_t& line_bytes) {
    if (*q != '\t' && *q != '\n') {
      plain_now_ = false;
      return false;
    }
    if (n_ < kFieldCount) {
      f_[n_] = std::string_view(start_, static_cast<size_t>(q - start_));
      plain_[n_] = plain_now_;
    }
    ++n_;  // counts on past kFieldCount so Parse can tell too many from too few
    if (*q == '\n') {
      line_bytes = static_cast<size_t>(q - begin);
      return true;
    }
    start_ = q + 1;
    plain_now_ = true;
    return false;
  }

  size_t max_field_;
  std::array<std::string_view, kFieldCount> f_;
  std::array<bool, kFieldCount> plain_{};
  size_t n_ = 0;
  const char* start_ = nullptr;  // Split: where the current field began
  bool plain_now_ = true;        // Split: the current field has no special byte so far
  EnumCache<Layer> layer_{LayerNames()};
  EnumCache<ComponentType> type_{TypeNames()};
  EnumCache<ObsKind> kind_{KindNames()};
  EnumCache<Source> source_{SourceNames()};
  NodePool pool_;
};

// ---- header ----

// Printable ASCII without '"' or '\\': written into JSON as is.
bool JsonPlain(std::string_view s) {
  for (char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u >= 0x7f || c == '"' || c == '\\') return false;
  }
  return true;
}

// The header's JSON written directly, byte for byte what the JSON library writes for the
// same object (keys in its sorted order); only for strings that need no escaping.
std::string PlainHeader(const Envelope& e, size_t n) {
  std::string h;
  h.reserve(112 + e.place.site.size() + e.place.rack.size() + e.place.node.size() + e.msg_id.size());
  const auto str = [&h](std::string_view key, std::string_view v) {
    h.append(key);
    h.push_back('"');
    h.append(v);
    h.push_back('"');
  };
  str("{\"kind\":", ToString(e.kind));
  str(",\"msg_id\":", e.msg_id);
  h.append(",\"n\":");
  h.append(std::to_string(n));
  str(",\"node\":", e.place.node);
  str(",\"rack\":", e.place.rack);
  h.append(",\"row_id\":");
  h.append(std::to_string(e.row_id));
  h.append(",\"sent_ns\":");
  h.append(std::to_string(e.sent_ns));
  str(",\"site\":", e.place.site);
  h.append(",\"v\":");
  h.append(std::to_string(kWireVersion));
  h.push_back('}');
  return h;
}

std::string Header(const Envelope& e, size_t n) {
  if (JsonPlain(e.place.site) && JsonPlain(e.place.rack) && JsonPlain(e.place.node) && JsonPlain(e.msg_id)) {
    return PlainHeader(e, n);
  }
  Json h{{"v", kWireVersion},    {"kind", ToString(e.kind)}, {"site", e.place.site},
         {"rack", e.place.rack}, {"node", e.place.node},     {"msg_id", e.msg_id},
         {"sent_ns", e.sent_ns}, {"row_id", e.row_id},       {"n", n}};
  return h.dump(-1, ' ', false, Json::error_handler_t::replace);
}

// Every string in a parsed JSON value (keys too) within the field limit.
bool StringsWithin(const Json& j, size_t max_field) {
  if (j.is_string()) return j.get_ref<const std::string&>().size() <= max_field;
  if (j.is_object()) {
    for (const auto& [k, v] : j.items()) {
      if (k.size() > max_field || !StringsWithin(v, max_field)) return false;
    }
  } else if (j.is_array()) {
    for (const auto& v : j) {
      if (!StringsWithin(v, max_field)) return false;
    }
  }
  return true;
}

Result<Json> ParseJson(std::string_view text, const WireLimits& limits, const char* what) {
  if (JsonNestingDepth(text) > kMaxJsonDepth) {
    return Status(StatusCode::kInvalidArgument, std::string("fleet wire: ") + what + " nested too deeply");
  }
  Json j = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return Status(StatusCode::kCorrupt, std::string("fleet wire: ") + what + " is not JSON");
  if (!StringsWithin(j, limits.max_field_bytes)) {
    return Status(StatusCode::kInvalidArgument, std::string("fleet wire: ") + what + " has a string over the limit");
  }
  return j;
}

template <typename T>
bool HeaderField(const Json& h, const char* key, T& out) {
  auto it = h.find(key);
  if (it == h.end()) return false;
  if constexpr (std::is_same_v<T, std::string>) {
    if (!it->is_string()) return false;
  } else {
    if (!it->is_number_integer()) return false;
  }
  out = it->get<T>();
  return true;
}

// ---- fast header reader ----
//
// Nearly every header is exactly what Header() writes: one flat object of the nine keys,
// ASCII strings without escapes, plain integers. Parsing that with a general JSON parser
// (a DOM of nine nodes, a dozen allocations) costs more than decoding the handful of
// observations a typical publish carries, so it is read here directly. The reader only
// accepts a strict subset of JSON for which it yields exactly what the general path
// would; on anything else (escapes, non-ASCII, unknown, duplicate or missing keys, other
// value types, big or odd numbers, strings over the limit) it declines and the general
// JSON path decides, so what is accepted or refused, and why, is unchanged.

// The header's fields as read; strings point into the message.
struct HeaderFields {
  int64_t v = 0;
  std::string_view kind, site, rack, node, msg_id;
  int64_t sent_ns = 0, row_id = 0, n = 0;
};

class FastHeaderReader {
 public:
  FastHeaderReader(std::string_view text, size_t max_field)
      : p_(text.data()), end_(p_ + text.size()), max_field_(max_field) {}

  // True when `text` is a header of the canonical subset; `out` then holds every field.
  bool Read(HeaderFields& out) {
    SkipSpace();
    if (!Eat('{')) return false;
    unsigned seen = 0;
    for (;;) {
      SkipSpace();
      std::string_view key;
      if (!String(key)) return false;
      SkipSpace();
      if (!Eat(':')) return false;
      SkipSpace();
      const int slot = Slot(key);
      if (slot < 0 || (seen & (1u << slot)) != 0) return false;  // unknown or repeated key
      seen |= 1u << slot;
      if (!Value(slot, out)) return false;
      SkipSpace();
      if (Eat('}')) break;
      if (!Eat(',')) return false;
    }
    SkipSpace();
    return p_ == end_ && seen == (1u << kSlots) - 1;
  }

 private:
  static constexpr int kSlots = 9;
  static constexpr std::array<std::string_view, kSlots> kKeys{"v",      "kind",    "site",   "rack", "node",
                                                              "msg_id", "sent_ns", "row_id", "n"};
  static int Slot(std::string_view key) {
    for (int i = 0; i < kSlots; ++i) {
      if (kKeys[static_cast<size_t>(i)] == key) return i;
    }
    return -1;
  }

  bool Value(int slot, HeaderFields& out) {
    switch (slot) {
      case 0:
        return Integer(out.v);
      case 1:
        return String(out.kind);
      case 2:
        return String(out.site);
      case 3:
        return String(out.rack);
      case 4:
        return String(out.node);
      case 5:
        return String(out.msg_id);
      case 6:
        return Integer(out.sent_ns);
      case 7:
        return Integer(out.row_id);
      default:
        return Integer(out.n);
    }
  }

  void SkipSpace() {
    while (p_ < end_ && (*p_ == ' ' || *p_ == '\t' || *p_ == '\r' || *p_ == '\n')) ++p_;
  }
  bool Eat(char c) {
    if (p_ == end_ || *p_ != c) return false;
    ++p_;
    return true;
  }

  // A string of printable ASCII without escapes, within the field limit.
  bool String(std::string_view& out) {
    if (!Eat('"')) return false;
    const char* start = p_;
    while (p_ < end_ && *p_ != '"') {
      const auto c = static_cast<unsigned char>(*p_);
      if (c < 0x20 || c >= 0x7f || c == '\\') return false;
      ++p_;
    }
    if (p_ == end_) return false;
    out = std::string_view(start, static_cast<size_t>(p_ - start));
    ++p_;
    return out.size() <= max_field_;
  }

  // A JSON integer (no leading zeros, no fraction or exponent) that fits int64.
  bool Integer(int64_t& out) {
    const char* start = p_;
    if (p_ < end_ && *p_ == '-') ++p_;
    const char* digits = p_;
    while (p_ < end_ && *p_ >= '0' && *p_ <= '9') ++p_;
    const size_t n = static_cast<size_t>(p_ - digits);
    if (n == 0 || (n > 1 && *digits == '0')) return false;
    if (p_ < end_ && (*p_ == '.' || *p_ == 'e' || *p_ == 'E')) return false;
    auto [at, ec] = std::from_chars(start, p_, out);
    return ec == std::errc() && at == p_;
  }

  const char* p_;
  const char* end_;
  size_t max_field_;
};

// The checks common to both header paths, and the header into `e`.
Status ApplyHeader(const HeaderFields& h, uint64_t n, const WireLimits& limits, Envelope& e, uint64_t& n_out) {
  if (h.v != kWireVersion) {
    return Status(StatusCode::kUnsupported, "fleet wire: version " + std::to_string(h.v) + " not supported");
  }
  auto k = ParseRecordKind(h.kind);
  if (!k) return Status(StatusCode::kCorrupt, "fleet wire: unknown kind '" + std::string(h.kind) + "'");
  e.kind = *k;
  e.place.site.assign(h.site);
  e.place.rack.assign(h.rack);
  e.place.node.assign(h.node);
  e.msg_id.assign(h.msg_id);
  e.sent_ns = h.sent_ns;
  e.row_id = h.row_id;
  n_out = n;
  if (e.kind == RecordKind::kObservations && n > limits.max_observations) {
    return Status(StatusCode::kInvalidArgument, "fleet wire: " + std::to_string(n) + " observations over the limit");
  }
  return Status::Ok();
}

// The header into `e` (all but the payload) and the announced count.
Status ReadHeader(const Json& h, const WireLimits& limits, Envelope& e, uint64_t& n) {
  if (!h.is_object()) return Status(StatusCode::kCorrupt, "fleet wire: header is not an object");
  int64_t version = 0;
  if (!HeaderField(h, "v", version)) return Status(StatusCode::kCorrupt, "fleet wire: header lacks v");
  if (version != kWireVersion) {
    return Status(StatusCode::kUnsupported, "fleet wire: version " + std::to_string(version) + " not supported");
  }
  std::string kind;
  if (!HeaderField(h, "kind", kind)) return Status(StatusCode::kCorrupt, "fleet wire: header lacks kind");
  auto k = ParseRecordKind(kind);
  if (!k) return Status(StatusCode::kCorrupt, "fleet wire: unknown kind '" + kind + "'");
  e.kind = *k;
  if (!HeaderField(h, "site", e.place.site) || !HeaderField(h, "rack", e.place.rack) ||
      !HeaderField(h, "node", e.place.node) || !HeaderField(h, "msg_id", e.msg_id) ||
      !HeaderField(h, "sent_ns", e.sent_ns) || !HeaderField(h, "row_id", e.row_id) || !HeaderField(h, "n", n)) {
    return Status(StatusCode::kCorrupt, "fleet wire: header field missing or of the wrong type");
  }
  if (e.kind == RecordKind::kObservations && n > limits.max_observations) {
    return Status(StatusCode::kInvalidArgument, "fleet wire: " + std::to_string(n) + " observations over the limit");
  }
  return Status::Ok();
}

Status ReadObservations(std::string_view body, uint64_t n, const WireLimits& limits, Envelope& e) {
  // Every line has at least its tabs and newline: a short body is refused before `n`
  // observations are allocated for it.
  if (body.size() < n * kFieldCount) {
    return Status(StatusCode::kCorrupt, "fleet wire: truncated: " + std::to_string(n) + " observations announced");
  }
  // resize keeps the observations a reused envelope held: Parse overwrites every field,
  // reusing their strings' and maps' storage.
  e.observations.resize(n);
  e.observation_ids.resize(n);
  LineError err;
  LineParser parser(limits.max_field_bytes);
  for (uint64_t i = 0; i < n; ++i) {
    size_t at = 0;
    if (!parser.Split(body, at)) {
      return Status(StatusCode::kCorrupt, "fleet wire: truncated at observation " + std::to_string(i));
    }
    if (!parser.Parse(e.observations[i], e.observation_ids[i], err)) {
      return Status(err.code, "fleet wire: observation " + std::to_string(i) + ": " + err.what);
    }
    body.remove_prefix(at + 1);
  }
  if (!body.empty()) return Status(StatusCode::kCorrupt, "fleet wire: bytes after the last observation");
  return Status::Ok();
}

// The one record of a record envelope from its JSON body.
Status ReadRecord(std::string_view body, const WireLimits& limits, Envelope& e) {
  if (!body.empty() && body.back() == '\n') body.remove_suffix(1);
  auto j = ParseJson(body, limits, "record");
  if (!j.ok()) return j.status();
  if (j->is_null()) return Status(StatusCode::kCorrupt, "fleet wire: record missing");
  try {
    switch (e.kind) {
      case RecordKind::kFinding:
        e.finding = j->get<Finding>();
        break;
      case RecordKind::kDiagnosis:
        e.diagnosis = j->get<Diagnosis>();
        break;
      case RecordKind::kAction:
        e.action = j->get<ActionRecord>();
        break;
      case RecordKind::kFleetDiagnosis:
        e.fleet = j->get<FleetDiagnosis>();
        break;
      case RecordKind::kObservations:
        break;
    }
  } catch (const std::exception& ex) {
    return Status(StatusCode::kCorrupt, std::string("fleet wire: record: ") + ex.what());
  }
  return Status::Ok();
}

Json RecordJson(const Envelope& e) {
  switch (e.kind) {
    case RecordKind::kFinding:
      return e.finding ? Json(*e.finding) : Json();
    case RecordKind::kDiagnosis:
      return e.diagnosis ? Json(*e.diagnosis) : Json();
    case RecordKind::kAction:
      return e.action ? Json(*e.action) : Json();
    case RecordKind::kFleetDiagnosis:
      return e.fleet ? Json(*e.fleet) : Json();
    case RecordKind::kObservations:
      break;
  }
  return Json();
}

constexpr std::array<std::pair<RecordKind, std::string_view>, 5> kRecordKinds{{
    {RecordKind::kObservations, "obs"},
    {RecordKind::kFinding, "finding"},
    {RecordKind::kDiagnosis, "diagnosis"},
    {RecordKind::kAction, "action"},
    {RecordKind::kFleetDiagnosis, "fleet"},
}};

bool SafeSubjectChar(unsigned char c) { return c > 0x20 && c != 0x7f && c != '.' && c != '*' && c != '>'; }

}  // namespace

std::string_view ToString(RecordKind k) {
  for (const auto& [kind, name] : kRecordKinds) {
    if (kind == k) return name;
  }
  return "unknown";
}

std::optional<RecordKind> ParseRecordKind(std::string_view s) {
  for (const auto& [kind, name] : kRecordKinds) {
    if (name == s) return kind;
  }
  return std::nullopt;
}

void to_json(Json& j, const FleetDiagnosis& v) {
  j = Json{{"id", v.id},
           {"cause", v.cause},
           {"component", v.component},
           {"fault_class", ToString(v.fault_class)},
           {"action", ToString(v.action)},
           {"severity", ToString(v.severity)},
           {"confidence", v.confidence},
           {"first_ns", v.first_ns},
           {"last_ns", v.last_ns},
           {"nodes", v.nodes},
           {"linked", v.linked},
           {"job", v.job},
           {"summary", v.summary},
           {"evidence", v.evidence},
           {"node_diagnoses", v.node_diagnoses}};
}

void from_json(const Json& j, FleetDiagnosis& v) {
  auto name = [&](const char* key) { return j.at(key).get<std::string>(); };
  auto fault = ParseFaultClass(name("fault_class"));
  auto action = ParseAction(name("action"));
  auto severity = ParseSeverity(name("severity"));
  if (!fault || !action || !severity) throw std::invalid_argument("fleet diagnosis: unknown class, action or severity");
  v.fault_class = *fault;
  v.action = *action;
  v.severity = *severity;
  v.id = name("id");
  v.cause = j.value("cause", std::string());
  v.component = j.value("component", std::string());
  v.confidence = j.value("confidence", 0.0);
  if (auto it = j.find("first_ns"); it != j.end()) v.first_ns = JsonInt<int64_t>(*it);
  if (auto it = j.find("last_ns"); it != j.end()) v.last_ns = JsonInt<int64_t>(*it);
  v.nodes = j.value("nodes", std::vector<std::string>());
  v.linked = j.value("linked", std::vector<std::string>());
  v.job = j.value("job", std::string());
  v.summary = j.value("summary", std::string());
  v.evidence = j.value("evidence", std::vector<Evidence>());
  v.node_diagnoses = j.value("node_diagnoses", std::vector<Diagnosis>());
}

std::string SubjectToken(std::string_view s) {
  if (s.empty()) return "_";
  std::string out(s);
  for (char& c : out) {
    if (!SafeSubjectChar(static_cast<unsigned char>(c))) c = '_';
  }
  return out;
}

std::string Subject(const NodePlace& place, RecordKind kind) {
  std::string s = "faultline.";
  s += SubjectToken(place.site);
  s += '.';
  s += SubjectToken(place.rack);
  s += '.';
  s += SubjectToken(place.node);
  s += '.';
  s += ToString(kind);
  return s;
}

std::string MakeMsgId(std::string_view node, RecordKind kind, int64_t first_row_id, int64_t last_row_id) {
  std::string id(node);
  id += '/';
  id += ToString(kind);
  id += '/';
  id += std::to_string(first_row_id);
  if (last_row_id != first_row_id) {
    id += '-';
    id += std::to_string(last_row_id);
  }
  return id;
}

size_t EncodedSize(const Observation& obs, int64_t row_id) {
  Counter c;
  PutObservationLine(c, obs, row_id);
  return c.n;
}

std::string Encode(const Envelope& e) {
  const bool batch = e.kind == RecordKind::kObservations;
  std::string out = Header(e, batch ? e.observations.size() : 1);
  out.push_back('\n');
  if (!batch) {
    out += RecordJson(e).dump(-1, ' ', false, Json::error_handler_t::replace);
    out.push_back('\n');
    return out;
  }
  out.reserve(out.size() + e.observations.size() * 160);
  Appender a{out};
  for (size_t i = 0; i < e.observations.size(); ++i) {
    PutObservationLine(a, e.observations[i], i < e.observation_ids.size() ? e.observation_ids[i] : 0);
  }
  return out;
}

Result<Envelope> Decode(std::string_view bytes, const WireLimits& limits) {
  Envelope e;
  if (Status s = DecodeInto(bytes, e, limits); !s.ok()) return s;
  return e;
}

Status DecodeInto(std::string_view bytes, Envelope& e, const WireLimits& limits) {
  if (bytes.size() > limits.max_message_bytes) {
    return Status(StatusCode::kInvalidArgument,
                  "fleet wire: message of " + std::to_string(bytes.size()) + " bytes over the limit");
  }
  const size_t nl = bytes.find('\n');
  if (nl == std::string_view::npos) return Status(StatusCode::kCorrupt, "fleet wire: no header line");
  // What the header and body do not set must not survive from an earlier message.
  e.row_id = 0;
  e.finding.reset();
  e.diagnosis.reset();
  e.action.reset();
  e.fleet.reset();
  uint64_t n = 0;
  HeaderFields fields;
  if (FastHeaderReader(bytes.substr(0, nl), limits.max_field_bytes).Read(fields) && fields.n >= 0) {
    if (Status s = ApplyHeader(fields, static_cast<uint64_t>(fields.n), limits, e, n); !s.ok()) return s;
  } else {
    auto header = ParseJson(bytes.substr(0, nl), limits, "header");
    if (!header.ok()) return header.status();
    if (Status s = ReadHeader(*header, limits, e, n); !s.ok()) return s;
  }
  const std::string_view body = bytes.substr(nl + 1);
  if (e.kind != RecordKind::kObservations) {
    e.observations.clear();
    e.observation_ids.clear();
    return ReadRecord(body, limits, e);
  }
  return ReadObservations(body, n, limits, e);
}

}  // namespace faultline::fleet
