// The server's hardening: a client that never reads cannot block others, a full queue is
// answered 503 at once, slow and idle clients are cut, only loopback Host names are answered
// without a token, oversized requests are refused, the token never reaches the log, HTTPS,
// and serving a store while another connection writes it.
#include <gtest/gtest.h>
#include <sys/socket.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <thread>
#include <vector>

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

const std::string kBigPage = "GET /api/v1/observations?kind=other&limit=1000 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";

// Slowloris: connections that send a request line and then one header byte every
// `every`, each byte well within any per-read timeout, for as long as the server keeps them.
class Trickler {
 public:
  Trickler(int port, int connections, std::chrono::milliseconds every) {
    for (int i = 0; i < connections; ++i) {
      const int fd = Connect(port);
      if (fd < 0) continue;
      SendAll(fd, "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ");
      fds_.push_back(fd);
    }
    thread_ = std::thread([this, every] {
      for (int i = 0; i < 400 && !stop_; ++i) {  // at most 400 bytes: the test ends first
        for (int fd : fds_) send(fd, "a", 1, MSG_NOSIGNAL | MSG_DONTWAIT);
        std::this_thread::sleep_for(every);
      }
    });
  }
  ~Trickler() {
    stop_ = true;
    thread_.join();
    for (int fd : fds_) close(fd);
  }
  size_t opened() const { return fds_.size(); }
  // Connections the server has closed (end of stream or reset), whatever it answered first.
  size_t ClosedByServer() const {
    size_t closed = 0;
    for (int fd : fds_) {
      char buf[1024];
      ssize_t n;
      while ((n = recv(fd, buf, sizeof buf, MSG_DONTWAIT)) > 0) {
      }
      if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) ++closed;
    }
    return closed;
  }

 private:
  std::vector<int> fds_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// Before the fix each read waited its 5 s afresh, so four tricklers held the four workers
// for as long as they liked and every other request (/metrics too, token or not) queued
// behind them.
TEST_F(ApiServer, SlowClientsAreCutAndOthersServed) {
  api::StoreProvider provider(*store_, {.node = kNode});
  api::ServerOptions options;  // 4 workers, as deployed
  options.request_timeout_ms = 1000;
  options.api.token = "t0k";  // headers are read before the token is checked
  RunningServer server(provider, options);
  Trickler slow(server.port(), 4, 200ms);
  ASSERT_EQ(slow.opened(), 4u);
  std::this_thread::sleep_for(300ms);  // all four on the workers
  auto r = server.Client().Get("/metrics", {{"Authorization", "Bearer t0k"}});
  ASSERT_TRUE(r) << "the request waited behind the slow clients until its client gave up";
  EXPECT_EQ(r->status, 200);
  EXPECT_TRUE(Eventually([&] { return slow.ClosedByServer() == 4; }));
  EXPECT_GE(server.server().stats().timed_out, 4u);
}

// Before the fix each idle connection held a worker (or the one-thread busy lane) for its
// keep-alive second in turn: a few hundred of them hung every request for minutes.
TEST_F(ApiServer, AFloodOfIdleConnectionsNeverHangsARequest) {
  api::StoreProvider provider(*store_, {.node = kNode});
  api::ServerOptions options;
  options.threads = 2;
  options.queue_capacity = 2;
  options.busy_queue_capacity = 1024;  // so no connection is closed unanswered here
  options.idle_timeout_ms = 500;
  RunningServer server(provider, options);
  std::vector<int> idle;
  for (int i = 0; i < 300; ++i) {
    const int fd = Connect(server.port());
    if (fd >= 0) idle.push_back(fd);
  }
  ASSERT_GE(idle.size(), 250u);
  auto r = server.Client().Get("/api/v1/node");
  ASSERT_TRUE(r) << "the request hung behind idle connections";
  EXPECT_TRUE(r->status == 200 || r->status == 503) << r->status;
  // The idle ones are let go (first-byte deadline; the 503s drained), and service resumes.
  EXPECT_TRUE(Eventually([&] {
    auto again = server.Client().Get("/api/v1/node");
    return again && again->status == 200;
  }));
  for (int fd : idle) close(fd);
}

