// BuildIsolateInput and IsolateContext: the window, the GPU names, the layers that had
// data, and the bounds on what the context keeps.
#include "engine/isolate/input.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <map>

#include "core/time.h"
#include "engine/isolate/isolator.h"

namespace faultline {
namespace {

constexpr int64_t kT0 = 1772359200LL * kNsPerSec;  // 2026-03-01T10:00:00Z
constexpr int64_t kMin = 60 * kNsPerSec;

Observation Reading(int64_t t, Layer layer, ComponentRef c, ObsKind kind, double v) {
  Observation o;
  o.time_ns = t;
  o.layer = layer;
  o.component = std::move(c);
  o.kind = kind;
  o.value = v;
  o.source = layer == Layer::kWorkload ? Source::kWorkload : Source::kNvml;
  return o;
}

ComponentRef Nvml0() {
  ComponentRef c = GpuComponent("0");
  c.keys = {{"index", "0"}, {"bdf", "0000:1b:00.0"}, {"uuid", "GPU-1b1b"}};
  return c;
}

ComponentRef KernelGpu() { return ComponentRef{ComponentType::kGpu, "0000:1b:00.0", {{"bdf", "0000:1b:00.0"}}}; }

Finding FindingOn(ComponentRef c, int64_t first, int64_t last, Layer layer = Layer::kOs) {
  Finding f;
  f.layer = layer;
  f.component = std::move(c);
  f.fault_class = FaultClass::kUserApplication;
  f.first_ns = first;
  f.last_ns = last;
  return f;
}

TEST(BuildIsolateInputTest, EveryGpuReferenceGetsTheInventoryName) {
  IsolateContext context;
  context.Observe(Reading(kT0, Layer::kGpu, Nvml0(), ObsKind::kPower, 300));
  Observation kernel_reading = Reading(kT0 + kMin, Layer::kOs, KernelGpu(), ObsKind::kXid, 13);
  kernel_reading.source = Source::kKmsg;
  context.Observe(kernel_reading);
  IsolateInputParts parts = context.Parts();
  parts.findings = {FindingOn(KernelGpu(), kT0 + kMin, kT0 + kMin),
                    FindingOn(GpuComponent("GPU-1b1b"), kT0 + kMin, kT0 + kMin)};
  const IsolateInput in = BuildIsolateInput(std::move(parts));
  ASSERT_EQ(in.findings.size(), 2u);
  for (const Finding& f : in.findings) {
    EXPECT_EQ(f.component.Id(), "gpu/0");
    EXPECT_EQ(f.component.keys.at("uuid"), "GPU-1b1b");
  }
  // The power reading is context, under the inventory's name; the XID is an event (what
  // findings are made of): not context, but its layer had data.
  ASSERT_EQ(in.observations.size(), 1u);
  EXPECT_EQ(in.observations[0].component.Id(), "gpu/0");
  EXPECT_EQ(in.observations[0].kind, ObsKind::kPower);
  EXPECT_EQ(in.layers_with_data, (std::set<Layer>{Layer::kGpu, Layer::kOs}));
}

TEST(BuildIsolateInputTest, WithoutAnInventoryNamesStayAsSeen) {
  const IsolateInput in = BuildIsolateInput({.findings = {FindingOn(KernelGpu(), kT0, kT0)}});
  ASSERT_EQ(in.findings.size(), 1u);
  EXPECT_EQ(in.findings[0].component.Id(), "gpu/0000:1b:00.0");
}

TEST(BuildIsolateInputTest, WindowKeepsOverlapsAndUndatedAndMarksTheirLayers) {
  IsolateInputParts parts;
  parts.window = {kT0, kT0 + 10 * kMin};
  parts.layers_with_data = {Layer::kOs};                                                    // read, nothing found
  parts.findings = {FindingOn(KernelGpu(), kT0 - 5 * kMin, kT0 + kMin, Layer::kGpu),        // overlaps
                    FindingOn(KernelGpu(), kT0 - 9 * kMin, kT0 - 8 * kMin, Layer::kOob),    // before
                    FindingOn(KernelGpu(), kT0 + 11 * kMin, kT0 + 12 * kMin, Layer::kOob),  // after
                    FindingOn(KernelGpu(), 0, 0, Layer::kFabric)};                          // undated: kept
  parts.readings = {Reading(kT0 - kMin, Layer::kOob, HostComponent(), ObsKind::kPower, 1),
                    Reading(0, Layer::kGpu, Nvml0(), ObsKind::kPower, 2)};
  parts.workload = {Reading(kT0 + kMin, Layer::kWorkload, HostComponent(), ObsKind::kStepTime, 1.0),
                    Reading(kT0 + 20 * kMin, Layer::kWorkload, HostComponent(), ObsKind::kStepTime, 1.0)};
  const IsolateInput in = BuildIsolateInput(std::move(parts));
  ASSERT_EQ(in.findings.size(), 2u);
  EXPECT_EQ(in.findings[0].layer, Layer::kGpu);
  EXPECT_EQ(in.findings[1].layer, Layer::kFabric);
  // Context: the undated reading. The step inside the window is no hardware reading the
  // isolator could quote, but its layer had data; the one after the window did not count.
  ASSERT_EQ(in.observations.size(), 1u);
  EXPECT_EQ(in.observations[0].value, 2.0);
  EXPECT_EQ(in.layers_with_data, (std::set<Layer>{Layer::kOs, Layer::kGpu, Layer::kFabric, Layer::kWorkload}));
  EXPECT_FALSE(in.slowdown_reported);
  EXPECT_FALSE(in.symptom_ns.has_value());
}

// A node's worth of readings: many series per layer (more than the isolator quotes), an
// older and a newer reading of one series, events, and reports.
std::vector<Observation> ManySeries() {
  std::vector<Observation> all;
  for (int i = 0; i < 20; ++i) {
    char bdf[16];
    std::snprintf(bdf, sizeof(bdf), "0000:%02x:00.0", 0x90 - i);  // given in reverse order
    all.push_back(Reading(kT0 + i, Layer::kFabric, PcieComponent(bdf), ObsKind::kPcieLinkWidth, 16));
  }
  for (int g = 0; g < 3; ++g) {
    ComponentRef c = GpuComponent(std::to_string(g));
    c.keys = {{"index", std::to_string(g)}, {"bdf", "0000:" + std::to_string(0x1b + g) + ":00.0"}};
    for (ObsKind k : {ObsKind::kTemperature, ObsKind::kPower, ObsKind::kClockThrottle, ObsKind::kEccSbe}) {
      all.push_back(Reading(kT0 + kMin, Layer::kGpu, c, k, 40 + g));
    }
  }
  all.push_back(Reading(kT0 + 2 * kMin, Layer::kGpu, GpuComponent("0"), ObsKind::kTemperature, 77));  // newer
  Observation psu = Reading(kT0, Layer::kOob, ComponentRef{ComponentType::kPsu, "PSU1", {}}, ObsKind::kPsuState, 1);
  psu.source = Source::kRedfish;
  psu.attrs = {{"health", "OK"}};
  all.push_back(psu);
  Observation xid = Reading(kT0 + kMin, Layer::kOs, KernelGpu(), ObsKind::kXid, 13);
  xid.source = Source::kKmsg;
  all.push_back(xid);
  all.push_back(Reading(kT0 + kMin, Layer::kWorkload, HostComponent(), ObsKind::kStepTime, 1.0));
  return all;
}

TEST(BuildIsolateInputTest, ContextIsWhatTheIsolatorQuotesAndGivesTheSameDiagnoses) {
  const std::vector<Observation> all = ManySeries();
  // Every reading handed to the isolator as it is, against the builder's pick.
  IsolateInput full;
  full.observations = all;
  full.layers_with_data = {Layer::kOob, Layer::kGpu, Layer::kOs, Layer::kFabric, Layer::kWorkload};
  const IsolateInput picked = BuildIsolateInput({.readings = all});
  EXPECT_EQ(picked.layers_with_data, full.layers_with_data);
  std::map<Layer, int> per_layer;
  for (const Observation& o : picked.observations) ++per_layer[o.layer];
  const size_t quoted = IsolateOptions{}.max_ruled_out_evidence;
  EXPECT_EQ(per_layer, (std::map<Layer, int>{{Layer::kOob, 1},
                                             {Layer::kGpu, static_cast<int>(quoted)},
                                             {Layer::kFabric, static_cast<int>(quoted)}}));
  // The first PCIe links in component order, whatever order they came in.
  for (const Observation& o : picked.observations) {
    if (o.layer == Layer::kFabric) {
      EXPECT_LE(o.component.name, "0000:84:00.0") << o.component.name;
    }
  }
  // GPU 0's temperature is its newer reading.
  bool newer = false;
  for (const Observation& o : picked.observations) {
    newer = newer || (o.component.Id() == "gpu/0" && o.kind == ObsKind::kTemperature && o.value == 77.0);
  }
  EXPECT_TRUE(newer);
  const std::vector<Diagnosis> a = Isolate(full);
  const std::vector<Diagnosis> b = Isolate(picked);
  ASSERT_EQ(a.front().ruled_out.size(), 4u);
  EXPECT_EQ(a.front().ruled_out, b.front().ruled_out);
  EXPECT_TRUE(a == b);

  // The agent's path (a context, borrowed readings) picks the same.
  IsolateContext context;
  for (const Observation& o : all) context.Observe(o);
  IsolateInputParts parts = context.Parts();
  EXPECT_TRUE(parts.readings.empty());
  const IsolateInput borrowed = BuildIsolateInput(std::move(parts));
  EXPECT_EQ(Isolate(borrowed).front().ruled_out, a.front().ruled_out);
}

TEST(BuildIsolateInputTest, ARaisedQuoteLimitKeepsMoreContext) {
  IsolateInputParts parts{.readings = ManySeries()};
  parts.context_per_layer = 100;
  const IsolateInput in = BuildIsolateInput(std::move(parts));
  size_t fabric = 0;
  for (const Observation& o : in.observations) fabric += o.layer == Layer::kFabric;
  EXPECT_EQ(fabric, 20u);
  IsolateOptions wide;
  wide.max_ruled_out_evidence = 100;
  // Keep the diagnoses alive: a range-for over a member of a temporary reads freed memory.
  const std::vector<Diagnosis> diagnoses = Isolate(in, wide);
  ASSERT_FALSE(diagnoses.empty());
  bool saw_fabric = false;
  for (const RuledOut& r : diagnoses.front().ruled_out) {
    if (r.layer == Layer::kFabric) {
      saw_fabric = true;
      EXPECT_EQ(r.evidence.size(), 20u);
    }
  }
  EXPECT_TRUE(saw_fabric);
}

TEST(BuildIsolateInputTest, TheLatestReadingUnderTheCanonicalNameWins) {
  // GPU 0 read by NVML (index name) and by another source under its bus address: one
  // series once renamed, and the later reading is the one the isolator sees.
  for (const bool bdf_later : {true, false}) {
    IsolateContext context;
    Observation by_index = Reading(kT0 + (bdf_later ? 0 : kMin), Layer::kGpu, Nvml0(), ObsKind::kTemperature, 40);
    Observation by_bdf = Reading(kT0 + (bdf_later ? kMin : 0), Layer::kGpu, KernelGpu(), ObsKind::kTemperature, 50);
    context.Observe(by_index);
    context.Observe(by_bdf);
    const IsolateInput in = BuildIsolateInput(context.Parts());
    ASSERT_EQ(in.observations.size(), 1u) << bdf_later;
    EXPECT_EQ(in.observations[0].component.Id(), "gpu/0");
    EXPECT_EQ(in.observations[0].value, bdf_later ? 50.0 : 40.0);
  }
}

TEST(IsolateContextTest, KeepsTheLatestReadingOfEachSeriesAndEveryReport) {
  IsolateContext context;
  context.Observe(Reading(kT0 + kMin, Layer::kGpu, Nvml0(), ObsKind::kPower, 300));
  context.Observe(Reading(kT0, Layer::kGpu, Nvml0(), ObsKind::kPower, 100));  // late and older: ignored
  context.Observe(Reading(kT0, Layer::kGpu, Nvml0(), ObsKind::kTemperature, 40));
  for (int i = 0; i < 3; ++i) {
    context.Observe(Reading(kT0 + i * kMin, Layer::kWorkload, HostComponent(), ObsKind::kStepTime, 1.0));
  }
  const IsolateInputParts parts = context.Parts();
  EXPECT_TRUE(parts.readings.empty());   // borrowed, not copied
  ASSERT_EQ(parts.borrowed.size(), 5u);  // two series and three reports
  int reports = 0;
  for (const Observation* o : parts.borrowed) {
    if (o->kind == ObsKind::kPower) {
      EXPECT_EQ(o->value, 300.0);
    }
    reports += o->layer == Layer::kWorkload;
  }
  EXPECT_EQ(reports, 3);
  EXPECT_EQ(parts.inventory, &context.inventory());
  ASSERT_EQ(context.inventory().gpus().size(), 1u);  // learned from the readings' keys
}

TEST(IsolateContextTest, ForgetDropsWhatLeftTheWindow) {
  IsolateContext context;
  context.Observe(Reading(kT0, Layer::kGpu, Nvml0(), ObsKind::kTemperature, 40));
  context.Observe(Reading(kT0 + 5 * kMin, Layer::kGpu, Nvml0(), ObsKind::kPower, 300));
  context.Observe(Reading(kT0, Layer::kWorkload, HostComponent(), ObsKind::kStepTime, 1.0));
  context.Observe(Reading(kT0 + 5 * kMin, Layer::kWorkload, HostComponent(), ObsKind::kStepTime, 1.0));
  context.Forget(kT0 + kMin);
  const IsolateInputParts parts = context.Parts();
  ASSERT_EQ(parts.borrowed.size(), 2u);
  EXPECT_EQ(parts.borrowed[0]->kind, ObsKind::kPower);  // series first, then reports
  EXPECT_EQ(parts.borrowed[1]->layer, Layer::kWorkload);
  EXPECT_EQ(parts.borrowed[1]->time_ns, kT0 + 5 * kMin);
  EXPECT_EQ(context.inventory().gpus().size(), 1u);  // identity outlives the window
}

// Keep says whether the reading became its series' latest (what the isolator quotes
// moved: a new series, a changed value, key or attribute, or the same reading again with
// a newer time); an older reading or a report changes nothing quoted.
TEST(IsolateContextTest, KeepSaysWhetherTheReadingBecameItsSeriesLatest) {
  IsolateContext context;
  EXPECT_TRUE(context.Keep(Reading(kT0, Layer::kGpu, Nvml0(), ObsKind::kTemperature, 40)));
  EXPECT_TRUE(context.Keep(Reading(kT0 + kMin, Layer::kGpu, Nvml0(), ObsKind::kTemperature, 40)));
  EXPECT_FALSE(context.Keep(Reading(kT0, Layer::kGpu, Nvml0(), ObsKind::kTemperature, 45)));  // older
  EXPECT_TRUE(context.Keep(Reading(kT0 + 2 * kMin, Layer::kGpu, Nvml0(), ObsKind::kTemperature, 41)));
  Observation attr = Reading(kT0 + 3 * kMin, Layer::kGpu, Nvml0(), ObsKind::kTemperature, 41);
  attr.attrs["slowdown"] = "87";
  EXPECT_TRUE(context.Keep(Observation(attr)));
  ComponentRef renamed = Nvml0();
  renamed.keys["serial"] = "1650";
  EXPECT_TRUE(context.Keep(Reading(kT0 + 4 * kMin, Layer::kGpu, renamed, ObsKind::kTemperature, 41)));
  EXPECT_FALSE(context.Keep(Reading(kT0 + 4 * kMin, Layer::kWorkload, HostComponent(), ObsKind::kStepTime, 1)));
  // The same reading again carries its new time: what the window and a quote see.
  EXPECT_TRUE(context.Keep(Reading(kT0 + 9 * kMin, Layer::kGpu, renamed, ObsKind::kTemperature, 41)));
  const IsolateInputParts parts = context.Parts();
  ASSERT_EQ(parts.borrowed.size(), 2u);
  EXPECT_EQ(parts.borrowed[0]->time_ns, kT0 + 9 * kMin);
  EXPECT_EQ(parts.borrowed[0]->attrs.count("slowdown"), 0u);  // the latest reading, whole
  EXPECT_EQ(parts.borrowed[0]->component.keys.at("serial"), "1650");
}

// A series that stops coming ages out at its last time while the ones that keep coming
// stay, however many windows pass (Forget scans only when something can have aged out).
TEST(IsolateContextTest, ForgetDropsASilentSeriesAndKeepsTheRefreshedOnes) {
  IsolateContext context;
  ComponentRef gpu1 = GpuComponent("1");
  for (int m = 0; m <= 120; ++m) {
    const int64_t t = kT0 + m * kMin;
    context.Keep(Reading(t, Layer::kGpu, Nvml0(), ObsKind::kTemperature, 40));
    if (m <= 50) context.Keep(Reading(t, Layer::kGpu, gpu1, ObsKind::kTemperature, 40));
    context.Forget(t - 30 * kMin);
    const size_t expected = m <= 80 ? 2u : 1u;  // gpu/1's last reading at +50 min leaves at +81
    ASSERT_EQ(context.Parts().borrowed.size(), expected) << "at +" << m << " min";
  }
  EXPECT_EQ(context.Parts().borrowed[0]->component.name, "0");
}

TEST(IsolateContextTest, AFloodOfSeriesAndReportsIsBounded) {
  IsolateContext context(Inventory{}, IsolateContextOptions{.max_readings = 10, .max_workload = 5});
  for (int i = 0; i < 1000; ++i) {
    const ComponentRef c = PcieComponent("0000:" + std::to_string(10 + i % 90) + ":" + std::to_string(i / 90) + ".0");
    context.Observe(Reading(kT0 + i, Layer::kFabric, c, ObsKind::kPcieReplay, i));
    context.Observe(Reading(kT0 + i, Layer::kWorkload, HostComponent(), ObsKind::kStepTime, 1.0 + i));
  }
  const IsolateInputParts parts = context.Parts();
  ASSERT_EQ(parts.borrowed.size(), 15u);  // 10 series, 5 reports
  EXPECT_EQ(context.readings_dropped(), 990u);
  EXPECT_EQ(parts.borrowed.back()->layer, Layer::kWorkload);
  EXPECT_EQ(parts.borrowed.back()->value, 1000.0);  // the newest reports stay
  EXPECT_EQ(parts.borrowed[10]->value, 996.0);
}

}  // namespace
}  // namespace faultline
