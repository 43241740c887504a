// Follows a growing text file line by line, like `tail -F`: survives rotation (the
// path now names a new file: the old one is read to its end first, then the new one
// from its start) and truncation (copytruncate: reading restarts at offset 0).
//
// Position: (inode, offset of the byte after the last complete line returned). Save
// it with the observations made from those lines (store cursor) and pass it back at
// construction after a restart: the same inode resumes at the offset. If the file was
// rotated while we were down and the saved inode is now `<path><rotated_suffix>`
// (logrotate's "<path>.1"), that file is finished from the saved offset first, then
// the new file is read from 0. Otherwise a different inode, or a file now shorter than
// the offset, starts at 0 (lines written to a file rotated further away are lost).
//
// A partial last line is held back until its newline arrives, except at the end of a
// file rotated away (the writer has moved on). Lines longer than max_line_bytes are
// skipped and counted, never buffered whole. Not thread-safe: one poller.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"

namespace faultline {

struct TailOptions {
  std::string path;
  size_t max_line_bytes = 64 * 1024;
  size_t read_chunk_bytes = 64 * 1024;
  size_t max_lines_per_poll = 10000;  // the rest comes on the next Poll
  std::string rotated_suffix = ".1";  // where a restart looks for the saved inode ("" = nowhere)
};

struct TailPosition {
  uint64_t inode = 0;
  uint64_t offset = 0;
  bool operator==(const TailPosition&) const = default;
};
// "inode:offset", the cursor value form.
std::string FormatTailPosition(const TailPosition& p);
std::optional<TailPosition> ParseTailPosition(std::string_view s);

struct TailBatch {
  std::vector<std::string> lines;  // without the newline (and without a trailing '\r')
  size_t oversized_lines = 0;
  bool rotated = false;    // switched to a new file at the path
  bool truncated = false;  // the file shrank; restarted at offset 0
  bool more = false;       // stopped at max_lines_per_poll: lines are waiting that no write will announce
  TailPosition position;   // after the last line in `lines`
};

class FileTailer {
 public:
  explicit FileTailer(TailOptions options, TailPosition resume_from = {});
  ~FileTailer();
  FileTailer(const FileTailer&) = delete;
  FileTailer& operator=(const FileTailer&) = delete;

  // Reads what was appended since the last call. kNotFound while the file does not
  // exist (a job that has not started yet), kIoError on read errors.
  Result<TailBatch> Poll();
  TailPosition position() const { return {inode_, offset_}; }

 private:
  Status OpenFile(TailBatch& batch);
  std::string PathToOpen() const;
  Status ReadAvailable(TailBatch& batch);
  void TakeLines(const char* data, size_t n, TailBatch& batch);
  bool PathNamesAnotherFile() const;
  void CloseFile();

  TailOptions options_;
  TailPosition resume_;
  int fd_ = -1;
  uint64_t inode_ = 0;
  uint64_t offset_ = 0;    // committed: after the last complete line handed out
  uint64_t read_pos_ = 0;  // next byte to read; [offset_, read_pos_) is pending_ or skipped
  std::string pending_;
  bool skipping_ = false;  // inside an oversized line
};

}  // namespace faultline
