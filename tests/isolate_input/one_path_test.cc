// One path (DESIGN.md "Three ways to run the same engine, and no second path"): the same
// observations through the agent pipeline, offline `diagnose` and why-slow give the same
// diagnoses naming the same components. The case that used to split: the kernel log
// names GPU 0 by its bus id (XID 13) and its UUID (the boot identity line), NVML names
// it by index 0 with that bus id (power brake); it is one component, gpu/0, everywhere.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "core/time.h"
#include "daemon/pipeline.h"
#include "daemon/why_slow.h"
#include "engine/offline/offline.h"
#include "sources/kmsg/log_reader.h"
#include "store/store.h"

namespace faultline {
namespace {

constexpr int64_t kT0 = 1772359200LL * kNsPerSec;  // 2026-03-01T10:00:00Z
constexpr int64_t kStep = 10 * kNsPerSec;
constexpr const char* kNode = "node7";
constexpr const char* kUuid0 = "GPU-1b1b1b1b-0000-4111-8222-333344445555";

// The boot log's identity lines, then a user program's XID 13 on the same GPU.
constexpr std::string_view kKernelLog =
    "2026-03-01T10:00:01+0000 node7 kernel: NVRM: GPU at PCI:0000:1b:00: GPU-1b1b1b1b-0000-4111-8222-333344445555\n"
    "2026-03-01T10:00:01+0000 node7 kernel: NVRM: GPU Board Serial Number: 1650923000111\n"
    "2026-03-01T10:00:01+0000 node7 kernel: NVRM: GPU at PCI:0000:2a:00: GPU-2a2a2a2a-0000-4111-8222-333344445555\n"
    "2026-03-01T10:03:20+0000 node7 kernel: NVRM: Xid (PCI:0000:1b:00): 13, pid=4242, name=python3, Graphics SM "
    "Warp Exception on (GPC 0, TPC 1, SM 0): Out Of Range Address\n";

std::vector<Observation> KernelObservations() {
  KernelLogOptions options;
  options.node = kNode;
  options.reference_ns = kT0;
  auto reader = KernelLogReader::Create(options);
  EXPECT_TRUE(reader.ok());
  (*reader)->Feed(kKernelLog);
  (*reader)->Finish();
  return (*reader)->TakeObservations();
}

ComponentRef NvmlGpu(int index, const std::string& bdf, const std::string& uuid) {
  ComponentRef c = GpuComponent(std::to_string(index));
  c.keys = {{"index", std::to_string(index)}, {"bdf", bdf}, {"uuid", uuid}};
  return c;
}

Observation Nvml(int64_t t, const ComponentRef& gpu, ObsKind kind, double value) {
  Observation o;
  o.time_ns = t;
  o.node = kNode;
  o.layer = Layer::kGpu;
  o.component = gpu;
  o.kind = kind;
  o.value = value;
  o.source = Source::kNvml;
  return o;
}

// Both GPUs brake from 10:02:30 (a board-level power event), as NVML samples every 10 s
// (the PCI bus id in NVML's 8-digit-domain spelling).
std::vector<Observation> NvmlObservations() {
  const ComponentRef gpus[] = {NvmlGpu(0, "00000000:1B:00.0", kUuid0),
                               NvmlGpu(1, "00000000:2A:00.0", "GPU-2a2a2a2a-0000-4111-8222-333344445555")};
  std::vector<Observation> out;
  for (int i = 0; i <= 30; ++i) {
    const int64_t t = kT0 + i * kStep;
    for (const ComponentRef& gpu : gpus) {
      out.push_back(Nvml(t, gpu, ObsKind::kClockThrottle, i >= 15 ? 0x80 : 0));
      out.push_back(Nvml(t, gpu, ObsKind::kTemperature, 45));
    }
  }
  return out;
}

// The job's steps: 1.0 s, then 1.9 s from 10:02:30.
std::vector<Observation> StepObservations() {
  std::vector<Observation> out;
  for (int i = 0; i < 30; ++i) {
    Observation o;
    o.time_ns = kT0 + i * kStep;
    o.node = kNode;
    o.layer = Layer::kWorkload;
    o.component = ComponentRef{ComponentType::kHost, "job/train-1", {}};
    o.kind = ObsKind::kStepTime;
    o.value = i < 15 ? 1.0 : 1.9;
    o.source = Source::kWorkload;
    o.attrs = {{"job", "train-1"}, {"step", std::to_string(i)}};
    out.push_back(std::move(o));
  }
  return out;
}

using Answer = std::vector<std::tuple<std::string, std::string, std::string>>;  // class, component, action

Answer Summarize(const std::vector<Diagnosis>& diagnoses) {
  Answer out;
  for (const Diagnosis& d : diagnoses) {
    out.emplace_back(ToString(d.fault_class), d.component.Id(), ToString(d.action));
  }
  return out;
}

std::string Show(const Answer& a) {
  std::string s;
  for (const auto& [cls, comp, action] : a) s += cls + " " + comp + " " + action + "\n";
  return s;
}

// Every GPU a diagnosis names (its component, what it explains, its evidence lines).
std::set<std::string> GpusNamed(const std::vector<Diagnosis>& diagnoses) {
  std::set<std::string> out;
  for (const Diagnosis& d : diagnoses) {
    if (d.component.type == ComponentType::kGpu) out.insert(d.component.Id());
    for (const std::string& e : d.explains) {
      for (size_t at = e.find("gpu/"); at != std::string::npos; at = e.find("gpu/", at + 1)) {
        out.insert(e.substr(at, e.find_first_of(" )", at) - at));
      }
    }
  }
  return out;
}

class OnePathTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto store = Store::Open(":memory:");
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    store_ = std::move(store).value();
    kernel_ = KernelObservations();
    ASSERT_EQ(kernel_.size(), 4u);
    nvml_ = NvmlObservations();
    steps_ = StepObservations();
  }

