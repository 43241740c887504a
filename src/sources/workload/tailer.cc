#include "sources/workload/tailer.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "parse/text.h"

namespace faultline {

std::string FormatTailPosition(const TailPosition& p) {
  return std::to_string(p.inode) + ":" + std::to_string(p.offset);
}

std::optional<TailPosition> ParseTailPosition(std::string_view s) {
  const size_t colon = s.find(':');
  if (colon == std::string_view::npos) return std::nullopt;
  auto inode = ParseInt(s.substr(0, colon));
  auto offset = ParseInt(s.substr(colon + 1));
  if (!inode || !offset || *inode < 0 || *offset < 0) return std::nullopt;
  return TailPosition{static_cast<uint64_t>(*inode), static_cast<uint64_t>(*offset)};
}

FileTailer::FileTailer(TailOptions options, TailPosition resume_from)
    : options_(std::move(options)), resume_(resume_from) {}

FileTailer::~FileTailer() { CloseFile(); }

void FileTailer::CloseFile() {
  if (fd_ >= 0) close(fd_);
  fd_ = -1;
  pending_.clear();
  skipping_ = false;
}

std::string FileTailer::PathToOpen() const {
  if (resume_.inode == 0 || options_.rotated_suffix.empty()) return options_.path;
  struct stat st {};
  if (stat(options_.path.c_str(), &st) == 0 && static_cast<uint64_t>(st.st_ino) == resume_.inode) {
    return options_.path;
  }
  const std::string rotated = options_.path + options_.rotated_suffix;
  if (stat(rotated.c_str(), &st) == 0 && static_cast<uint64_t>(st.st_ino) == resume_.inode) return rotated;
  return options_.path;
}

Status FileTailer::OpenFile(TailBatch& batch) {
  // Reading continues on the opened descriptor; Poll switches to options_.path once
  // it names another file, so opening the rotated file first needs nothing else.
  const int fd = open(PathToOpen().c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    return Status(err == ENOENT   ? StatusCode::kNotFound
                  : err == EACCES ? StatusCode::kPermissionDenied
                                  : StatusCode::kIoError,
                  "workload tail: " + options_.path + ": " + std::strerror(err));
  }
  struct stat st {};
  fstat(fd, &st);
  const auto inode = static_cast<uint64_t>(st.st_ino);
  const bool resume = resume_.inode == inode && static_cast<uint64_t>(st.st_size) >= resume_.offset;
  batch.rotated = inode_ != 0 && inode != inode_;
  fd_ = fd;
  inode_ = inode;
  offset_ = read_pos_ = resume ? resume_.offset : 0;
  resume_ = {};  // only the first open resumes
  return Status::Ok();
}

void FileTailer::TakeLines(const char* data, size_t n, TailBatch& batch) {
  size_t start = 0;
  while (start < n) {
    const auto* nl = static_cast<const char*>(std::memchr(data + start, '\n', n - start));
    const size_t end = nl ? static_cast<size_t>(nl - data) : n;
    if (!skipping_) pending_.append(data + start, end - start);
    if (!skipping_ && pending_.size() > options_.max_line_bytes) {
      skipping_ = true;
      pending_.clear();
    }
    if (nl == nullptr) break;
    if (skipping_) {
      ++batch.oversized_lines;
    } else {
      if (!pending_.empty() && pending_.back() == '\r') pending_.pop_back();
      if (!pending_.empty()) batch.lines.push_back(std::move(pending_));
    }
    pending_.clear();
    skipping_ = false;
    start = end + 1;
    offset_ = read_pos_ + start;
  }
  read_pos_ += n;
}

Status FileTailer::ReadAvailable(TailBatch& batch) {
  struct stat st {};
  if (fstat(fd_, &st) == 0 && static_cast<uint64_t>(st.st_size) < read_pos_) {
    batch.truncated = true;
    pending_.clear();
    skipping_ = false;
    offset_ = read_pos_ = 0;
  }
  std::string buf(options_.read_chunk_bytes, '\0');
  while (batch.lines.size() < options_.max_lines_per_poll) {
    const ssize_t n = pread(fd_, buf.data(), buf.size(), static_cast<off_t>(read_pos_));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0)
      return Status(StatusCode::kIoError, "workload tail: read " + options_.path + ": " + std::strerror(errno));
    if (n == 0) break;
    TakeLines(buf.data(), static_cast<size_t>(n), batch);
  }
  return Status::Ok();
}

bool FileTailer::PathNamesAnotherFile() const {
  struct stat st {};
  return stat(options_.path.c_str(), &st) == 0 && static_cast<uint64_t>(st.st_ino) != inode_;
}

Result<TailBatch> FileTailer::Poll() {
  TailBatch batch;
  if (fd_ < 0) {
    if (auto s = OpenFile(batch); !s.ok()) return s;
  }
  if (auto s = ReadAvailable(batch); !s.ok()) return s;
  // Rotated: the old file is complete (read to its end above), its unterminated last
  // line is final; continue with the new file from its start.
  if (batch.lines.size() < options_.max_lines_per_poll && PathNamesAnotherFile()) {
    if (!skipping_ && !pending_.empty()) batch.lines.push_back(std::move(pending_));
    CloseFile();
    if (auto s = OpenFile(batch); s.ok()) {
      batch.rotated = true;
      if (auto r = ReadAvailable(batch); !r.ok()) return r;
    }
  }
  batch.more = batch.lines.size() >= options_.max_lines_per_poll;
  batch.position = position();
  return batch;
}

}  // namespace faultline