TEST_F(ApiServer, PastTheCapIdleConnectionsGetA503) {
  api::StoreProvider provider(*store_, {.node = kNode});
  api::ServerOptions options;
  options.threads = 1;
  options.queue_capacity = 1;
  options.idle_timeout_ms = 30000;
  RunningServer server(provider, options);
  const int held = Connect(server.port());    // the worker waits for its first byte
  const int queued = Connect(server.port());  // waits for the worker
  ASSERT_GE(held, 0);
  ASSERT_GE(queued, 0);
  const std::string busy = RawRequest(server.port(), "GET /api/v1/node HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
  EXPECT_EQ(StatusOf(busy), 503) << busy.substr(0, 200);
  EXPECT_NE(busy.find("Retry-After: 1"), std::string::npos);
  EXPECT_EQ(server.server().stats().busy, 1u);
  close(held);
  close(queued);
  EXPECT_TRUE(Eventually([&] {  // the worker is back once it has seen them go
    auto r = server.Client().Get("/api/v1/node");
    return r && r->status == 200;
  }));
}

// Before the fix a DNS-rebinding page (its own name resolved to 127.0.0.1) read the
// tokenless API: the Host header, its name, was never looked at.
TEST_F(ApiServer, WithoutATokenOnlyLoopbackHostsAreAnswered) {
  api::StoreProvider provider(*store_, {.node = kNode});
  RunningServer server(provider, {});
  auto get = [&](const std::string& path, const std::string& host) {
    return RawRequest(server.port(), "GET " + path + " HTTP/1.1\r\nHost: " + host + "\r\n\r\n");
  };
  for (const char* host : {"127.0.0.1", "127.0.0.1:9465", "localhost", "LOCALHOST:80", "[::1]:9465", "127.9.8.7"}) {
    EXPECT_EQ(StatusOf(get("/api/v1/node", host)), 200) << host;
  }
  for (const char* host : {"evil.example", "evil.example:9465", "127.0.0.1.evil.example", "127.evil", "0.0.0.0:9465",
                           "[::2]", "localhost.evil.example", "127.0.0.1:99x"}) {
    const std::string r = get("/api/v1/node", host);
    EXPECT_EQ(StatusOf(r), 421) << host;
    EXPECT_NE(r.find("\"status\":421"), std::string::npos) << r;
    EXPECT_EQ(r.find(kNode), std::string::npos) << host;  // nothing of the node
  }
  EXPECT_EQ(StatusOf(get("/metrics", "evil.example")), 421);
  EXPECT_EQ(StatusOf(get("/api/v1/why-slow", "evil.example")), 421);
  EXPECT_EQ(StatusOf(RawRequest(server.port(), "GET /api/v1/node HTTP/1.1\r\n\r\n")), 400);
  EXPECT_GE(server.server().stats().misdirected, 11u);
  // Another site's page sending to 127.0.0.1 (its Host is loopback, its Origin is not): refused.
  const std::string csrf = RawRequest(server.port(),
                                      "POST /api/v1/ask HTTP/1.1\r\nHost: 127.0.0.1\r\nOrigin: https://evil.example\r\n"
                                      "Content-Length: 2\r\n\r\n{}");
  EXPECT_EQ(StatusOf(csrf), 403) << csrf.substr(0, 200);
  EXPECT_EQ(
      StatusOf(RawRequest(server.port(),
                          "GET /api/v1/node HTTP/1.1\r\nHost: 127.0.0.1\r\nOrigin: http://127.0.0.1:9465\r\n\r\n")),
      200);
  // With a token the token guards: any Host, as a server off loopback needs.
  api::ServerOptions with_token;
  with_token.api.token = "t0k";
  RunningServer guarded(provider, with_token);
  const std::string r =
      RawRequest(guarded.port(),
                 "GET /api/v1/node HTTP/1.1\r\nHost: gpu-node-07.example:9465\r\nAuthorization: Bearer t0k\r\n\r\n");
  EXPECT_EQ(StatusOf(r), 200) << r.substr(0, 200);
}

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
  ASSERT_TRUE(SendAll(queued, "GET /api/v1/node HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"));
  std::this_thread::sleep_for(200ms);
  const std::string busy = RawRequest(server.port(), "GET /api/v1/node HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
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
  std::string many = "GET /api/v1/node HTTP/1.1\r\nHost: 127.0.0.1\r\n";
  for (int i = 0; i < 100; ++i) many += "X-Pad-" + std::to_string(i) + ": v\r\n";
  EXPECT_EQ(StatusOf(RawRequest(server.port(), many + "\r\n")), 431);
  std::string fat = "GET /api/v1/node HTTP/1.1\r\nHost: 127.0.0.1\r\n";
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
  const std::string ctl =
      RawRequest(server.port(), "GET /api/v1/observations?kind=%00 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
  EXPECT_EQ(StatusOf(ctl), 400);
  EXPECT_NE(ctl.find("\"param\":\"kind\""), std::string::npos);
  // A body on a POST larger than the cap.
  const std::string body =
      "POST /api/v1/diagnoses/1/ack HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100000\r\n\r\n" +
      std::string(100000, 'b');
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
