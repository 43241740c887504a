#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "core/clock.h"
#include "sources/redfish/event_stream.h"
#include "sources/redfish/fake_http_client.h"
#include "sources/redfish/sse_parser.h"

namespace faultline::redfish {
namespace {

TEST(RedfishSse, ParsesEventsSplitAcrossChunks) {
  SseParser p;
  auto a = p.Feed(": keep-alive\nid: 1\ndata: {\"a\":");
  ASSERT_TRUE(a.ok());
  EXPECT_TRUE(a->empty());
  auto b = p.Feed("1}\r\n\r\nid: 2\nevent: alert\ndata: x\ndata: y\n\n");
  ASSERT_TRUE(b.ok());
  ASSERT_EQ(b->size(), 2u);
  EXPECT_EQ((*b)[0].id, "1");
  EXPECT_EQ((*b)[0].data, "{\"a\":1}");
  EXPECT_EQ((*b)[1].event, "alert");
  EXPECT_EQ((*b)[1].data, "x\ny");
  EXPECT_EQ(p.last_event_id(), "2");
}

TEST(RedfishSse, OversizedEventFailsTheStream) {
  SseParser p(64);
  auto r = p.Feed("data: " + std::string(100, 'x'));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kCorrupt);
  EXPECT_FALSE(p.Feed("\n\n").ok());
}

TEST(RedfishSse, FilterOnlyWhenRegistryPrefixIsSupported) {
  EXPECT_EQ(SseFilter({"EventType"}), "");
  EXPECT_NE(SseFilter({"RegistryPrefix"}).find("RegistryPrefix eq 'Power'"), std::string::npos);
}

TEST(RedfishSse, StreamDeliversObservationsAndResumesWithLastEventId) {
  FakeHttpClient fake;
  fake.SetStream("/redfish/v1/EventService/SSE",
                 {"id: 41\ndata: {\"@odata.type\":\"#Event.v1_7_0.Event\",\"Events\":[{\"MessageId\":"
                  "\"Power.1.0.PowerSupplyFailed\",\"MessageArgs\":[\"PSU2\"],\"MessageSeverity\":\"Critical\"}]}\n\n",
                  "id: 42\ndata: not json\n\n"});
  FakeClock clock(1000, 1000);
  RedfishClientOptions o;
  o.base_url = "https://bmc";
  o.auth = AuthMode::kNone;
  RedfishClient client(fake, clock, o);
  std::vector<Observation> got;  // written by the stream (this thread)
  std::atomic<size_t> delivered{0};
  EventStreamOptions so;
  so.sse_uri = "/redfish/v1/EventService/SSE";
  so.filter_properties = {"RegistryPrefix"};
  so.max_failures = 2;
  so.reconnect_backoff_ms = 1;
  EventStream stream(client, so, MapContext{}, [&](std::vector<Observation> obs) {
    for (auto& x : obs) got.push_back(x);
    delivered.store(got.size());
  });
  // The fake stream ends after its chunks each time and the stream reconnects; once the
  // first event arrived, later connections fail and the stream gives up (polling).
  std::thread stopper([&] {
    while (delivered.load() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    fake.SetStream("/redfish/v1/EventService/SSE", {}, 500);
  });
  Status st = stream.Run();
  stopper.join();
  EXPECT_EQ(st.code(), StatusCode::kUnavailable);  // back to polling
  ASSERT_GE(got.size(), 1u);
  EXPECT_EQ(got[0].attrs.at("message_id"), "Power.1.0.PowerSupplyFailed");
  EXPECT_EQ(stream.last_event_id(), "41");  // the malformed event 42 was dropped
  auto reqs = fake.requests();
  ASSERT_GE(reqs.size(), 2u);
  EXPECT_NE(reqs[0].url.find("$filter=RegistryPrefix%20eq%20%27Power%27"), std::string::npos);
  bool resumed = false;
  for (const auto& [k, v] : reqs.back().headers) resumed |= k == "Last-Event-ID" && v == "41";
  EXPECT_TRUE(resumed);
}

}  // namespace
}  // namespace faultline::redfish
