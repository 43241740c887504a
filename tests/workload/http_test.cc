// The workload endpoint as a plain function (no HTTP); the running server is tested in
// http_server_test.cc.
#include "sources/workload/http.h"

#include <gtest/gtest.h>

#include "core/clock.h"
#include "sources/workload/queue.h"

namespace faultline {
namespace {

constexpr int64_t kNow = 1764410400LL * 1'000'000'000;

class WorkloadHttpTest : public ::testing::Test {
 protected:
  HttpReply Post(std::string_view body) {
    return HandleWorkloadPost(body, options_, clock_,
                              [this](std::vector<Observation> obs) { return queue_.Push(std::move(obs)); });
  }
  FakeClock clock_{kNow};
  WorkloadHttpOptions options_{.node = "gpu-node-07"};
  ObservationQueue queue_{100};
};

TEST_F(WorkloadHttpTest, AcceptsOneJsonReport) {
  auto reply = Post(R"({"job":"llama","rank":0,"step":10,"step_time_s":1.5})");
  EXPECT_EQ(reply.status, 202);
  EXPECT_EQ(reply.body, R"({"accepted":1})");
  auto obs = queue_.Drain();
  ASSERT_EQ(obs.size(), 1u);
  EXPECT_EQ(obs[0].node, "gpu-node-07");
  EXPECT_EQ(obs[0].time_ns, kNow);
  EXPECT_EQ(obs[0].value, 1.5);
}

TEST_F(WorkloadHttpTest, AcceptsSeveralLinesAllOrNothing) {
  EXPECT_EQ(Post("job=a step=1 step_time_s=1\n{\"job\":\"a\",\"step\":2,\"step_time_s\":1}\n\n").status, 202);
  EXPECT_EQ(queue_.Drain().size(), 2u);
  auto bad = Post("job=a step=3 step_time_s=1\njob=a step=4 step_time_s=oops\n");
  EXPECT_EQ(bad.status, 400);
  EXPECT_NE(bad.body.find("line 2"), std::string::npos);
  EXPECT_TRUE(queue_.Drain().empty());
}

TEST_F(WorkloadHttpTest, RejectsEmptyOversizedAndFloodingBodies) {
  EXPECT_EQ(Post("").status, 400);
  EXPECT_EQ(Post("\n \n").status, 400);
  options_.max_body_bytes = 64;
  EXPECT_EQ(Post("job=a step_time_s=1 " + std::string(100, 'x')).status, 413);
  options_.max_body_bytes = 1 << 20;
  options_.max_reports_per_request = 3;
  std::string many;
  for (int i = 0; i < 4; ++i) many += "job=a step_time_s=1\n";
  EXPECT_EQ(Post(many).status, 413);
  EXPECT_TRUE(queue_.Drain().empty());
}

TEST_F(WorkloadHttpTest, FullQueueIsServiceUnavailable) {
  ObservationQueue tiny(1);
  auto sink = [&tiny](std::vector<Observation> obs) { return tiny.Push(std::move(obs)); };
  EXPECT_EQ(HandleWorkloadPost("job=a step_time_s=1", options_, clock_, sink).status, 202);
  EXPECT_EQ(HandleWorkloadPost("job=a step_time_s=1", options_, clock_, sink).status, 503);
  EXPECT_EQ(tiny.rejected(), 1u);
}

TEST_F(WorkloadHttpTest, ReportsForAnotherNodeAreRefusedWhole) {
  auto reply = Post("job=a step=1 step_time_s=1\nnode=gpu-node-99 job=a step=2 step_time_s=1\n");
  EXPECT_EQ(reply.status, 403);
  EXPECT_EQ(reply.outcome, WorkloadOutcome::kOtherNode);
  EXPECT_NE(reply.body.find("line 2"), std::string::npos);
  EXPECT_TRUE(queue_.Drain().empty());
  // Naming this node explicitly is fine; so is naming none.
  EXPECT_EQ(Post("node=gpu-node-07 job=a step_time_s=1\njob=a step_time_s=2").status, 202);
  EXPECT_EQ(queue_.Drain().size(), 2u);
}

}  // namespace
}  // namespace faultline
