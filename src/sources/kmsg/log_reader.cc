#include "sources/kmsg/log_reader.h"

#include <hs.h>
#include <zlib.h>
#if defined(__SSE2__) && defined(__x86_64__)
#include <emmintrin.h>
#endif

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "core/clock.h"
#include "parse/log_line.h"

namespace faultline {
namespace {

// Every kernel message the classifier recognizes contains one of these. Keep in step with
// parse/kernel_line.cc; tests check that each classified sample passes the prefilter.
constexpr std::string_view kTriggers[] = {
    "NVRM",
    "amdgpu",  // amdgpu RAS/reset/ring lines, both print forms (parse/amdgpu_line.h)
    "SXid",
    "AER",
    "PCIe Bus Error",
    "error status/mask",
    "DPC: ",
    "pciehp: ",
    ":    [",  // AER error-bit lines: "<dev>:    [ 0] RxErr"
    "mce: ",
    "[Hardware Error]",  // firmware-first (GHES) records: "{3}[Hardware Error]: ..."
    "EDAC ",
    "mlx5_core",
    "soft lockup",
    "blocked for more than",
    "segfault at",
    "traps: ",
    "Killed process",
    "fallen off the bus",
};

// Newline count at memory speed, noting whether any NUL byte is present on the way:
// counting lines is the only work every byte of a benign log needs, so the check for
// binary data rides along instead of taking a second pass. std::count is not vectorized
// at -O2; byte counters (0 - (-1) per match) are summed with SAD every 255 blocks, so no
// popcount (a libgcc call per block without -mpopcnt).
uint64_t CountNewlines(std::string_view data, bool& has_nul) {
  const char* p = data.data();
  size_t n = data.size();
  uint64_t lines = 0;
  has_nul = false;
#if defined(__SSE2__) && defined(__x86_64__)
  const __m128i nl = _mm_set1_epi8('\n');
  const __m128i zero = _mm_setzero_si128();
  __m128i nuls = zero;
  while (n >= 16) {
    __m128i acc = zero;
    for (int i = 0; i < 255 && n >= 16; ++i, p += 16, n -= 16) {
      const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
      acc = _mm_sub_epi8(acc, _mm_cmpeq_epi8(v, nl));
      nuls = _mm_or_si128(nuls, _mm_cmpeq_epi8(v, zero));
    }
    const __m128i sums = _mm_sad_epu8(acc, zero);
    lines += static_cast<uint64_t>(_mm_cvtsi128_si64(sums)) +
             static_cast<uint64_t>(_mm_cvtsi128_si64(_mm_unpackhi_epi64(sums, sums)));
  }
  has_nul = _mm_movemask_epi8(nuls) != 0;
#endif
  for (; n > 0; ++p, --n) {
    lines += *p == '\n';
    has_nul |= *p == '\0';
  }
  return lines;
}

int OnMatch(unsigned int /*id*/, unsigned long long /*from*/, unsigned long long to, unsigned int /*flags*/,
            void* ctx) {
  static_cast<std::vector<size_t>*>(ctx)->push_back(static_cast<size_t>(to));
  return 0;
}

}  // namespace

struct KernelLogReader::Hyperscan {
  hs_database_t* db = nullptr;
  hs_scratch_t* scratch = nullptr;
  ~Hyperscan() {
    if (scratch) hs_free_scratch(scratch);
    if (db) hs_free_database(db);
  }
};

KernelLogReader::KernelLogReader(KernelLogOptions options)
    : options_(std::move(options)),
      assembler_(KernelEventsOptions{options_.node, options_.boot_time_ns}),
      deduper_(DedupOptions{options_.dedup_window_ns, options_.max_variants, options_.max_observations}) {}

KernelLogReader::~KernelLogReader() = default;

Result<std::unique_ptr<KernelLogReader>> KernelLogReader::Create(KernelLogOptions options) {
  if (options.reference_ns == 0) options.reference_ns = SystemClock().NowNs();
  if (options.max_line_bytes == 0 || options.chunk_bytes < 4096 || options.max_variants == 0) {
    return Status(StatusCode::kInvalidArgument, "max_line_bytes and max_variants must be > 0 and chunk_bytes >= 4096");
  }
  std::unique_ptr<KernelLogReader> reader(new KernelLogReader(std::move(options)));
  // Pure literals: Hyperscan's literal matcher, no regex engine needed.
  constexpr size_t n = std::size(kTriggers);
  std::vector<const char*> lits(n);
  std::vector<size_t> lens(n);
  std::vector<unsigned int> flags(n, 0), ids(n);
  for (size_t i = 0; i < n; ++i) {
    lits[i] = kTriggers[i].data();
    lens[i] = kTriggers[i].size();
    ids[i] = static_cast<unsigned int>(i);
  }
  hs_compile_error_t* err = nullptr;
  auto hs = std::make_unique<Hyperscan>();
  if (hs_compile_lit_multi(lits.data(), flags.data(), ids.data(), lens.data(), static_cast<unsigned int>(n),
                           HS_MODE_BLOCK, nullptr, &hs->db, &err) != HS_SUCCESS) {
    std::string msg = err ? err->message : "unknown";
    hs_free_compile_error(err);
    return Status(StatusCode::kInternal, "hyperscan compile failed: " + msg);
  }
  if (hs_alloc_scratch(hs->db, &hs->scratch) != HS_SUCCESS) {
    return Status(StatusCode::kInternal, "hyperscan scratch allocation failed");
  }
  reader->hs_ = std::move(hs);
  return reader;
}

void KernelLogReader::CountBinaryLines(std::string_view data) {
  const char* p = data.data();
  const char* end = p + data.size();
  while ((p = static_cast<const char*>(std::memchr(p, '\0', static_cast<size_t>(end - p)))) != nullptr) {
    ++stats_.binary_lines;
    const char* nl = static_cast<const char*>(std::memchr(p, '\n', static_cast<size_t>(end - p)));
    if (!nl) break;
    p = nl + 1;
  }
}

void KernelLogReader::CountLongLines(std::string_view data) {
  // Any line longer than the limit L fully covers some aligned block of L/2 bytes, so only
  // blocks without a newline need a closer look: one memchr per block, not per line.
  const size_t block = std::max<size_t>(options_.max_line_bytes / 2, 1);
  size_t off = 0;
  while (off + block <= data.size()) {
    if (std::memchr(data.data() + off, '\n', block) != nullptr) {
      off += block;
      continue;
    }
    const size_t nl = off == 0 ? std::string_view::npos : data.rfind('\n', off - 1);
    const size_t start = nl == std::string_view::npos ? 0 : nl + 1;
    size_t end = data.find('\n', off + block);
    if (end == std::string_view::npos) end = data.size();
    if (end - start > options_.max_line_bytes) ++stats_.truncated_lines;
    off = end + 1;
  }
}

void KernelLogReader::HandleLine(std::string_view line) {
  ++stats_.candidate_lines;
  if (line.size() > options_.max_line_bytes) line = line.substr(0, options_.max_line_bytes);
  LogLine parsed = ParseLogLine(line, options_.reference_ns);
  if (stats_.host.empty() && !parsed.host.empty()) stats_.host = std::string(parsed.host);
  scratch_.clear();
  if (assembler_.Feed(parsed, line, scratch_)) ++stats_.classified_lines;
  for (Observation& o : scratch_) deduper_.Add(std::move(o));
}

bool KernelLogReader::IsContinuation(std::string_view line) const {
  if (line.empty()) return false;
  if (line[0] == ' ' || line[0] == '\t') return true;
  return ParseLogLine(line.substr(0, std::min(line.size(), options_.max_line_bytes)), options_.reference_ns).indented;
}

// Handles the indented lines starting at `from`; returns the offset past the last one.
size_t KernelLogReader::HandleContinuations(std::string_view data, size_t from) {
  continuation_open_ = false;
  while (from < data.size()) {
    size_t end = data.find('\n', from);
    if (end == std::string_view::npos) end = data.size();
    const std::string_view line = data.substr(from, end - from);
    if (!IsContinuation(line)) return from;
    HandleLine(line);
    from = end + 1;
  }
  continuation_open_ = true;  // the next block may go on with this message
  return from;
}

void KernelLogReader::ScanComplete(std::string_view data) {
  bool has_nul = false;
  stats_.lines += CountNewlines(data, has_nul);
  if (has_nul) CountBinaryLines(data);
  if (data.size() > options_.max_line_bytes) CountLongLines(data);
  size_t handled_end = continuation_open_ ? HandleContinuations(data, 0) : 0;  // past the last handled line
  // One pass reports every trigger hit (end offsets, in order); each distinct line that
  // holds a hit is handled once, in input order, then the indented lines that follow it.
  candidates_.clear();
  hs_scan(hs_->db, data.data(), static_cast<unsigned int>(std::min<size_t>(data.size(), UINT32_MAX)), 0, hs_->scratch,
          OnMatch, &candidates_);
  std::sort(candidates_.begin(), candidates_.end());
  for (size_t hit : candidates_) {
    if (hit <= handled_end) continue;  // inside a line already handled
    const size_t last_byte = hit - 1;  // hits are end offsets; the match's last byte is in the line
    const size_t nl = data.rfind('\n', last_byte);
    const size_t start = nl == std::string_view::npos ? 0 : nl + 1;
    size_t end = data.find('\n', last_byte);
    if (end == std::string_view::npos) end = data.size();
    HandleLine(data.substr(start, end - start));
    handled_end = HandleContinuations(data, end + 1);
  }
}

void KernelLogReader::Feed(std::string_view data) {
  stats_.bytes += data.size();
  while (!data.empty()) {
    if (cutting_long_line_) {
      size_t nl = data.find('\n');
      if (nl == std::string_view::npos) return;
      data.remove_prefix(nl + 1);
      cutting_long_line_ = false;
      ++stats_.lines;
      ++stats_.truncated_lines;
      continue;
    }
    const size_t last_nl = data.rfind('\n');
    if (last_nl == std::string_view::npos) {
      carry_.append(data);
      if (carry_.size() > options_.max_line_bytes) {
        // Keep the head of an over-long line for classification; drop the rest of it.
        HandleLine(std::string_view(carry_).substr(0, options_.max_line_bytes));
        carry_.clear();
        cutting_long_line_ = true;
      }
      return;
    }
    if (!carry_.empty()) {
      const size_t first_nl = data.find('\n');
      carry_.append(data.substr(0, first_nl + 1));
      data.remove_prefix(first_nl + 1);
      ScanComplete(carry_);
      carry_.clear();
      continue;
    }
    ScanComplete(data.substr(0, last_nl + 1));
    data.remove_prefix(last_nl + 1);
  }
}

void KernelLogReader::Finish() {
  if (!carry_.empty()) {
    carry_.push_back('\n');  // a truncated last line is still a line
    ScanComplete(carry_);
    carry_.clear();
  }
  cutting_long_line_ = false;
  scratch_.clear();
  assembler_.Finish(scratch_);
  for (Observation& o : scratch_) deduper_.Add(std::move(o));
  continuation_open_ = false;
  stats_.folded_duplicates = deduper_.folded();
  stats_.aggregated = deduper_.aggregated();
  stats_.dropped = deduper_.dropped();
}

std::vector<Observation> KernelLogReader::TakeObservations() { return deduper_.Take(); }

Status KernelLogReader::ReadFile(const std::string& path) {
  gzFile gz = nullptr;
  if (path == "-") {
    gz = gzdopen(dup(0), "rb");
  } else {
    errno = 0;
    gz = gzopen(path.c_str(), "rb");  // reads plain files transparently too
  }
  if (!gz) {
    const int e = errno;
    StatusCode code = e == ENOENT   ? StatusCode::kNotFound
                      : e == EACCES ? StatusCode::kPermissionDenied
                                    : StatusCode::kIoError;
    return Status(code, "cannot open " + path + (e ? std::string(": ") + std::strerror(e) : ""));
  }
  gzbuffer(gz, 256 * 1024);
  std::string buf(options_.chunk_bytes, '\0');
  Status status;
  for (;;) {
    const int n = gzread(gz, buf.data(), static_cast<unsigned int>(buf.size()));
    if (n > 0) Feed(std::string_view(buf.data(), static_cast<size_t>(n)));
    if (n == static_cast<int>(buf.size())) continue;
    int errnum = Z_OK;
    const char* msg = gzerror(gz, &errnum);
    if (n < 0 || errnum != Z_OK) {
      // A damaged or truncated gzip stream (Z_BUF_ERROR = unexpected end): keep what
      // was read and say where it stopped.
      const std::string why = msg && *msg ? msg : "read error";
      stats_.warnings.push_back(path + ": read stopped early after " + std::to_string(stats_.bytes) + " bytes: " + why);
      if (stats_.bytes == 0) status = Status(StatusCode::kIoError, path + ": " + why);
    }
    break;
  }
  gzclose(gz);
  Finish();
  return status;
}

}  // namespace faultline
