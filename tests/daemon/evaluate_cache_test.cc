// Evaluation when nothing is new (issue 16, "idle cost"): the pipeline reuses a
// detector's last findings while its Revision() and the GPU inventory stay put, and the
// answers are exactly those of asking every detector every time, findings ageing out of
// the window included.
#include <gtest/gtest.h>

#include <limits>
#include <string>
#include <vector>

#include "daemon/pipeline.h"
#include "daemon/sources.h"
#include "engine/detect/all_detectors.h"
#include "engine/detect/kernel_detector.h"
#include "store/store.h"
#include "test_util.h"

namespace faultline::daemon {
namespace {

using testing::kSec;
using testing::kT0;
constexpr int64_t kMin = 60 * kSec;

std::unique_ptr<Store> MemoryStore() { return std::move(Store::Open(":memory:").value()); }

SourceBatch Batch(std::vector<Observation> observations) {
  SourceBatch b;
  b.observations = std::move(observations);
  return b;
}

// A kernel XID line as the kmsg reader emits it, on the GPU at `bus`.
Observation Xid(int64_t t, int code, const std::string& bus, int pid, uint64_t seq) {
  Observation o;
  o.time_ns = t;
  o.seq = seq;
  o.layer = Layer::kOs;
  o.source = Source::kKmsg;
  o.kind = ObsKind::kXid;
  o.code = code;
  const std::string bdf = "0000:" + bus + ":00.0";
  o.component = ComponentRef{ComponentType::kGpu, bdf, {{"bdf", bdf}}};
  o.attrs = {{"pid", std::to_string(pid)}, {"process", "train"}};
  o.raw = "NVRM: Xid (PCI:0000:" + bus + ":00): " + std::to_string(code) + ", pid=" + std::to_string(pid) +
          ", name=train, synthetic";
  return o;
}

// The kernel's "GPU at PCI:" identity line: teaches the inventory a GPU's UUID.
Observation GpuIdentityLine(int64_t t, const std::string& bus, const std::string& uuid, uint64_t seq) {
  Observation o = Xid(t, 0, bus, 0, seq);
  o.kind = ObsKind::kGpuIdentity;
  o.code.reset();
  o.attrs = {{"uuid", uuid}};
  o.raw = "NVRM: GPU at PCI:0000:" + bus + ":00: " + uuid;
  return o;
}

// An NVML reading of gpu/<index>.
Observation Nvml(int64_t t, ObsKind kind, double value, int index, std::map<std::string, std::string> attrs = {}) {
  Observation o;
  o.time_ns = t;
  o.layer = Layer::kGpu;
  o.source = Source::kNvml;
  o.component = GpuComponent(std::to_string(index));
  o.kind = kind;
  o.value = value;
  o.attrs = std::move(attrs);
  o.raw = std::string(ToString(kind)) + "=" + std::to_string(value);
  return o;
}

// A BMC power supply reading (value: Redfish health, 2 = Critical).
Observation Psu(int64_t t, double health) {
  Observation o;
  o.time_ns = t;
  o.layer = Layer::kOob;
  o.source = Source::kRedfish;
  o.component = ComponentRef{ComponentType::kPsu, "psu/1", {}};
  o.kind = ObsKind::kPsuState;
  o.value = health;
  o.attrs = {{"state", "Enabled"}, {"health", health >= 2 ? "Critical" : "OK"}};
  o.raw = "PowerSupplies/1 health=" + std::to_string(health);
  return o;
}

// One step of the script: what arrives before the evaluation at `t`.
struct Step {
  int64_t t = 0;
  std::vector<std::pair<Layer, SourceBatch>> batches;
};

// A scripted day in the life of a node: kernel faults, GPU readings, a PSU that fails
// and recovers, a job's step times, long silences across the window's edge (findings
// must age out exactly as without the cache), and an inventory change (a GPU's UUID
// learnt) that renames a kernel finding's component.
std::vector<Step> Script(int64_t window_ns) {
  std::vector<Step> steps;
  uint64_t seq = 1;
  int64_t t = kT0;
  auto at = [&](int64_t dt) {
    t += dt;
    steps.push_back(Step{t, {}});
    return &steps.back().batches;
  };
  for (int i = 0; i < 6; ++i) {  // a quiet start: readings only
    auto* b = at(5 * kSec);
    b->push_back({Layer::kGpu, Batch({Nvml(t, ObsKind::kTemperature, 40 + i % 2, 0, {{"sensor", "gpu"}})})});
    b->push_back({Layer::kWorkload, Batch({testing::Step(t, 1.0)})});
  }
  at(5 * kSec)->push_back({Layer::kOs, Batch({Xid(t, 13, "18", 4100, seq++), Xid(t + 1, 13, "18", 4101, seq++)})});
  at(5 * kSec);  // nothing new
  at(5 * kSec)->push_back({Layer::kOs, Batch({Xid(t, 48, "2a", 4200, seq++)})});
  at(5 * kSec);
  at(5 * kSec)->push_back({Layer::kOob, Batch({Psu(t, 2)})});
  for (int i = 0; i < 4; ++i) at(5 * kSec);  // silence
  at(5 * kSec)->push_back({Layer::kOob, Batch({Psu(t, 0)})});
  at(5 * kSec)->push_back({Layer::kOs, Batch({GpuIdentityLine(t, "2a", "GPU-1111-2222", seq++)})});
  at(5 * kSec)->push_back({Layer::kGpu, Batch({Nvml(t, ObsKind::kEccDbe, 1, 3, {{"counter", "volatile"}})})});
  at(5 * kSec)->push_back({Layer::kOs, Batch({Xid(t, 79, "5d", 0, seq++)})});
  for (int i = 0; i < 3; ++i) at(5 * kSec);
  // Silence past the window: every finding ages out, a few evaluations apart.
  for (int64_t s = 0; s < window_ns + 2 * kMin; s += kMin) at(kMin);
  at(5 * kSec)->push_back({Layer::kOs, Batch({Xid(t, 13, "18", 4300, seq++)})});
  for (int i = 0; i < 3; ++i) at(5 * kSec);
  for (int64_t s = 0; s < window_ns + kMin; s += 30 * kSec) at(30 * kSec);
  return steps;
}

struct Played {
  std::vector<EvaluateResult> results;
  std::vector<Finding> stored_findings;
  PipelineStats stats;
};

// refresh_ns 0: the cached answers must equal the uncached ones exactly, quotes included.
Played Play(const std::vector<Step>& script, int64_t window_ns, bool reuse, int64_t refresh_ns = 0) {
  auto store = MemoryStore();
  PipelineOptions options;
  options.window_ns = window_ns;
  options.reuse_unchanged_findings = reuse;
  options.isolate_refresh_ns = refresh_ns;
  Pipeline pipeline(*store, "node7", options, nullptr);
  Played run;
  for (const Step& step : script) {
    for (const auto& [layer, batch] : step.batches) {
      auto stored = pipeline.Ingest(layer, batch);
      EXPECT_TRUE(stored.ok()) << stored.status().ToString();
    }
    auto result = pipeline.Evaluate(step.t);
    EXPECT_TRUE(result.ok()) << result.status().ToString();
    if (result.ok()) run.results.push_back(*result);
  }
  auto rows = store->ListFindings(RecordQuery{});
  EXPECT_TRUE(rows.ok());
  if (rows.ok()) {
    for (const auto& row : rows->rows) run.stored_findings.push_back(row.value);
  }
  run.stats = pipeline.stats();
  return run;
}

TEST(DaemonEvaluateCache, SameAnswersWithAndWithoutTheCacheFindingsAgeingOutIncluded) {
  const int64_t window = 10 * kMin;
  const std::vector<Step> script = Script(window);
  const Played cached = Play(script, window, true);
  const Played fresh = Play(script, window, false);
  ASSERT_EQ(cached.results.size(), script.size());
  ASSERT_EQ(fresh.results.size(), script.size());
  bool faulted = false, aged_out = false;
  for (size_t i = 0; i < script.size(); ++i) {
    SCOPED_TRACE("evaluation " + std::to_string(i));
    EXPECT_EQ(cached.results[i].findings_stored, fresh.results[i].findings_stored);
    EXPECT_EQ(cached.results[i].diagnosis_stored, fresh.results[i].diagnosis_stored);
    EXPECT_EQ(cached.results[i].diagnoses, fresh.results[i].diagnoses);
    const bool fault =
        !fresh.results[i].diagnoses.empty() && fresh.results[i].diagnoses.front().fault_class != FaultClass::kNone;
    if (fault) faulted = true;
    if (faulted && !fault) aged_out = true;
  }
  // The script means something: a fault was diagnosed and later left the window.
  EXPECT_TRUE(faulted);
  EXPECT_TRUE(aged_out);
  EXPECT_EQ(cached.stored_findings, fresh.stored_findings);
  EXPECT_GT(cached.stored_findings.size(), 3u);
  // ...and the cache did its work: most detector calls were saved.
  EXPECT_EQ(fresh.stats.detector_reuses, 0u);
  EXPECT_GT(cached.stats.detector_reuses, cached.stats.detector_recomputations);
  EXPECT_LT(cached.stats.findings_compared, fresh.stats.findings_compared);
  EXPECT_GT(cached.stats.isolations_skipped, 0u);
  EXPECT_EQ(fresh.stats.isolations_skipped, 0u);
}

// An idle node's polls: every GPU and BMC reading comes again unchanged every 10 s, a
// job reports its steps, the evaluation runs every 5 s; then one reading changes, a
// fault arrives, and the BMC goes silent past the window and comes back.
std::vector<Step> IdleScript(int64_t window_ns) {
  std::vector<Step> steps;
  int64_t t = kT0;
  double temperature = 40;
  bool bmc = true;
  auto evaluate_for = [&](int64_t span) {
    for (int64_t end = t + span; t < end;) {
      t += 5 * kSec;
      Step& step = steps.emplace_back(Step{t, {}});
      if ((t - kT0) % (10 * kSec) != 0) continue;  // polls every other evaluation
      std::vector<Observation> gpu;
      for (int i = 0; i < 4; ++i) {
        gpu.push_back(Nvml(t, ObsKind::kTemperature, temperature, i, {{"sensor", "gpu"}}));
        gpu.push_back(Nvml(t, ObsKind::kEccSbe, 0, i, {{"counter", "volatile"}}));
      }
      step.batches.push_back({Layer::kGpu, Batch(std::move(gpu))});
      if (bmc) step.batches.push_back({Layer::kOob, Batch({Psu(t, 0)})});
      step.batches.push_back({Layer::kWorkload, Batch({testing::Step(t, 1.0)})});
    }
  };
  // The boot's kernel lines, hours old: a layer out of the window from the start, which
  // must not make every cached answer expire at once.
  steps.push_back(Step{t, {{Layer::kOs, Batch({GpuIdentityLine(t - 3 * 60 * kMin, "7f", "GPU-7f7f", 1)})}}});
  evaluate_for(10 * kMin);
  temperature = 47;  // a reading that changes: quoted within the refresh
  evaluate_for(2 * kMin);
  steps.back().batches.push_back({Layer::kOs, Batch({Xid(t, 79, "5d", 0, 2)})});
  evaluate_for(3 * kMin);
  bmc = false;  // the BMC stops answering past the window...
  evaluate_for(window_ns + 2 * kMin);
  bmc = true;  // ...and comes back: its layer is ruled out again at once
  evaluate_for(2 * kMin);
  return steps;
}

// The diagnoses with what their ruled-out layers quote blanked (the readings, their
// values and times): what a cached answer may differ in, by at most the refresh period.
// Everything concluded (causes, components, actions, evidence chains, which layers are
// ruled out) must be the same.
std::vector<Diagnosis> WithoutQuotes(std::vector<Diagnosis> diagnoses) {
  for (Diagnosis& d : diagnoses) {
    for (RuledOut& r : d.ruled_out) {
      r.reason = r.reason.substr(0, r.reason.find(':'));
      r.evidence.clear();
    }
  }
  return diagnoses;
}

int64_t OldestQuotedTime(const std::vector<Diagnosis>& diagnoses) {
  int64_t oldest = std::numeric_limits<int64_t>::max();
  for (const Diagnosis& d : diagnoses) {
    for (const RuledOut& r : d.ruled_out) {
      for (const Evidence& e : r.evidence) oldest = std::min(oldest, e.time_ns);
    }
  }
  return oldest;
}

TEST(DaemonEvaluateCache, ReadingsRerunTheIsolatorOnlyAtTheRefreshAndNeverChangeItsConclusions) {
  const int64_t window = 10 * kMin;
  const int64_t refresh = 60 * kSec;
  const std::vector<Step> script = IdleScript(window);
  const Played cached = Play(script, window, true, refresh);
  const Played fresh = Play(script, window, false, refresh);
  ASSERT_EQ(cached.results.size(), script.size());
  ASSERT_EQ(fresh.results.size(), script.size());
  bool faulted = false, oob_back = false, quoted_47 = false;
  int oob_gone = 0;
  int64_t changed_at = 0, cached_quoted_47_at = 0;
  for (size_t i = 0; i < script.size(); ++i) {
    SCOPED_TRACE("evaluation " + std::to_string(i) + " at +" + std::to_string((script[i].t - kT0) / kSec) + " s");
    const std::vector<Diagnosis>& c = cached.results[i].diagnoses;
    const std::vector<Diagnosis>& f = fresh.results[i].diagnoses;
    // The same conclusions; quotes never staler than the refresh plus one poll.
    EXPECT_EQ(WithoutQuotes(c), WithoutQuotes(f));
    EXPECT_GE(OldestQuotedTime(c), OldestQuotedTime(f) - refresh - 10 * kSec);
    EXPECT_EQ(cached.results[i].diagnosis_stored, fresh.results[i].diagnosis_stored);
    if (f.empty() || c.empty()) continue;
    faulted = faulted || f.front().fault_class == FaultClass::kGpuFellOffBus;
    bool oob = false;
    for (const RuledOut& r : f.front().ruled_out) {
      oob = oob || r.layer == Layer::kOob;
      const bool now_47 = r.reason.find(" 47") != std::string::npos;
      if (now_47 && !quoted_47) changed_at = script[i].t;
      quoted_47 = quoted_47 || now_47;
    }
    for (const RuledOut& r : c.front().ruled_out) {
      if (cached_quoted_47_at == 0 && r.reason.find(" 47") != std::string::npos) cached_quoted_47_at = script[i].t;
    }
    if (!oob) ++oob_gone;
    if (oob && oob_gone > 0) oob_back = true;
  }
  // The script means something: a fault, a changed reading quoted, a layer that left
  // the window and came back.
  EXPECT_TRUE(faulted);
  EXPECT_TRUE(quoted_47);
  // The changed reading is quoted by the cached answer too, within the refresh.
  ASSERT_GT(cached_quoted_47_at, 0);
  EXPECT_LE(cached_quoted_47_at - changed_at, refresh);
  EXPECT_GT(oob_gone, 0);
  EXPECT_TRUE(oob_back);
  // ...and the cache did its work: most evaluations reused the last answer although a
  // reading arrived before every other one.
  EXPECT_EQ(fresh.stats.isolations_skipped, 0u);
  EXPECT_GT(cached.stats.isolations_skipped, script.size() * 3 / 4);
  EXPECT_EQ(cached.stored_findings, fresh.stored_findings);
}

// A reading changes what the answer quotes, never what it concludes: quoted within the
// refresh period, while a layer coming back into the window is news at once.
TEST(DaemonEvaluateCache, AChangedReadingIsQuotedWithinTheRefreshAndALayerBackAtOnce) {
  auto store = MemoryStore();
  PipelineOptions options;
  options.window_ns = 10 * kMin;
  Pipeline pipeline(*store, "node7", options, nullptr);
  int64_t t = kT0;
  for (int i = 0; i < 6; ++i, t += 10 * kSec) {
    ASSERT_TRUE(pipeline.Ingest(Layer::kOob, Batch({Psu(t, 0)})).ok());
    ASSERT_TRUE(pipeline.Evaluate(t + kSec).ok());
  }
  EXPECT_GE(pipeline.stats().isolations_skipped, 4u);  // the same reading again: the answer is reused
  Observation changed = Psu(t, 0);
  changed.attrs["state"] = "StandbySpare";
  ASSERT_TRUE(pipeline.Ingest(Layer::kOob, Batch({changed})).ok());
  auto quotes_state = [](const EvaluateResult& r) {
    if (r.diagnoses.empty()) return int64_t{0};
    for (const RuledOut& ro : r.diagnoses.front().ruled_out) {
      for (const Evidence& e : ro.evidence) {
        if (e.component.find("psu") != std::string::npos && e.time_ns > 0) return e.time_ns;
      }
    }
    return int64_t{0};
  };
  int64_t quoted = 0;
  for (int64_t at = t + kSec; at <= t + 61 * kSec && quoted != t; at += 5 * kSec) {
    auto r = pipeline.Evaluate(at);
    ASSERT_TRUE(r.ok());
    ASSERT_FALSE(r->diagnoses.empty());
    quoted = quotes_state(*r);
  }
  EXPECT_EQ(quoted, t);  // the changed reading, within the minute
  // The BMC silent past the window: its layer leaves the answer; back, it returns at once.
  t += 11 * kMin;
  auto gone = pipeline.Evaluate(t);
  ASSERT_TRUE(gone.ok());
  EXPECT_EQ(quotes_state(*gone), 0);
  ASSERT_TRUE(pipeline.Ingest(Layer::kOob, Batch({Psu(t + kSec, 0)})).ok());
  auto back = pipeline.Evaluate(t + 2 * kSec);
  ASSERT_TRUE(back.ok());
  ASSERT_FALSE(back->diagnoses.empty());
  EXPECT_EQ(quotes_state(*back), t + kSec);
}

TEST(DaemonEvaluateCache, RefreshZeroRerunsAfterEveryReading) {
  auto store = MemoryStore();
  PipelineOptions options;
  options.isolate_refresh_ns = 0;
  Pipeline pipeline(*store, "node7", options, nullptr);
  for (int i = 0; i < 6; ++i) {
    ASSERT_TRUE(pipeline.Ingest(Layer::kOob, Batch({Psu(kT0 + i * 10 * kSec, 0)})).ok());
    ASSERT_TRUE(pipeline.Evaluate(kT0 + i * 10 * kSec + kSec).ok());
  }
  EXPECT_EQ(pipeline.stats().isolations_skipped, 0u);
  // Nothing new at all: reused even so.
  ASSERT_TRUE(pipeline.Evaluate(kT0 + 60 * kSec).ok());
  EXPECT_EQ(pipeline.stats().isolations_skipped, 1u);
}

TEST(DaemonEvaluateCache, AnUnchangedDetectorIsNotAskedAgain) {
  auto store = MemoryStore();
  Pipeline pipeline(*store, "node7", PipelineOptions{}, nullptr);
  const size_t detectors = DetectorTable().size();
  ASSERT_TRUE(pipeline.Ingest(Layer::kOs, Batch({Xid(kT0, 79, "18", 0, 1)})).ok());
  ASSERT_TRUE(pipeline.Evaluate(kT0 + kSec).ok());
  PipelineStats s = pipeline.stats();
  EXPECT_EQ(s.detector_recomputations, detectors);  // the first evaluation asks everyone
  EXPECT_EQ(s.recomputations_by_detector["kernel"], 1u);

  // Nothing new: nobody is asked, nothing is compared with the store again.
  for (int i = 2; i < 12; ++i) {
    auto r = pipeline.Evaluate(kT0 + i * kSec);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->findings_stored, 0u);
    ASSERT_FALSE(r->diagnoses.empty());
    EXPECT_EQ(r->diagnoses.front().fault_class, FaultClass::kGpuFellOffBus);
  }
  s = pipeline.stats();
  EXPECT_EQ(s.detector_recomputations, detectors);
  EXPECT_EQ(s.detector_reuses, 10 * detectors);
  const uint64_t compared = s.findings_compared;

