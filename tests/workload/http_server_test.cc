// The workload endpoint as the agent runs it: a real server on 127.0.0.1 (any free
// port), real client sockets. Bind policy, bearer token, slow clients, body cap, and
// reports for other nodes.
#include "sources/workload/http_server.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "core/clock.h"

namespace faultline {
namespace {

constexpr int64_t kNow = 1764410400LL * 1'000'000'000;
constexpr char kToken[] = "s3cr3t-t0ken-for-tests";

// A raw TCP client on 127.0.0.1, for requests no polite HTTP client would send.
class RawClient {
 public:
  explicit RawClient(int port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
    // A safety net so a broken server fails the test instead of hanging it; the server's
    // own read timeout is far shorter.
    timeval tv{30, 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  }
  ~RawClient() { ::close(fd_); }
  bool connected() const { return connected_; }
  void Send(std::string_view data) {
    ASSERT_EQ(::send(fd_, data.data(), data.size(), MSG_NOSIGNAL), ssize_t(data.size()));
  }
  // Sends without checking: the server may have closed the connection already.
  void TrySend(std::string_view data) { ::send(fd_, data.data(), data.size(), MSG_NOSIGNAL | MSG_DONTWAIT); }
  // Reads until the server closes the connection. True when it did (EOF or reset); false
  // when our 30 s safety net expired first, i.e. the server kept the connection open.
  bool ReadUntilClosed(std::string* got) {
    char buf[4096];
    for (;;) {
      const ssize_t n = ::recv(fd_, buf, sizeof(buf), 0);
      if (n > 0) {
        got->append(buf, static_cast<size_t>(n));
        continue;
      }
      if (n == 0 || errno == ECONNRESET) return true;
      return false;  // EAGAIN: timed out on our side
    }
  }

 private:
  int fd_ = -1;
  bool connected_ = false;
};

class WorkloadServerTest : public ::testing::Test {
 protected:
  void Start(WorkloadServerOptions o) {
    // A fixed port would make parallel test processes share (or fight over) one listener.
    if (o.listen.empty() || o.listen == WorkloadServerOptions{}.listen) o.listen = "127.0.0.1:0";
    if (o.http.node.empty()) o.http.node = "gpu-node-07";
    server_ = std::make_unique<WorkloadHttpServer>(std::move(o), clock_);
    auto warnings = server_->Start();
    ASSERT_TRUE(warnings.ok()) << warnings.status().ToString();
    EXPECT_TRUE(warnings->empty());
    ASSERT_GT(server_->port(), 0);
  }
  httplib::Result Post(const std::string& body, const std::string& bearer = "") {
    httplib::Client client("127.0.0.1", server_->port());
    client.set_read_timeout(30, 0);
    httplib::Headers headers;
    if (!bearer.empty()) headers.emplace("Authorization", "Bearer " + bearer);
    return client.Post("/v1/workload", headers, body, "text/plain");
  }

