// The server's hardening: a client that never reads cannot block others, a full queue is
// answered 503 at once, oversized requests are refused, the token never reaches the log,
// HTTPS, and serving a store while another connection writes it.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "api_fixture.h"

namespace faultline::api_test {
namespace {

using namespace std::chrono_literals;

class ApiServer : public ::testing::Test {
 protected:
  void SetUp() override {
    auto s = Store::Open(dir_.File("store.db"));
    ASSERT_TRUE(s.ok());
    store_ = std::move(s).value();
    FillIncident(*store_);
  }
  // Observations with a large raw field, so one page is megabytes (more than the
  // client's socket buffers hold).
  void AddBulk(int n) {
    std::vector<Observation> bulk;
    for (int i = 0; i < n; ++i) {
      Observation o = Reading(ObsKind::kOther, Layer::kOs, Source::kKmsg, Gpu(i % 8), i, kT0 + i * 1000, {});
      o.raw = std::string(8000, 'a' + (i % 26));
      bulk.push_back(std::move(o));
    }
    ASSERT_TRUE(store_->Append(bulk).ok());
  }
  // Waits (bounded) until `pred` holds.
  template <typename Pred>
  static bool Eventually(Pred pred) {
    for (int i = 0; i < 3000; ++i) {
      if (pred()) return true;
      std::this_thread::sleep_for(10ms);
    }
    return pred();
  }

