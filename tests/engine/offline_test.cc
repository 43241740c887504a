// BuildOfflineInput: time order across snapshots, the layers that had data, the window,
// and the identity join between NVML's GPUs and kernel-log bus ids.
#include "engine/offline/offline.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "core/time.h"
#include "sources/kmsg/log_reader.h"

namespace faultline {
namespace {

constexpr int64_t kNine = 1741942800LL * kNsPerSec;  // 2025-03-14T09:00:00Z
constexpr int64_t kHour = 3600 * kNsPerSec;

ComponentRef Gpu1() {
  ComponentRef c = GpuComponent("1");
  c.keys = {{"index", "1"}, {"bdf", "0000:2a:00.0"}, {"uuid", "GPU-0001"}, {"serial", "1654223001001"}};
  return c;
}

Observation Nvml(int64_t t, ObsKind kind, double value) {
  Observation o;
  o.time_ns = t;
  o.node = "gpu-node-07";
  o.layer = Layer::kGpu;
  o.component = Gpu1();
  o.kind = kind;
  o.value = value;
  o.source = Source::kNvml;
  return o;
}

const Finding* Find(const IsolateInput& in, FaultClass c) {
  auto it = std::find_if(in.findings.begin(), in.findings.end(), [c](const Finding& f) { return f.fault_class == c; });
  return it == in.findings.end() ? nullptr : &*it;
}

TEST(OfflineInputTest, SnapshotsReachTheDetectorsInTimeOrderWhateverTheFileOrder) {
  // Remap pending at 09:00, cleared by a reset before the 10:00 sample; the later file
  // was given first. In time order the finding is cleared; in file order it would be open.
  std::vector<Observation> obs = {Nvml(kNine + kHour, ObsKind::kRowRemapPending, 0),
                                  Nvml(kNine, ObsKind::kRowRemapPending, 1)};
  const IsolateInput in = BuildOfflineInput(obs, {});
  const Finding* f = Find(in, FaultClass::kRowRemapPending);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->attrs.count("cleared"), 1u);
  EXPECT_EQ(f->action, Action::kNone);
  // The isolator's context is the latest reading of the series.
  ASSERT_EQ(in.observations.size(), 1u);
  EXPECT_EQ(in.observations[0].value, 0.0);
}

TEST(OfflineInputTest, LayersWithDataAreTheLayersReadPlusTheObserved) {
  OfflineOptions options;
  options.layers_read = {Layer::kOs};  // a clean kernel log: no observation, still data
  const IsolateInput in = BuildOfflineInput({Nvml(kNine, ObsKind::kTemperature, 41)}, options);
  EXPECT_EQ(in.layers_with_data, (std::set<Layer>{Layer::kOs, Layer::kGpu}));
  EXPECT_TRUE(in.findings.empty());
  EXPECT_FALSE(in.slowdown_reported);
}

TEST(OfflineInputTest, WindowDropsDatedObservationsOutsideItAndKeepsUndatedOnes) {
  Observation undated = Nvml(0, ObsKind::kRowRemapPending, 1);
  OfflineOptions options;
  options.since_ns = kNine + kHour / 2;
  const IsolateInput in = BuildOfflineInput(
      {Nvml(kNine, ObsKind::kRowRemapPending, 1), undated, Nvml(kNine + kHour, ObsKind::kPower, 300)}, options);
  ASSERT_EQ(in.observations.size(), 2u);
  for (const Observation& o : in.observations) {
    EXPECT_TRUE(o.time_ns == 0 || o.kind == ObsKind::kPower) << ToString(o.kind) << " " << o.time_ns;
  }
}

TEST(OfflineInputTest, NothingAtAllGivesNoFindingAndNoLayer) {
  const IsolateInput in = BuildOfflineInput({}, {});
  EXPECT_TRUE(in.findings.empty());
  EXPECT_TRUE(in.layers_with_data.empty());
  const std::vector<Diagnosis> dx = Isolate(in);
  ASSERT_FALSE(dx.empty());
  EXPECT_EQ(dx.front().fault_class, FaultClass::kNone);
}

std::vector<Observation> KernelLines(std::string_view text) {
  auto reader = KernelLogReader::Create({});
  EXPECT_TRUE(reader.ok());
  (*reader)->Feed(text);
  (*reader)->Finish();
  return (*reader)->TakeObservations();
}

constexpr std::string_view kXid48 =
    "2025-03-14T10:00:05+0000 gpu-node-07 kernel: NVRM: Xid (PCI:0000:2a:00): 48, pid=4242, name=python3, "
    "An uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer at partition 2.\n";

TEST(OfflineInputTest, KernelBusIdLandsOnTheGpuAnNvmlSnapshotNamed) {
  std::vector<Observation> alone = KernelLines(kXid48);
  ASSERT_FALSE(alone.empty());
  const IsolateInput alone_in = BuildOfflineInput(alone, {});  // kept alive: Find points into it
  const Finding* unmapped = Find(alone_in, FaultClass::kHbmUncorrectable);
  ASSERT_NE(unmapped, nullptr);
  EXPECT_NE(unmapped->component.Id(), "gpu/1");  // the bus id stays as seen

  std::vector<Observation> both = KernelLines(kXid48);
  Observation identity = Nvml(kNine + kHour, ObsKind::kGpuIdentity, 0);
  identity.value.reset();
  both.push_back(identity);
  const IsolateInput in = BuildOfflineInput(both, {});
  const Finding* mapped = Find(in, FaultClass::kHbmUncorrectable);
  ASSERT_NE(mapped, nullptr);
  EXPECT_EQ(mapped->component.Id(), "gpu/1");
  EXPECT_EQ(mapped->component.keys.at("serial"), "1654223001001");
  EXPECT_EQ(in.layers_with_data, (std::set<Layer>{Layer::kOs, Layer::kGpu}));
}

TEST(OfflineInputTest, RunsEveryLayersDetectors) {
  EXPECT_GE(MakeAllDetectors({}).size(), 4u);
  Observation psu;
  psu.time_ns = kNine;
  psu.layer = Layer::kOob;
  psu.component = ComponentRef{ComponentType::kPsu, "Bay1", {}};
  psu.kind = ObsKind::kPsuState;
  psu.source = Source::kRedfish;
  psu.attrs = {{"health", "Critical"}, {"state", "Enabled"}};
  const IsolateInput in = BuildOfflineInput({psu, Nvml(kNine + 30 * kNsPerSec, ObsKind::kClockThrottle, 0x80)}, {});
  EXPECT_NE(Find(in, FaultClass::kPowerSupply), nullptr);
  EXPECT_NE(Find(in, FaultClass::kGpuPowerBrake), nullptr);
  const std::vector<Diagnosis> dx = Isolate(in);
  ASSERT_FALSE(dx.empty());
  EXPECT_EQ(dx.front().fault_class, FaultClass::kPowerSupply);
}

}  // namespace
}  // namespace faultline
