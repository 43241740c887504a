// The agent at the moment of a fault (issue 16): which observations are critical
// (engine/detect/critical.h), a critical one wakes the evaluation at once while others
// wait for the timer, on-demand evaluations coalesce (one in flight, one pending), the
// kernel log sources return from WaitForData as soon as a line is written (a FIFO read as
// /dev/kmsg, a followed file: appended, created, rotated) and at once on Cancel, and
// findings keep one identity per event (an XID 13's GPC/TPC and ESR lines, a multi-line
// AER) so evaluating again and again stores nothing new.
//
// Nothing here asserts a duration: waits are bounded by a generous watchdog only so that
// a source that never wakes fails the test instead of hanging it.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <future>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>

#include "core/json.h"
#include "daemon/agent.h"
#include "daemon/pipeline.h"
#include "daemon/sources.h"
#include "engine/detect/critical.h"
#include "parse/redfish_map.h"
#include "sources/kmsg/log_reader.h"
#include "store/store.h"
#include "test_util.h"

namespace faultline::daemon {
namespace {

using testing::AppendText;
using testing::kSec;
using testing::kT0;
using testing::QuietConfig;
using testing::ScratchDir;
using testing::ScriptedSource;

constexpr auto kWatchdog = std::chrono::seconds(60);
constexpr int64_t kHour = 3600 * kSec;

// The observations a kernel log text makes (dmesg/syslog/kmsg forms, detected per line).
std::vector<Observation> Read(const std::string& text) {
  KernelLogOptions o;
  o.node = "node7";
  o.boot_time_ns = kT0 - 3600 * kSec;
  auto reader = KernelLogReader::Create(o);
  EXPECT_TRUE(reader.ok());
  (*reader)->Feed(text);
  (*reader)->Finish();
  return (*reader)->TakeObservations();
}

// Whether any observation of `text` is critical (and there is at least one).
bool AnyCritical(const std::string& text) {
  auto obs = Read(text);
  EXPECT_FALSE(obs.empty()) << text;
  for (const Observation& o : obs) {
    if (IsCritical(o)) return true;
  }
  return false;
}

std::string Xid(int code, const std::string& tail, const char* bdf = "3b", const char* when = "[ 1200.000100]") {
  return std::string(when) + " NVRM: Xid (PCI:0000:" + bdf + ":00): " + std::to_string(code) + ", " + tail + "\n";
}

// "[ seconds.micros]" of this machine's boot clock now: a dmesg line the agent dates now.
std::string Now() {
  SystemClock clock;
  const int64_t us = clock.BootTimeNs() / 1000;
  char buf[64];
  std::snprintf(buf, sizeof buf, "[%6lld.%06lld]", static_cast<long long>(us / 1'000'000),
                static_cast<long long>(us % 1'000'000));
  return buf;
}

TEST(DaemonCritical, FatalXidsAreCriticalProgramXidsAreNot) {
  EXPECT_TRUE(AnyCritical(Xid(79, "pid='<unknown>', name=<unknown>, GPU has fallen off the bus.")));
  EXPECT_TRUE(AnyCritical(Xid(48,
                              "pid=1234, name=python3, An uncorrectable double bit error (DBE) has been "
                              "detected on GPU in the framebuffer at partition 0, subpartition 0.")));
  EXPECT_TRUE(AnyCritical(Xid(64, "pid=1234, name=python3, Ch 00000010, row remapping failure")));
  EXPECT_TRUE(AnyCritical(Xid(74,
                              "pid=1234, name=python3, NVLink: fatal error detected on link 5(0x0, 0x0, 0x10000, "
                              "0x0, 0x0, 0x0, 0x0)")));
  EXPECT_TRUE(AnyCritical(Xid(94, "pid=1234, name=python3, Contained: SM (0x1). RST: No, D-RST: No")));
  EXPECT_TRUE(AnyCritical(Xid(95, "pid=1234, name=python3, Uncontained: FBHUB. RST: Yes, D-RST: No", "b5")));
  EXPECT_TRUE(AnyCritical(Xid(119,
                              "pid=1234, name=python3, Timeout after 6s of waiting for RPC response from GPU1 "
                              "GSP! Expected function 76 (GSP_RM_CONTROL)")));
  // The same codes as observations with nothing else: the code decides.
  for (int code : {79, 48, 64, 74, 94, 95, 119}) EXPECT_TRUE(IsCriticalXid(code)) << code;
  EXPECT_FALSE(AnyCritical(Xid(13,
                               "pid=4242, name=python3, Graphics SM Warp Exception on (GPC 0, TPC 1, SM 0): "
                               "Out Of Range Address")));
  EXPECT_FALSE(AnyCritical(Xid(31,
                               "pid=777, name=infer, Ch 00000008, intr 10000000. MMU Fault: ENGINE GRAPHICS "
                               "GPCCLIENT_T1_0 faulted @ 0x7f12_34560000. Fault is of type FAULT_PDE")));
  EXPECT_FALSE(AnyCritical(Xid(43, "pid=777, name=infer, Ch 00000008")));
  EXPECT_FALSE(AnyCritical(Xid(63,
                               "pid=777, name=infer, Row Remapper: New row (0x00000000000a1b2c) marked for "
                               "remapping, reset gpu to activate.")));
  // Nonsense codes are not critical (and do not crash the catalog lookup).
  for (int64_t code : {int64_t{0}, int64_t{-5}, int64_t{1} << 40}) EXPECT_FALSE(IsCriticalXid(code)) << code;
  Observation no_code;
  no_code.kind = ObsKind::kXid;
  EXPECT_FALSE(IsCritical(no_code));
}

TEST(DaemonCritical, TheThreeLineFallOffTheBusIsCritical) {
  EXPECT_TRUE(
      AnyCritical("[  500.100000] NVRM: The NVIDIA GPU 0000:41:00.0\n"
                  "[  500.100000] NVRM: (PCI ID: 10de:2330) installed in this system has\n"
                  "[  500.100000] NVRM: fallen off the bus and is not responding to commands.\n"));
}

TEST(DaemonCritical, FatalSxidsAndFatalAerAreCriticalNonFatalOnesAreNot) {
  EXPECT_TRUE(
      AnyCritical("[  900.5] nvidia-nvswitch0: SXid (PCI:0000:05:00.0): 20034, Fatal, Link 46 LTSSM Fault Up\n"));
  EXPECT_FALSE(AnyCritical(
      "[  900.5] nvidia-nvswitch2: SXid (PCI:0000:07:00.0): 20009, Non-fatal, Link 32 RX Short Error Rate\n"));
  // Surprise Down on a root port (Intel form).
  EXPECT_TRUE(AnyCritical(
      "[  700.000001] pcieport 0000:15:01.0: AER: Uncorrected (Fatal) error received: 0000:15:01.0\n"
      "[  700.000002] pcieport 0000:15:01.0: PCIe Bus Error: severity=Uncorrected (Fatal), type=Transaction Layer, "
      "(Receiver ID)\n"
      "[  700.000003] pcieport 0000:15:01.0:   device [8086:352a] error status/mask=00000020/00100000\n"
      "[  700.000004] pcieport 0000:15:01.0:    [ 5] SDES                   (First)\n"));
  // DPC containment (AMD form).
  EXPECT_TRUE(AnyCritical("[   80.0] pcieport 0000:40:03.1: DPC: containment event, status:0x1f01 source:0x0000\n"));
  // Corrected and non-fatal uncorrected errors wait for the timer.
  EXPECT_FALSE(
      AnyCritical("[  710.000001] pcieport 0000:17:01.0: AER: Corrected error received: 0000:18:00.0\n"
                  "[  710.000002] nvidia 0000:18:00.0: PCIe Bus Error: severity=Corrected, type=Physical Layer, "
                  "(Receiver ID)\n"
                  "[  710.000003] nvidia 0000:18:00.0:   device [10de:2330] error status/mask=00000001/0000e000\n"
                  "[  710.000004] nvidia 0000:18:00.0:    [ 0] RxErr                  (First)\n"));
  EXPECT_FALSE(AnyCritical(
      "[  720.000001] pcieport 0000:17:01.0: AER: Uncorrected (Non-Fatal) error received: 0000:18:00.0\n"
      "[  720.000002] nvidia 0000:18:00.0: PCIe Bus Error: severity=Uncorrected (Non-Fatal), type=Transaction "
      "Layer, (Requester ID)\n"
      "[  720.000003] nvidia 0000:18:00.0:    [12] Timeout               \n"));
}

Observation FromRedfishEvent(const std::string& json) {
  redfish::MapContext ctx;
  ctx.node = "node7";
  ctx.read_time_ns = kT0;
  auto r = redfish::MapEvent(Json::parse(json), ctx);
  EXPECT_EQ(r.observations.size(), 1u) << json;
  return r.observations.empty() ? Observation{} : r.observations.front();
}

TEST(DaemonCritical, RedfishPsuAndLeakEventsAtCriticalAreCritical) {
  EXPECT_TRUE(IsCritical(FromRedfishEvent(
      R"({"EventId":"41","EventType":"Alert","MessageSeverity":"Critical","MessageId":"Power.1.0.PowerSupplyFailed",)"
      R"("Message":"Power supply 2 failed.","MessageArgs":["2"],)"
      R"("OriginOfCondition":{"@odata.id":"/redfish/v1/Chassis/1/PowerSubsystem/PowerSupplies/2"}})")));
  EXPECT_TRUE(IsCritical(FromRedfishEvent(
      R"({"EventId":"42","MessageSeverity":"Critical","MessageId":"Environmental.1.0.LeakDetectedCritical",)"
      R"("Message":"A critical-level leak was detected in LeakDetector 'Tray 3'."})")));
  // HPE-style: Severity instead of MessageSeverity, the part only named by the origin.
  EXPECT_TRUE(IsCritical(FromRedfishEvent(
      R"({"EventId":"7","Severity":"Critical","MessageId":"iLOEvents.2.1.ServerPowerSupplyStatus",)"
      R"("Message":"The status changed.","OriginOfCondition":"/redfish/v1/Chassis/1/ThermalSubsystem/LeakDetection/LeakDetectors/3"})")));
  // The same parts at Warning, and a Critical event about something else, wait.
  EXPECT_FALSE(IsCritical(FromRedfishEvent(
      R"({"EventId":"43","MessageSeverity":"Warning","MessageId":"Power.1.0.PowerSupplyPredictiveFailure",)"
      R"("Message":"Power supply 1 predicts a failure."})")));
  EXPECT_FALSE(IsCritical(
      FromRedfishEvent(R"({"EventId":"44","MessageSeverity":"Critical","MessageId":"Security.1.0.AccessDenied",)"
                       R"("Message":"Login from 10.0.0.9 denied."})")));
}

TEST(DaemonCritical, PsuAndLeakReadingsAtCriticalHealthAreCritical) {
  Observation psu;
  psu.source = Source::kRedfish;
  psu.kind = ObsKind::kPsuState;
  psu.value = 2;  // Critical
  EXPECT_TRUE(IsCritical(psu));
  psu.value = 0;  // OK
  EXPECT_FALSE(IsCritical(psu));
  psu.value.reset();
  psu.attrs["state"] = "Absent";
  EXPECT_TRUE(IsCritical(psu));
  Observation leak;
  leak.source = Source::kRedfish;
  leak.kind = ObsKind::kLeak;
  leak.value = 1;  // Warning
  EXPECT_FALSE(IsCritical(leak));
  leak.value = 2;
  EXPECT_TRUE(IsCritical(leak));
  Observation lost;
  lost.source = Source::kNvml;
  lost.kind = ObsKind::kGpuLost;
  EXPECT_TRUE(IsCritical(lost));
  Observation temp;
  temp.kind = ObsKind::kTemperature;
  temp.value = 1e9;  // an absurd reading is the detectors' business, not a wake-up
  EXPECT_FALSE(IsCritical(temp));
}

// --- the kernel log sources wake as input arrives ---------------------------------

// Runs source.WaitForData(max) on another thread; the future is ready when it returned.
std::future<void> WaitAsync(AgentSource& source, int64_t max_wait_ns) {
  return std::async(std::launch::async, [&source, max_wait_ns] { source.WaitForData(max_wait_ns); });
}

// Whether the wait returned before the watchdog; if not, cancels it so the test ends.
bool Returned(std::future<void>& f, AgentSource& source) {
  if (f.wait_for(kWatchdog) == std::future_status::ready) return true;
  source.Cancel();
  f.wait();
  return false;
}

const char kXid79Kmsg[] =
    "2,%d,%d,-;NVRM: Xid (PCI:0000:%02x:00): 79, pid='<unknown>', name=<unknown>, GPU has "
    "fallen off the bus.\n";

std::string Kmsg79(int seq, int bus) {
  char buf[256];
  std::snprintf(buf, sizeof buf, kXid79Kmsg, seq, 5'000'000 + seq * 1000, bus);
  return buf;
}

TEST(DaemonKmsgWake, DeviceSourceOnAFifoWakesForEachRecordAndResumesBySequence) {
  ScratchDir dir("fifo");
  const std::string fifo = dir.File("kmsg");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  // Read-write keeps a writer on the FIFO for the whole test (no hang-up).
  const int writer = ::open(fifo.c_str(), O_RDWR | O_NONBLOCK);
  ASSERT_GE(writer, 0);
  SystemClock clock;
  auto source = MakeKmsgDeviceSource(fifo, "node7", clock, std::string("3"));
  ASSERT_TRUE(source->CanWaitForData());
  auto first = source->Poll(clock.MonotonicNs() + kSec);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_TRUE(first->observations.empty());
  for (int seq : {3, 4, 5}) {  // 3 is at the cursor: read but skipped, no observation
    auto waited = WaitAsync(*source, kHour);
    const std::string rec = Kmsg79(seq, 0x10 + seq);
    ASSERT_EQ(::write(writer, rec.data(), rec.size()), static_cast<ssize_t>(rec.size()));
    ASSERT_TRUE(Returned(waited, *source)) << "no wake-up for record " << seq;
    auto batch = source->Poll(clock.MonotonicNs() + kSec);
    ASSERT_TRUE(batch.ok()) << batch.status().ToString();
    if (seq == 3) {
      EXPECT_TRUE(batch->observations.empty());
      continue;
    }
    ASSERT_EQ(batch->observations.size(), 1u);
    EXPECT_EQ(batch->observations[0].kind, ObsKind::kXid);
    EXPECT_EQ(batch->observations[0].code, 79);
    EXPECT_TRUE(IsCritical(batch->observations[0]));
    ASSERT_EQ(batch->cursors.size(), 1u);
    EXPECT_EQ(batch->cursors[0].key, "last_seq");
    EXPECT_EQ(batch->cursors[0].value, std::to_string(seq));
  }
  // Nothing new: the cursor is not stored again.
  auto idle = source->Poll(clock.MonotonicNs() + kSec);
  ASSERT_TRUE(idle.ok());
  EXPECT_TRUE(idle->cursors.empty());
  ::close(writer);
}

// Both kernel log sources on fresh input: a FIFO standing in for /dev/kmsg (a writer
// held open for the whole test: no hang-up) and an empty log file.
struct BothKernelSources {
  explicit BothKernelSources(const std::string& tag)
      : dir(tag), fifo(dir.File("kmsg")), log(dir.File("kern.log")) {
    EXPECT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
    writer = ::open(fifo.c_str(), O_RDWR | O_NONBLOCK);
    AppendText(log, "");
    sources.push_back(MakeKmsgDeviceSource(fifo, "node7", clock, std::nullopt));
    sources.push_back(MakeKmsgFileSource(log, "node7", clock, std::nullopt));
  }
  ~BothKernelSources() {
    if (writer >= 0) ::close(writer);
  }
  bool ok() const { return writer >= 0; }