  TempDir dir_;
  std::unique_ptr<Store> store_;
};

const std::string kBigPage = "GET /api/v1/observations?kind=other&limit=1000 HTTP/1.1\r\nHost: x\r\n\r\n";

TEST_F(ApiServer, ClientThatNeverReadsDoesNotBlockOthersAndIsCut) {
  AddBulk(1000);
  api::StoreProvider provider(*store_, {.node = kNode});
  api::ServerOptions options;
  options.threads = 2;
  options.write_timeout_ms = 300;
  options.response_deadline_ms = 1500;
  options.api.max_response_bytes = 16 << 20;
  RunningServer server(provider, options);
  const int stuck = Connect(server.port(), 4096);
  ASSERT_GE(stuck, 0);
  ASSERT_TRUE(SendAll(stuck, kBigPage));  // ...and never read the ~8 MB answer
  ASSERT_TRUE(Eventually([&] { return server.server().stats().requests >= 1; }));
  // Others are served meanwhile.
  for (int i = 0; i < 3; ++i) {
    auto r = server.Client().Get("/api/v1/node");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200);
  }
  // ...and the stuck response is cut (write timeout / deadline), freeing its worker.
  EXPECT_TRUE(Eventually([&] { return server.server().stats().cut >= 1; }));
  close(stuck);
}

TEST_F(ApiServer, FullQueueIsAnswered503AtOnce) {
  AddBulk(1000);
  api::StoreProvider provider(*store_, {.node = kNode});
  api::ServerOptions options;
  options.threads = 1;
  options.queue_capacity = 1;
  options.write_timeout_ms = 5000;
  options.response_deadline_ms = 8000;
  options.api.max_response_bytes = 16 << 20;
  RunningServer server(provider, options);
  const int stuck = Connect(server.port(), 4096);  // holds the only worker
  ASSERT_TRUE(SendAll(stuck, kBigPage));
  ASSERT_TRUE(Eventually([&] { return server.server().stats().requests >= 1; }));
  const int queued = Connect(server.port());  // waits in the queue
  ASSERT_TRUE(SendAll(queued, "GET /api/v1/node HTTP/1.1\r\nHost: x\r\n\r\n"));
  std::this_thread::sleep_for(200ms);
  const std::string busy = RawRequest(server.port(), "GET /api/v1/node HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_EQ(StatusOf(busy), 503) << busy.substr(0, 200);
  EXPECT_NE(busy.find("Retry-After: 1"), std::string::npos);
  EXPECT_NE(busy.find("\"server busy"), std::string::npos);
  EXPECT_GE(server.server().stats().busy, 1u);
  close(stuck);
  // The queued request is still answered once the worker is free.
  std::string answer;
  char buf[4096];
  timeval tv{20, 0};
  setsockopt(queued, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  ssize_t n;
  while ((n = recv(queued, buf, sizeof buf, 0)) > 0) answer.append(buf, static_cast<size_t>(n));
  close(queued);
  EXPECT_EQ(StatusOf(answer), 200) << answer.substr(0, 200);
}

TEST_F(ApiServer, OversizedAndMalformedRequests) {
  api::StoreProvider provider(*store_, {.node = kNode});
  RunningServer server(provider, {});
  std::string many = "GET /api/v1/node HTTP/1.1\r\nHost: x\r\n";
  for (int i = 0; i < 100; ++i) many += "X-Pad-" + std::to_string(i) + ": v\r\n";
  EXPECT_EQ(StatusOf(RawRequest(server.port(), many + "\r\n")), 431);
  std::string fat = "GET /api/v1/node HTTP/1.1\r\nHost: x\r\n";
  for (int i = 0; i < 4; ++i) fat += "X-Fat-" + std::to_string(i) + ": " + std::string(6000, 'f') + "\r\n";
  EXPECT_EQ(StatusOf(RawRequest(server.port(), fat + "\r\n")), 431);
  // One header line longer than cpp-httplib's 8 KiB line cap, a URI over 8 KiB, garbage:
  // refused or closed, never served.
  const std::string huge_line = "GET /api/v1/node HTTP/1.1\r\nX-Huge: " + std::string(20000, 'h') + "\r\n\r\n";
  const int huge_status = StatusOf(RawRequest(server.port(), huge_line));
  EXPECT_NE(huge_status, 200);
  const std::string long_uri = "GET /api/v1/observations?limit=1&" + std::string(9000, 'a') + " HTTP/1.1\r\n\r\n";
  const int uri_status = StatusOf(RawRequest(server.port(), long_uri));
  EXPECT_TRUE(uri_status == 414 || uri_status == -1) << uri_status;
  static constexpr char kTlsHelloThenGarbage[] = "\x16\x03\x01\x00\xa5garbage\r\n\r\n";  // NUL inside
  const std::string garbage =
      RawRequest(server.port(), std::string(kTlsHelloThenGarbage, sizeof kTlsHelloThenGarbage - 1));
  EXPECT_NE(StatusOf(garbage), 200);
  // Control bytes and a %-encoded NUL in the query: 400 naming the parameter.
  const std::string ctl = RawRequest(server.port(), "GET /api/v1/observations?kind=%00 HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_EQ(StatusOf(ctl), 400);
  EXPECT_NE(ctl.find("\"param\":\"kind\""), std::string::npos);
  // A body on a POST larger than the cap.
  const std::string body =
      "POST /api/v1/diagnoses/1/ack HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n" + std::string(100000, 'b');
  EXPECT_EQ(StatusOf(RawRequest(server.port(), body)), 413);
  // Still serving.
  auto r = server.Client().Get("/api/v1/node");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
}

TEST_F(ApiServer, TokenNeverInTheLog) {
  const std::string token = "Sup3rS3cretT0ken-do-not-log";
  api::StoreProvider provider(*store_, {.node = kNode});
  api::ServerOptions options;
  options.api.token = token;
  RunningServer server(provider, options);
  auto client = server.Client();
  EXPECT_EQ(client.Get("/api/v1/node", {{"Authorization", "Bearer " + token}})->status, 200);
  EXPECT_EQ(client.Get("/api/v1/node", {{"Authorization", "Bearer " + token + "x"}})->status, 403);
  EXPECT_EQ(client.Get("/api/v1/node?token=" + token, {{"Authorization", "Bearer " + token}})->status, 400);
  EXPECT_EQ(client.Get("/metrics", {{"Authorization", "Bearer " + token}})->status, 200);
  const std::string log = server.Log();
  EXPECT_NE(log.find("/api/v1/node"), std::string::npos) << log;  // requests are logged...
  EXPECT_EQ(log.find("S3cret"), std::string::npos) << log;        // ...never the token
  EXPECT_EQ(log.find("Authorization"), std::string::npos) << log;
}

TEST_F(ApiServer, NonLoopbackNeedsATokenAndWarns) {
  api::StoreProvider provider(*store_, {.node = kNode});
  {
    api::ServerOptions options;
    options.listen = "0.0.0.0:0";
    api::Server server(provider, options, nullptr);
    auto started = server.Start();
    ASSERT_FALSE(started.ok());
    EXPECT_EQ(started.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(started.status().message().find("--token-file"), std::string::npos);
  }
  for (const std::string bad : {"nonsense", "127.0.0.1:99999", "::1:80"}) {
    api::ServerOptions options;
    options.listen = bad;
    api::Server server(provider, options, nullptr);
    EXPECT_FALSE(server.Start().ok()) << bad;
  }
  api::ServerOptions half;
  half.listen = "127.0.0.1:0";
  half.cert_file = dir_.File("cert.pem");
  api::Server server(provider, half, nullptr);
  EXPECT_FALSE(server.Start().ok());
}

TEST_F(ApiServer, Https) {
  const std::string cert = dir_.File("cert.pem");
  const std::string key = dir_.File("key.pem");
  const std::string cmd = "openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=127.0.0.1 -keyout " + key +
                          " -out " + cert + " >/dev/null 2>&1";
  if (std::system(cmd.c_str()) != 0) GTEST_SKIP() << "openssl command not available";
  api::StoreProvider provider(*store_, {.node = kNode});
  api::ServerOptions options;
  options.listen = "127.0.0.1:0";
  options.cert_file = cert;
  options.key_file = key;
  api::Server server(provider, options, nullptr);
  auto started = server.Start();
  ASSERT_TRUE(started.ok()) << started.status().ToString();
  EXPECT_TRUE(server.tls());
  httplib::SSLClient client("127.0.0.1", server.port());
  client.set_ca_cert_path(cert.c_str());
  client.enable_server_certificate_verification(false);  // a self-signed name check is not the point here
  auto r = client.Get("/api/v1/node");
  ASSERT_TRUE(r) << static_cast<int>(r.error());
  EXPECT_EQ(r->status, 200);
  // Plain HTTP to the HTTPS port is not served.
  EXPECT_NE(StatusOf(RawRequest(server.port(), "GET /api/v1/node HTTP/1.1\r\n\r\n")), 200);
  api::ServerOptions wrong = options;
  wrong.key_file = cert;  // not a key
  api::Server bad(provider, wrong, nullptr);
  EXPECT_FALSE(bad.Start().ok());
}

// `faultline serve` opens the store read-only beside the agent writing it.
TEST_F(ApiServer, ServesAStoreWhileItIsWritten) {
  StoreOptions ro;
  ro.read_only = true;
  auto reader = Store::Open(dir_.File("store.db"), ro);
  ASSERT_TRUE(reader.ok()) << reader.status().ToString();
  api::StoreProvider provider(**reader, {.node = kNode});
  RunningServer server(provider, {});
  std::atomic<bool> stop{false};
  std::atomic<int> batches{0};
  std::thread writer([&] {
    for (int b = 0; b < 15 && !stop; ++b) {
      std::vector<Observation> batch;
      for (int i = 0; i < 50; ++i) {
        batch.push_back(Reading(ObsKind::kPower, Layer::kGpu, Source::kNvml, Gpu(i % 8), 300 + i,
                                kT0 + 120 * kSec + b * kSec + i, {}));
      }
      if (store_->Append(batch).ok()) ++batches;
      std::this_thread::sleep_for(5ms);
    }
  });
  int64_t last_count = 0;
  for (int i = 0; i < 20; ++i) {
    auto r = server.Client().Get("/api/v1/node");
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 200) << r->body;
    const int64_t count = ParseBody(r)["store"]["observations"];
    EXPECT_GE(count, last_count);
    last_count = count;
    auto m = server.Client().Get("/metrics");
    ASSERT_TRUE(m);
    EXPECT_EQ(m->status, 200);
  }
  stop = true;
  writer.join();
  Json j = ParseBody(server.Client().Get("/api/v1/observations?kind=power&limit=1000"));
  EXPECT_EQ(j["observations"].size(), static_cast<size_t>(batches.load()) * 50);
}

}  // namespace
}  // namespace faultline::api_test
