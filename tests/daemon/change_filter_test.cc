// Change-only storage: the ChangeFilter on its own, then through Pipeline::Ingest with a
// real (in-memory) store, then the config keys that drive it.
#include "daemon/change_filter.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <cmath>
#include <filesystem>
#include <set>

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

// True when the filter asks for a row.
bool Stored(ChangeFilter& filter, const Observation& obs) { return filter.Decide(obs) == StoreDecision::kStore; }

TEST(DaemonChangeFilter, FlatSeriesIsStoredOnceAndMarkedSeenOncePerHeartbeat) {
  ChangeFilter filter(ChangeFilterOptions{.heartbeat_ns = 5 * kMin});
  std::vector<int64_t> stored, seen;
  for (int64_t s = 0; s <= 11 * 60; ++s) {
    const StoreDecision d = filter.Decide(Temp(kT0 + s * kSec, 41));
    if (d == StoreDecision::kStore) stored.push_back(s);
    if (d == StoreDecision::kSeen) seen.push_back(s);
  }
  EXPECT_EQ(stored, (std::vector<int64_t>{0}));
  EXPECT_EQ(seen, (std::vector<int64_t>{300, 600}));
}

TEST(DaemonChangeFilter, AChangeIsStoredAtOnceAndSoIsTheWayBack) {
  ChangeFilter filter;
  EXPECT_TRUE(Stored(filter, Temp(kT0, 41)));
  EXPECT_FALSE(Stored(filter, Temp(kT0 + kSec, 41)));
  EXPECT_TRUE(Stored(filter, Temp(kT0 + 2 * kSec, 43)));
  EXPECT_FALSE(Stored(filter, Temp(kT0 + 3 * kSec, 43)));
  EXPECT_TRUE(Stored(filter, Temp(kT0 + 4 * kSec, 41)));
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
  EXPECT_TRUE(Stored(filter, psu));
  psu.time_ns += kSec;
  psu.attrs["state"] = "UnavailableOffline";
  EXPECT_TRUE(Stored(filter, psu));
  psu.time_ns += kSec;
  psu.attrs["state"] = "Enabled";  // back: a reader must see that too
  EXPECT_TRUE(Stored(filter, psu));
  psu.time_ns += kSec;
  EXPECT_FALSE(Stored(filter, psu));
}

TEST(DaemonChangeFilter, TwoSeriesDifferingOnlyByASeriesAttrAreBothStored) {
  ChangeFilter filter;
  EXPECT_TRUE(Stored(filter, Ecc(kT0, 3, "volatile")));
  EXPECT_TRUE(Stored(filter, Ecc(kT0, 3, "aggregate")));
  EXPECT_FALSE(Stored(filter, Ecc(kT0 + kSec, 3, "volatile")));
  EXPECT_FALSE(Stored(filter, Ecc(kT0 + kSec, 3, "aggregate")));
  EXPECT_TRUE(Stored(filter, Ecc(kT0 + 2 * kSec, 4, "aggregate")));
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
      EXPECT_TRUE(Stored(filter, o)) << ToString(o.kind) << " #" << i;
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
  EXPECT_TRUE(Stored(filter, Temp(kT0, 41)));
  EXPECT_TRUE(Stored(filter, Temp(0, 41)));
  EXPECT_TRUE(Stored(filter, Temp(kT0 - kSec, 41)));
  EXPECT_FALSE(Stored(filter, Temp(kT0, 41)));
}

TEST(DaemonChangeFilter, AGapLongerThanTwoHeartbeatsStartsANewRow) {
  ChangeFilter filter(ChangeFilterOptions{.heartbeat_ns = 5 * kMin});
  EXPECT_EQ(filter.Decide(Temp(kT0, 41)), StoreDecision::kStore);
  EXPECT_EQ(filter.Decide(Temp(kT0 + 4 * kMin, 41)), StoreDecision::kSkip);
  // Read once per heartbeat exactly (a slow schedule): marks, no rows.
  EXPECT_EQ(filter.Decide(Temp(kT0 + 9 * kMin, 41)), StoreDecision::kSeen);
  EXPECT_EQ(filter.Decide(Temp(kT0 + 14 * kMin, 41)), StoreDecision::kSeen);
  // Not read for 11 minutes (a source down): stored again, unchanged as it is.
  EXPECT_EQ(filter.Decide(Temp(kT0 + 25 * kMin, 41)), StoreDecision::kStore);
  EXPECT_EQ(filter.Decide(Temp(kT0 + 30 * kMin, 41)), StoreDecision::kSeen);
}

