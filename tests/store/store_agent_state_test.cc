// The agent's recorded state (store/agent_state.h): kept per node, replaced on each write,
// read back by a read-only open (what `check --slurm` does), and refused when garbled.
#include <gtest/gtest.h>

#include "store/agent_state.h"
#include "test_util.h"

namespace faultline {
namespace {

using testing::OpenStore;
using testing::TempDir;

constexpr int64_t kT0 = 1'772'359'200LL * 1'000'000'000;

AgentState Blind() {
  AgentState s;
  s.blind = true;
  s.since_ns = kT0;
  s.updated_ns = kT0 + 1;
  s.sources = {{.source = "kmsg", .failing = true, .error = "unavailable: /dev/kmsg: Permission denied"},
               {.source = "nvml",
                .failing = true,
                .error = "unavailable: NVML_ERROR_DRIVER_NOT_LOADED",
                .last_success_ns = kT0 - 60'000'000'000}};
  return s;
}

TEST(StoreAgentState, NoneUntilWrittenThenTheLatestPerNode) {
  TempDir dir;
  auto store = OpenStore(dir.File("s.db"));
  ASSERT_NE(store, nullptr);
  auto none = GetAgentState(*store, "gpu-7");
  ASSERT_TRUE(none.ok()) << none.status().ToString();
  EXPECT_FALSE(none->has_value());

  ASSERT_TRUE(PutAgentState(*store, "gpu-7", Blind()).ok());
  AgentState sees;
  sees.since_ns = kT0 + 90'000'000'000;
  sees.updated_ns = sees.since_ns;
  sees.sources = {{.source = "kmsg", .last_success_ns = sees.since_ns}};
  ASSERT_TRUE(PutAgentState(*store, "gpu-8", sees).ok());

  auto seven = GetAgentState(*store, "gpu-7");
  ASSERT_TRUE(seven.ok() && seven->has_value());
  EXPECT_EQ(**seven, Blind());
  ASSERT_TRUE(PutAgentState(*store, "gpu-7", sees).ok());  // sight came back: replaced
  auto again = GetAgentState(*store, "gpu-7");
  ASSERT_TRUE(again.ok() && again->has_value());
  EXPECT_EQ(**again, sees);
}

TEST(StoreAgentState, AReadOnlyOpenReadsIt) {
  TempDir dir;
  {
    auto store = OpenStore(dir.File("s.db"));
    ASSERT_NE(store, nullptr);
    ASSERT_TRUE(PutAgentState(*store, "gpu-7", Blind()).ok());
  }
  StoreOptions read_only;
  read_only.read_only = true;
  auto store = OpenStore(dir.File("s.db"), read_only);
  ASSERT_NE(store, nullptr);
  auto state = GetAgentState(*store, "gpu-7");
  ASSERT_TRUE(state.ok() && state->has_value());
  EXPECT_TRUE((*state)->blind);
  EXPECT_EQ((*state)->sources.size(), 2u);
}

TEST(StoreAgentState, AGarbledRecordIsCorruptNotHealthy) {
  TempDir dir;
  auto store = OpenStore(dir.File("s.db"));
  ASSERT_NE(store, nullptr);
  for (const char* text : {"", "{", R"({"blind":"no","since_ns":1,"updated_ns":1,"sources":[]})",
                           R"({"since_ns":1,"updated_ns":1,"sources":[]})",
                           R"({"blind":true,"since_ns":1e300,"updated_ns":1,"sources":[]})"}) {
    ASSERT_TRUE(store->PutCursors({{"gpu-7", "agent", "state", text}}).ok());
    auto state = GetAgentState(*store, "gpu-7");
    ASSERT_FALSE(state.ok()) << text;
    EXPECT_EQ(state.status().code(), StatusCode::kCorrupt) << text;
  }
}

TEST(StoreAgentState, AnErrorThatIsNotUtf8IsStoredReadably) {
  AgentState s = Blind();
  s.sources[0].error = "read: \xff\xfe bad bytes";
  auto back = DecodeAgentState(EncodeAgentState(s));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_NE(back->sources[0].error.find("bad bytes"), std::string::npos);
}

}  // namespace
}  // namespace faultline