  // A GPU temperature reading moves the GPU detectors, never the kernel one.
  ASSERT_TRUE(
      pipeline.Ingest(Layer::kGpu, Batch({Nvml(kT0 + 12 * kSec, ObsKind::kTemperature, 41, 0, {{"sensor", "gpu"}})}))
          .ok());
  ASSERT_TRUE(pipeline.Evaluate(kT0 + 13 * kSec).ok());
  s = pipeline.stats();
  EXPECT_EQ(s.recomputations_by_detector["kernel"], 1u);
  EXPECT_EQ(s.recomputations_by_detector["gpu_throttle"], 2u);
  EXPECT_EQ(s.recomputations_by_detector["oob_power"], 1u);
  EXPECT_EQ(s.recomputations_by_detector["workload"], 1u);
  EXPECT_EQ(s.findings_compared, compared);  // the kernel's finding is not compared again

  // A kernel line moves the kernel detector.
  ASSERT_TRUE(pipeline.Ingest(Layer::kOs, Batch({Xid(kT0 + 14 * kSec, 13, "2a", 77, 2)})).ok());
  ASSERT_TRUE(pipeline.Evaluate(kT0 + 15 * kSec).ok());
  s = pipeline.stats();
  EXPECT_EQ(s.recomputations_by_detector["kernel"], 2u);
  EXPECT_GT(s.findings_compared, compared);
}

// The pipeline keeps each stored finding's comparable state only while some detector
// still reports it: a finding from before a restart that nothing re-derives (here: one
// stored without the observations behind it) is forgotten, so the map cannot grow with
// every finding the node ever had; what is reported stays, and is not stored again.
TEST(DaemonEvaluateCache, ForgetsStoredFindingsNoDetectorReports) {
  auto store = MemoryStore();
  Finding old;
  old.layer = Layer::kOs;
  old.component = ComponentRef{ComponentType::kGpu, "0000:2a:00.0", {{"bdf", "0000:2a:00.0"}}};
  old.fault_class = FaultClass::kGpuFellOffBus;
  old.severity = Severity::kCritical;
  old.first_ns = old.last_ns = kT0;
  old.key = "stored-before-the-restart";
  ASSERT_TRUE(store->PutFinding("node7", old).ok());

  Pipeline pipeline(*store, "node7", PipelineOptions{}, nullptr);
  ASSERT_TRUE(pipeline.WarmStart(kT0 + kSec).ok());
  ASSERT_TRUE(pipeline.Ingest(Layer::kOs, Batch({Xid(kT0 + kSec, 79, "18", 0, 1)})).ok());
  auto first = pipeline.Evaluate(kT0 + 2 * kSec);
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(first->findings_stored, 1u);
  EXPECT_EQ(pipeline.stats().findings_remembered, 1u);  // the XID 79's; not the one nothing reports

  int seq = 2;
  for (const char* bus : {"3b", "4c", "5d"}) {  // news elsewhere: compared again, the first not stored again
    const int64_t t = kT0 + seq * kSec;
    ASSERT_TRUE(pipeline.Ingest(Layer::kOs, Batch({Xid(t, 79, bus, 0, seq++)})).ok());
    auto r = pipeline.Evaluate(t);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->findings_stored, 1u) << bus;
  }
  RecordQuery all;
  all.node = "node7";
  auto rows = store->ListFindings(all);
  ASSERT_TRUE(rows.ok());
  const size_t reported = pipeline.stats().findings_remembered;
  EXPECT_EQ(reported, 4u);
  EXPECT_EQ(rows->rows.size(), 1 + reported) << "each reported finding stored once, plus the old one";
}