  FakeClock clock_{kNow};
  std::unique_ptr<WorkloadHttpServer> server_;
};

TEST(WorkloadListenAddress, LoopbackByDefaultAndEveryForm) {
  struct Case {
    const char* text;
    const char* host;
    int port;
    bool loopback;
  };
  const Case cases[] = {{"127.0.0.1:9464", "127.0.0.1", 9464, true},
                        {"9464", "127.0.0.1", 9464, true},
                        {":9464", "127.0.0.1", 9464, true},
                        {"[::1]:9464", "::1", 9464, true},
                        {"localhost:80", "localhost", 80, true},
                        {"127.0.0.2:1", "127.0.0.2", 1, true},
                        {"0.0.0.0:9464", "0.0.0.0", 9464, false},
                        {"10.1.2.3:9464", "10.1.2.3", 9464, false},
                        {"[::]:9464", "::", 9464, false},
                        {"gpu-node-07:9464", "gpu-node-07", 9464, false},
                        // Names are names, whatever they start with: only where they bind tells.
                        {"127.evil.example:9464", "127.evil.example", 9464, false},
                        {"127.0.0.1.nip.io:9464", "127.0.0.1.nip.io", 9464, false}};
  for (const Case& c : cases) {
    auto a = ParseListenAddress(c.text);
    ASSERT_TRUE(a.ok()) << c.text << ": " << a.status().ToString();
    EXPECT_EQ(a->host, c.host) << c.text;
    EXPECT_EQ(a->port, c.port) << c.text;
    EXPECT_EQ(a->loopback, c.loopback) << c.text;
  }
  const std::string bads[] = {
      "",         "127.0.0.1", "127.0.0.1:",          "127.0.0.1:65536", "127.0.0.1:-1", "127.0.0.1:80x",
      "::1:9464", "host:port", std::string(5000, '9')};
  for (const std::string& bad : bads) {
    EXPECT_FALSE(ParseListenAddress(bad).ok()) << bad;
  }
}

TEST(WorkloadListenAddress, NotLoopbackNeedsATokenAndWarns) {
  auto loop = CheckListenPolicy(*ParseListenAddress("127.0.0.1:9464"), false);
  ASSERT_TRUE(loop.ok());
  EXPECT_TRUE(loop->empty());
  auto open = CheckListenPolicy(*ParseListenAddress("0.0.0.0:9464"), false);
  ASSERT_FALSE(open.ok());
  EXPECT_NE(open.status().message().find("token"), std::string::npos);
  auto with_token = CheckListenPolicy(*ParseListenAddress("0.0.0.0:9464"), true);
  ASSERT_TRUE(with_token.ok());
  ASSERT_EQ(with_token->size(), 1u);
  EXPECT_NE(with_token->front().find("not loopback"), std::string::npos);
}

TEST(WorkloadListenAddress, ServerRefusesToBindOpenAddressWithoutToken) {
  FakeClock clock(kNow);
  WorkloadServerOptions o;
  o.listen = "0.0.0.0:0";
  WorkloadHttpServer server(o, clock);
  auto started = server.Start();
  ASSERT_FALSE(started.ok());
  EXPECT_EQ(started.status().code(), StatusCode::kInvalidArgument);
  EXPECT_FALSE(server.running());
}

// Before the fix the loopback decision was the name's: "localhost" mapped to 0.0.0.0 (or
// a name starting with "127.") listened on every interface without a token.
TEST(WorkloadListenAddress, TheBoundAddressDecides) {
  GuardedHttpServer any(GuardedServerOptions{});
  auto everywhere = any.Bind("0", 0, "test");  // the resolver's spelling of 0.0.0.0
  ASSERT_TRUE(everywhere.ok()) << everywhere.status().ToString();
  EXPECT_EQ(everywhere->ip, "0.0.0.0");
  EXPECT_FALSE(everywhere->loopback);
  any.Stop();
  GuardedHttpServer loop(GuardedServerOptions{});
  auto local = loop.Bind("localhost", 0, "test");
  ASSERT_TRUE(local.ok()) << local.status().ToString();
  EXPECT_TRUE(local->loopback) << local->ip;
  EXPECT_GT(local->port, 0);
  loop.Stop();

  auto refused = CheckBoundPolicy(*everywhere, false, "workload endpoint", "set a token");
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(refused.status().message().find("0.0.0.0"), std::string::npos) << refused.status().message();
  EXPECT_NE(refused.status().message().find("set a token"), std::string::npos);
  auto warned = CheckBoundPolicy(*everywhere, true, "workload endpoint", "set a token");
  ASSERT_TRUE(warned.ok());
  ASSERT_EQ(warned->size(), 1u);
  EXPECT_NE(warned->front().find("not loopback"), std::string::npos);
  auto fine = CheckBoundPolicy(*local, false, "workload endpoint", "set a token");
  ASSERT_TRUE(fine.ok());
  EXPECT_TRUE(fine->empty());
}

TEST(WorkloadHost, OnlyLoopbackNamesCount) {
  for (const char* host : {"127.0.0.1", "127.0.0.1:9464", "127.200.1.2:1", "localhost", "LocalHost:9464", "localhost.",
                           "[::1]", "[::1]:9464"}) {
    EXPECT_TRUE(IsLoopbackHostHeader(host)) << host;
  }
  for (const char* host : {"", "evil.example", "127.evil.example", "127.0.0.1.nip.io", "127.1", "0.0.0.0", "[::]:80",
                           "::1", "[::1", "localhost:", "localhost:99999999", "localhost.evil", "10.0.0.1:9464"}) {
    EXPECT_FALSE(IsLoopbackHostHeader(host)) << host;
  }
  // A NUL ends the C string the address parser reads: what follows it must not be ignored
  // (fuzz/request_guard_fuzzer checks the same against its own parser).
  using namespace std::string_literals;
  for (const std::string& host : {"127.0.0.1\0.evil.example"s, "[::1\0x]:80"s, "localhost\0"s}) {
    EXPECT_FALSE(IsLoopbackHostHeader(host)) << host.size();
    EXPECT_FALSE(IsAllowedOrigin("http://" + host)) << host.size();
  }
}

TEST(WorkloadToken, FromFileOrEnvironmentNeverInMessages) {
  const std::string dir = ::testing::TempDir() + "/wl_token_" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  const std::string file = dir + "/token";
  std::ofstream(file) << "  " << kToken << "  \n# a comment nobody reads\n";
  ::chmod(file.c_str(), 0600);
  auto t = LoadBearerToken(file, "");
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(*t, kToken);

  ::setenv("FAULTLINE_TEST_WL_TOKEN", kToken, 1);
  auto e = LoadBearerToken("", "FAULTLINE_TEST_WL_TOKEN");
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(*e, kToken);
  EXPECT_EQ(*LoadBearerToken("", ""), "");  // no token configured

  // Bad tokens: each error names where it came from, never what it holds.
  std::ofstream(dir + "/empty") << "\n";
  std::ofstream(dir + "/ctl") << "abc\x01" << kToken << "\n";
  std::ofstream(dir + "/huge") << std::string(5000, 'x') + kToken;
  for (const char* name : {"/empty", "/ctl", "/huge"}) ::chmod((dir + name).c_str(), 0600);
  ::setenv("FAULTLINE_TEST_WL_BLANK", "   ", 1);
  ::unsetenv("FAULTLINE_TEST_WL_UNSET");
  const Result<std::string> bad[] = {LoadBearerToken(dir + "/missing", ""),
                                     LoadBearerToken(dir + "/empty", ""),
                                     LoadBearerToken(dir + "/ctl", ""),
                                     LoadBearerToken(dir + "/huge", ""),
                                     LoadBearerToken("", "FAULTLINE_TEST_WL_BLANK"),
                                     LoadBearerToken("", "FAULTLINE_TEST_WL_UNSET")};
  for (const auto& r : bad) {
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().message().find(kToken), std::string::npos) << r.status().message();
    EXPECT_EQ(r.status().message().find("xxxx"), std::string::npos) << r.status().message();
  }
  ::unsetenv("FAULTLINE_TEST_WL_TOKEN");
  ::unsetenv("FAULTLINE_TEST_WL_BLANK");
  std::filesystem::remove_all(dir);
}

// Before the fix a token file any local user could read (0644) was accepted; every other
// secret (BMC password, webhook secret, model key) had to be 0600.
TEST(WorkloadToken, AFileGroupOrOthersCanReadIsRefused) {
  const std::string dir = ::testing::TempDir() + "/wl_token_mode_" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  const std::string file = dir + "/token";
  std::ofstream(file) << kToken << "\n";
  for (mode_t mode : {0644, 0640, 0604, 0660}) {
    ::chmod(file.c_str(), mode);
    auto t = LoadBearerToken(file, "", "api");
    ASSERT_FALSE(t.ok()) << std::oct << mode;
    EXPECT_EQ(t.status().code(), StatusCode::kPermissionDenied);
    EXPECT_NE(t.status().message().find("chmod 600"), std::string::npos) << t.status().message();
    EXPECT_NE(t.status().message().find(file), std::string::npos);
    EXPECT_EQ(t.status().message().find(kToken), std::string::npos);
  }
  for (mode_t mode : {0600, 0400}) {
    ::chmod(file.c_str(), mode);
    auto t = LoadBearerToken(file, "", "api");
    ASSERT_TRUE(t.ok()) << std::oct << mode << " " << t.status().ToString();
    EXPECT_EQ(*t, kToken);
  }
  std::filesystem::remove_all(dir);
}

TEST_F(WorkloadServerTest, AcceptsReportsForItsOwnNodeOnly) {
  Start({});
  auto mine = Post("job=llama step=1 step_time_s=1.2\nnode=gpu-node-07 job=llama step=2 step_time_s=1.3\n");
  ASSERT_TRUE(mine);
  EXPECT_EQ(mine->status, 202);
  auto other = Post("node=gpu-node-08 job=llama step=3 step_time_s=1.3");
  ASSERT_TRUE(other);
  EXPECT_EQ(other->status, 403);
  EXPECT_NE(other->body.find("gpu-node-08"), std::string::npos);
  // All or nothing: a batch with one foreign report plants nothing.
  auto mixed = Post("job=llama step=4 step_time_s=1\n{\"node\":\"gpu-node-09\",\"job\":\"llama\",\"step_time_s\":1}\n");
  ASSERT_TRUE(mixed);
  EXPECT_EQ(mixed->status, 403);
  auto obs = server_->Drain();
  ASSERT_EQ(obs.size(), 2u);
  for (const Observation& o : obs) EXPECT_EQ(o.node, "gpu-node-07");
  const WorkloadServerStats st = server_->stats();
  EXPECT_EQ(st.accepted, 1u);
  EXPECT_EQ(st.reports, 2u);
  EXPECT_EQ(st.other_node, 2u);
}

TEST_F(WorkloadServerTest, BearerTokenRequiredWhenSet) {
  WorkloadServerOptions o;
  o.token = kToken;
  Start(o);
  const std::string body = "job=a step_time_s=1";
  auto none = Post(body);
  ASSERT_TRUE(none);
  EXPECT_EQ(none->status, 401);
  EXPECT_EQ(none->get_header_value("WWW-Authenticate"), "Bearer");
  auto wrong = Post(body, std::string(kToken) + "x");
  ASSERT_TRUE(wrong);
  EXPECT_EQ(wrong->status, 401);
  auto prefix = Post(body, std::string(kToken).substr(0, 5));
  ASSERT_TRUE(prefix);
  EXPECT_EQ(prefix->status, 401);
  auto right = Post(body, kToken);
  ASSERT_TRUE(right);
  EXPECT_EQ(right->status, 202);
  for (const auto* r : {&none, &wrong, &prefix, &right}) {
    EXPECT_EQ((*r)->body.find(kToken), std::string::npos);
  }
  EXPECT_EQ(server_->stats().unauthorized, 3u);
  EXPECT_EQ(server_->Drain().size(), 1u);
}

TEST_F(WorkloadServerTest, OversizedBodyIsRefused) {
  WorkloadServerOptions o;
  o.http.max_body_bytes = 256;
  o.read_timeout_ms = 200;
  Start(o);
  auto big = Post("job=a step_time_s=1 pad=" + std::string(1000, 'x'));
  ASSERT_TRUE(big);
  EXPECT_EQ(big->status, 413);
  // The same claim made by a raw client that never sends the body: refused on the header.
  RawClient raw(server_->port());
  ASSERT_TRUE(raw.connected());
  raw.Send("POST /v1/workload HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100000000\r\n\r\n");
  std::string got;
  EXPECT_TRUE(raw.ReadUntilClosed(&got));
  EXPECT_NE(got.find(" 413 "), std::string::npos) << got;
  EXPECT_TRUE(server_->Drain().empty());
}

TEST_F(WorkloadServerTest, HalfARequestThenSilenceIsDropped) {
  WorkloadServerOptions o;
  o.read_timeout_ms = 200;
  o.threads = 1;  // the single worker must come back
  Start(o);
  // Stalls in the middle of the headers, and in the middle of the body.
  for (const char* partial : {"POST /v1/workload HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Le",
                              "POST /v1/workload HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\njob=a step"}) {
    SCOPED_TRACE(partial);
    RawClient slow(server_->port());
    ASSERT_TRUE(slow.connected());
    slow.Send(partial);
    std::string got;
    EXPECT_TRUE(slow.ReadUntilClosed(&got)) << "the server kept a stalled connection open";
  }
  // While a third client stalls, the one worker still serves a proper request afterwards.
  RawClient stalled(server_->port());
  stalled.Send("POST /v1/workload HTTP/1.1\r\n");
  auto ok = Post("job=a step=1 step_time_s=1");
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 202);
  EXPECT_EQ(server_->Drain().size(), 1u);
}

// Without a token the endpoint is loopback only; before the fix a DNS-rebinding page (its
// own name resolved to 127.0.0.1) could post reports and read the replies.
TEST_F(WorkloadServerTest, WithoutATokenOnlyLoopbackHostsAreAnswered) {
  Start({});
  const std::string body = "job=a step=1 step_time_s=1";
  auto post = [&](const std::string& host_line) {
    RawClient raw(server_->port());
    raw.Send("POST /v1/workload HTTP/1.1\r\n" + host_line + "Content-Length: " + std::to_string(body.size()) +
             "\r\n\r\n" + body);
    std::string got;
    raw.ReadUntilClosed(&got);
    return got;
  };
  const std::string evil = post("Host: evil.example:9464\r\n");
  EXPECT_NE(evil.find(" 421 "), std::string::npos) << evil;
  EXPECT_NE(post("").find(" 400 "), std::string::npos);
  EXPECT_TRUE(server_->Drain().empty());
  EXPECT_EQ(server_->stats().misdirected, 2u);
  const std::string local = post("Host: localhost:9464\r\n");
  EXPECT_NE(local.find(" 202 "), std::string::npos) << local;
  EXPECT_EQ(server_->Drain().size(), 1u);
  // A page on another site POSTing to 127.0.0.1: its Host is loopback, its Origin is not (CSRF).
  const std::string forged = post("Host: 127.0.0.1:9464\r\nOrigin: https://evil.example\r\n");
  EXPECT_NE(forged.find(" 403 "), std::string::npos) << forged;
  EXPECT_NE(post("Host: 127.0.0.1:9464\r\nOrigin: null\r\n").find(" 403 "), std::string::npos);
  EXPECT_TRUE(server_->Drain().empty());
  const std::string own = post("Host: 127.0.0.1:9464\r\nOrigin: http://127.0.0.1:9464\r\n");
  EXPECT_NE(own.find(" 202 "), std::string::npos) << own;
  EXPECT_EQ(server_->Drain().size(), 1u);
}

TEST(WorkloadHost, OnlyNoOriginOrALoopbackOriginIsAllowed) {
  for (const char* origin :
       {"", "http://127.0.0.1", "http://127.0.0.1:9465", "https://localhost:9465", "http://[::1]:9465"}) {
    EXPECT_TRUE(IsAllowedOrigin(origin)) << origin;
  }
  for (const char* origin : {"null", "https://evil.example", "http://127.0.0.1.evil.example", "http://evil@127.0.0.1",
                             "http://127.0.0.1/x", "ftp://127.0.0.1", "127.0.0.1", "http://", "file://"}) {
    EXPECT_FALSE(IsAllowedOrigin(origin)) << origin;
  }
}

// Before the fix each read waited its timeout afresh: 16 connections dripping a byte now
// and then held the 4 workers and queued ahead of every report, silencing the endpoint.
TEST_F(WorkloadServerTest, SlowClientsCannotSilenceIt) {
  WorkloadServerOptions o;
  o.request_timeout_ms = 1000;
  Start(o);
  std::vector<std::unique_ptr<RawClient>> slow;
  for (int i = 0; i < 16; ++i) {
    slow.push_back(std::make_unique<RawClient>(server_->port()));
    ASSERT_TRUE(slow.back()->connected());
    slow.back()->Send("POST /v1/workload HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ");
  }
  std::atomic<bool> stop{false};
  std::thread drip([&] {
    for (int i = 0; i < 300 && !stop; ++i) {  // a byte each 200 ms, far inside the read timeout
      for (auto& c : slow) c->TrySend("a");
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
  });
  auto r = Post("job=a step=1 step_time_s=1");
  for (int i = 0; i < 100 && r && r->status == 503; ++i) {  // a 503 (no worker free) is an answer: retry
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    r = Post("job=a step=1 step_time_s=1");
  }
  stop = true;
  drip.join();
  ASSERT_TRUE(r) << "the report waited behind slow clients until its client gave up";
  EXPECT_EQ(r->status, 202);
  EXPECT_EQ(server_->Drain().size(), 1u);
  EXPECT_GE(server_->stats().timed_out, 4u);
}

TEST_F(WorkloadServerTest, StopsCleanlyWithAClientConnected) {
  WorkloadServerOptions o;
  o.read_timeout_ms = 200;
  Start(o);
  RawClient idle(server_->port());
  ASSERT_TRUE(idle.connected());
  server_->Stop();
  EXPECT_FALSE(server_->running());
  server_->Stop();  // idempotent
}

}  // namespace
}  // namespace faultline
