// NvmlCollector through the real dlopen path, loading the fake libnvidia-ml.so.1.
#include "sources/nvml/nvml_collector.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <set>
#include <thread>

#include "core/clock.h"
#include "fake_nvml_env.h"

namespace faultline::nvml {
namespace {

using testing::FakeNvmlEnv;
using testing::FakeOptions;
using testing::H100;
using testing::Json;
using testing::Node;

constexpr int64_t kT0 = 1'790'000'000'000'000'000;  // 2026-09-21

std::vector<Observation> Find(const NvmlSample& s, ObsKind kind, const std::string& component,
                              const std::map<std::string, std::string>& attrs = {}) {
  std::vector<Observation> out;
  for (const auto& o : s.observations) {
    if (o.kind != kind || o.component.Id() != component) continue;
    bool match = true;
    for (const auto& [k, v] : attrs) match = match && o.attrs.count(k) && o.attrs.at(k) == v;
    if (match) out.push_back(o);
  }
  return out;
}

double ValueOf(const NvmlSample& s, ObsKind kind, const std::string& component,
               const std::map<std::string, std::string>& attrs = {}) {
  auto found = Find(s, kind, component, attrs);
  EXPECT_EQ(found.size(), 1u) << ToString(kind) << " " << component;
  return found.empty() || !found[0].value ? -1 : *found[0].value;
}

size_t CountFor(const NvmlSample& s, const std::string& gpu_index) {
  return std::count_if(s.observations.begin(), s.observations.end(), [&](const Observation& o) {
    return o.component.keys.count("index") && o.component.keys.at("index") == gpu_index;
  });
}

class NvmlCollectorTest : public ::testing::Test {
 protected:
  std::unique_ptr<NvmlCollector> OpenOrDie(const char* lib = FAKE_NVML_LIB) {
    auto c = NvmlCollector::Open(FakeOptions(&clock_, lib));
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    return c.ok() ? std::move(c).value() : nullptr;
  }
  FakeNvmlEnv env_;
  FakeClock clock_{kT0, 1'000'000'000};
};

TEST_F(NvmlCollectorTest, MissingLibraryIsUnavailable) {
  auto c = NvmlCollector::Open(FakeOptions(&clock_, "/nonexistent/libnvidia-ml.so.1"));
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(c.status().message().find("/nonexistent/libnvidia-ml.so.1"), std::string::npos);
}

TEST_F(NvmlCollectorTest, LibraryWithoutNvmlIsUnavailable) {
  auto c = NvmlCollector::Open(FakeOptions(&clock_, "libm.so.6"));
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(c.status().message().find("nvmlInit_v2"), std::string::npos) << c.status().message();
}

TEST_F(NvmlCollectorTest, EnvironmentVariableChoosesTheLibrary) {
  env_.Write(Node(1));
  setenv("FAULTLINE_NVML_LIB", FAKE_NVML_LIB, 1);
  NvmlOptions options = FakeOptions(&clock_);
  options.library_path.clear();
  auto c = NvmlCollector::Open(options);
  unsetenv("FAULTLINE_NVML_LIB");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ((*c)->Sample().gpu_count, 1);
  EXPECT_EQ(ResolveNvmlLibraryPath(""), "libnvidia-ml.so.1");
}

TEST_F(NvmlCollectorTest, InitFailureIsUnavailableWithTheReason) {
  env_.Write(Json{{"gpus", Json::array()}, {"errors", {{"nvmlInit_v2", "DRIVER_NOT_LOADED"}}}});
  auto c = NvmlCollector::Open(FakeOptions(&clock_));
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(c.status().message().find("DRIVER_NOT_LOADED"), std::string::npos);

  env_.Write(Json{{"errors", {{"nvmlInit_v2", "NO_PERMISSION"}}}});
  auto denied = NvmlCollector::Open(FakeOptions(&clock_));
  ASSERT_FALSE(denied.ok());
  EXPECT_EQ(denied.status().code(), StatusCode::kPermissionDenied);
}

TEST_F(NvmlCollectorTest, CorruptStateFileMakesInitFail) {
  env_.Write(std::string("{\"gpus\": [ {\"uuid\": "));
  auto c = NvmlCollector::Open(FakeOptions(&clock_));
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kUnavailable);
}

TEST_F(NvmlCollectorTest, ReadsIdentity) {
  env_.Write(Node(2));
  auto c = OpenOrDie();
  ASSERT_TRUE(c);
  NvmlSample s = c->Sample();
  EXPECT_EQ(s.gpu_count, 2);
  EXPECT_EQ(s.time_ns, kT0);
  EXPECT_TRUE(s.errors.empty());
  auto ids = Find(s, ObsKind::kGpuIdentity, "gpu/1");
  ASSERT_EQ(ids.size(), 1u);
  const Observation& id = ids[0];
  EXPECT_EQ(id.attrs.at("name"), "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(id.attrs.at("uuid"), "GPU-6b4c1d2e-90ab-4c1d-8e2f-000000000001");
  EXPECT_EQ(id.attrs.at("serial"), "1654223001001");
  EXPECT_EQ(id.attrs.at("bdf"), "0000:2a:00.0");
  EXPECT_EQ(id.attrs.at("index"), "1");
  EXPECT_FALSE(id.value.has_value());
  EXPECT_EQ(id.component.keys.at("uuid"), "GPU-6b4c1d2e-90ab-4c1d-8e2f-000000000001");
  EXPECT_EQ(id.component.keys.at("serial"), "1654223001001");
  EXPECT_EQ(id.component.keys.at("bdf"), "0000:2a:00.0");
  EXPECT_EQ(id.node, "node-a07");
  EXPECT_EQ(id.source, Source::kNvml);
  EXPECT_EQ(id.layer, Layer::kGpu);
  for (const auto& o : s.observations) {
    EXPECT_EQ(o.time_ns, kT0);
    EXPECT_EQ(o.node, "node-a07");
    EXPECT_EQ(o.source, Source::kNvml);
  }
}

TEST_F(NvmlCollectorTest, ReadsMemoryHealth) {
  Json state = Node(1);
  state["gpus"][0]["retired_pages"] = {{"sbe", 4}, {"dbe", 2}, {"pending", true}};
  state["gpus"][0]["remapped_rows"] = {{"correctable", 5}, {"uncorrectable", 3}, {"pending", true}, {"failure", true}};
  env_.Write(state);
  auto c = OpenOrDie();
  ASSERT_TRUE(c);
  NvmlSample s = c->Sample();
  EXPECT_EQ(ValueOf(s, ObsKind::kEccSbe, "gpu/0", {{"counter", "volatile"}, {"location", "dram"}}), 3);
  EXPECT_EQ(ValueOf(s, ObsKind::kEccSbe, "gpu/0", {{"counter", "volatile"}, {"location", "sram"}}), 0);
  EXPECT_EQ(ValueOf(s, ObsKind::kEccDbe, "gpu/0", {{"counter", "volatile"}, {"location", "dram"}}), 0);
  // Totals carry no location attribute.
  std::vector<Observation> totals;
  for (const auto& o : Find(s, ObsKind::kEccSbe, "gpu/0")) {
    if (!o.attrs.count("location")) totals.push_back(o);
  }
  ASSERT_EQ(totals.size(), 2u);
  for (const auto& o : totals) EXPECT_EQ(*o.value, o.attrs.at("counter") == "volatile" ? 3 : 120);
  EXPECT_EQ(Find(s, ObsKind::kEccSbe, "gpu/0", {{"counter", "aggregate"}, {"location", "dram"}}).size(), 0u);
  std::vector<Observation> dbe_aggregate;
  for (const auto& o : Find(s, ObsKind::kEccDbe, "gpu/0", {{"counter", "aggregate"}})) {
    if (!o.attrs.count("location")) dbe_aggregate.push_back(o);
  }
  ASSERT_EQ(dbe_aggregate.size(), 1u);
  EXPECT_EQ(*dbe_aggregate[0].value, 1);
  EXPECT_EQ(ValueOf(s, ObsKind::kRetiredPages, "gpu/0", {{"cause", "sbe"}}), 4);
  EXPECT_EQ(ValueOf(s, ObsKind::kRetiredPages, "gpu/0", {{"cause", "dbe"}}), 2);
  EXPECT_EQ(ValueOf(s, ObsKind::kRetiredPagesPending, "gpu/0"), 1);
  EXPECT_EQ(ValueOf(s, ObsKind::kRowRemapCorrectable, "gpu/0"), 5);
  EXPECT_EQ(ValueOf(s, ObsKind::kRowRemapUncorrectable, "gpu/0"), 3);
  EXPECT_EQ(ValueOf(s, ObsKind::kRowRemapPending, "gpu/0"), 1);
  EXPECT_EQ(ValueOf(s, ObsKind::kRowRemapFailure, "gpu/0"), 1);
}

TEST_F(NvmlCollectorTest, ReadsThermalPowerAndClocks) {
  Json state = Node(1);
  state["gpus"][0]["clock_event_reasons"] = "0x48";  // HW_SLOWDOWN | HW_THERMAL
  env_.Write(state);
  auto c = OpenOrDie();
  ASSERT_TRUE(c);
  NvmlSample s = c->Sample();
  auto gpu_temp = Find(s, ObsKind::kTemperature, "gpu/0", {{"sensor", "gpu"}});
  ASSERT_EQ(gpu_temp.size(), 1u);
  EXPECT_EQ(*gpu_temp[0].value, 41);
  EXPECT_EQ(gpu_temp[0].attrs.at("slowdown"), "87");
  EXPECT_EQ(gpu_temp[0].attrs.at("shutdown"), "92");
  EXPECT_EQ(ValueOf(s, ObsKind::kTemperature, "gpu/0", {{"sensor", "memory"}}), 38);
  EXPECT_DOUBLE_EQ(ValueOf(s, ObsKind::kPower, "gpu/0"), 312.456);
  EXPECT_DOUBLE_EQ(ValueOf(s, ObsKind::kPowerLimit, "gpu/0"), 700);
  EXPECT_EQ(ValueOf(s, ObsKind::kClock, "gpu/0", {{"clock", "sm"}}), 1980);
  EXPECT_EQ(ValueOf(s, ObsKind::kClock, "gpu/0", {{"clock", "mem"}}), 2619);
  auto reasons = Find(s, ObsKind::kClockThrottle, "gpu/0");
  ASSERT_EQ(reasons.size(), 1u);
  EXPECT_EQ(*reasons[0].value, 0x48);
  EXPECT_EQ(reasons[0].attrs.at("mask"), "0x48");
}

TEST_F(NvmlCollectorTest, ReadsPcieAndNvlink) {
  Json state = Node(1);
  state["gpus"][0]["pcie"] = {{"replay", 17}, {"gen", 4}, {"max_gen", 5}, {"width", 8}, {"max_width", 16}};
  state["gpus"][0]["nvlink"][11] = {
      {"active", false}, {"crc_flit", 900}, {"crc_data", 7}, {"replay", 3}, {"recovery", 2}};
  env_.Write(state);
  auto c = OpenOrDie();
  ASSERT_TRUE(c);
  NvmlSample s = c->Sample();
  auto replay = Find(s, ObsKind::kPcieReplay, "gpu/0");
  ASSERT_EQ(replay.size(), 1u);
  EXPECT_EQ(*replay[0].value, 17);
  EXPECT_EQ(replay[0].layer, Layer::kFabric);
  auto gen = Find(s, ObsKind::kPcieLinkGen, "gpu/0");
  ASSERT_EQ(gen.size(), 1u);
  EXPECT_EQ(*gen[0].value, 4);
  EXPECT_EQ(gen[0].attrs.at("max"), "5");
  auto width = Find(s, ObsKind::kPcieLinkWidth, "gpu/0");
  ASSERT_EQ(width.size(), 1u);
  EXPECT_EQ(*width[0].value, 8);
  EXPECT_EQ(width[0].attrs.at("max"), "16");

  auto state11 = Find(s, ObsKind::kNvlinkState, "nvlink/0/11");
  ASSERT_EQ(state11.size(), 1u);
  EXPECT_EQ(*state11[0].value, 0);
  EXPECT_EQ(state11[0].layer, Layer::kFabric);
  EXPECT_EQ(state11[0].component.type, ComponentType::kNvlink);
  EXPECT_EQ(state11[0].component.keys.at("link"), "11");
  EXPECT_EQ(state11[0].component.keys.at("index"), "0");
  EXPECT_EQ(state11[0].component.keys.at("bdf"), "0000:18:00.0");
  EXPECT_EQ(ValueOf(s, ObsKind::kNvlinkCrcFlit, "nvlink/0/11"), 900);
  EXPECT_EQ(ValueOf(s, ObsKind::kNvlinkCrcData, "nvlink/0/11"), 7);
  EXPECT_EQ(ValueOf(s, ObsKind::kNvlinkReplay, "nvlink/0/11"), 3);
  EXPECT_EQ(ValueOf(s, ObsKind::kNvlinkRecovery, "nvlink/0/11"), 2);
  EXPECT_EQ(ValueOf(s, ObsKind::kNvlinkState, "nvlink/0/17"), 1);
  EXPECT_EQ(ValueOf(s, ObsKind::kNvlinkCrcFlit, "nvlink/0/17"), 17);
  EXPECT_TRUE(Find(s, ObsKind::kNvlinkState, "nvlink/0/18").empty());
}

TEST_F(NvmlCollectorTest, FewerLinksThanTheMaximumIsNotAnError) {
  Json state = Node(1);
  state["gpus"][0]["nvlink"] = Json::array({Json{{"active", true}}, Json{{"active", true}}});
  env_.Write(state);
  auto c = OpenOrDie();
  ASSERT_TRUE(c);
  NvmlSample s = c->Sample();
  EXPECT_TRUE(s.errors.empty());
  EXPECT_EQ(Find(s, ObsKind::kNvlinkState, "nvlink/0/1").size(), 1u);
  EXPECT_TRUE(Find(s, ObsKind::kNvlinkState, "nvlink/0/2").empty());
}

TEST_F(NvmlCollectorTest, UnsupportedFieldsProduceNoObservation) {
  env_.Write(Json{{"gpus", {{{"uuid", "GPU-aaaa"}}}}});
  auto c = OpenOrDie();
  ASSERT_TRUE(c);
  NvmlSample s = c->Sample();
  EXPECT_TRUE(s.errors.empty());
  ASSERT_EQ(s.observations.size(), 1u);
  EXPECT_EQ(s.observations[0].kind, ObsKind::kGpuIdentity);
  EXPECT_EQ(s.observations[0].attrs.at("uuid"), "GPU-aaaa");
  EXPECT_EQ(s.observations[0].attrs.count("serial"), 0u);
}

TEST_F(NvmlCollectorTest, CountersChangeBetweenSamples) {
  Json state = Node(2);
  env_.Write(state);
  auto c = OpenOrDie();
  ASSERT_TRUE(c);
  NvmlSample first = c->Sample();
  EXPECT_EQ(ValueOf(first, ObsKind::kPcieReplay, "gpu/1"), 0);

  state["gpus"][1]["pcie"]["replay"] = 250;
  state["gpus"][1]["ecc"]["volatile"]["corrected"] = 40;
  state["gpus"][1]["nvlink"][3]["crc_flit"] = 12345;
  env_.Write(state);
  clock_.Advance(10'000'000'000);
  NvmlSample second = c->Sample();
  EXPECT_EQ(second.time_ns, kT0 + 10'000'000'000);
  EXPECT_EQ(ValueOf(second, ObsKind::kPcieReplay, "gpu/1"), 250);
  EXPECT_EQ(ValueOf(second, ObsKind::kPcieReplay, "gpu/0"), 0);
  EXPECT_EQ(ValueOf(second, ObsKind::kNvlinkCrcFlit, "nvlink/1/3"), 12345);
  EXPECT_EQ(ValueOf(second, ObsKind::kEccSbe, "gpu/1", {{"counter", "volatile"}, {"location", "dram"}}), 3);
}

// The slow fields (NVLink, per-location ECC, retired pages, remapped rows) at every
// slow_every-th sample, the first included; the fast ones at each; a GPU count that
// changed reads everything at once.
TEST_F(NvmlCollectorTest, SlowFieldsAreReadAtEverySlowEveryThSample) {
  Json state = Node(2);
  env_.Write(state);
  NvmlOptions options = FakeOptions(&clock_);
  options.slow_every = 3;
  auto opened = NvmlCollector::Open(options);
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  NvmlCollector& c = **opened;
  auto has_slow = [](const NvmlSample& s) {
    bool nvlink = false, location = false, retired = false, remap = false;
    for (const Observation& o : s.observations) {
      nvlink = nvlink || o.kind == ObsKind::kNvlinkCrcFlit || o.kind == ObsKind::kNvlinkState;
      location = location || o.attrs.count("location") > 0;
      retired = retired || o.kind == ObsKind::kRetiredPages;
      remap = remap || o.kind == ObsKind::kRowRemapPending;
    }
    EXPECT_EQ(nvlink, location);
    EXPECT_EQ(nvlink, retired);
    EXPECT_EQ(nvlink, remap);
    return nvlink;
  };
  std::vector<bool> slow;
  for (int i = 0; i < 7; ++i) {
    if (i == 4) {  // a slow-field change between full reads: seen at the next one
      state["gpus"][1]["nvlink"][3]["crc_flit"] = 77;
      env_.Write(state);
    }
    NvmlSample s = c.Sample();
    slow.push_back(has_slow(s));
    // The fast fields at every sample.
    EXPECT_EQ(Find(s, ObsKind::kTemperature, "gpu/1").empty(), false) << i;
    EXPECT_EQ(Find(s, ObsKind::kPcieReplay, "gpu/0").size(), 1u) << i;
    EXPECT_EQ(Find(s, ObsKind::kEccSbe, "gpu/0", {{"counter", "volatile"}}).empty(), false) << i;
    if (i == 6) {
      EXPECT_EQ(ValueOf(s, ObsKind::kNvlinkCrcFlit, "nvlink/1/3"), 77);
    }
    clock_.Advance(10'000'000'000);
  }
  EXPECT_EQ(slow, (std::vector<bool>{true, false, false, true, false, false, true}));
  // A GPU more: everything at once, and the cadence starts over from it.
  env_.Write(Node(3));
  EXPECT_TRUE(has_slow(c.Sample()));
  EXPECT_FALSE(has_slow(c.Sample()));
}

TEST_F(NvmlCollectorTest, GpuLostMidRun) {
  Json state = Node(4);
  env_.Write(state);
  auto c = OpenOrDie();
  ASSERT_TRUE(c);
  NvmlSample before = c->Sample();
  const size_t per_gpu = CountFor(before, "0");
  EXPECT_GT(per_gpu, 100u);
  EXPECT_EQ(CountFor(before, "3"), per_gpu);
  EXPECT_TRUE(Find(before, ObsKind::kGpuLost, "gpu/3").empty());

  state["gpus"][3]["lost"] = "GPU_IS_LOST";
  env_.Write(state);
  NvmlSample after = c->Sample();
  auto lost = Find(after, ObsKind::kGpuLost, "gpu/3");
  ASSERT_EQ(lost.size(), 1u);
  EXPECT_EQ(*lost[0].value, 1);
  EXPECT_EQ(lost[0].layer, Layer::kGpu);
  EXPECT_EQ(lost[0].attrs.at("error"), "GPU_IS_LOST");
  EXPECT_EQ(CountFor(after, "3"), 1u);  // nothing else read from the lost GPU
  for (const char* other : {"0", "1", "2"}) EXPECT_EQ(CountFor(after, other), per_gpu) << other;
  EXPECT_TRUE(after.errors.empty());
}

TEST_F(NvmlCollectorTest, ResetRequiredPartWayThroughAGpu) {
  Json state = Node(2);
  state["gpus"][0]["errors"] = {{"nvmlDeviceGetRemappedRows", "RESET_REQUIRED"}};
  env_.Write(state);
  auto c = OpenOrDie();
  ASSERT_TRUE(c);
  NvmlSample s = c->Sample();
  auto lost = Find(s, ObsKind::kGpuLost, "gpu/0");
  ASSERT_EQ(lost.size(), 1u);
  EXPECT_EQ(lost[0].attrs.at("error"), "RESET_REQUIRED");
  EXPECT_EQ(lost[0].attrs.at("call"), "nvmlDeviceGetRemappedRows");
  EXPECT_EQ(lost[0].component.keys.at("uuid"), "GPU-6b4c1d2e-90ab-4c1d-8e2f-000000000000");
  // Read before the failing call: kept. After it: not read.
  EXPECT_EQ(Find(s, ObsKind::kRetiredPages, "gpu/0").size(), 2u);
  EXPECT_TRUE(Find(s, ObsKind::kTemperature, "gpu/0").empty());
  EXPECT_TRUE(Find(s, ObsKind::kNvlinkState, "nvlink/0/0").empty());
  EXPECT_EQ(Find(s, ObsKind::kTemperature, "gpu/1").size(), 2u);
}

TEST_F(NvmlCollectorTest, LostAfterSecondsSinceInit) {
  Json state = Node(3);
  state["gpus"][0]["lost_after_s"] = 3600;
  state["gpus"][1]["lost_after_s"] = 0;
  state["gpus"][2]["lost_after_s"] = 0.05;
  env_.Write(state);
  auto c = OpenOrDie();
  ASSERT_TRUE(c);
  std::this_thread::sleep_for(std::chrono::milliseconds(80));
  NvmlSample s = c->Sample();
  EXPECT_TRUE(Find(s, ObsKind::kGpuLost, "gpu/0").empty());
  EXPECT_EQ(Find(s, ObsKind::kGpuIdentity, "gpu/0").size(), 1u);
  EXPECT_EQ(Find(s, ObsKind::kGpuLost, "gpu/1").size(), 1u);
  EXPECT_EQ(Find(s, ObsKind::kGpuLost, "gpu/2").size(), 1u);
}

TEST_F(NvmlCollectorTest, GpuRemovedFromTheBusBetweenSamples) {
  env_.Write(Node(3));
  auto c = OpenOrDie();
  ASSERT_TRUE(c);
  EXPECT_EQ(c->Sample().gpu_count, 3);
  env_.Write(Node(2));
  NvmlSample s = c->Sample();
  EXPECT_EQ(s.gpu_count, 2);
  EXPECT_TRUE(Find(s, ObsKind::kGpuIdentity, "gpu/2").empty());
}

TEST_F(NvmlCollectorTest, EightGpus) {
  env_.Write(Node(8));
  auto c = OpenOrDie();
  ASSERT_TRUE(c);
  NvmlSample s = c->Sample();
  EXPECT_EQ(s.gpu_count, 8);
  EXPECT_TRUE(s.errors.empty());
  std::set<std::string> uuids, bdfs;
  for (int i = 0; i < 8; ++i) {
    const std::string id = "gpu/" + std::to_string(i);
    auto ident = Find(s, ObsKind::kGpuIdentity, id);
    ASSERT_EQ(ident.size(), 1u) << id;
    uuids.insert(ident[0].attrs.at("uuid"));
    bdfs.insert(ident[0].attrs.at("bdf"));
    for (int link = 0; link < 18; ++link) {
      EXPECT_EQ(Find(s, ObsKind::kNvlinkState, "nvlink/" + std::to_string(i) + "/" + std::to_string(link)).size(), 1u);
    }
  }
  EXPECT_EQ(uuids.size(), 8u);
  EXPECT_EQ(bdfs.size(), 8u);
  EXPECT_EQ(s.observations.size(), 8 * CountFor(s, "0"));
}

TEST_F(NvmlCollectorTest, OlderDriverMissingHalfItsFunctions) {
  Json state = Node(2);
  state["gpus"][0]["clock_event_reasons"] = 0x80;  // HW_POWER_BRAKE
  env_.Write(state);
  auto c = OpenOrDie(FAKE_NVML_LEGACY_LIB);
  ASSERT_TRUE(c);
  NvmlSample first = c->Sample();
  EXPECT_TRUE(first.errors.empty());
  auto noted = [&](const std::string& fn) {
    return std::any_of(first.notes.begin(), first.notes.end(),
                       [&](const std::string& n) { return n.find(fn) != std::string::npos; });
  };
  for (const char* fn : {"nvmlDeviceGetRemappedRows", "nvmlDeviceGetMemoryErrorCounter", "nvmlDeviceGetFieldValues",
                         "nvmlDeviceGetNvLinkState", "nvmlDeviceGetCurrentClocksEventReasons"}) {
    EXPECT_TRUE(noted(fn)) << fn;
  }
  EXPECT_FALSE(noted("nvmlDeviceGetCurrentClocksThrottleReasons"));
  // What the old driver has is still read; the throttle-reasons call stands in.
  EXPECT_EQ(Find(first, ObsKind::kGpuIdentity, "gpu/1").size(), 1u);
  EXPECT_EQ(Find(first, ObsKind::kEccSbe, "gpu/0").size(), 2u);  // totals only
  EXPECT_EQ(ValueOf(first, ObsKind::kClockThrottle, "gpu/0"), 0x80);
  EXPECT_EQ(Find(first, ObsKind::kTemperature, "gpu/0").size(), 1u);  // no HBM field
  EXPECT_TRUE(Find(first, ObsKind::kRowRemapPending, "gpu/0").empty());
  EXPECT_TRUE(Find(first, ObsKind::kNvlinkState, "nvlink/0/0").empty());
  EXPECT_TRUE(Find(first, ObsKind::kPcieReplay, "gpu/0").empty());
  EXPECT_EQ(Find(first, ObsKind::kPcieLinkGen, "gpu/0").size(), 1u);
  // Reported once.
  EXPECT_TRUE(c->Sample().notes.empty());
}

TEST_F(NvmlCollectorTest, RunTakesCountSamplesAtTheInterval) {
  env_.Write(Node(1));
  NvmlOptions options = FakeOptions(&clock_);
  std::vector<std::chrono::nanoseconds> waits;
  options.sleep = [&](std::chrono::nanoseconds d) {
    waits.push_back(d);
    clock_.Advance(d.count());
  };
  auto c = NvmlCollector::Open(options);
  ASSERT_TRUE(c.ok());
  std::vector<int64_t> times;
  (*c)->Run(3, std::chrono::seconds(1), [&](const NvmlSample& s) {
    times.push_back(s.time_ns);
    return true;
  });
  ASSERT_EQ(times.size(), 3u);
  EXPECT_EQ(times[1] - times[0], 1'000'000'000);
  EXPECT_EQ(times[2] - times[1], 1'000'000'000);
  EXPECT_EQ(waits.size(), 2u);  // no wait after the last sample

  int seen = 0;
  (*c)->Run(0, std::chrono::seconds(1), [&](const NvmlSample&) { return ++seen < 4; });
  EXPECT_EQ(seen, 4);
}

}  // namespace
}  // namespace faultline::nvml