TEST(DaemonChangeFilter, SeriesUnseenForTwoHeartbeatsAreForgotten) {
  ChangeFilter filter(ChangeFilterOptions{.heartbeat_ns = kMin});
  EXPECT_TRUE(Stored(filter, Ecc(kT0, 3, "volatile")));
  for (int64_t s = 0; s <= 200; s += 10) (void)Stored(filter, Temp(kT0 + s * kSec, 41));
  EXPECT_EQ(filter.series(), 1u);  // only the temperature is left
  // Back after the eviction: stored again although unchanged.
  EXPECT_TRUE(Stored(filter, Ecc(kT0 + 201 * kSec, 3, "volatile")));
}

TEST(DaemonChangeFilter, MemoryIsBoundedByMaxSeries) {
  ChangeFilter filter(ChangeFilterOptions{.heartbeat_ns = kMin, .max_series = 3});
  for (int gpu = 0; gpu < 10; ++gpu) {
    Observation o = Temp(kT0, 41);
    o.component = GpuComponent(std::to_string(gpu));
    EXPECT_TRUE(Stored(filter, o));
    EXPECT_LE(filter.series(), 3u);
  }
}

TEST(DaemonChangeFilter, ForgetAndPrime) {
  ChangeFilter filter;
  EXPECT_TRUE(Stored(filter, Temp(kT0, 41)));
  filter.Forget(Temp(kT0, 41));
  EXPECT_TRUE(Stored(filter, Temp(kT0 + kSec, 41)));  // as if never stored
  ChangeFilter primed;
  primed.Prime(Temp(kT0, 41));
  EXPECT_FALSE(Stored(primed, Temp(kT0 + kSec, 41)));
  EXPECT_TRUE(Stored(primed, Temp(kT0 + 2 * kSec, 38)));
}

// Board power of gpu/0 from `source`.
Observation Power(int64_t t, double watts, Source source = Source::kNvml) {
  Observation o = Temp(t, watts);
  o.kind = ObsKind::kPower;
  o.source = source;
  o.raw = "power=" + std::to_string(watts);
  o.attrs.clear();
  return o;
}

TEST(DaemonChangeFilter, DeadbandComparesGpuPowerWithTheStoredValueSoDriftIsStored) {
  ChangeFilter filter;
  EXPECT_EQ(filter.Decide(Power(kT0, 400)), StoreDecision::kStore);
  // Within 10% of 400 W (40 W), each step small, the drift adds up against the stored value.
  EXPECT_EQ(filter.Decide(Power(kT0 + 10 * kSec, 385)), StoreDecision::kSkip);
  EXPECT_EQ(filter.Decide(Power(kT0 + 20 * kSec, 370)), StoreDecision::kSkip);
  EXPECT_EQ(filter.Decide(Power(kT0 + 30 * kSec, 359)), StoreDecision::kStore);  // 41 W from 400
  EXPECT_EQ(filter.Decide(Power(kT0 + 40 * kSec, 344)), StoreDecision::kSkip);   // 15 W from 359
  // Within the band, still marked seen once per heartbeat.
  EXPECT_EQ(filter.Decide(Power(kT0 + 30 * kSec + 5 * kMin, 370)), StoreDecision::kSeen);
  // The floor: at idle 10% is 6 W, the band is 10 W.
  EXPECT_EQ(filter.Decide(Power(kT0 + 6 * kMin, 60)), StoreDecision::kStore);
  EXPECT_EQ(filter.Decide(Power(kT0 + 6 * kMin + 10 * kSec, 69)), StoreDecision::kSkip);
  EXPECT_EQ(filter.Decide(Power(kT0 + 6 * kMin + 20 * kSec, 71)), StoreDecision::kStore);
  // Anything else about the reading changing is stored whatever the value does.
  Observation quirk = Power(kT0 + 7 * kMin, 71);
  quirk.attrs["quirk"] = "scaled";
  EXPECT_EQ(filter.Decide(quirk), StoreDecision::kStore);
  // A reading that is not a number any more is stored.
  Observation nan = Power(kT0 + 8 * kMin, std::nan(""));
  EXPECT_EQ(filter.Decide(nan), StoreDecision::kStore);
}

