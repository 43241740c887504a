#include "sources/kmsg/devkmsg.h"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "parse/log_line.h"

namespace faultline {

Result<std::unique_ptr<FdKmsgDevice>> FdKmsgDevice::Open(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    const int e = errno;
    return Status(e == EACCES || e == EPERM ? StatusCode::kPermissionDenied : StatusCode::kUnavailable,
                  "cannot open " + path + ": " + std::strerror(e));
  }
  return std::unique_ptr<FdKmsgDevice>(new FdKmsgDevice(fd));
}

FdKmsgDevice::~FdKmsgDevice() { ::close(fd_); }

long FdKmsgDevice::Read(char* buf, size_t len, int& err) {
  const ssize_t n = ::read(fd_, buf, len);
  err = n < 0 ? errno : 0;
  return static_cast<long>(n);
}

Status FdKmsgDevice::SeekOldest() {
  if (::lseek(fd_, 0, SEEK_DATA) < 0 && errno != ESPIPE) return Status(StatusCode::kIoError, std::strerror(errno));
  return Status::Ok();
}

Status FdKmsgDevice::SeekEnd() {
  if (::lseek(fd_, 0, SEEK_END) < 0 && errno != ESPIPE) return Status(StatusCode::kIoError, std::strerror(errno));
  return Status::Ok();
}

bool FdKmsgDevice::Wait(int timeout_ms) {
  pollfd p{fd_, POLLIN, 0};
  return ::poll(&p, 1, timeout_ms) > 0;
}

Result<KmsgRecord> ParseKmsgRecord(std::string_view record) {
  const size_t nl = record.find('\n');
  std::string_view first = record.substr(0, nl);
  LogLine line = ParseLogLine(first, 0);
  if (line.format != LogFormat::kKmsgRaw) {
    return Status(StatusCode::kCorrupt, "not a kmsg record: " + std::string(first.substr(0, 80)));
  }
  KmsgRecord rec;
  rec.priority = line.priority;
  rec.seq = *line.seq;
  rec.ts_us = *line.mono_us;
  rec.message = std::string(line.message);
  std::string_view rest = nl == std::string_view::npos ? std::string_view{} : record.substr(nl + 1);
  while (!rest.empty()) {
    const size_t e = rest.find('\n');
    std::string_view kv = rest.substr(0, e);
    rest = e == std::string_view::npos ? std::string_view{} : rest.substr(e + 1);
    if (kv.empty() || kv[0] != ' ') continue;
    const size_t eq = kv.find('=');
    if (eq != std::string_view::npos) rec.dict[std::string(kv.substr(1, eq - 1))] = std::string(kv.substr(eq + 1));
  }
  return rec;
}

KmsgReader::KmsgReader(std::unique_ptr<KmsgDevice> device, KmsgReaderOptions options, const Clock& clock)
    : device_(std::move(device)),
      options_(std::move(options)),
      // Monotonic kernel time + (wall clock - boot clock) = UTC, computed once at start.
      assembler_(KernelEventsOptions{options_.node, clock.NowNs() - clock.BootTimeNs()}),
      last_seq_(options_.resume_after_seq) {}

Status KmsgReader::Start() { return options_.from_end ? device_->SeekEnd() : device_->SeekOldest(); }

void KmsgReader::Process(const KmsgRecord& rec, KmsgBatch& batch) {
  if (last_seq_ && rec.seq <= *last_seq_) return;  // already processed before a restart
  if (pending_gap_ || (last_seq_ && rec.seq > *last_seq_ + 1)) {
    batch.gaps.push_back({last_seq_ ? *last_seq_ + 1 : 0, rec.seq - 1});
    pending_gap_ = false;
  }
  ++batch.records;
  LogLine line;
  line.format = LogFormat::kKmsgRaw;
  line.priority = rec.priority;
  line.seq = rec.seq;
  line.mono_us = rec.ts_us;
  line.message = rec.message;
  std::vector<Observation> out;
  assembler_.Feed(line, rec.message, out);
  auto dev = rec.dict.find("DEVICE");
  for (Observation& o : out) {
    if (dev != rec.dict.end()) o.attrs["kmsg_device"] = dev->second;
    batch.observations.push_back(std::move(o));
  }
  last_seq_ = rec.seq;
  batch.last_seq = rec.seq;
}

Result<KmsgBatch> KmsgReader::ReadAvailable(int wait_ms) {
  KmsgBatch batch;
  if (wait_ms > 0) device_->Wait(wait_ms);
  std::string buf(8192, '\0');  // the kernel's record limit is below this
  for (;;) {
    int err = 0;
    const long n = device_->Read(buf.data(), buf.size(), err);
    if (n < 0 && err == EPIPE) {
      pending_gap_ = true;  // records were overwritten; the next record tells how many
      continue;
    }
    if (n < 0 && (err == EAGAIN || err == EWOULDBLOCK)) break;
    if (n < 0 && err == EINTR) continue;
    if (n < 0) return Status(StatusCode::kIoError, std::string("kmsg read: ") + std::strerror(err));
    if (n == 0) break;
    auto rec = ParseKmsgRecord(std::string_view(buf.data(), static_cast<size_t>(n)));
    if (!rec.ok()) {
      ++batch.corrupt_records;
      continue;
    }
    Process(*rec, batch);
  }
  std::vector<Observation> tail;
  assembler_.Finish(tail);
  for (Observation& o : tail) batch.observations.push_back(std::move(o));
  return batch;
}

}  // namespace faultline
