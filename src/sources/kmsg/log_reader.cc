#include "sources/kmsg/log_reader.h"

#include <hs.h>
#include <zlib.h>
#if defined(__SSE2__)
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
    "NVRM",    "SXid",           "AER",       "PCIe Bus Error", "error status/mask",
    ":    [",  // AER error-bit lines: "<dev>:    [ 0] RxErr"
    "mce: ",   "EDAC ",          "mlx5_core", "soft lockup",    "blocked for more than", "segfault at",
    "traps: ", "Killed process",
};

// Newline count at memory speed: std::count is not vectorized at -O2, and counting lines
// is the only work every byte of a benign log needs.
uint64_t CountNewlines(std::string_view data) {
  const char* p = data.data();
  size_t n = data.size();
  uint64_t lines = 0;
#if defined(__SSE2__)
  const __m128i nl = _mm_set1_epi8('\n');
  for (; n >= 16; p += 16, n -= 16) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    lines += static_cast<uint64_t>(__builtin_popcount(static_cast<unsigned>(_mm_movemask_epi8(_mm_cmpeq_epi8(v, nl)))));
  }
#endif
  for (; n > 0; ++p, --n) lines += *p == '\n';
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
      deduper_(options_.dedup_window_ns) {}

KernelLogReader::~KernelLogReader() = default;

Result<std::unique_ptr<KernelLogReader>> KernelLogReader::Create(KernelLogOptions options) {
  if (options.reference_ns == 0) options.reference_ns = SystemClock().NowNs();
  if (options.max_line_bytes == 0 || options.chunk_bytes < 4096) {
    return Status(StatusCode::kInvalidArgument, "max_line_bytes must be > 0 and chunk_bytes >= 4096");
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

void KernelLogReader::ScanComplete(std::string_view data) {
  stats_.lines += CountNewlines(data);
  CountBinaryLines(data);
  if (data.size() > options_.max_line_bytes) CountLongLines(data);
  // One pass reports every trigger hit (end offsets, in order); each distinct line that
  // holds a hit is handled once, in input order.
  candidates_.clear();
  hs_scan(hs_->db, data.data(), static_cast<unsigned int>(std::min<size_t>(data.size(), UINT32_MAX)), 0, hs_->scratch,
          OnMatch, &candidates_);
  std::sort(candidates_.begin(), candidates_.end());
  size_t handled_end = 0;  // offset just past the last handled line
  for (size_t hit : candidates_) {
    if (hit <= handled_end) continue;  // inside a line already handled
    const size_t last_byte = hit - 1;  // hits are end offsets; the match's last byte is in the line
    const size_t nl = data.rfind('\n', last_byte);
    const size_t start = nl == std::string_view::npos ? 0 : nl + 1;
    size_t end = data.find('\n', last_byte);
    if (end == std::string_view::npos) end = data.size();
    HandleLine(data.substr(start, end - start));
    handled_end = end + 1;
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
  stats_.folded_duplicates = deduper_.folded();
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