  std::vector<Diagnosis> Agent() {
    daemon::Pipeline pipeline(*store_, kNode, daemon::PipelineOptions{}, nullptr);
    EXPECT_TRUE(pipeline.Ingest(Layer::kOs, {.observations = kernel_}).ok());
    EXPECT_TRUE(pipeline.Ingest(Layer::kGpu, {.observations = nvml_}).ok());
    EXPECT_TRUE(pipeline.Ingest(Layer::kWorkload, {.observations = steps_}).ok());
    auto result = pipeline.Evaluate(kT0 + 31 * kStep);
    EXPECT_TRUE(result.ok()) << result.status().ToString();
    return result.ok() ? result->diagnoses : std::vector<Diagnosis>{};
  }

  std::vector<Diagnosis> Offline() const {
    std::vector<Observation> all = nvml_;  // file order does not matter
    all.insert(all.end(), steps_.begin(), steps_.end());
    all.insert(all.end(), kernel_.begin(), kernel_.end());
    return Isolate(BuildOfflineInput(std::move(all), {}));
  }

  std::vector<Diagnosis> WhySlow() {
    auto answer = daemon::WhySlow(*store_, {.node = kNode, .since_ns = kT0, .until_ns = kT0 + 31 * kStep});
    EXPECT_TRUE(answer.ok()) << answer.status().ToString();
    return answer.ok() ? answer->diagnoses : std::vector<Diagnosis>{};
  }

  std::unique_ptr<Store> store_;
  std::vector<Observation> kernel_, nvml_, steps_;
};

TEST_F(OnePathTest, AgentOfflineAndWhySlowGiveTheSameDiagnosesAndNames) {
  const std::vector<Diagnosis> agent = Agent();
  const std::vector<Diagnosis> offline = Offline();
  const std::vector<Diagnosis> why_slow = WhySlow();  // reads what the agent stored
  ASSERT_FALSE(agent.empty());
  EXPECT_EQ(Show(Summarize(offline)), Show(Summarize(agent)));
  EXPECT_EQ(Show(Summarize(why_slow)), Show(Summarize(agent)));
  // The program's XID 13 and the brake land on one GPU named by its NVML index.
  for (const auto* answer : {&agent, &offline, &why_slow}) {
    auto xid = std::find_if(answer->begin(), answer->end(),
                            [](const Diagnosis& d) { return d.fault_class == FaultClass::kUserApplication; });
    ASSERT_NE(xid, answer->end()) << Show(Summarize(*answer));
    EXPECT_EQ(xid->component.Id(), "gpu/0");
    EXPECT_EQ(xid->component.keys.at("uuid"), kUuid0);
    EXPECT_EQ(GpusNamed(*answer), (std::set<std::string>{"gpu/0", "gpu/1"})) << Show(Summarize(*answer));
  }
}

TEST_F(OnePathTest, TheAgentStoresItsFindingsUnderTheSameNames) {
  Agent();
  RecordQuery q;
  q.node = kNode;
  q.limit = 0;
  auto findings = store_->ListFindings(q);
  ASSERT_TRUE(findings.ok());
  std::set<std::string> gpus;
  bool slowdown = false;
  for (const auto& row : findings->rows) {
    if (row.value.component.type == ComponentType::kGpu) gpus.insert(row.value.component.Id());
    slowdown = slowdown || (row.value.layer == Layer::kWorkload && row.value.first_ns == kT0 + 15 * kStep);
  }
  EXPECT_EQ(gpus, (std::set<std::string>{"gpu/0", "gpu/1"}));
  EXPECT_TRUE(slowdown) << "the workload detector's slowdown finding, from when the steps slowed";
}

}  // namespace
}  // namespace faultline