  ScratchDir dir;
  std::string fifo, log;
  int writer = -1;
  SystemClock clock;
  std::vector<std::unique_ptr<AgentSource>> sources;  // the device source first
};

TEST(DaemonKmsgWake, CancelEndsAWaitAtOnceAndEveryLaterOne) {
  BothKernelSources both("cancel");
  ASSERT_TRUE(both.ok());
  for (auto& s : both.sources) {
    ASSERT_TRUE(s->Poll(both.clock.MonotonicNs() + kSec).ok());
    auto waited = WaitAsync(*s, kHour);
    EXPECT_EQ(waited.wait_for(std::chrono::milliseconds(50)), std::future_status::timeout);  // really blocked
    s->Cancel();
    ASSERT_TRUE(Returned(waited, *s));
    auto again = WaitAsync(*s, kHour);
    ASSERT_TRUE(Returned(again, *s));
  }
}

// Told of new lines, a kernel log source does not wake at its (1 s) interval with nothing
// to read: an idle wake per second was a tenth of an idle agent's CPU (issue 16). It
// still wakes at once for a line.
TEST(DaemonKmsgWake, AWatchedSourceOutwaitsItsShortIntervalAndStillWakesForALine) {
  BothKernelSources both("outwait");
  ASSERT_TRUE(both.ok());
  const std::string rec = Kmsg79(1, 0x21);
  for (auto& s : both.sources) {
    ASSERT_TRUE(s->Poll(both.clock.MonotonicNs() + kSec).ok());
    auto waited = WaitAsync(*s, 10'000'000);  // a 10 ms interval
    EXPECT_EQ(waited.wait_for(std::chrono::milliseconds(300)), std::future_status::timeout);
    if (s == both.sources.front()) {
      ASSERT_EQ(::write(both.writer, rec.data(), rec.size()), static_cast<ssize_t>(rec.size()));
    } else {
      AppendText(both.log, rec.substr(rec.find(';') + 1));  // the same line, as a log file holds it
    }
    // Well before the 30 s safety net: woken by the line itself.
    EXPECT_EQ(waited.wait_for(std::chrono::seconds(20)), std::future_status::ready);
    ASSERT_TRUE(Returned(waited, *s));
    auto batch = s->Poll(both.clock.MonotonicNs() + kSec);
    ASSERT_TRUE(batch.ok()) << batch.status().ToString();
    ASSERT_EQ(batch->observations.size(), 1u);
    EXPECT_EQ(batch->observations[0].code, 79);
  }
}

// A log read from its start holds more than one poll's lines: no inotify event announces
// the rest, so the file source waits only its interval while a backlog remains, then
// outwaits it again.
TEST(DaemonKmsgWake, AFileBacklogIsReadAtTheIntervalNotTheLongWait) {
  ScratchDir dir("backlog");
  const std::string log = dir.File("kern.log");
  std::string text;
  for (int i = 0; i < 10'050; ++i) text += "usb 1-1: new high-speed USB device number " + std::to_string(i) + "\n";
  AppendText(log, text);
  SystemClock clock;
  auto source = MakeKmsgFileSource(log, "node7", clock, std::nullopt);
  ASSERT_TRUE(source->Poll(clock.MonotonicNs() + kSec).ok());  // the first 10,000 lines
  auto waited = WaitAsync(*source, 10'000'000);
  EXPECT_EQ(waited.wait_for(std::chrono::seconds(20)), std::future_status::ready);  // not the 30 s wait
  ASSERT_TRUE(Returned(waited, *source));
  ASSERT_TRUE(source->Poll(clock.MonotonicNs() + kSec).ok());  // the last 50
  auto idle = WaitAsync(*source, 10'000'000);
  EXPECT_EQ(idle.wait_for(std::chrono::milliseconds(300)), std::future_status::timeout);
  source->Cancel();
  ASSERT_TRUE(Returned(idle, *source));
}

TEST(DaemonKmsgWake, FileSourceWakesOnAppendCreationAndRotation) {
  ScratchDir dir("follow");
  const std::string log = dir.File("kern.log");
  SystemClock clock;
  auto source = MakeKmsgFileSource(log, "node7", clock, std::nullopt);
  ASSERT_TRUE(source->CanWaitForData());
  EXPECT_FALSE(source->Poll(clock.MonotonicNs() + kSec).ok());  // not there yet
  // Created: the directory watch sees it.
  auto waited = WaitAsync(*source, kHour);
  AppendText(log, Kmsg79(1, 0x3b));
  ASSERT_TRUE(Returned(waited, *source)) << "no wake-up when the log was created";
  auto batch = source->Poll(clock.MonotonicNs() + kSec);
  ASSERT_TRUE(batch.ok()) << batch.status().ToString();
  ASSERT_EQ(batch->observations.size(), 1u);
  ASSERT_EQ(batch->cursors.size(), 1u);
  const std::string after_first = batch->cursors[0].value;
  // Appended.
  waited = WaitAsync(*source, kHour);
  AppendText(log, Kmsg79(2, 0x5e));
  ASSERT_TRUE(Returned(waited, *source)) << "no wake-up for an appended line";
  batch = source->Poll(clock.MonotonicNs() + kSec);
  ASSERT_TRUE(batch.ok());
  ASSERT_EQ(batch->observations.size(), 1u);
  EXPECT_EQ(batch->observations[0].component.keys.count("bdf") ? batch->observations[0].component.keys.at("bdf")
                                                               : batch->observations[0].component.name,
            "0000:5e:00.0");
  ASSERT_EQ(batch->cursors.size(), 1u);
  EXPECT_NE(batch->cursors[0].value, after_first);
  // Rotated: renamed away, a new file at the path.
  ASSERT_EQ(std::rename(log.c_str(), (log + ".1").c_str()), 0);
  waited = WaitAsync(*source, kHour);
  AppendText(log, Kmsg79(3, 0x86));
  ASSERT_TRUE(Returned(waited, *source)) << "no wake-up after rotation";
  batch = source->Poll(clock.MonotonicNs() + kSec);
  ASSERT_TRUE(batch.ok());
  ASSERT_EQ(batch->observations.size(), 1u);
  EXPECT_EQ(batch->observations[0].code, 79);
}

TEST(DaemonKmsgWake, AnotherFileOfTheDirectoryDoesNotCountAsInput) {
  ScratchDir dir("others");
  const std::string log = dir.File("kern.log");
  AppendText(log, "");
  SystemClock clock;
  auto source = MakeKmsgFileSource(log, "node7", clock, std::nullopt);
  ASSERT_TRUE(source->Poll(clock.MonotonicNs() + kSec).ok());
  auto waited = WaitAsync(*source, kHour);
  AppendText(dir.File("other.log"), "unrelated\n");
  // Still waiting for our file; a line in it ends the wait.
  EXPECT_EQ(waited.wait_for(std::chrono::milliseconds(200)), std::future_status::timeout);
  AppendText(log, Kmsg79(1, 0x3b));
  ASSERT_TRUE(Returned(waited, *source));
}

// --- the agent: critical input evaluates at once, the rest waits for the timer ------

class DaemonAgentWake : public ::testing::Test {
 protected:
  DaemonAgentWake() : dir_("wake"), logger_(log_, LogLevel::kWarn, clock_) {
    config_ = QuietConfig(dir_);
    // Neither the evaluate timer nor the kmsg interval can fire during a test: whatever
    // is read or evaluated is because of a wake-up.
    config_.agent.evaluate_interval_ns = kHour;
    config_.kmsg.enabled = true;
    config_.kmsg.interval_ns = kHour;
    config_.kmsg.path = dir_.File("kern.log");
    AppendText(config_.kmsg.path, "");
  }

  // Waits (bounded by the watchdog) until `done` holds for the agent's stats.
  template <typename Pred>
  bool WaitUntil(Agent& agent, Pred done) {
    const auto until = std::chrono::steady_clock::now() + kWatchdog;
    while (std::chrono::steady_clock::now() < until) {
      if (done(agent.stats())) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return false;
  }

  ScratchDir dir_;
  SystemClock clock_;
  std::ostringstream log_;
  Logger logger_;
  AgentConfig config_;
};

TEST_F(DaemonAgentWake, ACriticalLineIsDiagnosedWithoutWaitingForTheTimer) {
  auto agent = Agent::Create(config_, clock_, logger_);
  ASSERT_TRUE(agent.ok()) << agent.status().ToString();
  std::mutex mu;
  std::vector<EvaluateResult> seen;
  (*agent)->SetEvaluationListener([&](const EvaluateResult& r, int64_t) {
    std::lock_guard<std::mutex> lock(mu);
    seen.push_back(r);
  });
  (*agent)->Start();
  // A program's XID 13 is read (the source wakes) but is not worth an evaluation.
  AppendText(config_.kmsg.path, Xid(13,
                                    "pid=4242, name=python3, Graphics SM Warp Exception on (GPC 0, TPC 1, "
                                    "SM 0): Out Of Range Address",
                                    "3b", Now().c_str()));
  ASSERT_TRUE(WaitUntil(**agent, [](const AgentStats& s) { return s.observations_inserted >= 1; }))
      << "the XID 13 line was never read";
  EXPECT_EQ((*agent)->stats().evaluations, 0u);
  // The GPU falls off the bus: read at once, evaluated at once.
  AppendText(config_.kmsg.path,
             Xid(79, "pid='<unknown>', name=<unknown>, GPU has fallen off the bus.", "b5", Now().c_str()));
  ASSERT_TRUE(WaitUntil(**agent, [](const AgentStats& s) { return s.diagnoses_stored >= 1; }))
      << "no diagnosis stored for XID 79";
  const AgentStats stats = (*agent)->stats();
  EXPECT_GE(stats.critical_batches, 1u);
  EXPECT_GE(stats.evaluations_on_demand, 1u);
  {
    std::lock_guard<std::mutex> lock(mu);
    ASSERT_FALSE(seen.empty());
    bool named = false;
    for (const EvaluateResult& r : seen) {
      if (r.diagnosis_stored && !r.diagnoses.empty() && r.diagnoses.front().fault_class == FaultClass::kGpuFellOffBus)
        named = true;
    }
    EXPECT_TRUE(named) << [&] {
      std::string d;
      for (const EvaluateResult& r : seen) {
        d += std::string(r.diagnosis_stored ? "stored " : "kept ") +
             (r.diagnoses.empty() ? "-" : std::string(ToString(r.diagnoses.front().fault_class))) + "; ";
      }
      return d;
    }();
  }
  ASSERT_TRUE((*agent)->Stop().ok());
}

// One critical observation (an NVML "GPU lost") per batch.
Result<SourceBatch> CriticalBatch(int i) {
  SourceBatch b;
  Observation o;
  o.time_ns = kT0 + i * 1'000'000;
  o.node = "node7";
  o.layer = Layer::kGpu;
  o.source = Source::kNvml;
  o.kind = ObsKind::kGpuLost;
  o.component = ComponentRef{ComponentType::kGpu, std::to_string(i % 8), {}};
  o.value = 1;
  o.text = "GPU lost";
  o.attrs["poll"] = std::to_string(i);
  b.observations.push_back(o);
  return b;
}

TEST_F(DaemonAgentWake, AStormOfCriticalBatchesCoalescesIntoOneRunningAndOnePendingEvaluation) {
  config_.kmsg.enabled = false;
  config_.workload.interval_ns = 1'000'000;  // the scripted source's poll interval: 1 ms
  constexpr int kBatches = 50;
  // Batch 1 first; the other 49 only once the evaluation it asked for is running (held
  // in the listener, which runs on the evaluating thread) so that they all ask while one
  // is in flight.
  auto source = std::make_unique<ScriptedSource>("workload", Layer::kGpu);
  ScriptedSource* script = source.get();
  script->Add(CriticalBatch(0));
  std::vector<std::unique_ptr<AgentSource>> sources;
  sources.push_back(std::move(source));
  auto agent = Agent::CreateWithSources(config_, std::move(sources), clock_, logger_);
  ASSERT_TRUE(agent.ok()) << agent.status().ToString();
  std::atomic<int> calls{0};
  std::atomic<bool> held_long_enough{false};
  (*agent)->SetEvaluationListener([&](const EvaluateResult&, int64_t) {
    if (calls++ > 0) return;
    const int polls_before = script->polls.load();
    for (int i = 1; i < kBatches; ++i) script->Add(CriticalBatch(i));
    const auto until = std::chrono::steady_clock::now() + kWatchdog;
    // A poll after the last batch's starts only once that batch was stored (one thread).
    while (script->polls.load() <= polls_before + kBatches && std::chrono::steady_clock::now() < until) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    held_long_enough = script->polls.load() > polls_before + kBatches;
  });
  (*agent)->Start();
  ASSERT_TRUE(WaitUntil(**agent, [](const AgentStats& s) { return s.critical_batches >= kBatches; }));
  // The pending request is served once the held evaluation returns, and nothing else.
  ASSERT_TRUE(WaitUntil(**agent, [](const AgentStats& s) { return s.evaluations >= 2; }));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // room for a (wrong) third one
  const AgentStats stats = (*agent)->stats();
  EXPECT_TRUE(held_long_enough.load());
  EXPECT_EQ(stats.critical_batches, static_cast<uint64_t>(kBatches));
  EXPECT_EQ(stats.evaluations_on_demand, 2u);
  EXPECT_EQ(stats.evaluations, 2u);
  ASSERT_TRUE((*agent)->Stop().ok());
}

// --- one identity per event: evaluating again stores nothing ----------------------

// Two processes' XID 13 exceptions on one GPU in the same second, each a GPC/TPC line
// and an ESR line (same pid); a multi-line AER (header, detail, status, error bit) on
// another GPU; and the same shapes in the kernel's own /dev/kmsg record form.
constexpr char kEventLog[] =
    "Mar  1 09:58:05 node7 kernel: NVRM: Xid (PCI:0000:3b:00): 13, pid=4242, name=python3, Graphics SM Warp "
    "Exception on (GPC 0, TPC 1, SM 0): Out Of Range Address\n"
    "Mar  1 09:58:05 node7 kernel: NVRM: Xid (PCI:0000:3b:00): 13, pid=4242, name=python3, Graphics Exception: ESR "
    "0x505648=0x102000e 0x505650=0x0 0x505644=0xd3eff2 0x50564c=0x7f\n"
    "Mar  1 09:58:05 node7 kernel: NVRM: Xid (PCI:0000:3b:00): 13, pid=5151, name=train.py, Graphics SM Global "
    "Exception on (GPC 4, TPC 2, SM 1): Multiple Warp Errors\n"
    "Mar  1 09:58:05 node7 kernel: NVRM: Xid (PCI:0000:3b:00): 13, pid=5151, name=train.py, Graphics Exception: ESR "
    "0x524e48=0x4000000 0x524e50=0x20 0x524e44=0x1e0000 0x524e4c=0x0\n"
    "Mar  1 09:58:20 node7 kernel: pcieport 0000:17:01.0: AER: Uncorrected (Non-Fatal) error received: "
    "0000:18:00.0\n"
    "Mar  1 09:58:20 node7 kernel: nvidia 0000:18:00.0: PCIe Bus Error: severity=Uncorrected (Non-Fatal), "
    "type=Transaction Layer, (Requester ID)\n"
    "Mar  1 09:58:20 node7 kernel: nvidia 0000:18:00.0:   device [10de:2330] error status/mask=00004000/00000000\n"
    "Mar  1 09:58:20 node7 kernel: nvidia 0000:18:00.0:    [14] CmpltTO                (First)\n"
    "4,900,6000000000,-;NVRM: Xid (PCI:0000:86:00): 13, pid=99, name=bench, Graphics SM Warp Exception on (GPC 2, "
    "TPC 0, SM 1): Illegal Instruction Encoding\n"
    "4,901,6000000000,-;NVRM: Xid (PCI:0000:86:00): 13, pid=99, name=bench, Graphics Exception: ESR "
    "0x515648=0x102000e 0x515650=0x0\n"
    "3,902,6000100000,-;pcieport 0000:85:01.0: AER: Uncorrected (Non-Fatal) error received: 0000:86:00.0\n"
    "3,903,6000100001,-;nvidia 0000:86:00.0: PCIe Bus Error: severity=Uncorrected (Non-Fatal), type=Transaction "
    "Layer, (Requester ID)\n"
    "3,904,6000100002,-;nvidia 0000:86:00.0:   device [10de:2330] error status/mask=00100000/00000000\n"
    "3,905,6000100003,-;nvidia 0000:86:00.0:    [20] UnsupReq               (First)\n";

TEST(DaemonFindingIdentity, MultiLineEventsAreOneFindingAndEvaluatingAgainStoresNothing) {
  ScratchDir dir("identity");
  FakeClock clock(kT0, 10'000 * kSec);
  std::ostringstream log;
  Logger logger(log, LogLevel::kWarn, clock);
  AgentConfig config = QuietConfig(dir);
  config.isolate.window_ns = 3650LL * 86400 * kSec;
  config.kmsg.enabled = true;
  config.kmsg.path = dir.File("kern.log");
  AppendText(config.kmsg.path, kEventLog);
  auto agent = Agent::Create(config, clock, logger);
  ASSERT_TRUE(agent.ok()) << agent.status().ToString();
  ASSERT_TRUE((*agent)->RunOnce().ok());
  const uint64_t stored = (*agent)->stats().findings_stored;
  for (int i = 0; i < 40; ++i) {
    clock.Advance(5 * kSec);
    ASSERT_TRUE((*agent)->RunOnce().ok());
  }
  EXPECT_EQ((*agent)->stats().findings_stored, stored);
  ASSERT_TRUE((*agent)->Stop().ok());
  auto store = Store::Open(config.agent.store_path);
  ASSERT_TRUE(store.ok());
  auto rows = (*store)->ListFindings({});
  ASSERT_TRUE(rows.ok());
  EXPECT_EQ(rows->rows.size(), stored);
  // Per component and class: how many findings, and every one has a detector key.
  std::map<std::string, int> per;
  std::set<std::string> keys;
  for (const auto& row : rows->rows) {
    const Finding& f = row.value;
    EXPECT_FALSE(f.key.empty()) << f.summary;
    EXPECT_TRUE(keys.insert(FindingKey(f)).second) << "two rows for one finding: " << f.summary;
    ++per[std::string(ToString(f.fault_class)) + " " + f.component.Id()];
  }
  // GPU 3b: two exceptions (two units, two processes), each one finding for its two lines.
  int gpu3b = 0, gpu86 = 0, aer18 = 0, aer86 = 0;
  for (const auto& [k, n] : per) {
    if (k.find("0000:3b:00.0") != std::string::npos && k.rfind("user_application", 0) == 0) gpu3b += n;
    if (k.find("0000:86:00.0") != std::string::npos && k.rfind("user_application", 0) == 0) gpu86 += n;
    if (k == "pcie_link_degraded pcie/0000:18:00.0") aer18 += n;
    if (k == "pcie_link_degraded pcie/0000:86:00.0") aer86 += n;
  }
  EXPECT_EQ(gpu3b, 2);
  EXPECT_EQ(gpu86, 1);
  EXPECT_EQ(aer18, 1);
  EXPECT_EQ(aer86, 1);
  for (const auto& row : rows->rows) {
    if (row.value.component.Id() == "pcie/0000:18:00.0") {
      EXPECT_EQ(row.value.count, 1u) << "AER lines split";
    }
  }
}

TEST(DaemonFindingIdentity, TheKeyIsTheDetectorsAndIgnoresEvidenceText) {
  Finding a;
  a.layer = Layer::kOs;
  a.fault_class = FaultClass::kUserApplication;
  a.component = ComponentRef{ComponentType::kGpu, "3", {}};
  a.first_ns = kT0;
  a.key = "program|16:0000:3b:00.0|13|0/1@m5000000";
  Evidence e;
  e.text = "Graphics SM Warp Exception on (GPC 0, TPC 1, SM 0)";
  a.evidence.push_back(e);
  Finding b = a;
  b.evidence.front().text = "Graphics Exception: ESR 0x505648=0x102000e";  // the ESR line came first this time
  b.first_ns = kT0 - 1000;                                                 // an earlier line joined it
  EXPECT_EQ(FindingKey(a), FindingKey(b));
  Finding other = a;
  other.key = "program|16:0000:3b:00.0|13|4/2@m5000000";  // another unit, same instant
  EXPECT_NE(FindingKey(a), FindingKey(other));
  // The key survives the store's JSON payload.
  Finding back = Json(a).get<Finding>();
  EXPECT_EQ(back.key, a.key);
  EXPECT_EQ(FindingKey(back), FindingKey(a));
}

}  // namespace
}  // namespace faultline::daemon
