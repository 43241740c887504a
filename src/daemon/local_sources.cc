// Sources that read this machine: kernel log (file or /dev/kmsg), sysfs, workload file.
#include <sys/stat.h>

#include <charconv>
#include <fstream>

#include "daemon/sources.h"
#include "sources/kmsg/devkmsg.h"
#include "sources/kmsg/log_reader.h"
#include "sources/sysfs/collector.h"
#include "sources/sysfs/fs.h"
#include "sources/workload/file_source.h"
#include "sources/workload/tailer.h"
#include "store/dedup_key.h"

namespace faultline::daemon {
namespace {

constexpr const char* kKmsgSource = "kmsg";

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
    batch.cursors.push_back({node_, kKmsgSource, "file:" + path_, FormatTailPosition(tail->position)});
    return batch;
  }

 private:
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
      auto reader = std::make_unique<KmsgReader>(std::move(device).value(), options, clock_);
      if (Status s = reader->Start(); !s.ok()) return s;
      reader_ = std::move(reader);
    }
    auto read = reader_->ReadAvailable(0);
    if (!read.ok()) {
      reader_.reset();  // reopen (resuming after last_seq_) at the next poll
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
    if (read->last_seq) {
      last_seq_ = read->last_seq;
      batch.cursors.push_back({node_, kKmsgSource, "last_seq", std::to_string(*read->last_seq)});
    }
    return batch;
  }

 private:
  std::string path_;
  std::string node_;
  const Clock& clock_;
  std::optional<uint64_t> last_seq_;
  std::unique_ptr<KmsgReader> reader_;
  std::string boot_id_ = ReadBootId();
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
    batch.cursors.push_back({node_, poll->cursor_source, poll->cursor_key, poll->cursor_value});
    return batch;
  }

 private:
  std::string node_;
  WorkloadFileSource source_;
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

std::unique_ptr<AgentSource> MakeWorkloadFileSource(const std::string& path, const std::string& node,
                                                    const Clock& clock, std::optional<std::string> cursor) {
  return std::make_unique<WorkloadFileAgentSource>(path, node, clock, cursor);
}

}  // namespace faultline::daemon
