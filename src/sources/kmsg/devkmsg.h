// Live reader for /dev/kmsg (SIGNALS.md): one read() returns one record
// "PRI,SEQ,TS_USEC,FLAGS[,...];MESSAGE\n" plus continuation lines " KEY=VALUE".
// EPIPE means the ring buffer overwrote records since the last read: reported as a gap
// (with the sequence numbers lost), then reading continues. Resume after a restart by
// passing the last sequence number already processed.
//
// The device sits behind KmsgDevice so tests script records, gaps and EAGAIN without
// a kernel; FdKmsgDevice is the real one.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/clock.h"
#include "core/status.h"
#include "core/types.h"
#include "sources/kmsg/kernel_events.h"

namespace faultline {

class KmsgDevice {
 public:
  virtual ~KmsgDevice() = default;
  // Like read(2): bytes read, 0 at end, -1 with `err` set (EAGAIN, EPIPE, EINVAL...).
  virtual long Read(char* buf, size_t len, int& err) = 0;
  // Position at the oldest record still in the ring (SEEK_DATA) or after the newest (SEEK_END).
  // A pipe cannot seek (ESPIPE): reading starts where it is (a relay of /dev/kmsg, tests).
  virtual Status SeekOldest() = 0;
  virtual Status SeekEnd() = 0;
  // Waits up to timeout_ms for a record to become readable; false on timeout.
  virtual bool Wait(int timeout_ms) = 0;
};

class FdKmsgDevice final : public KmsgDevice {
 public:
  static Result<std::unique_ptr<FdKmsgDevice>> Open(const std::string& path = "/dev/kmsg");
  ~FdKmsgDevice() override;
  long Read(char* buf, size_t len, int& err) override;
  Status SeekOldest() override;
  Status SeekEnd() override;
  bool Wait(int timeout_ms) override;
  // The open descriptor, for a caller that polls it together with other descriptors
  // (the agent's source: the device or its stop signal). Owned by this object.
  int fd() const { return fd_; }

 private:
  explicit FdKmsgDevice(int fd) : fd_(fd) {}
  int fd_;
};

struct KmsgRecord {
  int priority = 0;
  uint64_t seq = 0;
  int64_t ts_us = 0;
  std::string message;
  std::map<std::string, std::string> dict;  // continuation KEY=VALUE lines
};

// Parses one record as returned by read(); kCorrupt for anything that is not one.
Result<KmsgRecord> ParseKmsgRecord(std::string_view record);

struct KmsgReaderOptions {
  std::string node;
  std::optional<uint64_t> resume_after_seq;  // skip records up to and including this one
  bool from_end = false;                     // start at the newest record instead of the oldest
};

struct KmsgGap {
  uint64_t first_lost_seq = 0;  // 0 when unknown
  uint64_t last_lost_seq = 0;
};

struct KmsgBatch {
  std::vector<Observation> observations;
  std::vector<KmsgGap> gaps;
  uint64_t records = 0;
  uint64_t corrupt_records = 0;
  std::optional<uint64_t> last_seq;  // highest sequence number processed (the resume cursor)
};

class KmsgReader {
 public:
  KmsgReader(std::unique_ptr<KmsgDevice> device, KmsgReaderOptions options, const Clock& clock);

  Status Start();
  // Reads every record available now; with wait_ms > 0 first waits that long for one.
  Result<KmsgBatch> ReadAvailable(int wait_ms = 0);

 private:
  void Process(const KmsgRecord& rec, KmsgBatch& batch);

  std::unique_ptr<KmsgDevice> device_;
  KmsgReaderOptions options_;
  KernelEventAssembler assembler_;
  std::optional<uint64_t> last_seq_;
  bool pending_gap_ = false;
};

}  // namespace faultline
