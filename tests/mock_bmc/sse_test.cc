// The EventService SSE stream: id/data framing, Last-Event-ID replay, $filter, URIs, and
// shutdown with streams open.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include "fixture.h"

namespace faultline::sim::testing {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;

struct SseEvent {
  std::string id;
  json data;
};

// Parses complete SSE frames out of `buffer` (leaving a partial one); comments are skipped.
std::vector<SseEvent> TakeEvents(std::string& buffer) {
  std::vector<SseEvent> out;
  size_t end;
  while ((end = buffer.find("\n\n")) != std::string::npos) {
    std::string frame = buffer.substr(0, end);
    buffer.erase(0, end + 2);
    SseEvent ev;
    size_t pos = 0;
    while (pos < frame.size()) {
      size_t nl = frame.find('\n', pos);
      std::string line = frame.substr(pos, nl == std::string::npos ? std::string::npos : nl - pos);
      pos = nl == std::string::npos ? frame.size() : nl + 1;
      if (line.rfind("id: ", 0) == 0) ev.id = line.substr(4);
      if (line.rfind("data: ", 0) == 0) ev.data = json::parse(line.substr(6));
    }
    if (!ev.id.empty()) out.push_back(ev);
  }
  return out;
}

class MockBmcSse : public MockBmcFixture {
 protected:
  // Reads the stream until `count` events arrived (or the timeout), on this thread.
  std::vector<SseEvent> Collect(const std::string& path, size_t count, const std::string& last_event_id = "") {
    HttpRequest req = Req(path);
    req.keep_body = false;
    req.timeout_ms = 10000;
    if (!last_event_id.empty()) req.headers = {"Last-Event-ID: " + last_event_id};
    std::string buffer;
    std::vector<SseEvent> events;
    req.on_data = [&](const std::string& chunk) {
      buffer += chunk;
      for (auto& e : TakeEvents(buffer)) events.push_back(std::move(e));
      return events.size() < count;
    };
    HttpResult r = Fetch(req);
    content_type_ = r.headers["content-type"];
    return events;
  }
  void WaitForSubscribers(int n) {
    for (int i = 0; i < 2000 && bmc_->sse_subscribers() != n; ++i) std::this_thread::sleep_for(milliseconds(5));
    ASSERT_EQ(bmc_->sse_subscribers(), n);
  }
  std::string content_type_;
};

TEST_F(MockBmcSse, LiveEventsCarryIdsAndRedfishPayloads) {
  StartBmc(MiniOptions());
  std::vector<SseEvent> events;
  std::thread reader([&] { events = Collect("/redfish/v1/EventService/SSE?$filter=MessageId%20eq%20'X'", 2); });
  WaitForSubscribers(1);
  bmc_->PushEvent({.message_id = "ResourceEvent.1.3.ResourceErrorsDetected",
                   .message_args = {"PSU1", "Failed"},
                   .severity = "Critical",
                   .origin = "/redfish/v1/Chassis/1U/PowerSubsystem/PowerSupplies/Bay1"});
  bmc_->PushEvent({.message_id = "ResourceEvent.1.3.ResourceStatusChangedOK", .timestamp = "2026-11-29T00:00:00Z"});
  reader.join();
  EXPECT_EQ(content_type_, "text/event-stream");
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].id, "1");
  EXPECT_EQ(events[1].id, "2");
  const json& rec = events[0].data["Events"][0];
  EXPECT_EQ(rec["MessageId"], "ResourceEvent.1.3.ResourceErrorsDetected");
  EXPECT_EQ(rec["MessageArgs"], json({"PSU1", "Failed"}));
  EXPECT_EQ(rec["MessageSeverity"], "Critical");
  EXPECT_EQ(rec["OriginOfCondition"]["@odata.id"], "/redfish/v1/Chassis/1U/PowerSubsystem/PowerSupplies/Bay1");
  EXPECT_FALSE(rec["EventTimestamp"].get<std::string>().empty());
  EXPECT_EQ(events[1].data["Events"][0]["EventTimestamp"], "2026-11-29T00:00:00Z");
  EXPECT_EQ(bmc_->last_sse_filter(), "MessageId eq 'X'");
  WaitForSubscribers(0);
}

TEST_F(MockBmcSse, LastEventIdReplaysOnlyWhatWasMissed) {
  StartBmc(MiniOptions());
  for (int i = 0; i < 5; ++i) bmc_->PushEvent({.message_id = "M" + std::to_string(i)});
  std::vector<SseEvent> events = Collect("/redfish/v1/EventService/SSE", 2, "3");
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].id, "4");
  EXPECT_EQ(events[0].data["Events"][0]["MessageId"], "M3");
  EXPECT_EQ(events[1].id, "5");
  // No Last-Event-ID (or a garbage one): everything kept is replayed.
  EXPECT_EQ(Collect("/redfish/v1/EventService/SSE", 5, "garbage").front().id, "1");
}

TEST_F(MockBmcSse, ServedAtTheMockupsServerSentEventUriAndNeedsAuth) {
  StartBmc(MiniOptions());
  bmc_->PushEvent({.message_id = "M"});
  EXPECT_EQ(Collect("/redfish/v1/EventService/Subscriptions/SSE", 1).size(), 1u);
  EXPECT_EQ(Get("/redfish/v1/EventService/SSE", /*auth=*/false).status, 401);
}

TEST_F(MockBmcSse, SubmitTestEventReachesSubscribers) {
  StartBmc(MiniOptions());
  HttpRequest post = Req("/redfish/v1/EventService/Actions/EventService.SubmitTestEvent");
  post.method = "POST";
  post.body = R"({"MessageId": "TestEvent.1.0.Alert"})";
  EXPECT_EQ(Fetch(post).status, 204);
  auto events = Collect("/redfish/v1/EventService/SSE", 1);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].data["Events"][0]["MessageId"], "TestEvent.1.0.Alert");
}

TEST_F(MockBmcSse, AdvertisesTheStreamWhenAskedAndStopEndsOpenStreams) {
  if (!std::filesystem::exists(SharedMockups() + "/public-rackmount1")) GTEST_SKIP() << "../shared absent";
  MockBmcOptions o;
  o.mockup_dir = SharedMockups() + "/public-rackmount1";
  o.advertise_sse = true;
  StartBmc(o);
  EXPECT_EQ(Json(Get("/redfish/v1/EventService"))["ServerSentEventUri"], "/redfish/v1/EventService/SSE");
  HttpResult stream;
  std::thread reader([&] {
    HttpRequest req = Req("/redfish/v1/EventService/SSE");
    stream = Fetch(req);
  });
  WaitForSubscribers(1);
  bmc_->Stop();  // returns although a stream is open
  reader.join();
  EXPECT_EQ(stream.status, 200);
}

}  // namespace
}  // namespace faultline::sim::testing