TEST(DaemonChangeFilter, GpuTemperaturesAreBandedByADegreeOnlyFarBelowTheirSlowdown) {
  // Temp(): NVML's GPU sensor with its slowdown threshold at 87 C.
  ChangeFilter filter;
  EXPECT_EQ(filter.Decide(Temp(kT0, 60)), StoreDecision::kStore);
  EXPECT_EQ(filter.Decide(Temp(kT0 + 10 * kSec, 61)), StoreDecision::kSkip);  // 1 C: within the band
  EXPECT_EQ(filter.Decide(Temp(kT0 + 20 * kSec, 59)), StoreDecision::kSkip);
  EXPECT_EQ(filter.Decide(Temp(kT0 + 30 * kSec, 62)), StoreDecision::kStore);  // 2 C from 60
  // Above 77 C (less than 10 C below 87) every degree is stored, and so is the way down.
  EXPECT_EQ(filter.Decide(Temp(kT0 + 40 * kSec, 76)), StoreDecision::kStore);
  EXPECT_EQ(filter.Decide(Temp(kT0 + 50 * kSec, 77)), StoreDecision::kSkip);
  EXPECT_EQ(filter.Decide(Temp(kT0 + 60 * kSec, 78)), StoreDecision::kStore);
  EXPECT_EQ(filter.Decide(Temp(kT0 + 70 * kSec, 79)), StoreDecision::kStore);
  EXPECT_EQ(filter.Decide(Temp(kT0 + 80 * kSec, 78)), StoreDecision::kStore);
  EXPECT_EQ(filter.Decide(Temp(kT0 + 90 * kSec, 77)), StoreDecision::kStore);  // the stored 78 is near
  EXPECT_EQ(filter.Decide(Temp(kT0 + 100 * kSec, 76)), StoreDecision::kSkip);
  // A lower limit of its own moves the exact zone; a limit that is not a number is the default (85 C).
  Observation low = Temp(kT0, 60);
  low.attrs["slowdown"] = "68";
  EXPECT_EQ(filter.Decide(low), StoreDecision::kStore);
  low.time_ns += 10 * kSec;
  low.value = 59;
  EXPECT_EQ(filter.Decide(low), StoreDecision::kStore);
  for (const char* bad : {"", "hot", "nan", "87C"}) {
    ChangeFilter f;
    Observation o = Temp(kT0, 74);
    o.attrs["slowdown"] = bad;
    EXPECT_EQ(f.Decide(o), StoreDecision::kStore);
    o.time_ns += 10 * kSec;
    o.value = 75;  // 85 - 10: still banded
    EXPECT_EQ(f.Decide(o), StoreDecision::kSkip) << bad;
    o.time_ns += 10 * kSec;
    o.value = 76;  // above it: exact
    EXPECT_EQ(f.Decide(o), StoreDecision::kStore) << bad;
  }
  // A redfish (BMC) temperature is never banded: the OOB detectors threshold it.
  ChangeFilter bmc;
  Observation inlet = Temp(kT0, 30);
  inlet.source = Source::kRedfish;
  inlet.layer = Layer::kOob;
  EXPECT_EQ(bmc.Decide(inlet), StoreDecision::kStore);
  inlet.time_ns += 10 * kSec;
  inlet.value = 31;
  EXPECT_EQ(bmc.Decide(inlet), StoreDecision::kStore);
}

