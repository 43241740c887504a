// Sources that read this machine: kernel log (file or /dev/kmsg), sysfs, workload file.
//
// The kernel log sources read as the log is written (AgentSource::WaitForData): the
// /dev/kmsg source blocks in poll(2) on the device, the file source on inotify (the file
// for writes, its directory for the file being created or renamed into place), each
// with an eventfd that Cancel() signals so a stop is immediate. The agent's interval
// stays the upper bound of the wait (a missed notification, inotify unavailable, a file
// on a network filesystem: the source is still polled every interval). Once woken it
// waits kSettleNs more, so the lines of one multi-line event (AER header and details),
// which the kernel prints together, are read in one poll and joined.
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <climits>
#include <fstream>
#include <optional>

#include "daemon/sources.h"
#include "sources/kmsg/devkmsg.h"
#include "sources/kmsg/log_reader.h"
#include "sources/ethernet/collector.h"
#include "sources/ethernet/ethtool_stats.h"
#include "sources/sysfs/collector.h"
#include "sources/sysfs/fs.h"
#include "sources/workload/file_source.h"
#include "sources/workload/tailer.h"
#include "store/dedup_key.h"

namespace faultline::daemon {
namespace {

constexpr const char* kKmsgSource = "kmsg";
// After a wake-up, the rest of a multi-line event gets this long to arrive.
constexpr int kSettleMs = 10;
// A poll woken by input that brought no observation (benign lines) saves its cursor at
// most this often: each save is a store transaction, and re-reading benign lines after a
// restart costs nothing. A poll with observations always saves it with them.
constexpr int64_t kCursorOnlyGapNs = 1'000'000'000;
// A kernel log source that is told of new input (poll(2) on /dev/kmsg, inotify on a
// file) waits at most this long between polls, however short its interval: the interval
// is for a source that cannot be told, and an idle wake per second was a tenth of an
// idle agent's CPU. The wait stays bounded as a safety net (a file on a filesystem whose
// writers inotify does not see, such as another NFS client).
constexpr int64_t kWatchedWaitNs = 30'000'000'000;

int TimeoutMs(int64_t ns) {
  if (ns <= 0) return 0;
  const int64_t ms = (ns + 999'999) / 1'000'000;
  return ms > INT_MAX ? INT_MAX : static_cast<int>(ms);
}

// An eventfd that, once signalled, stays readable: every later wait returns at once.
class CancelSignal {
 public:
  CancelSignal() : fd_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {}
  ~CancelSignal() {
    if (fd_ >= 0) ::close(fd_);
  }
  CancelSignal(const CancelSignal&) = delete;
  CancelSignal& operator=(const CancelSignal&) = delete;

  void Signal() {
    const uint64_t one = 1;
    if (fd_ >= 0) (void)!::write(fd_, &one, sizeof(one));
    cancelled_.store(true);
  }
  bool cancelled() const { return cancelled_.load(); }
  int fd() const { return fd_; }

  // Waits up to `timeout_ms` for `data_fd` (-1 = none) to be readable, or the signal.
  // True when data_fd is readable. A hang-up without data (a FIFO whose writer left)
  // is not data: the rest of the time is slept, so it never spins.
  bool Wait(int data_fd, int timeout_ms) const {
    if (cancelled()) return false;
    pollfd fds[2] = {{fd_, POLLIN, 0}, {data_fd, POLLIN, 0}};
    const nfds_t n = data_fd >= 0 ? 2 : 1;
    int rc;
    do {
      rc = ::poll(fds, n, timeout_ms);
    } while (rc < 0 && errno == EINTR);
    if (rc <= 0 || (fds[0].revents & POLLIN) != 0) return false;
    if (n == 2 && (fds[1].revents & POLLIN) != 0) return true;
    if (n == 2 && fds[1].revents != 0) Sleep(timeout_ms);  // HUP/ERR only
    return false;
  }
  void Sleep(int timeout_ms) const { (void)Wait(-1, timeout_ms); }

 private:
  int fd_;
  std::atomic<bool> cancelled_{false};
};

// Cursor-only saves after a wake-up are spaced by kCursorOnlyGapNs (see above); the
// scheduled polls (RunOnce, RunDue, the interval) save every changed cursor as before.
class CursorPacer {
 public:
  // Whether a batch with `has_observations` and cursor `value` should carry the cursor.
  bool Save(bool has_observations, const std::string& value, bool woken, int64_t now_mono_ns) {
    if (saved_value_ && *saved_value_ == value) return false;  // already stored
    if (!has_observations && woken && saved_at_ns_ && now_mono_ns - *saved_at_ns_ < kCursorOnlyGapNs) return false;
    saved_value_ = value;
    saved_at_ns_ = now_mono_ns;
    return true;
  }

 private:
  std::optional<std::string> saved_value_;
  std::optional<int64_t> saved_at_ns_;
};

// This boot's identity ("" when the kernel does not say).
std::string ReadBootId() {
  std::ifstream in("/proc/sys/kernel/random/boot_id");
  std::string id;
  std::getline(in, id);
  return id;
}

// A kernel line dated only by its monotonic time gets its UTC from an estimate of the
// boot time (wall clock - boot clock, read at the reader's start), which comes out a
// little different at every start. Naming the boot on such an observation lets the
// store's dedup key (store/dedup_key.h) use boot + monotonic time instead of that
// estimate, so re-reading the same line after a restart (or from an identical copy of
// the log) is recognised as the same fact.
void NameBootOfDerivedTime(Observation& o, const std::string& boot_id) {
  if (!boot_id.empty() && o.mono_us) o.attrs[std::string(store::kBootIdAttr)] = boot_id;
}

class KmsgFileSource final : public AgentSource {
 public:
  KmsgFileSource(std::string path, std::string node, const Clock& clock, std::optional<std::string> cursor)
      : path_(std::move(path)),
        node_(std::move(node)),
        clock_(clock),
        tailer_(TailOptions{.path = path_}, ResumeFrom(cursor)) {}

  std::string name() const override { return kKmsgSource; }
  Layer layer() const override { return Layer::kOs; }

  Result<SourceBatch> Poll(int64_t /*deadline_mono_ns*/) override {
    // Watches armed before reading: a line written after this read is an event queued
    // for the next WaitForData, never lost between the read and the wait.
    watching_ = WatchPath();
    if (reader_ == nullptr) {
      KernelLogOptions options;
      options.node = node_;
      // "[ 123.4]" lines are dated from this host's boot time.
      options.boot_time_ns = clock_.NowNs() - clock_.BootTimeNs();
      boot_time_ns_ = *options.boot_time_ns;
      auto reader = KernelLogReader::Create(options);
      if (!reader.ok()) return reader.status();
      reader_ = std::move(reader).value();
    }
    auto tail = tailer_.Poll();
    if (!tail.ok()) return tail.status();
    backlog_ = tail->more;  // waiting lines no inotify event will announce
    for (const std::string& line : tail->lines) {
      reader_->Feed(line);
      reader_->Feed("\n");
    }
    reader_->Finish();
    SourceBatch batch;
    batch.observations = reader_->TakeObservations();
    for (Observation& o : batch.observations) {
      o.node = node_;
      // Only the lines the reader dated from the boot estimate; a line's own date
      // (syslog, journal) is already stable.
      if (o.mono_us && o.time_ns == boot_time_ns_ + *o.mono_us * 1000) NameBootOfDerivedTime(o, boot_id_);
    }
    if (tail->oversized_lines > 0) {
      batch.warnings.push_back(std::to_string(tail->oversized_lines) + " oversized lines skipped in " + path_);
    }
    const std::string cursor = FormatTailPosition(tail->position);
    if (pacer_.Save(!batch.observations.empty(), cursor, woken_, clock_.MonotonicNs())) {
      batch.cursors.push_back({node_, kKmsgSource, "file:" + path_, cursor});
    }
    woken_ = false;
    return batch;
  }

  void Cancel() override { cancel_.Signal(); }
  bool CanWaitForData() const override { return true; }

  void WaitForData(int64_t max_wait_ns) override {
    if (!watching_) {  // no inotify, nothing watchable: the interval it is
      cancel_.Sleep(TimeoutMs(max_wait_ns));
      return;
    }
    // Events about other files of the directory are read and the wait goes on. A backlog
    // (a long log read from its start) is read at the interval, as without a watch.
    const int64_t wait_ns = backlog_ ? max_wait_ns : std::max(max_wait_ns, kWatchedWaitNs);
    const auto until = std::chrono::steady_clock::now() + std::chrono::nanoseconds(wait_ns);
    for (;;) {
      const int64_t left =
          std::chrono::duration_cast<std::chrono::nanoseconds>(until - std::chrono::steady_clock::now()).count();
      if (left <= 0 || !cancel_.Wait(inotify_fd_, TimeoutMs(left))) return;
      if (DrainEvents()) break;
    }
    cancel_.Sleep(kSettleMs);
    (void)DrainEvents();
    woken_ = true;
  }

  ~KmsgFileSource() override {
    if (inotify_fd_ >= 0) ::close(inotify_fd_);
  }

 private:
  // Watches the file (writes, rename/delete of it) and its directory (the file created
  // or renamed into place: rotation, a log that does not exist yet). Re-arming the file
  // watch at each poll follows the inode the path names now. False without inotify.
  bool WatchPath() {
    if (inotify_fd_ < 0 && !inotify_failed_) {
      inotify_fd_ = ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
      inotify_failed_ = inotify_fd_ < 0;
      const size_t slash = path_.rfind('/');
      dir_ = slash == std::string::npos ? "." : slash == 0 ? "/" : path_.substr(0, slash);
      base_ = slash == std::string::npos ? path_ : path_.substr(slash + 1);
    }
    if (inotify_fd_ < 0) return false;
    if (dir_wd_ < 0) dir_wd_ = ::inotify_add_watch(inotify_fd_, dir_.c_str(), IN_CREATE | IN_MOVED_TO);
    file_wd_ = ::inotify_add_watch(inotify_fd_, path_.c_str(), IN_MODIFY | IN_MOVE_SELF | IN_DELETE_SELF | IN_ATTRIB);
    // Neither could be watched (directory missing too): fall back to the interval.
    return dir_wd_ >= 0 || file_wd_ >= 0;
  }

  // Reads every pending event; true when one concerns our file (any event on a file
  // watch, or our name created/renamed in the directory).
  bool DrainEvents() {
    alignas(inotify_event) char buf[4096];
    bool ours = false;
    for (;;) {
      const ssize_t n = ::read(inotify_fd_, buf, sizeof(buf));
      if (n <= 0) break;
      for (ssize_t off = 0; off + static_cast<ssize_t>(sizeof(inotify_event)) <= n;) {
        const auto* ev = reinterpret_cast<const inotify_event*>(buf + off);
        const bool dir_event = ev->wd == dir_wd_ && ev->len > 0;
        if (!dir_event || base_ == ev->name) ours = true;
        if ((ev->mask & IN_Q_OVERFLOW) != 0) ours = true;
        off += static_cast<ssize_t>(sizeof(inotify_event) + ev->len);
      }
    }
    return ours;
  }

  static TailPosition ResumeFrom(const std::optional<std::string>& cursor) {
    if (!cursor) return {};
    return ParseTailPosition(*cursor).value_or(TailPosition{});
  }

  std::string path_;
  std::string node_;
  const Clock& clock_;
  FileTailer tailer_;
  std::unique_ptr<KernelLogReader> reader_;
  int64_t boot_time_ns_ = 0;  // the estimate the reader dates "[ 123.4]" lines with
  std::string boot_id_ = ReadBootId();
  CancelSignal cancel_;
  CursorPacer pacer_;
  bool woken_ = false;  // this poll follows a wake-up by input (cursor pacing)
  int inotify_fd_ = -1;
  bool inotify_failed_ = false;
  bool watching_ = false;  // the last Poll armed a watch
  bool backlog_ = false;   // the last Poll stopped at max_lines_per_poll: more is waiting
  int dir_wd_ = -1;
  int file_wd_ = -1;
  std::string dir_, base_;
};

class KmsgDeviceSource final : public AgentSource {
 public:
  KmsgDeviceSource(std::string path, std::string node, const Clock& clock, std::optional<std::string> cursor)
      : path_(std::move(path)), node_(std::move(node)), clock_(clock) {
    uint64_t seq = 0;
    if (cursor && std::from_chars(cursor->data(), cursor->data() + cursor->size(), seq).ec == std::errc()) {
      last_seq_ = seq;
    }
  }

  std::string name() const override { return kKmsgSource; }
  Layer layer() const override { return Layer::kOs; }

  Result<SourceBatch> Poll(int64_t /*deadline_mono_ns*/) override {
    if (reader_ == nullptr) {
      auto device = FdKmsgDevice::Open(path_);
      if (!device.ok()) return device.status();
      KmsgReaderOptions options;
      options.node = node_;
      options.resume_after_seq = last_seq_;
      device_fd_ = (*device)->fd();
      auto reader = std::make_unique<KmsgReader>(std::move(device).value(), options, clock_);
      if (Status s = reader->Start(); !s.ok()) return s;
      reader_ = std::move(reader);
    }
    auto read = reader_->ReadAvailable(0);
    if (!read.ok()) {
      reader_.reset();  // reopen (resuming after last_seq_) at the next poll
      device_fd_ = -1;
      return read.status();
    }
    SourceBatch batch;
    batch.observations = std::move(read->observations);
    // /dev/kmsg records carry only the monotonic time: every date is the boot estimate.
    for (Observation& o : batch.observations) NameBootOfDerivedTime(o, boot_id_);
    for (const KmsgGap& gap : read->gaps) {
      batch.warnings.push_back("kmsg ring overwrote records " + std::to_string(gap.first_lost_seq) + ".." +
                               std::to_string(gap.last_lost_seq));
    }
    if (read->last_seq) last_seq_ = read->last_seq;
    if (last_seq_) {
      const std::string cursor = std::to_string(*last_seq_);
      if (pacer_.Save(!batch.observations.empty(), cursor, woken_, clock_.MonotonicNs())) {
        batch.cursors.push_back({node_, kKmsgSource, "last_seq", cursor});
      }
    }
    woken_ = false;
    return batch;
  }

  void Cancel() override { cancel_.Signal(); }
  bool CanWaitForData() const override { return true; }

  // poll(2) on the device: readable as soon as the kernel logs a record past our
  // position. Not open (unavailable, or after an error): the interval.
  void WaitForData(int64_t max_wait_ns) override {
    if (device_fd_ < 0) {
      cancel_.Sleep(TimeoutMs(max_wait_ns));
      return;
    }
    if (!cancel_.Wait(device_fd_, TimeoutMs(std::max(max_wait_ns, kWatchedWaitNs)))) return;
    cancel_.Sleep(kSettleMs);
    woken_ = true;
  }

 private:
  std::string path_;
  std::string node_;
  const Clock& clock_;
  std::optional<uint64_t> last_seq_;
  std::unique_ptr<KmsgReader> reader_;
  int device_fd_ = -1;  // the reader's device, for poll(2); -1 when not open
  std::string boot_id_ = ReadBootId();
  CancelSignal cancel_;
  CursorPacer pacer_;
  bool woken_ = false;
};

class SysfsSource final : public AgentSource {
 public:
  SysfsSource(const SysfsSection& options, const std::string& node, const Clock& clock, const Topology* topology)
      : fs_(options.root), collector_(fs_, clock, SysfsOptions{.node = node}, topology) {}

  std::string name() const override { return "sysfs"; }
  Layer layer() const override { return Layer::kFabric; }

  Result<SourceBatch> Poll(int64_t /*deadline_mono_ns*/) override {
    SysfsSample sample = collector_.Collect();
    SourceBatch batch;
    batch.observations = std::move(sample.observations);
    for (const Status& s : sample.errors) batch.warnings.push_back(s.ToString());
    if (batch.observations.empty() && !sample.errors.empty()) {
      collector_.Rescan();  // maybe a driver reload; discover again next time
      return Status(StatusCode::kUnavailable, "sysfs: nothing readable: " + sample.errors.front().ToString());
    }
    return batch;
  }

 private:
  RootFs fs_;
  SysfsCollector collector_;
};

// RoCE / Ethernet: under "/" the ethtool statistics come from the kernel (SIOCETHTOOL);
// under any other root (a fake or copied tree) from its ethtool_stats files.
class EthernetSource final : public AgentSource {
 public:
  EthernetSource(const EthernetSection& options, const std::string& root, const std::string& node, const Clock& clock,
                 const Topology* topology)
      : fs_(root),
        ioctl_(root == "/" || root.empty()),
        file_stats_(fs_),
        collector_(fs_, ioctl_ ? static_cast<const EthtoolStats&>(ioctl_stats_) : file_stats_, clock,
                   EthernetOptions{.node = node,
                                   .rdma_interval_ns = options.rdma_interval_ns,
                                   .rdma_max_ports_per_sample = static_cast<size_t>(options.rdma_max_ports),
                                   .ethtool = options.ethtool},
                   topology) {}

  std::string name() const override { return "ethernet"; }
  Layer layer() const override { return Layer::kFabric; }

  Result<SourceBatch> Poll(int64_t /*deadline_mono_ns*/) override {
    EthernetSample sample = collector_.Collect();
    SourceBatch batch;
    batch.observations = std::move(sample.observations);
    for (const Status& s : sample.errors) batch.warnings.push_back(s.ToString());
    if (batch.observations.empty() && !sample.errors.empty()) {
      collector_.Rescan();
      return Status(StatusCode::kUnavailable, "ethernet: nothing readable: " + sample.errors.front().ToString());
    }
    return batch;
  }

 private:
  RootFs fs_;
  bool ioctl_;
  IoctlEthtoolStats ioctl_stats_;
  FileEthtoolStats file_stats_;
  EthernetCollector collector_;
};

class WorkloadFileAgentSource final : public AgentSource {
 public:
  WorkloadFileAgentSource(const std::string& path, const std::string& node, const Clock& clock,
                          const std::optional<std::string>& cursor)
      : node_(node), source_(WorkloadFileOptions{.path = path, .node = node}, clock, cursor) {}

  std::string name() const override { return "workload"; }
  Layer layer() const override { return Layer::kWorkload; }

  Result<SourceBatch> Poll(int64_t /*deadline_mono_ns*/) override {
    auto poll = source_.Poll();
    if (!poll.ok()) return poll.status();
    SourceBatch batch;
    batch.observations = std::move(poll->observations);
    batch.warnings = std::move(poll->errors);
    // An unchanged cursor is not saved again: a job-less node's file, drained every
    // second, used to cost one store commit per second for nothing. A batch the store
    // refuses is held and retried whole by the agent, cursor included.
    Cursor cursor{node_, poll->cursor_source, poll->cursor_key, poll->cursor_value};
    if (!batch.observations.empty() || !last_cursor_ || cursor.key != last_cursor_->key ||
        cursor.value != last_cursor_->value) {
      last_cursor_ = cursor;
      batch.cursors.push_back(std::move(cursor));
    }
    return batch;
  }

 private:
  std::string node_;
  WorkloadFileSource source_;
  std::optional<Cursor> last_cursor_;  // the last one handed over
};

}  // namespace

std::unique_ptr<AgentSource> MakeKmsgFileSource(const std::string& path, const std::string& node, const Clock& clock,
                                                std::optional<std::string> cursor) {
  return std::make_unique<KmsgFileSource>(path, node, clock, std::move(cursor));
}

std::unique_ptr<AgentSource> MakeKmsgDeviceSource(const std::string& path, const std::string& node, const Clock& clock,
                                                  std::optional<std::string> cursor) {
  return std::make_unique<KmsgDeviceSource>(path, node, clock, std::move(cursor));
}

std::unique_ptr<AgentSource> MakeSysfsSource(const SysfsSection& options, const std::string& node, const Clock& clock,
                                             const Topology* topology) {
  return std::make_unique<SysfsSource>(options, node, clock, topology);
}

std::unique_ptr<AgentSource> MakeEthernetSource(const EthernetSection& options, const std::string& root,
                                                const std::string& node, const Clock& clock, const Topology* topology) {
  return std::make_unique<EthernetSource>(options, root, node, clock, topology);
}

std::unique_ptr<AgentSource> MakeWorkloadFileSource(const std::string& path, const std::string& node,
                                                    const Clock& clock, std::optional<std::string> cursor) {
  return std::make_unique<WorkloadFileAgentSource>(path, node, clock, cursor);
}

}  // namespace faultline::daemon
