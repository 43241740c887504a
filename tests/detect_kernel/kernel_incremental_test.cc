// The kernel detector as the agent runs it for months: bounded state whatever the
// history, findings that do not change when nothing new arrives, one finding per
// multi-line event and no two findings the store would key alike.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "kernel_test_util.h"

namespace faultline {
namespace {

using namespace testing_kernel;  // NOLINT(google-build-using-namespace)

// A synthetic kernel observation, as the reader emits it, at `sec` seconds.
Observation KernelObs(ObsKind kind, int64_t code, const std::string& bdf, double sec,
                      std::map<std::string, std::string> attrs = {}) {
  Observation o;
  o.source = Source::kKmsg;
  o.kind = kind;
  o.code = code;
  o.time_ns = 1'772'359'200'000'000'000LL + static_cast<int64_t>(sec * 1e9);
  o.component = ComponentRef{ComponentType::kGpu, bdf, {{"bdf", bdf}}};
  o.attrs = std::move(attrs);
  o.raw = "NVRM: Xid (PCI:" + bdf + "): " + std::to_string(code) + ", synthetic line " + std::to_string(sec);
  return o;
}

// A mixed, hostile-ish history: many GPUs (some bogus bus ids), many codes, many pids.
void Feed(KernelDetector& d, int n, int offset = 0) {
  for (int i = offset; i < offset + n; ++i) {
    char bdf[32];
    std::snprintf(bdf, sizeof bdf, "0000:%02x:00.0", (i * 7) % 256);
    const int kind = i % 5;
    const double t = i * 0.01;
    if (kind == 0) {
      d.Observe(KernelObs(ObsKind::kXid, 13, bdf, t,
                          {{"pid", std::to_string(i % 1000)},
                           {"process", "p" + std::to_string(i % 97)},
                           {"gpc", std::to_string(i % 8)},
                           {"tpc", std::to_string(i % 9)}}));
    } else if (kind == 1) {
      d.Observe(KernelObs(ObsKind::kXid, 31, bdf, t, {{"pid", std::to_string(i)}, {"process", "job"}}));
    } else if (kind == 2) {
      d.Observe(KernelObs(ObsKind::kXid, 1000 + i % 5000, bdf, t));  // codes nobody knows
    } else if (kind == 3) {
      Observation aer = KernelObs(ObsKind::kPcieAer, 0, bdf, t, {{"severity", "Corrected"}});
      aer.component = PcieComponent(bdf);
      d.Observe(aer);
    } else {
      d.Observe(KernelObs(ObsKind::kXid, 94, bdf, t, {{"pid", std::to_string(i)}}));
    }
  }
}

TEST(KernelIncremental, StateStaysBoundedWhateverTheHistory) {
  KernelDetectorOptions options;
  KernelDetector d(options);
  Feed(d, 200'000);
  const size_t after_200k = d.StateSize();
  // Every rule's groups, indexes and window entries are capped: a few thousand entries
  // per rule at most, never one per observation.
  EXPECT_LT(after_200k, 60'000u);
  Feed(d, 200'000, 200'000);
  const size_t after_400k = d.StateSize();
  EXPECT_LE(after_400k, after_200k + after_200k / 2) << "doubling the history must not double the state";
  // Findings stay bounded too, with capped evidence.
  auto fs = d.Findings();
  EXPECT_LT(fs.size(), 20 * options.max_groups);
  for (const Finding& f : fs) EXPECT_LE(f.evidence.size(), options.max_evidence);
}

TEST(KernelIncremental, FindingsTwiceWithNoNewInputAreIdentical) {
  KernelDetector d;
  Feed(d, 5'000);
  const auto first = d.Findings();
  const auto second = d.Findings();
  ASSERT_FALSE(first.empty());
  EXPECT_EQ(first, second);
  // New input changes them; asking again without input does not.
  Feed(d, 10, 5'000);
  const auto third = d.Findings();
  EXPECT_EQ(third, d.Findings());
}

// The identity the agent stores findings under (daemon/pipeline.h FindingKey): every
// kernel finding carries its event key.
std::string FindingKey(const Finding& f) {
  EXPECT_FALSE(f.key.empty()) << f.summary;
  return std::string(ToString(f.layer)) + "|" + std::string(ToString(f.fault_class)) + "|" + f.component.Id() + "|" +
         f.key;
}

TEST(KernelIncremental, OneXid13EventIsOneFindingAndKeysNeverCollide) {
  // One exception prints its GPC/TPC line, then its ESR line: same pid, same second.
  const std::string event =
      Line(100.000100,
           "NVRM: Xid (PCI:0000:b5:00): 13, pid=4242, name=train.py, Graphics SM Warp Exception on (GPC 1, "
           "TPC 3, SM 0): Out Of Range Address") +
      Line(100.000105,
           "NVRM: Xid (PCI:0000:b5:00): 13, pid=4242, name=train.py, Graphics SM Global Exception on (GPC "
           "1, TPC 3, SM 0): Multiple Warp Errors") +
      Line(100.000110,
           "NVRM: Xid (PCI:0000:b5:00): 13, pid=4242, name=train.py, Graphics Exception: ESR "
           "0x50e648=0x102000e 0x50e650=0x20 0x50e644=0xd3eff2 0x50e64c=0x17f");
  auto fs = Detect(event);
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].count, 3u);
  EXPECT_EQ(fs[0].fault_class, FaultClass::kUserApplication);
  // A later ESR line of another exception from the same program is another event, and a
  // second program's line at the very same time on another unit is a third: no two keys alike.
  auto more = Detect(event +
                     Line(160,
                          "NVRM: Xid (PCI:0000:b5:00): 13, pid=4242, name=train.py, Graphics Exception: ESR "
                          "0x50e648=0x102000e") +
                     Line(100.000100,
                          "NVRM: Xid (PCI:0000:b5:00): 13, pid=5151, name=eval.py, Graphics SM Warp "
                          "Exception on (GPC 4, TPC 0, SM 1): Out Of Range Address"));
  std::set<std::string> keys;
  for (const Finding& f : more) EXPECT_TRUE(keys.insert(FindingKey(f)).second) << FindingKey(f);
}

TEST(KernelIncremental, KeysAreUniqueAcrossRulesOnABusyLog) {
  KernelDetector d;
  // Two codes the catalog reads the same way, on one GPU at one instant: two events, two
  // event keys, never one key for both.
  d.Observe(KernelObs(ObsKind::kXid, 109, "0000:3b:00.0", 5));
  d.Observe(KernelObs(ObsKind::kXid, 110, "0000:3b:00.0", 5));
  Feed(d, 3'000);
  std::set<std::string> keys;
  for (const Finding& f : d.Findings()) EXPECT_TRUE(keys.insert(FindingKey(f)).second) << FindingKey(f);
}

TEST(KernelIncremental, IdentityLearnedLaterStillNamesEarlierFindings) {
  // The uuid/serial lines arrive after the XID (a log cut mid-boot, a reader restart).
  auto fs = Detect(Line(10, "NVRM: Xid (PCI:0000:17:00): 48, pid=1, name=x, DBE") +
                   Line(20, "NVRM: GPU at PCI:0000:17:00: GPU-abcd") + Line(20, "NVRM: GPU Board Serial Number: 99"));
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].component.keys.at("uuid"), "GPU-abcd");
  EXPECT_EQ(fs[0].evidence.front().component, fs[0].component.Id());
}

TEST(KernelIncremental, HostileObservationsAreHarmless) {
  KernelDetector d;
  Observation o = KernelObs(ObsKind::kXid, 13, "", 1, {{"last_sort_ns", "not-a-number"}, {"pid", ""}});
  o.raw = std::string(1 << 20, 'x');  // a megabyte line
  d.Observe(o);
  Observation rec = KernelObs(ObsKind::kXidRecoveryAction, 154, "0000:3b:00.0", 2);
  rec.value = 1e300;  // no such recovery action
  d.Observe(rec);
  Observation no_code = KernelObs(ObsKind::kXid, 0, "0000:3b:00.0", 3);
  no_code.code.reset();
  d.Observe(no_code);
  auto fs = d.Findings();
  for (const Finding& f : fs) {
    for (const Evidence& e : f.evidence) EXPECT_LE(e.text.size(), KernelDetectorOptions{}.max_evidence_bytes);
  }
}


// The agent's horizon ([agent] detector_horizon): an event no line touched for that long,
// in the log's own time, is forgotten; one still being touched is kept however old it is.
bool NamesBus(const std::vector<Finding>& fs, const std::string& bdf) {
  for (const Finding& f : fs) {
    for (const Evidence& e : f.evidence) {
      if (e.text.find(bdf) != std::string::npos) return true;
    }
  }
  return false;
}

TEST(KernelHorizon, ForgetsEventsNoLineTouchedAndKeepsLiveOnes) {
  constexpr double kHour = 3600;
  KernelDetectorOptions options;
  options.horizon_ns = static_cast<int64_t>(2 * kHour * 1e9);
  KernelDetector with(options);
  KernelDetector without;  // offline: keeps every event
  auto both = [&](const Observation& o) {
    with.Observe(o);
    without.Observe(o);
  };
  both(KernelObs(ObsKind::kXid, 79, "0000:17:00.0", 0));  // once, then never again
  // A GPU whose XID 31s keep coming every 20 minutes for 5 hours: one live event.
  for (double t = 0; t <= 5 * kHour; t += 1200) {
    both(KernelObs(ObsKind::kXid, 31, "0000:3b:00.0", t, {{"pid", "7"}, {"process", "job"}}));
  }
  EXPECT_FALSE(NamesBus(with.Findings(), "0000:17:00.0")) << "untouched for 5 h with a 2 h horizon";
  EXPECT_TRUE(NamesBus(with.Findings(), "0000:3b:00.0"));
  EXPECT_TRUE(NamesBus(without.Findings(), "0000:17:00.0")) << "no horizon: kept";
  EXPECT_LT(with.StateSize(), without.StateSize());

  // The same fault again is a new event, under a new key.
  std::string old_key;
  for (const Finding& f : without.Findings()) {
    if (NamesBus({f}, "0000:17:00.0")) old_key = f.key;
  }
  with.Observe(KernelObs(ObsKind::kXid, 79, "0000:17:00.0", 5 * kHour + 60));
  std::string new_key;
  for (const Finding& f : with.Findings()) {
    if (NamesBus({f}, "0000:17:00.0")) new_key = f.key;
  }
  ASSERT_FALSE(new_key.empty());
  EXPECT_NE(new_key, old_key);
}

TEST(KernelHorizon, StateIsBoundedByTimeNotOnlyByCount) {
  // A new distinct event every 10 minutes for 10 days: 1,440 events, more than the
  // per-rule cap. With a 24 h horizon only about a day's worth (144, plus up to an
  // eighth of the horizon between sweeps) is held.
  KernelDetectorOptions options;
  options.horizon_ns = 86'400'000'000'000;
  KernelDetector with(options);
  KernelDetector without;
  for (int i = 0; i < 1440; ++i) {
    const Observation o = KernelObs(ObsKind::kXid, 1000 + i, "0000:3b:00.0", i * 600.0);
    with.Observe(o);
    without.Observe(o);
  }
  EXPECT_LE(with.Findings().size(), 144u + 144u / 8 + 2);
  EXPECT_GE(with.Findings().size(), 144u);
  // Without a horizon only the count cap bounds it (when full, the older half goes).
  EXPECT_GE(without.Findings().size(), options.max_groups / 2);
  EXPECT_LE(without.Findings().size(), options.max_groups);
}

TEST(KernelHorizon, MonotonicOnlyLinesAreJudgedInTheirOwnTime) {
  // A log whose lines carry only the kernel's uptime stamp, mixed with wall-clock lines:
  // wall time racing ahead must not make the uptime-stamped event look decades old.
  KernelDetectorOptions options;
  options.horizon_ns = 3'600'000'000'000;
  KernelDetector d(options);
  Observation mono = KernelObs(ObsKind::kXid, 79, "0000:17:00.0", 0);
  mono.time_ns = 0;
  mono.mono_us = 120'000'000;  // 120 s after boot
  d.Observe(mono);
  for (double t = 0; t <= 3 * 3600; t += 600) d.Observe(KernelObs(ObsKind::kXid, 31, "0000:3b:00.0", t));
  EXPECT_TRUE(NamesBus(d.Findings(), "0000:17:00.0"));
  // Uptime moving on by more than the horizon forgets it.
  Observation later = mono;
  later.code = 31;
  later.component = ComponentRef{ComponentType::kGpu, "0000:b7:00.0", {{"bdf", "0000:b7:00.0"}}};
  later.raw = "NVRM: Xid (PCI:0000:b7:00.0): 31, synthetic";
  later.mono_us = 120'000'000 + 2 * 3'600'000'000LL;
  d.Observe(later);
  EXPECT_FALSE(NamesBus(d.Findings(), "0000:17:00.0"));
}

}  // namespace
}  // namespace faultline
