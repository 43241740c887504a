// BuildIsolateInput and IsolateContext: the window, the GPU names, the layers that had
// data, and the bounds on what the context keeps.
#include "engine/isolate/input.h"

#include <gtest/gtest.h>

#include "core/time.h"

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
  ASSERT_EQ(in.observations.size(), 2u);
  for (const Observation& o : in.observations) EXPECT_EQ(o.component.Id(), "gpu/0") << ToString(o.kind);
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
  ASSERT_EQ(in.observations.size(), 2u);  // the undated reading and the step inside
  EXPECT_EQ(in.layers_with_data, (std::set<Layer>{Layer::kOs, Layer::kGpu, Layer::kFabric, Layer::kWorkload}));
  EXPECT_FALSE(in.slowdown_reported);
  EXPECT_FALSE(in.symptom_ns.has_value());
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
  ASSERT_EQ(parts.readings.size(), 2u);
  for (const Observation& o : parts.readings) {
    if (o.kind == ObsKind::kPower) {
      EXPECT_EQ(o.value, 300.0);
    }
  }
  EXPECT_EQ(parts.workload.size(), 3u);
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
  ASSERT_EQ(parts.readings.size(), 1u);
  EXPECT_EQ(parts.readings[0].kind, ObsKind::kPower);
  EXPECT_EQ(parts.workload.size(), 1u);
  EXPECT_EQ(context.inventory().gpus().size(), 1u);  // identity outlives the window
}

TEST(IsolateContextTest, AFloodOfSeriesAndReportsIsBounded) {
  IsolateContext context(Inventory{}, IsolateContextOptions{.max_readings = 10, .max_workload = 5});
  for (int i = 0; i < 1000; ++i) {
    const ComponentRef c = PcieComponent("0000:" + std::to_string(10 + i % 90) + ":" + std::to_string(i / 90) + ".0");
    context.Observe(Reading(kT0 + i, Layer::kFabric, c, ObsKind::kPcieReplay, i));
    context.Observe(Reading(kT0 + i, Layer::kWorkload, HostComponent(), ObsKind::kStepTime, 1.0 + i));
  }
  const IsolateInputParts parts = context.Parts();
  EXPECT_EQ(parts.readings.size(), 10u);
  EXPECT_EQ(context.readings_dropped(), 990u);
  ASSERT_EQ(parts.workload.size(), 5u);
  EXPECT_EQ(parts.workload.back().value, 1000.0);  // the newest reports stay
}

}  // namespace
}  // namespace faultline