TEST(DaemonEvaluateCache, DetectorHorizonForgetsOldEventsAndKeepsTheirRows) {
  // The agent's default horizon (24 h): an XID 79 the log never mentions again is held
  // until a day of later lines has passed, then forgotten; its stored row stays, it is
  // not stored again, and a repeat of the same fault is a new event (a new row).
  auto store = MemoryStore();
  PipelineOptions options;
  ASSERT_EQ(options.event_horizon_ns, 24 * 60 * kMin);
  Pipeline pipeline(*store, "node7", options, nullptr);
  uint64_t seq = 1;
  ASSERT_TRUE(pipeline.Ingest(Layer::kOs, Batch({Xid(kT0, 79, "18", 0, seq++)})).ok());
  ASSERT_TRUE(pipeline.Evaluate(kT0 + kSec).ok());
  size_t stored = 1;
  // Another GPU's XID 31 every 2 hours for 30 hours: the log's time moves on.
  for (int h = 2; h <= 30; h += 2) {
    const int64_t t = kT0 + h * 60 * kMin;
    ASSERT_TRUE(pipeline.Ingest(Layer::kOs, Batch({Xid(t, 31, "3b", 100 + h, seq++)})).ok());
    auto r = pipeline.Evaluate(t + kSec);
    ASSERT_TRUE(r.ok());
    stored += r->findings_stored;
  }
  EXPECT_EQ(pipeline.stats().findings_remembered, 1u) << "only the live XID 31 event is still reported";
  ASSERT_TRUE(pipeline.Ingest(Layer::kOs, Batch({Xid(kT0 + 31 * 60 * kMin, 79, "18", 0, seq++)})).ok());
  auto again = pipeline.Evaluate(kT0 + 31 * 60 * kMin + kSec);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->findings_stored, 1u) << "a new event";
  stored += again->findings_stored;
  RecordQuery all;
  all.node = "node7";
  auto rows = store->ListFindings(all);
  ASSERT_TRUE(rows.ok());
  size_t falls = 0;
  for (const auto& row : rows->rows) falls += row.value.fault_class == FaultClass::kGpuFellOffBus ? 1 : 0;
  EXPECT_EQ(falls, 2u) << "the forgotten event's row stays; the repeat has its own";
  EXPECT_EQ(rows->rows.size(), stored);

  // Offline-like: a horizon of 0 keeps the first event, and the repeat joins it.
  auto store2 = MemoryStore();
  options.event_horizon_ns = 0;
  Pipeline keep(*store2, "node7", options, nullptr);
  ASSERT_TRUE(keep.Ingest(Layer::kOs, Batch({Xid(kT0, 79, "18", 0, 1)})).ok());
  ASSERT_TRUE(keep.Ingest(Layer::kOs, Batch({Xid(kT0 + 30 * 60 * kMin, 31, "3b", 7, 2)})).ok());
  ASSERT_TRUE(keep.Evaluate(kT0 + 30 * 60 * kMin + kSec).ok());
  EXPECT_EQ(keep.stats().findings_remembered, 2u);
}

