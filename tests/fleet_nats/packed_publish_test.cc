// The fleet simulator's publisher through a real nats-server (what `bench fleet --nats`
// runs): the agents' batches packed into fewer messages carry every observation once into
// the consuming analyzer, and publishing the same scenario again is stored once (the packed
// messages keep their msg ids, so the stream's duplicate window drops them all).
#include <gtest/gtest.h>

#include "nats_server.h"
#include "sim/fleet/fleet_bench.h"
#include "sim/fleet/fleet_nats.h"

namespace faultline::sim {
namespace {

using fleet::nats::testing::ConnectOrFail;
using fleet::nats::testing::EnsureStreamRetrying;
using fleet::nats::testing::NatsServer;
using fleet::nats::testing::OptionsFor;
using fleet::nats::testing::TempDir;

FleetScenario SmallFleet() {
  FleetBenchSpec spec;
  spec.nodes = 48;
  spec.duration_s = 600;
  return GenerateBenchFleet(spec);
}

TEST(PackedPublish, EveryObservationOnceInFewerMessagesAndARepublishIsStoredOnce) {
  SKIP_WITHOUT_NATS_SERVER();
  TempDir dir;
  NatsServer server(dir.File("srv"), "s1");
  ASSERT_TRUE(server.Start());
  const FleetScenario sc = SmallFleet();

  FleetNatsPublishOptions po;
  po.urls = server.url();
  po.stream = "FAULTLINE_PACKED";
  po.subjects = {"faultline." + sc.topology.site + ".>"};
  {  // within the test server's storage (the default stream reserves 8 GiB)
    auto conn = ConnectOrFail(OptionsFor({server.url()}));
    ASSERT_NE(conn, nullptr);
    fleet::nats::StreamConfig cfg;
    cfg.name = po.stream;
    cfg.subjects = po.subjects;
    cfg.max_bytes = 256 << 20;
    ASSERT_TRUE(EnsureStreamRetrying(*conn, cfg).ok());
  }
  po.ensure_stream = false;
  po.pack.max_bytes = 16 << 10;
  po.pack.max_hold_ns = int64_t{120} * 1'000'000'000;
  auto first = PublishFleetScenario(sc, po);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_EQ(first->failed, 0u) << first->first_error;
  EXPECT_EQ(first->duplicates, 0u);
  EXPECT_LT(first->messages * 5, first->agent_envelopes);  // 5 s batches held up to 120 s

  auto again = PublishFleetScenario(sc, po);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(again->messages, first->messages);
  EXPECT_EQ(again->duplicates, again->messages);  // the same msg ids: every one dropped by the stream

  FleetNatsConsumeOptions co;
  co.urls = server.url();
  co.stream = po.stream;
  co.filter_subject = po.subjects.front();
  co.expect_messages = first->messages;
  co.idle_timeout_ns = int64_t{20} * 1'000'000'000;
  auto got = ConsumeFleetScenario(sc, co);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got->messages, first->messages);
  EXPECT_EQ(got->malformed, 0u);
  EXPECT_EQ(got->analyzer.observations, first->observations);
  EXPECT_EQ(got->analyzer.duplicates, 0u);
  EXPECT_EQ(got->analyzer.refused, 0u);
}

}  // namespace
}  // namespace faultline::sim
