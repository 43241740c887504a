// NVML's event API (sources/nvml/nvml_events.h) through the real dlopen path into the fake
// library: critical XIDs and a GPU falling off the bus are seen as they happen, each once;
// libraries or GPUs without events fall back cleanly; a wait is cancellable; and a set that
// answers GPU_IS_LOST at every call does not turn into a busy loop.
#include "sources/nvml/nvml_events.h"

#include <gtest/gtest.h>

#include <thread>

#include "core/clock.h"
#include "fake_nvml_env.h"

namespace faultline::nvml {
namespace {

using testing::FakeNvmlEnv;
using testing::FakeOptions;
using testing::Json;
using testing::Node;

constexpr int64_t kT0 = 1'764'410'400LL * 1'000'000'000LL;
constexpr int64_t kLongWaitNs = 20'000'000'000;  // a bound on waiting, never reached when it works

class NvmlEventsTest : public ::testing::Test {
 protected:
  std::unique_ptr<NvmlCollector> Open(const char* lib = FAKE_NVML_LIB) {
    auto c = NvmlCollector::Open(FakeOptions(&clock_, lib));
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    return c.ok() ? std::move(c).value() : nullptr;
  }
  FakeNvmlEnv env_;
  FakeClock clock_{kT0, 1'000'000'000};
};

TEST_F(NvmlEventsTest, ACriticalXidIsDeliveredOnceWithItsGpu) {
  Json state = Node(4);
  state["gpus"][2]["xid_events"] = Json::array({Json{{"at_s", 0.2}, {"xid", 48}}});
  env_.Write(state);
  auto c = Open();
  ASSERT_TRUE(c);
  auto watch = NvmlEventWatch::Create(c->api());
  ASSERT_TRUE(watch.ok()) << watch.status().ToString();
  EXPECT_EQ((*watch)->registered_gpus(), 4u);
  auto events = (*watch)->Wait(kLongWaitNs);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].gpu, 2);
  EXPECT_EQ(events[0].type, kEventXidCritical);
  EXPECT_EQ(events[0].data, 48u);
  EXPECT_TRUE((*watch)->Wait(300'000'000).empty()) << "delivered once";
}

TEST_F(NvmlEventsTest, AGpuFallingOffTheBusWakesTheWatchWithXid79) {
  env_.Write(Node(2));
  auto c = Open();
  ASSERT_TRUE(c);
  auto watch = NvmlEventWatch::Create(c->api());
  ASSERT_TRUE(watch.ok());
  EXPECT_TRUE((*watch)->Wait(100'000'000).empty());
  std::thread later([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    Json lost = Node(2);
    lost["gpus"][1]["lost"] = true;
    env_.Write(lost);
  });
  auto events = (*watch)->Wait(kLongWaitNs);
  later.join();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].gpu, 1);
  EXPECT_EQ(events[0].data, 79u);
}

TEST_F(NvmlEventsTest, WithoutEventsTheWatchIsUnavailableNotBroken) {
  {
    Json none = Node(2);
    for (auto& g : none["gpus"]) g["event_types"] = 0;
    env_.Write(none);
    auto c = Open();
    ASSERT_TRUE(c);
    auto watch = NvmlEventWatch::Create(c->api());
    ASSERT_FALSE(watch.ok());
    EXPECT_EQ(watch.status().code(), StatusCode::kUnavailable);
  }
  {
    Json refused = Node(2);
    refused["errors"] = {{"nvmlEventSetCreate", 3}};
    env_.Write(refused);
    auto c = Open();
    ASSERT_TRUE(c);
    auto watch = NvmlEventWatch::Create(c->api());
    ASSERT_FALSE(watch.ok());
    EXPECT_NE(watch.status().message().find("NOT_SUPPORTED"), std::string::npos) << watch.status().message();
  }
}