TEST(DaemonChangeFilter, DeadbandNeverCoversCountersStatesOrThresholdedReadings) {
  // Every kind from every polled source, as a periodic reading that moves by one unit
  // (0.1%): only the listed analog kinds may be held back; a counter step of 1, a state,
  // a temperature or voltage a detector thresholds, chassis power: always stored.
  const std::set<std::pair<Source, ObsKind>> banded = {{Source::kNvml, ObsKind::kPower},
                                                       {Source::kDcgmExporter, ObsKind::kPower},
                                                       {Source::kNvml, ObsKind::kClock},
                                                       {Source::kDcgmExporter, ObsKind::kClock},
                                                       {Source::kRedfish, ObsKind::kFanSpeed}};
  // GPU temperatures are banded too, but only far below their limit: at 1000 C here, exact.
  std::set<std::pair<Source, ObsKind>> expected_listed = banded;
  expected_listed.insert({Source::kNvml, ObsKind::kTemperature});
  expected_listed.insert({Source::kDcgmExporter, ObsKind::kTemperature});
  std::set<std::pair<Source, ObsKind>> listed;
  for (const Deadband& d : DefaultDeadbands()) listed.insert({d.source, d.kind});
  EXPECT_EQ(listed, expected_listed);
  size_t checked = 0;
  for (Source source : {Source::kNvml, Source::kDcgmExporter, Source::kSysfs, Source::kRedfish}) {
    for (ObsKind kind : AllObsKinds()) {
      Observation o = Temp(kT0, 1000);
      o.source = source;
      o.kind = kind;
      o.attrs.clear();
      if (!IsPeriodicReading(o)) continue;
      ChangeFilter filter;
      ASSERT_EQ(filter.Decide(o), StoreDecision::kStore);
      o.time_ns += 10 * kSec;
      o.value = 1001;
      const bool held = filter.Decide(o) == StoreDecision::kSkip;
      EXPECT_EQ(held, banded.count({source, kind}) > 0) << ToString(source) << " " << ToString(kind);
      // With the dead-band off nothing is held back.
      ChangeFilter exact(ChangeFilterOptions{.deadbands = {}});
      o.value = 1000;
      ASSERT_EQ(exact.Decide(o), StoreDecision::kStore);
      o.time_ns += 10 * kSec;
      o.value = 1001;
      EXPECT_EQ(exact.Decide(o), StoreDecision::kStore) << ToString(source) << " " << ToString(kind);
      ++checked;
    }
  }
  EXPECT_GT(checked, 100u);
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
  for (const Observation& o : first->observations) first_kept += Stored(filter, o);
  clock.Advance(kSec);
  auto second = source->Poll(int64_t{1} << 62);
  ASSERT_TRUE(second.ok());
  for (const Observation& o : second->observations) second_kept += Stored(filter, o);
  EXPECT_GT(first->observations.size(), 100u);
  EXPECT_EQ(first_kept, first->observations.size());
  EXPECT_EQ(filter.series(), first->observations.size());
  EXPECT_EQ(second_kept, 0u);
}

// --- Through the pipeline ---

std::unique_ptr<Store> MemoryStore() { return std::move(Store::Open(":memory:").value()); }

// Rows in the store (a query would add the copies of flat series as last seen).
size_t StoredRows(Store& store) { return static_cast<size_t>(store.Stats()->observations); }

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
  // Temperature: 0, 400 (bump), 420 (back); each ECC counter: 0. The flat stretches are
  // marked seen at 300 instead of stored again.
  EXPECT_EQ(StoredRows(*store), 5u);
  EXPECT_EQ(pipeline.stats().observations_unchanged, 60u * 3 - 5);
  // A reader still sees each ECC counter alive at its last mark, from one row each.
  ObservationQuery q;
  q.kind = ObsKind::kEccSbe;
  q.since_ns = kT0 + 200 * kSec;
  auto rows = store->QueryObservations(q);
  ASSERT_TRUE(rows.ok());
  ASSERT_EQ(rows->rows.size(), 4u);  // per counter: a copy at since, a copy at 300 s
  for (const auto& row : rows->rows) {
    EXPECT_TRUE(row.seen_copy);
    EXPECT_EQ(row.value.value, 3.0);
  }
  EXPECT_EQ(rows->rows.back().value.time_ns, kT0 + 300 * kSec);
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