TEST(DaemonEvaluateCache, DetectorHorizonIsConfigurableAndNeverShorterThanTheWindow) {
  auto defaults = ParseAgentConfig("");
  ASSERT_TRUE(defaults.ok());
  EXPECT_EQ(PipelineOptionsFor(*defaults).event_horizon_ns, 24 * 60 * kMin);
  auto two_hours = ParseAgentConfig("[agent]\ndetector_horizon = \"2h\"\n");
  ASSERT_TRUE(two_hours.ok()) << two_hours.status().message();
  EXPECT_EQ(PipelineOptionsFor(*two_hours).event_horizon_ns, 120 * kMin);
  auto bad = ParseAgentConfig("[agent]\ndetector_horizon = \"soon\"\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("agent.detector_horizon"), std::string::npos) << bad.status().message();

  // Shorter than the isolator window: the window wins (an event the isolator still
  // looks at is never forgotten).
  auto store = MemoryStore();
  PipelineOptions options;
  options.window_ns = 30 * kMin;
  options.event_horizon_ns = kMin;
  Pipeline pipeline(*store, "node7", options, nullptr);
  ASSERT_TRUE(pipeline.Ingest(Layer::kOs, Batch({Xid(kT0, 79, "18", 0, 1)})).ok());
  ASSERT_TRUE(pipeline.Ingest(Layer::kOs, Batch({Xid(kT0 + 20 * kMin, 31, "3b", 7, 2)})).ok());
  auto r = pipeline.Evaluate(kT0 + 20 * kMin + kSec);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(pipeline.stats().findings_remembered, 2u) << "20 min old: inside the 30 min window";
}

TEST(DaemonEvaluateCache, AnInventoryChangeRecomputesAndRenamesTheGpu) {
  // NVML names the GPU at bus 18: index 4 (an identity reading fills the inventory).
  Observation id = Nvml(kT0 + 2 * kSec, ObsKind::kGpuIdentity, 0, 4);
  id.component.keys = {{"bdf", "0000:18:00.0"}, {"uuid", "GPU-aaaa"}, {"index", "4"}};
  for (bool reuse : {true, false}) {
    SCOPED_TRACE(reuse ? "cache" : "no cache");
    auto store = MemoryStore();
    PipelineOptions options;
    options.reuse_unchanged_findings = reuse;
    Pipeline pipeline(*store, "node7", options, nullptr);
    ASSERT_TRUE(pipeline.Ingest(Layer::kOs, Batch({Xid(kT0, 79, "18", 0, 1)})).ok());
    auto before = pipeline.Evaluate(kT0 + kSec);
    ASSERT_TRUE(before.ok());
    ASSERT_FALSE(before->diagnoses.empty());
    EXPECT_EQ(before->diagnoses.front().component.Id(), "gpu/0000:18:00.0");
    ASSERT_TRUE(pipeline.Ingest(Layer::kGpu, Batch({id})).ok());
    auto after = pipeline.Evaluate(kT0 + 3 * kSec);
    ASSERT_TRUE(after.ok());
    ASSERT_FALSE(after->diagnoses.empty());
    EXPECT_EQ(after->diagnoses.front().component.Id(), "gpu/4");
    EXPECT_EQ(pipeline.stats().recomputations_by_detector["kernel"], 2u);
  }
}

TEST(DetectorRevision, MovesOnlyForWhatTheDetectorReads) {
  KernelDetector kernel;
  auto gpu = MakeAllDetectors({});
  ASSERT_TRUE(kernel.Revision().has_value());
  const uint64_t r0 = *kernel.Revision();
  kernel.Observe(Nvml(kT0, ObsKind::kTemperature, 40, 0, {{"sensor", "gpu"}}));
  kernel.Observe(Psu(kT0, 0));
  kernel.Observe(testing::Step(kT0, 1.0));
  EXPECT_EQ(*kernel.Revision(), r0);
  const std::vector<Finding> before = kernel.Findings();
  kernel.Observe(Xid(kT0, 79, "18", 0, 1));
  EXPECT_NE(*kernel.Revision(), r0);
  EXPECT_NE(kernel.Findings(), before);
  // Every detector of the table tracks its revision, and a kernel line moves none
  // but the kernel detector's.
  for (auto& d : gpu) {
    SCOPED_TRACE(std::string(d->name()));
    ASSERT_TRUE(d->Revision().has_value());
    const uint64_t r = *d->Revision();
    d->Observe(Xid(kT0, 13, "18", 5, 2));
    if (d->name() == "kernel") {
      EXPECT_NE(*d->Revision(), r);
    } else {
      EXPECT_EQ(*d->Revision(), r);
    }
  }
}

// An idle job-less node: the workload file, drained every second, costs no store commit
// while it does not move (it used to save the same cursor every second).
TEST(DaemonIdle, AnUnchangedWorkloadCursorIsNotHandedOverAgain) {
  testing::ScratchDir dir("idle_workload");
  const std::string path = dir.File("steps.log");
  testing::AppendText(path, "job=a step=1 step_time_s=1\n");
  FakeClock clock(kT0, testing::kBoot);
  auto source = MakeWorkloadFileSource(path, "node7", clock, std::nullopt);
  const int64_t far = int64_t{1} << 62;
  auto first = source->Poll(far);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_EQ(first->observations.size(), 1u);
  ASSERT_EQ(first->cursors.size(), 1u);
  for (int i = 0; i < 3; ++i) {
    auto idle = source->Poll(far);
    ASSERT_TRUE(idle.ok());
    EXPECT_TRUE(idle->observations.empty());
    EXPECT_TRUE(idle->cursors.empty());
  }
  testing::AppendText(path, "job=a step=2 step_time_s=1\n");
  auto more = source->Poll(far);
  ASSERT_TRUE(more.ok());
  EXPECT_EQ(more->observations.size(), 1u);
  ASSERT_EQ(more->cursors.size(), 1u);
  EXPECT_NE(more->cursors.front().value, first->cursors.front().value);
}

}  // namespace
}  // namespace faultline::daemon
