// Every NVML error code, injected per call and per GPU through the fake library.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "core/clock.h"
#include "fake_nvml_env.h"
#include "sim/fake_nvml/fake_nvml_state.h"
#include "sources/nvml/nvml_collector.h"

namespace faultline::nvml {
namespace {

using testing::FakeNvmlEnv;
using testing::FakeOptions;
using testing::Json;
using testing::Node;

size_t CountFor(const NvmlSample& s, const std::string& gpu_index) {
  return std::count_if(s.observations.begin(), s.observations.end(), [&](const Observation& o) {
    return o.component.keys.count("index") && o.component.keys.at("index") == gpu_index;
  });
}

// The per-device functions, and what each produces (to see it vanish on error): a kind
// and optionally an attribute that must be absent (value "") or present ("*" = any value).
struct CallCase {
  const char* call;
  ObsKind kind;
  const char* key = nullptr;
  const char* value = nullptr;
};
constexpr CallCase kCalls[] = {
    {"nvmlDeviceGetTotalEccErrors", ObsKind::kEccDbe, "location", ""},
    {"nvmlDeviceGetMemoryErrorCounter", ObsKind::kEccSbe, "location", "*"},
    {"nvmlDeviceGetRetiredPages", ObsKind::kRetiredPages},
    {"nvmlDeviceGetRetiredPagesPendingStatus", ObsKind::kRetiredPagesPending},
    {"nvmlDeviceGetRemappedRows", ObsKind::kRowRemapPending},
    {"nvmlDeviceGetTemperature", ObsKind::kTemperature, "sensor", "gpu"},
    {"nvmlDeviceGetFieldValues", ObsKind::kTemperature, "sensor", "memory"},
    {"nvmlDeviceGetPowerUsage", ObsKind::kPower},
    {"nvmlDeviceGetEnforcedPowerLimit", ObsKind::kPowerLimit},
    {"nvmlDeviceGetClockInfo", ObsKind::kClock},
    {"nvmlDeviceGetCurrentClocksEventReasons", ObsKind::kClockThrottle},
    {"nvmlDeviceGetPcieReplayCounter", ObsKind::kPcieReplay},
    {"nvmlDeviceGetCurrPcieLinkGeneration", ObsKind::kPcieLinkGen},
    {"nvmlDeviceGetCurrPcieLinkWidth", ObsKind::kPcieLinkWidth},
    {"nvmlDeviceGetNvLinkState", ObsKind::kNvlinkState},
    {"nvmlDeviceGetNvLinkErrorCounter", ObsKind::kNvlinkCrcFlit},
};

bool Matches(const Observation& o, const CallCase& c) {
  if (o.kind != c.kind) return false;
  if (c.key == nullptr) return true;
  auto it = o.attrs.find(c.key);
  if (std::string(c.value).empty()) return it == o.attrs.end();
  return it != o.attrs.end() && (std::string(c.value) == "*" || it->second == c.value);
}

bool Produced(const NvmlSample& s, const CallCase& c, const std::string& gpu_index) {
  return std::any_of(s.observations.begin(), s.observations.end(), [&](const Observation& o) {
    return Matches(o, c) && o.component.keys.count("index") && o.component.keys.at("index") == gpu_index;
  });
}

bool HasKind(const NvmlSample& s, ObsKind kind, const std::string& gpu_index) {
  return Produced(s, CallCase{"", kind}, gpu_index);
}

class NvmlErrorsTest : public ::testing::TestWithParam<CallCase> {
 protected:
  NvmlSample SampleWithError(const char* call, const char* error) {
    Json state = Node(3);
    state["gpus"][1]["errors"] = {{call, error}};
    env_.Write(state);
    auto c = NvmlCollector::Open(FakeOptions(&clock_));
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    if (!c.ok()) return {};
    baseline_ = CountFor((*c)->Sample(), "0");
    return (*c)->Sample();
  }
  FakeNvmlEnv env_;
  FakeClock clock_{1'790'000'000'000'000'000};
  size_t baseline_ = 0;
};

TEST_P(NvmlErrorsTest, NotSupportedSkipsTheFieldSilently) {
  const CallCase& c = GetParam();
  NvmlSample s = SampleWithError(c.call, "NOT_SUPPORTED");
  EXPECT_TRUE(s.errors.empty());
  EXPECT_FALSE(Produced(s, c, "1")) << c.call;
  EXPECT_TRUE(Produced(s, c, "0"));
  EXPECT_FALSE(HasKind(s, ObsKind::kGpuLost, "1"));
  EXPECT_TRUE(HasKind(s, ObsKind::kGpuIdentity, "1"));
}

TEST_P(NvmlErrorsTest, FailuresBecomePerGpuErrorsAndTheRestIsRead) {
  const CallCase& c = GetParam();
  for (const char* error : {"NO_PERMISSION", "TIMEOUT", "UNKNOWN", "UNINITIALIZED", "NO_DATA", "CORRUPTED_INFOROM",
                            "INSUFFICIENT_POWER", "IRQ_ISSUE", "MEMORY", "DRIVER_NOT_LOADED"}) {
    NvmlSample s = SampleWithError(c.call, error);
    // One error per call and code, however many times the call failed.
    ASSERT_EQ(s.errors.size(), 1u) << c.call << " " << error;
    for (const auto& e : s.errors) {
      EXPECT_EQ(e.gpu, 1);
      EXPECT_EQ(e.call, c.call);
      EXPECT_EQ(NvmlErrorName(e.code), error);
      EXPECT_NE(e.message.find(error), std::string::npos);
    }
    EXPECT_FALSE(Produced(s, c, "1")) << c.call << " " << error;
    EXPECT_FALSE(HasKind(s, ObsKind::kGpuLost, "1"));
    EXPECT_TRUE(HasKind(s, ObsKind::kGpuIdentity, "1"));
    EXPECT_EQ(CountFor(s, "0"), baseline_);
    EXPECT_EQ(CountFor(s, "2"), baseline_);
  }
}

TEST_P(NvmlErrorsTest, LostGpuStopsThatGpuOnly) {
  const CallCase& c = GetParam();
  for (const char* error : {"GPU_IS_LOST", "RESET_REQUIRED"}) {
    NvmlSample s = SampleWithError(c.call, error);
    EXPECT_TRUE(s.errors.empty()) << c.call << " " << error;
    ASSERT_TRUE(HasKind(s, ObsKind::kGpuLost, "1")) << c.call << " " << error;
    EXPECT_FALSE(Produced(s, c, "1"));
    EXPECT_LT(CountFor(s, "1"), baseline_);
    EXPECT_EQ(CountFor(s, "0"), baseline_);
    EXPECT_EQ(CountFor(s, "2"), baseline_);
  }
}

INSTANTIATE_TEST_SUITE_P(EveryCall, NvmlErrorsTest, ::testing::ValuesIn(kCalls),
                         [](const ::testing::TestParamInfo<CallCase>& info) {
                           return std::string(info.param.call).substr(10);  // drop "nvmlDevice"
                         });

class NvmlIdentityErrorsTest : public ::testing::Test {
 protected:
  FakeNvmlEnv env_;
  FakeClock clock_{1'790'000'000'000'000'000};
};

TEST_F(NvmlIdentityErrorsTest, IdentityErrorsKeepTheGpuIndex) {
  Json state = Node(2);
  state["gpus"][1]["errors"] = {{"nvmlDeviceGetUUID", "NO_PERMISSION"},
                                {"nvmlDeviceGetSerial", "NOT_SUPPORTED"},
                                {"nvmlDeviceGetPciInfo_v3", "TIMEOUT"},
                                {"nvmlDeviceGetName", "UNKNOWN"}};
  env_.Write(state);
  auto c = NvmlCollector::Open(FakeOptions(&clock_));
  ASSERT_TRUE(c.ok());
  NvmlSample s = (*c)->Sample();
  EXPECT_EQ(s.errors.size(), 3u);
  EXPECT_TRUE(HasKind(s, ObsKind::kGpuIdentity, "1"));
  EXPECT_TRUE(HasKind(s, ObsKind::kTemperature, "1"));
  for (const auto& o : s.observations) {
    if (o.component.keys.at("index") == "1") {
      EXPECT_EQ(o.component.keys.count("uuid"), 0u);
    }
  }
}

TEST_F(NvmlIdentityErrorsTest, DeviceCountFailureIsASampleError) {
  env_.Write(Node(2));
  auto c = NvmlCollector::Open(FakeOptions(&clock_));
  ASSERT_TRUE(c.ok());
  env_.Write(Json{{"gpus", Node(2)["gpus"]}, {"errors", {{"nvmlDeviceGetCount_v2", "TIMEOUT"}}}});
  NvmlSample s = (*c)->Sample();
  ASSERT_EQ(s.errors.size(), 1u);
  EXPECT_EQ(s.errors[0].gpu, -1);
  EXPECT_EQ(s.errors[0].code, kErrorTimeout);
  EXPECT_TRUE(s.observations.empty());
}

TEST_F(NvmlIdentityErrorsTest, HandleErrorsPerGpu) {
  Json state = Node(3);
  state["gpus"][0]["errors"] = {{"nvmlDeviceGetHandleByIndex_v2", "NO_PERMISSION"}};
  state["gpus"][2]["errors"] = {{"nvmlDeviceGetHandleByIndex_v2", "GPU_IS_LOST"}};
  env_.Write(state);
  auto c = NvmlCollector::Open(FakeOptions(&clock_));
  ASSERT_TRUE(c.ok());
  NvmlSample s = (*c)->Sample();
  ASSERT_EQ(s.errors.size(), 1u);
  EXPECT_EQ(s.errors[0].gpu, 0);
  EXPECT_EQ(CountFor(s, "0"), 0u);
  EXPECT_TRUE(HasKind(s, ObsKind::kGpuIdentity, "1"));
  EXPECT_TRUE(HasKind(s, ObsKind::kGpuLost, "2"));
  EXPECT_EQ(CountFor(s, "2"), 1u);
}

TEST(NvmlErrorNames, RoundTripEveryKnownCode) {
  for (NvmlReturn code : {kSuccess, kErrorUninitialized, kErrorInvalidArgument, kErrorNotSupported, kErrorNoPermission,
                          kErrorTimeout, kErrorGpuIsLost, kErrorResetRequired, kErrorUnknown}) {
    NvmlReturn parsed = -1;
    ASSERT_TRUE(ParseNvmlErrorName(NvmlErrorName(code), &parsed)) << code;
    EXPECT_EQ(parsed, code);
  }
  EXPECT_EQ(NvmlErrorName(kErrorGpuIsLost), "GPU_IS_LOST");
  EXPECT_EQ(NvmlErrorName(12345), "ERROR_12345");
  NvmlReturn parsed = -1;
  EXPECT_TRUE(ParseNvmlErrorName("NVML_ERROR_RESET_REQUIRED", &parsed));
  EXPECT_EQ(parsed, kErrorResetRequired);
  EXPECT_FALSE(ParseNvmlErrorName("GPU_ON_FIRE", &parsed));
  EXPECT_FALSE(ParseNvmlErrorName("", &parsed));
}

}  // namespace
}  // namespace faultline::nvml