TEST(DaemonPipelineStorage, WanderingGpuPowerIsStoredToWithinItsBandAndExactlyWhenTheBandIsOff) {
  for (bool deadband : {true, false}) {
    auto store = MemoryStore();
    PipelineOptions options;
    options.store_deadband = deadband;
    Pipeline pipeline(*store, "node7", options, nullptr);
    // 400 W +-8 W around a slow 60 W dip; the counter next to it creeps by one.
    for (int64_t s = 0; s < 60; ++s) {
      const double watts = (s >= 30 && s < 40 ? 340 : 400) + (s % 3 - 1) * 8.0;
      ASSERT_TRUE(pipeline
                      .Ingest(Layer::kGpu, Batch({Power(kT0 + s * 10 * kSec, watts),
                                                  Ecc(kT0 + s * 10 * kSec, s / 20.0 >= 1 ? 4 : 3, "volatile")}))
                      .ok());
    }
    ObservationQuery q{.kind = ObsKind::kPower, .include_seen = false};
    q.limit = 0;
    const size_t power_rows = store->QueryObservations(q)->rows.size();
    q.kind = ObsKind::kEccSbe;
    EXPECT_EQ(store->QueryObservations(q)->rows.size(), 2u);  // 3, then 4: never banded
    if (deadband) {
      EXPECT_EQ(power_rows, 3u) << "400, the dip, back";
    } else {
      EXPECT_EQ(power_rows, 60u);
    }
  }
}

TEST(DaemonPipelineStorage, ARestartResumesAFlatSeriesAtItsLastMarkAndADowntimeStartsANewRow) {
  auto store = MemoryStore();
  {
    Pipeline first(*store, "node7", PipelineOptions{}, nullptr);
    // HW_SLOWDOWN held for 12 minutes: one row, marks at 5 and 10 minutes.
    for (int64_t s = 0; s <= 12 * 60; s += 10) {
      ASSERT_TRUE(first.Ingest(Layer::kGpu, Batch({Mask(kT0 + s * kSec, 0x8)})).ok());
    }
  }
  EXPECT_EQ(StoredRows(*store), 1u);
  {
    // Restarted at once: primed from the copy at the last mark, the next reading writes
    // nothing, and the one a heartbeat after that mark is a mark again.
    Pipeline restarted(*store, "node7", PipelineOptions{}, nullptr);
    ASSERT_TRUE(restarted.WarmStart(kT0 + 12 * kMin).ok());
    auto next = restarted.Ingest(Layer::kGpu, Batch({Mask(kT0 + 12 * kMin + 10 * kSec, 0x8)}));
    ASSERT_TRUE(next.ok());
    EXPECT_EQ(next->inserted + next->seen_marked + next->seen_stored, 0u);
    auto mark = restarted.Ingest(Layer::kGpu, Batch({Mask(kT0 + 15 * kMin, 0x8)}));
    ASSERT_TRUE(mark.ok());
    EXPECT_EQ(mark->seen_marked, 1u);
    EXPECT_EQ(StoredRows(*store), 1u);
  }
  // Down for 20 minutes: the same state afterwards is a new row, so no stretch claims
  // the minutes nobody read.
  Pipeline later(*store, "node7", PipelineOptions{}, nullptr);
  ASSERT_TRUE(later.WarmStart(kT0 + 35 * kMin).ok());
  auto after = later.Ingest(Layer::kGpu, Batch({Mask(kT0 + 35 * kMin, 0x8)}));
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(after->inserted, 1u);
  ObservationQuery q{.include_seen = false};
  q.limit = 0;
  auto rows = store->QueryObservations(q);
  ASSERT_TRUE(rows.ok());
  ASSERT_EQ(rows->rows.size(), 2u);
  EXPECT_EQ(rows->rows[0].seen_until_ns, kT0 + 15 * kMin);
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
  EXPECT_TRUE(defaults->agent.store_deadband);
  EXPECT_TRUE(PipelineOptionsFor(*defaults).store_deadband);
  auto exact = ParseAgentConfig("[agent]\nstore_deadband = false\n");
  ASSERT_TRUE(exact.ok()) << exact.status().ToString();
  EXPECT_FALSE(PipelineOptionsFor(*exact).store_deadband);

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
  for (const char* text : {"[agent]\nstore_deadband = \"5%\"\n", "[agent]\nstore_deadband = 0.05\n"}) {
    auto c = ParseAgentConfig(text);
    ASSERT_FALSE(c.ok()) << text;
    EXPECT_NE(c.status().message().find("agent.store_deadband"), std::string::npos) << c.status().message();
  }
  auto events = ParseAgentConfig("[redfish]\nevents = \"on\"\n");
  ASSERT_FALSE(events.ok());
  EXPECT_NE(events.status().message().find("redfish.events"), std::string::npos) << events.status().message();
}

}  // namespace
}  // namespace faultline::daemon
