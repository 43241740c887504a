// An existing stream's or bucket's settings are never weakened by a tool run with its
// defaults (issue 25: `sim fleet --nats`, or `faultline fleet` without --replicas 3, reset a
// 3-replica stream to 1): they are kept unless the operator asked for others, and every
// difference is reported. Against a real 3-server cluster on loopback.
#include <gtest/gtest.h>

#include <algorithm>

#include "fleet/nats/consumer_loop.h"
#include "nats_server.h"
#include "sim/fleet/fleet_bench.h"
#include "sim/fleet/fleet_nats.h"

namespace faultline::fleet::nats {
namespace {

using testing::ConnectOrFail;
using testing::EnsureStreamRetrying;
using testing::NatsCluster;
using testing::NatsServer;
using testing::OptionsFor;
using testing::TempDir;
using testing::WaitUntil;

constexpr int64_t kSec = 1'000'000'000;

bool AnyContains(const std::vector<std::string>& lines, const std::string& a, const std::string& b) {
  return std::any_of(lines.begin(), lines.end(), [&](const std::string& l) {
    return l.find(a) != std::string::npos && l.find(b) != std::string::npos;
  });
}

// What an operator set up: 3 replicas, a 1-hour max age, 64 MiB.
StreamConfig Operators() {
  StreamConfig c;
  c.replicas = 3;
  c.max_age_ns = 3600 * kSec;
  c.max_bytes = 64 << 20;
  return c;
}

TEST(StreamSettingsTest, DefaultsKeepAnExistingStreamAndSayWhatDiffers) {
  SKIP_WITHOUT_NATS_SERVER();
  TempDir dir;
  NatsServer server(dir.File("srv"), "s1");
  ASSERT_TRUE(server.Start());
  auto c = ConnectOrFail(OptionsFor({server.url()}));
  ASSERT_NE(c, nullptr);
  StreamConfig mine = Operators();
  mine.replicas = 1;  // one server
  ASSERT_TRUE(EnsureStreamRetrying(*c, mine).ok());

  StreamConfig defaults;  // 7 days, 8 GiB: what a tool asks when nothing was given
  auto kept = c->EnsureStream(defaults);
  ASSERT_TRUE(kept.ok()) << kept.status().ToString();
  EXPECT_EQ(kept->config.max_age_ns, 3600 * kSec);
  EXPECT_EQ(kept->config.max_bytes, 64 << 20);
  EXPECT_TRUE(AnyContains(kept->notes, "max age", "kept")) << ::testing::PrintToString(kept->notes);
  EXPECT_TRUE(AnyContains(kept->notes, "max bytes", "kept"));
  auto held = c->GetStream("FAULTLINE");
  ASSERT_TRUE(held.ok());
  EXPECT_EQ(held->config.max_age_ns, 3600 * kSec) << "the server's stream was changed";

  // Asked for explicitly: changed, and said so.
  StreamOverrides asked;
  asked.max_age = true;
  auto changed = c->EnsureStream(defaults, asked);
  ASSERT_TRUE(changed.ok()) << changed.status().ToString();
  EXPECT_EQ(changed->config.max_age_ns, defaults.max_age_ns);
  EXPECT_EQ(changed->config.max_bytes, 64 << 20) << "only what was asked changes";
  EXPECT_TRUE(AnyContains(changed->notes, "max age", "as asked"));
  // Nothing differs in what was asked: no note about it.
  auto same = c->EnsureStream(mine);
  ASSERT_TRUE(same.ok());
  EXPECT_FALSE(AnyContains(same->notes, "max bytes", "kept"));
}

// A 3-replica stream and bucket meet `faultline fleet` and `sim fleet --nats` run with
// their defaults (replicas 1): both stay at 3 and the difference is warned about; only an
// explicit --replicas lowers them, and that is said loudly.
TEST(StreamSettingsClusterTest, AThreeReplicaStreamAndBucketStayThreeUnlessAskedOtherwise) {
  SKIP_WITHOUT_NATS_SERVER();
  TempDir dir;
  NatsCluster cluster(dir.File("cluster"));
  ASSERT_TRUE(cluster.Start());
  auto c = ConnectOrFail(OptionsFor(cluster.urls()), 30);
  ASSERT_NE(c, nullptr);
  ASSERT_TRUE(EnsureStreamRetrying(*c, Operators(), 40).ok());
  Result<std::unique_ptr<KeyValue>> bucket = Status(StatusCode::kUnavailable, "not tried");
  WaitUntil([&] { return (bucket = c->EnsureKeyValue(KvConfig{.bucket = "fleet-r3", .replicas = 3})).ok(); }, 30);
  ASSERT_TRUE(bucket.ok()) << bucket.status().ToString();

  // `faultline fleet` without --replicas / --max-bytes.
  FleetLoopOptions o;
  o.stream.max_bytes = 64 << 20;
  o.consumer.durable = "settings";
  o.kv_bucket = "fleet-r3";
  o.kv_replicas = 1;
  std::vector<std::string> warned;
  o.warn = [&](const std::string& w) { warned.push_back(w); };
  FleetAnalyzer analyzer{FleetTopology{}};
  FakeClock clock(0);
  FleetLoop loop(*c, analyzer, o, clock);
  Status started;
  WaitUntil([&] { return (started = loop.Start()).ok(); }, 30);
  ASSERT_TRUE(started.ok()) << started.ToString();
  auto st = c->GetStream("FAULTLINE");
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st->config.replicas, 3);
  EXPECT_EQ(st->config.max_age_ns, 3600 * kSec);
  EXPECT_TRUE(AnyContains(warned, "replicas", "kept")) << ::testing::PrintToString(warned);
  EXPECT_TRUE(AnyContains(warned, "kv bucket fleet-r3", "kept 3"));
  EXPECT_EQ(*(*bucket)->Replicas(), 3);

  // The simulator's publisher, which asks for nothing but its subjects.
  sim::FleetBenchSpec spec;
  spec.nodes = 8;
  spec.duration_s = 600;
  sim::FleetNatsPublishOptions po;
  po.urls = cluster.urls()[1];
  auto published = sim::PublishFleetScenario(sim::GenerateBenchFleet(spec), po);
  ASSERT_TRUE(published.ok()) << published.status().ToString();
  EXPECT_EQ(published->failed, 0u) << published->first_error;
  EXPECT_TRUE(AnyContains(published->notes, "replicas", "kept"));
  EXPECT_EQ(c->GetStream("FAULTLINE")->config.replicas, 3);

  // Asked explicitly: lowered, with a note that says so.
  StreamConfig one = Operators();
  one.replicas = 1;
  StreamOverrides asked;
  asked.replicas = true;
  auto lowered = c->EnsureStream(one, asked);
  ASSERT_TRUE(lowered.ok()) << lowered.status().ToString();
  EXPECT_EQ(lowered->config.replicas, 1);
  EXPECT_TRUE(AnyContains(lowered->notes, "replicas", "LOWERED"));
}

}  // namespace
}  // namespace faultline::fleet::nats
