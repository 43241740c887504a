// Change-only storage: the ChangeFilter on its own, then through Pipeline::Ingest with a
// real (in-memory) store, then the config keys that drive it.
#include "daemon/change_filter.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>

#include "daemon/config.h"
#include "daemon/pipeline.h"
#include "daemon/sources.h"
#include "store/store.h"
#include "test_util.h"

namespace faultline::daemon {
namespace {

using testing::kSec;
using testing::kT0;
constexpr int64_t kMin = 60 * kSec;

// An NVML GPU temperature reading of gpu/0 at `t`.
Observation Temp(int64_t t, double celsius) {
  Observation o;
  o.time_ns = t;
  o.node = "node7";
  o.layer = Layer::kGpu;
  o.component = GpuComponent("0");
  o.kind = ObsKind::kTemperature;
  o.value = celsius;
  o.source = Source::kNvml;
  o.raw = "nvmlDeviceGetTemperature(gpu)=" + std::to_string(celsius);
  o.attrs = {{"sensor", "gpu"}, {"slowdown", "87"}};
  return o;
}

// An NVML ECC corrected-error counter of gpu/0 (`counter` = volatile or aggregate).
Observation Ecc(int64_t t, double count, const std::string& counter) {
  Observation o = Temp(t, count);
  o.kind = ObsKind::kEccSbe;
  o.raw = "nvmlDeviceGetTotalEccErrors(corrected," + counter + ")=" + std::to_string(count);
  o.attrs = {{"counter", counter}};
  return o;
}

// NVML clock event reasons of gpu/0.
Observation Mask(int64_t t, uint64_t mask) {
  Observation o = Temp(t, static_cast<double>(mask));
  o.kind = ObsKind::kClockThrottle;
  o.attrs = {{"mask", "0x" + std::to_string(mask)}};
  return o;
}

TEST(DaemonChangeFilter, FlatSeriesIsStoredOncePerHeartbeat) {
  ChangeFilter filter(ChangeFilterOptions{.heartbeat_ns = 5 * kMin});
  std::vector<int64_t> stored;
  for (int64_t s = 0; s <= 11 * 60; ++s) {
    if (filter.Keep(Temp(kT0 + s * kSec, 41))) stored.push_back(s);
  }
  EXPECT_EQ(stored, (std::vector<int64_t>{0, 300, 600}));
}

TEST(DaemonChangeFilter, AChangeIsStoredAtOnceAndSoIsTheWayBack) {
  ChangeFilter filter;
  EXPECT_TRUE(filter.Keep(Temp(kT0, 41)));
  EXPECT_FALSE(filter.Keep(Temp(kT0 + kSec, 41)));
  EXPECT_TRUE(filter.Keep(Temp(kT0 + 2 * kSec, 42)));
  EXPECT_FALSE(filter.Keep(Temp(kT0 + 3 * kSec, 42)));
  EXPECT_TRUE(filter.Keep(Temp(kT0 + 4 * kSec, 41)));
}

TEST(DaemonChangeFilter, ADescriptiveAttrChangeIsStoredEvenWithTheSameValue) {
  ChangeFilter filter;
  Observation psu;
  psu.time_ns = kT0;
  psu.node = "node7";
  psu.layer = Layer::kOob;
  psu.component = ComponentRef{ComponentType::kPsu, "Bay1", {}};
  psu.kind = ObsKind::kPsuState;
  psu.source = Source::kRedfish;
  psu.value = 0;
  psu.attrs = {{"state", "Enabled"}, {"health", "OK"}};
  EXPECT_TRUE(filter.Keep(psu));
  psu.time_ns += kSec;
  psu.attrs["state"] = "UnavailableOffline";
  EXPECT_TRUE(filter.Keep(psu));
  psu.time_ns += kSec;
  psu.attrs["state"] = "Enabled";  // back: a reader must see that too
  EXPECT_TRUE(filter.Keep(psu));
  psu.time_ns += kSec;
  EXPECT_FALSE(filter.Keep(psu));
}

TEST(DaemonChangeFilter, TwoSeriesDifferingOnlyByASeriesAttrAreBothStored) {
  ChangeFilter filter;
  EXPECT_TRUE(filter.Keep(Ecc(kT0, 3, "volatile")));
  EXPECT_TRUE(filter.Keep(Ecc(kT0, 3, "aggregate")));
  EXPECT_FALSE(filter.Keep(Ecc(kT0 + kSec, 3, "volatile")));
  EXPECT_FALSE(filter.Keep(Ecc(kT0 + kSec, 3, "aggregate")));
  EXPECT_TRUE(filter.Keep(Ecc(kT0 + 2 * kSec, 4, "aggregate")));
  EXPECT_EQ(filter.series(), 2u);
  EXPECT_NE(SeriesKey(Ecc(kT0, 3, "volatile")), SeriesKey(Ecc(kT0, 3, "aggregate")));
  // The same counter on another node or GPU is another series too.
  Observation other_gpu = Ecc(kT0, 3, "volatile");
  other_gpu.component = GpuComponent("1");
  EXPECT_NE(SeriesKey(other_gpu), SeriesKey(Ecc(kT0, 3, "volatile")));
}

TEST(DaemonChangeFilter, KernelLogSelEventsWorkloadAndOneOffKindsAreNeverFiltered) {
  Observation xid;
  xid.node = "node7";
  xid.source = Source::kKmsg;
  xid.kind = ObsKind::kXid;
  xid.code = 79;
  xid.component = GpuComponent("0");
  Observation sel = xid;  // a log entry: has a sequence number
  sel.source = Source::kRedfish;
  sel.kind = ObsKind::kSelEntry;
  sel.seq = 7;
  Observation event = sel;  // an SSE event: no sequence number, still an entry
  event.seq.reset();
  event.attrs = {{"entry_type", "Event"}, {"event_id", "1"}};
  Observation step = testing::Step(kT0, 1.5);
  Observation lost = Temp(kT0, 1);
  lost.kind = ObsKind::kGpuLost;
  Observation sampled_with_seq = Temp(kT0, 41);
  sampled_with_seq.seq = 12;
  Observation ipmi = Temp(kT0, 41);
  ipmi.source = Source::kIpmi;
  ChangeFilter filter;
  for (Observation o : {xid, sel, event, step, lost, sampled_with_seq, ipmi}) {
    EXPECT_FALSE(IsPeriodicReading(o)) << ToString(o.source) << " " << ToString(o.kind);
    for (int i = 0; i < 3; ++i) {
      o.time_ns = kT0 + i * kSec;
      EXPECT_TRUE(filter.Keep(o)) << ToString(o.kind) << " #" << i;
    }
  }
  EXPECT_EQ(filter.series(), 0u);
}

TEST(DaemonChangeFilter, SysfsAerCountersAndDcgmGaugesArePeriodicReadings) {
  Observation aer = Temp(kT0, 0);
  aer.source = Source::kSysfs;
  aer.kind = ObsKind::kPcieAer;
  aer.attrs = {{"severity", "correctable"}, {"error", "RxErr"}};
  EXPECT_TRUE(IsPeriodicReading(aer));
  Observation fatal = aer;
  fatal.attrs["severity"] = "fatal";
  EXPECT_NE(SeriesKey(aer), SeriesKey(fatal));
  Observation violation = Temp(kT0, 10);
  violation.source = Source::kDcgmExporter;
  violation.kind = ObsKind::kOther;
  violation.attrs = {{"metric", "power_violation_us"}};
  Observation thermal = violation;
  thermal.attrs = {{"metric", "thermal_violation_us"}};
  EXPECT_TRUE(IsPeriodicReading(violation));
  EXPECT_NE(SeriesKey(violation), SeriesKey(thermal));
}

TEST(DaemonChangeFilter, AReadingWithoutTimeOrFromAClockSteppedBackIsStored) {
  ChangeFilter filter;
  EXPECT_TRUE(filter.Keep(Temp(kT0, 41)));
  EXPECT_TRUE(filter.Keep(Temp(0, 41)));
  EXPECT_TRUE(filter.Keep(Temp(kT0 - kSec, 41)));
  EXPECT_FALSE(filter.Keep(Temp(kT0, 41)));
}

TEST(DaemonChangeFilter, SeriesUnseenForTwoHeartbeatsAreForgotten) {
  ChangeFilter filter(ChangeFilterOptions{.heartbeat_ns = kMin});
  EXPECT_TRUE(filter.Keep(Ecc(kT0, 3, "volatile")));
  for (int64_t s = 0; s <= 200; s += 10) (void)filter.Keep(Temp(kT0 + s * kSec, 41));
  EXPECT_EQ(filter.series(), 1u);  // only the temperature is left
  // Back after the eviction: stored again although unchanged.
  EXPECT_TRUE(filter.Keep(Ecc(kT0 + 201 * kSec, 3, "volatile")));
}

TEST(DaemonChangeFilter, MemoryIsBoundedByMaxSeries) {
  ChangeFilter filter(ChangeFilterOptions{.heartbeat_ns = kMin, .max_series = 3});
  for (int gpu = 0; gpu < 10; ++gpu) {
    Observation o = Temp(kT0, 41);
    o.component = GpuComponent(std::to_string(gpu));
    EXPECT_TRUE(filter.Keep(o));
    EXPECT_LE(filter.series(), 3u);
  }
}

TEST(DaemonChangeFilter, ForgetAndPrime) {
  ChangeFilter filter;
  EXPECT_TRUE(filter.Keep(Temp(kT0, 41)));
  filter.Forget(Temp(kT0, 41));
  EXPECT_TRUE(filter.Keep(Temp(kT0 + kSec, 41)));  // as if never stored
  ChangeFilter primed;
  primed.Prime(Temp(kT0, 41));
  EXPECT_FALSE(primed.Keep(Temp(kT0 + kSec, 41)));
  EXPECT_TRUE(primed.Keep(Temp(kT0 + 2 * kSec, 40)));
}

// Guards the series-attr table against the real collector: in an unchanged 8-GPU sample
// every reading is its own series, so the second sample stores nothing.
TEST(DaemonChangeFilter, EveryReadingOfAFakeNvmlSampleIsItsOwnSeries) {
  const std::string library = std::string(FAULTLINE_BINARY_DIR) + "/src/sim/fake_nvml/libnvidia-ml.so.1";
  const std::string state = std::string(FAULTLINE_SOURCE_DIR) + "/fuzz/corpus/fake_nvml_state/hgx_h100_8gpu.json";
  if (!std::filesystem::exists(library) || !std::filesystem::exists(state)) GTEST_SKIP() << "fake NVML absent";
  ::setenv("FAKE_NVML_STATE", state.c_str(), 1);
  FakeClock clock(kT0, testing::kBoot);
  NvmlSection options;
  options.library_path = library;
  auto source = MakeNvmlSource(options, "node7", clock);
  ChangeFilter filter;
  size_t first_kept = 0, second_kept = 0;
  auto first = source->Poll(int64_t{1} << 62);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  for (const Observation& o : first->observations) first_kept += filter.Keep(o);
  clock.Advance(kSec);
  auto second = source->Poll(int64_t{1} << 62);
  ASSERT_TRUE(second.ok());
  for (const Observation& o : second->observations) second_kept += filter.Keep(o);
  EXPECT_GT(first->observations.size(), 100u);
  EXPECT_EQ(first_kept, first->observations.size());
  EXPECT_EQ(filter.series(), first->observations.size());
  EXPECT_EQ(second_kept, 0u);
}

// --- Through the pipeline ---

std::unique_ptr<Store> MemoryStore() { return std::move(Store::Open(":memory:").value()); }

size_t StoredRows(Store& store) {
  ObservationQuery q;
  q.limit = 0;
  return store.QueryObservations(q)->rows.size();
}

SourceBatch Batch(std::vector<Observation> observations, std::vector<Cursor> cursors = {}) {
  SourceBatch b;
  b.observations = std::move(observations);
  b.cursors = std::move(cursors);
  return b;
}

TEST(DaemonPipelineStorage, FlatSeriesIsStoredOncePerHeartbeatAndChangesAtOnce) {
  auto store = MemoryStore();
  Pipeline pipeline(*store, "node7", PipelineOptions{}, nullptr);
  for (int64_t s = 0; s < 10 * 60; s += 10) {
    const double celsius = s >= 400 && s < 420 ? 45 : 41;  // one 20 s bump
    ASSERT_TRUE(pipeline
                    .Ingest(Layer::kGpu, Batch({Temp(kT0 + s * kSec, celsius), Ecc(kT0 + s * kSec, 3, "volatile"),
                                                Ecc(kT0 + s * kSec, 3, "aggregate")}))
                    .ok());
  }
  // Temperature: 0, 300, 400 (bump), 420 (back); each ECC counter: 0, 300.
  EXPECT_EQ(StoredRows(*store), 8u);
  EXPECT_EQ(pipeline.stats().observations_unchanged, 60u * 3 - 8);
}

TEST(DaemonPipelineStorage, CursorsAreSavedWhenEveryObservationIsFilteredOut) {
  auto store = MemoryStore();
  Pipeline pipeline(*store, "node7", PipelineOptions{}, nullptr);
  ASSERT_TRUE(pipeline.Ingest(Layer::kGpu, Batch({Temp(kT0, 41)}, {{"node7", "nvml", "pos", "1"}})).ok());
  auto second = pipeline.Ingest(Layer::kGpu, Batch({Temp(kT0 + kSec, 41)}, {{"node7", "nvml", "pos", "2"}}));
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  EXPECT_EQ(second->inserted, 0u);
  EXPECT_EQ(StoredRows(*store), 1u);
  auto cursor = store->GetCursor("node7", "nvml", "pos");
  ASSERT_TRUE(cursor.ok());
  EXPECT_EQ(cursor->value_or(""), "2");
}

TEST(DaemonPipelineStorage, KernelSelAndWorkloadObservationsAreAllStored) {
  auto store = MemoryStore();
  Pipeline pipeline(*store, "node7", PipelineOptions{}, nullptr);
  for (int i = 0; i < 3; ++i) {
    Observation xid;
    xid.time_ns = kT0 + i * kSec;
    xid.seq = static_cast<uint64_t>(100 + i);
    xid.layer = Layer::kOs;
    xid.source = Source::kKmsg;
    xid.kind = ObsKind::kXid;
    xid.code = 79;
    xid.component = GpuComponent("0");
    xid.raw = "NVRM: Xid (PCI:0000:b5:00): 79, GPU has fallen off the bus.";
    Observation sel = xid;
    sel.source = Source::kRedfish;
    sel.layer = Layer::kOob;
    sel.kind = ObsKind::kSelEntry;
    sel.raw = "{\"Id\":\"" + std::to_string(i) + "\"}";
    Observation step = testing::Step(kT0 + i * kSec, 1.5);
    ASSERT_TRUE(pipeline.Ingest(Layer::kOs, Batch({xid, sel, step})).ok());
  }
  EXPECT_EQ(StoredRows(*store), 9u);
  EXPECT_EQ(pipeline.stats().observations_unchanged, 0u);
}

TEST(DaemonPipelineStorage, DetectorsSeeEverySampleOfASeriesStoredOnce) {
  auto store = MemoryStore();
  PipelineOptions options;
  options.store_unchanged_heartbeat_ns = 30 * kMin;
  Pipeline pipeline(*store, "node7", options, nullptr);
  // HW_SLOWDOWN (0x8) held for 8 minutes, sampled every 10 s: one stored row.
  for (int64_t s = 0; s <= 8 * 60; s += 10) {
    ASSERT_TRUE(pipeline.Ingest(Layer::kGpu, Batch({Mask(kT0 + s * kSec, 0x8)})).ok());
  }
  EXPECT_EQ(StoredRows(*store), 1u);
  auto result = pipeline.Evaluate(kT0 + 8 * kMin);
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  auto findings = store->ListFindings(RecordQuery{});
  ASSERT_TRUE(findings.ok());
  bool slowdown = false;
  for (const auto& row : findings->rows) slowdown |= row.value.fault_class == FaultClass::kGpuPowerBrake;
  EXPECT_TRUE(slowdown) << "sustained HW_SLOWDOWN not found from " << findings->rows.size() << " findings";
}

TEST(DaemonPipelineStorage, StoreEverySampleTurnsTheFilterOff) {
  auto store = MemoryStore();
  PipelineOptions options;
  options.store_unchanged_heartbeat_ns = 0;
  Pipeline pipeline(*store, "node7", options, nullptr);
  for (int s = 0; s < 5; ++s) ASSERT_TRUE(pipeline.Ingest(Layer::kGpu, Batch({Temp(kT0 + s * kSec, 41)})).ok());
  EXPECT_EQ(StoredRows(*store), 5u);
}

TEST(DaemonPipelineStorage, WarmStartPrimesTheFilterFromTheStore) {
  auto store = MemoryStore();
  {
    Pipeline first(*store, "node7", PipelineOptions{}, nullptr);
    ASSERT_TRUE(first.Ingest(Layer::kGpu, Batch({Temp(kT0, 41), Ecc(kT0, 3, "volatile")})).ok());
  }
  Pipeline restarted(*store, "node7", PipelineOptions{}, nullptr);
  ASSERT_TRUE(restarted.WarmStart(kT0 + 10 * kSec).ok());
  ASSERT_TRUE(
      restarted.Ingest(Layer::kGpu, Batch({Temp(kT0 + 10 * kSec, 41), Ecc(kT0 + 10 * kSec, 4, "volatile")})).ok());
  EXPECT_EQ(StoredRows(*store), 3u);  // the unchanged temperature was not stored again
}

// --- Config ---

TEST(DaemonStorageConfig, DefaultsAndKeys) {
  auto defaults = ParseAgentConfig("");
  ASSERT_TRUE(defaults.ok());
  EXPECT_EQ(defaults->agent.store_unchanged_heartbeat_ns, 5 * kMin);
  EXPECT_FALSE(defaults->agent.store_every_sample);
  EXPECT_TRUE(defaults->redfish.events);
  EXPECT_EQ(PipelineOptionsFor(*defaults).store_unchanged_heartbeat_ns, 5 * kMin);

  auto set = ParseAgentConfig("[agent]\nstore_unchanged_heartbeat = \"90s\"\n[redfish]\nevents = false\n");
  ASSERT_TRUE(set.ok()) << set.status().ToString();
  EXPECT_EQ(set->agent.store_unchanged_heartbeat_ns, 90 * kSec);
  EXPECT_FALSE(set->redfish.events);
  EXPECT_EQ(PipelineOptionsFor(*set).store_unchanged_heartbeat_ns, 90 * kSec);

  auto every = ParseAgentConfig("[agent]\nstore_every_sample = true\n[isolate]\nwindow = \"1h\"\n");
  ASSERT_TRUE(every.ok()) << every.status().ToString();
  EXPECT_EQ(PipelineOptionsFor(*every).store_unchanged_heartbeat_ns, 0);
  EXPECT_EQ(PipelineOptionsFor(*every).window_ns, 60 * kMin);

  auto printed = ParseAgentConfig(DefaultAgentConfigToml());
  ASSERT_TRUE(printed.ok()) << printed.status().ToString();
  EXPECT_EQ(printed->agent.store_unchanged_heartbeat_ns, 5 * kMin);
  EXPECT_FALSE(printed->agent.store_every_sample);
  EXPECT_TRUE(printed->redfish.events);
}

TEST(DaemonStorageConfig, BadValuesNameTheKey) {
  for (const char* text :
       {"[agent]\nstore_unchanged_heartbeat = 0\n", "[agent]\nstore_unchanged_heartbeat = \"off\"\n",
        "[agent]\nstore_unchanged_heartbeat = \"-5m\"\n", "[agent]\nstore_unchanged_heartbeat = true\n"}) {
    auto c = ParseAgentConfig(text);
    ASSERT_FALSE(c.ok()) << text;
    EXPECT_EQ(c.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(c.status().message().find("agent.store_unchanged_heartbeat"), std::string::npos) << c.status().message();
  }
  for (const char* text : {"[agent]\nstore_every_sample = \"yes\"\n", "[agent]\nstore_every_sample = 1\n"}) {
    auto c = ParseAgentConfig(text);
    ASSERT_FALSE(c.ok()) << text;
    EXPECT_NE(c.status().message().find("agent.store_every_sample"), std::string::npos) << c.status().message();
  }
  auto events = ParseAgentConfig("[redfish]\nevents = \"on\"\n");
  ASSERT_FALSE(events.ok());
  EXPECT_NE(events.status().message().find("redfish.events"), std::string::npos) << events.status().message();
}

}  // namespace
}  // namespace faultline::daemon