// On its own: a process that loads both fake libraries (this one and the legacy build)
// loses track of the second's allocations once it is unloaded, which LeakSanitizer reports.
TEST_F(NvmlEventsTest, AnOldDriverWithoutTheEventApiIsUnavailable) {
  env_.Write(Node(2));
  auto c = Open(FAKE_NVML_LEGACY_LIB);
  ASSERT_TRUE(c);
  auto watch = NvmlEventWatch::Create(c->api());
  ASSERT_FALSE(watch.ok());
  EXPECT_NE(watch.status().message().find("no event API"), std::string::npos);
}

TEST_F(NvmlEventsTest, AGpuWithoutEventsIsSkippedTheOthersWatched) {
  Json state = Node(3);
  state["gpus"][0]["event_types"] = 0;
  state["gpus"][1]["event_types"] = 0x4;  // PState only: nothing watched
  state["gpus"][2]["xid_events"] = Json::array({Json{{"at_s", 0}, {"xid", 94}}});
  env_.Write(state);
  auto c = Open();
  ASSERT_TRUE(c);
  auto watch = NvmlEventWatch::Create(c->api());
  ASSERT_TRUE(watch.ok());
  EXPECT_EQ((*watch)->registered_gpus(), 1u);
  auto events = (*watch)->Wait(kLongWaitNs);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].gpu, 2);
}

TEST_F(NvmlEventsTest, CancelEndsAWaitInProgress) {
  env_.Write(Node(1));
  auto c = Open();
  ASSERT_TRUE(c);
  auto watch = NvmlEventWatch::Create(c->api());
  ASSERT_TRUE(watch.ok());
  std::thread canceller([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    (*watch)->Cancel();
  });
  EXPECT_TRUE((*watch)->Wait(int64_t{3600} * 1'000'000'000).empty());  // returns: the test does not hang
  canceller.join();
}

// A table of our own: a set that says GPU_IS_LOST at every call after a GPU is gone.
NvmlReturn Count(unsigned int* n) {
  *n = 1;
  return kSuccess;
}
NvmlReturn Handle(unsigned int, NvmlDevice* d) {
  *d = reinterpret_cast<NvmlDevice>(0x1000);
  return kSuccess;
}
NvmlReturn Create(NvmlEventSet* s) {
  *s = reinterpret_cast<NvmlEventSet>(0x2000);
  return kSuccess;
}
NvmlReturn Free(NvmlEventSet) { return kSuccess; }
NvmlReturn Supported(NvmlDevice, unsigned long long* t) {  // NOLINT(runtime/int)
  *t = kEventXidCritical;
  return kSuccess;
}
NvmlReturn Register(NvmlDevice, unsigned long long, NvmlEventSet) { return kSuccess; }  // NOLINT(runtime/int)
std::atomic<int> g_waits{0};
NvmlReturn AlwaysLost(NvmlEventSet, NvmlEventData*, unsigned int) {
  ++g_waits;
  return kErrorGpuIsLost;
}

TEST(NvmlEventsTable, ALostGpuIsNewsOnceNotABusyLoop) {
  NvmlApi api;
  api.get_count = Count;
  api.get_handle_by_index = Handle;
  api.event_set_create = Create;
  api.event_set_free = Free;
  api.get_supported_event_types = Supported;
  api.register_events = Register;
  api.event_set_wait = AlwaysLost;
  auto watch = NvmlEventWatch::Create(api);
  ASSERT_TRUE(watch.ok());
  auto first = (*watch)->Wait(kLongWaitNs);
  ASSERT_EQ(first.size(), 1u);
  EXPECT_EQ(first[0].code, kErrorGpuIsLost);
  g_waits = 0;
  EXPECT_TRUE((*watch)->Wait(450'000'000).empty());
  // Slices of at most 1 s with a sleep after each refused answer: a handful of calls, not thousands.
  EXPECT_LE(g_waits.load(), 10);
}

}  // namespace
}  // namespace faultline::nvml
