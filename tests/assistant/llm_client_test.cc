// The OpenAI-compatible client: the reply parser on good and hostile replies, the request
// it sends, and the HTTP path against a scripted server (key handling, TLS, size limit,
// timeouts, errors).
#include "assistant/llm_client.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "fake_llm_server.h"
#include "sim/mock_bmc/mock_bmc.h"

namespace faultline::assistant {
namespace {

using testing::FakeLlmServer;
using testing::ScriptedReply;
using testing::TextReply;
using testing::ToolCallsReply;

class TempDir {
 public:
  TempDir() {
    path_ = std::filesystem::temp_directory_path() /
            ("faultline_llm_" + std::to_string(::getpid()) + "_" + std::to_string(counter_++));
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  std::string Write(const std::string& name, const std::string& text, mode_t mode) {
    const std::string p = (path_ / name).string();
    std::ofstream(p) << text;
    ::chmod(p.c_str(), mode);
    return p;
  }
  std::string path() const { return path_.string(); }

 private:
  static inline int counter_ = 0;
  std::filesystem::path path_;
};

// ---- parser ----

TEST(LlmReply, TextAnswer) {
  auto r = ParseChatReply(TextReply("The PSU failed [obs:3].", 120));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->message.role, "assistant");
  EXPECT_EQ(r->message.content, "The PSU failed [obs:3].");
  EXPECT_TRUE(r->message.tool_calls.empty());
  EXPECT_EQ(r->finish_reason, "stop");
  EXPECT_TRUE(r->usage.reported);
  EXPECT_EQ(r->usage.total_tokens, 120);
}

TEST(LlmReply, ToolCallsKeepRawArguments) {
  auto r =
      ParseChatReply(ToolCallsReply({{"get_observations", R"({"layer":"gpu","limit":5})"}, {"get_diagnoses", "{}"}}));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->message.tool_calls.size(), 2u);
  EXPECT_EQ(r->message.tool_calls[0].id, "call_0");
  EXPECT_EQ(r->message.tool_calls[0].name, "get_observations");
  EXPECT_EQ(r->message.tool_calls[0].arguments, R"({"layer":"gpu","limit":5})");
  EXPECT_EQ(r->message.content, "");
  EXPECT_EQ(r->finish_reason, "tool_calls");
}

TEST(LlmReply, VariantsServersSend) {
  // Arguments already decoded to an object (some servers), no id, no type, no usage,
  // null finish_reason.
  auto r = ParseChatReply(
      R"({"choices":[{"message":{"content":null,"tool_calls":[{"function":{"name":"search_kb","arguments":{"query":"xid 79"}}}]},"finish_reason":null}]})");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->message.tool_calls.size(), 1u);
  EXPECT_EQ(r->message.tool_calls[0].id, "call_0");
  EXPECT_EQ(Json::parse(r->message.tool_calls[0].arguments)["query"], "xid 79");
  EXPECT_FALSE(r->usage.reported);
  EXPECT_EQ(r->finish_reason, "");
  // Missing arguments read as an empty object.
  auto r2 =
      ParseChatReply(R"({"choices":[{"message":{"tool_calls":[{"id":"a","function":{"name":"get_diagnoses"}}]}}]})");
  ASSERT_TRUE(r2.ok());
  EXPECT_EQ(r2->message.tool_calls[0].arguments, "{}");
}

TEST(LlmReply, MalformedRepliesAreClearErrors) {
  struct Case {
    const char* body;
    const char* expect;
  };
  const Case cases[] = {
      {"", "empty body"},
      {"{\"choices\": [", "not valid JSON"},
      {"<html>502 Bad Gateway</html>", "not valid JSON"},
      {"[1,2]", "not an object"},
      {"{}", "no \"choices\""},
      {R"({"choices":{}})", "choices is object"},
      {R"({"choices":[]})", "choices is empty"},
      {R"({"choices":[7]})", "choices[0] is number"},
      {R"({"choices":[{}]})", "message is missing"},
      {R"({"choices":[{"message":{"content":42}}]})", "content is number"},
      {R"({"choices":[{"message":{"tool_calls":{"a":1}}}]})", "tool_calls is object"},
      {R"({"choices":[{"message":{"tool_calls":[{"id":"x"}]}}]})", "function is missing"},
      {R"({"choices":[{"message":{"tool_calls":[{"function":{"name":7}}]}}]})", "name is missing or not a string"},
      {R"({"choices":[{"message":{"tool_calls":[{"function":{"name":""}}]}}]})", "name is missing or not a string"},
      {R"({"choices":[{"message":{"tool_calls":[{"function":{"name":"x","arguments":5}}]}}]})", "arguments is number"},
      {R"({"choices":[{"message":{"tool_calls":[{"type":"code","function":{"name":"x"}}]}}]})", "type is not"},
      {R"({"choices":[{"message":{"tool_calls":[{"id":3,"function":{"name":"x"}}]}}]})", "id is number"},
      {R"({"choices":[{"message":{"content":"a"},"finish_reason":1}]})", "finish_reason is number"},
      {R"({"choices":[{"message":{"content":"a"}}],"usage":{"total_tokens":-5}})", "total_tokens"},
      {R"({"choices":[{"message":{"content":"a"}}],"usage":{"total_tokens":"many"}})", "total_tokens"},
      {R"({"choices":[{"message":{"content":"a"}}],"usage":[]})", "usage is array"},
  };
  for (const Case& c : cases) {
    auto r = ParseChatReply(c.body);
    ASSERT_FALSE(r.ok()) << c.body;
    EXPECT_EQ(r.status().code(), StatusCode::kCorrupt) << c.body;
    EXPECT_NE(r.status().message().find(c.expect), std::string::npos) << c.body << " -> " << r.status().message();
  }
}

TEST(LlmReply, HostileShapesAreRefusedBeforeParsing) {
  // Deep nesting would recurse the parser.
  std::string deep =
      R"({"choices":[{"message":{"content":"x","extra":)" + std::string(10000, '[') + std::string(10000, ']') + "}}]}";
  auto r = ParseChatReply(deep);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("nested deeper"), std::string::npos);
  // Over the byte limit.
  std::string big = TextReply(std::string(2000, 'a'));
  auto r2 = ParseChatReply(big, 1000);
  ASSERT_FALSE(r2.ok());
  EXPECT_NE(r2.status().message().find("over the 1000-byte limit"), std::string::npos);
  // Too many tool calls in one reply.
  std::vector<std::pair<std::string, std::string>> calls(kMaxToolCallsPerReply + 1, {"get_diagnoses", "{}"});
  auto r3 = ParseChatReply(ToolCallsReply(calls));
  ASSERT_FALSE(r3.ok());
  EXPECT_NE(r3.status().message().find("tool calls in one reply"), std::string::npos);
  // A server error object.
  auto r4 = ParseChatReply(R"({"error":{"message":"model not loaded","type":"server_error"}})");
  ASSERT_FALSE(r4.ok());
  EXPECT_EQ(r4.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(r4.status().message().find("model not loaded"), std::string::npos);
  // Truncated at every length: never a crash, always an error or (full length) the answer.
  const std::string full = ToolCallsReply({{"get_observations", R"({"layer":"os"})"}});
  for (size_t n = 0; n < full.size(); ++n) {
    EXPECT_FALSE(ParseChatReply(full.substr(0, n)).ok()) << n;
  }
  EXPECT_TRUE(ParseChatReply(full).ok());
}

TEST(LlmRequest, BodyCarriesModelMessagesAndToolSchemas) {
  ChatRequest req;
  req.max_tokens = 77;
  req.messages.push_back({"system", "sys", {}, "", ""});
  req.messages.push_back({"assistant", "", {{"c1", "get_diagnoses", "{}"}}, "", ""});
  req.messages.push_back({"tool", "{\"ok\":true}", {}, "c1", "get_diagnoses"});
  req.tools.push_back({"get_diagnoses", "d", Json{{"type", "object"}, {"properties", Json::object()}}});
  Json j = ChatRequestJson(req, "llama-3-8b");
  EXPECT_EQ(j["model"], "llama-3-8b");
  EXPECT_EQ(j["max_tokens"], 77);
  EXPECT_EQ(j["temperature"], 0);
  ASSERT_EQ(j["messages"].size(), 3u);
  EXPECT_TRUE(j["messages"][1]["content"].is_null());
  EXPECT_EQ(j["messages"][1]["tool_calls"][0]["function"]["name"], "get_diagnoses");
  EXPECT_EQ(j["messages"][2]["tool_call_id"], "c1");
  EXPECT_EQ(j["tools"][0]["type"], "function");
  EXPECT_EQ(j["tools"][0]["function"]["parameters"]["type"], "object");
}

TEST(LlmRequest, EndpointFromBaseUrl) {
  EXPECT_EQ(*ChatCompletionsUrl("http://127.0.0.1:8080/v1"), "http://127.0.0.1:8080/v1/chat/completions");
  EXPECT_EQ(*ChatCompletionsUrl("http://127.0.0.1:8080/v1/"), "http://127.0.0.1:8080/v1/chat/completions");
  EXPECT_EQ(*ChatCompletionsUrl("https://h/v1/chat/completions"), "https://h/v1/chat/completions");
  EXPECT_FALSE(ChatCompletionsUrl("file:///etc/passwd").ok());
  EXPECT_FALSE(ChatCompletionsUrl("127.0.0.1:8080").ok());
}

// ---- over HTTP ----

ChatRequest Hello() {
  ChatRequest req;
  req.messages.push_back({"user", "hello", {}, "", ""});
  return req;
}

TEST(LlmClient, SendsModelAndBearerKeyFromFile) {
  FakeLlmServer server([](const Json&, size_t) { return ScriptedReply{200, TextReply("hi"), 0}; });
  TempDir dir;
  LlmConfig config{server.BaseUrl(), "test-model", dir.Write("key", "sk-test-123\n", 0600)};
  auto client = OpenAiChatClient::Create(config);
  ASSERT_TRUE(client.ok()) << client.status().ToString();
  auto reply = (*client)->Complete(Hello());
  ASSERT_TRUE(reply.ok()) << reply.status().ToString();
  EXPECT_EQ(reply->message.content, "hi");
  ASSERT_EQ(server.AuthHeaders().size(), 1u);
  EXPECT_EQ(server.AuthHeaders()[0], "Bearer sk-test-123");
  Json sent = Json::parse(server.Bodies()[0]);
  EXPECT_EQ(sent["model"], "test-model");
  EXPECT_EQ(sent["messages"][0]["content"], "hello");
}

TEST(LlmClient, NoKeyFileSendsNoAuthorization) {
  FakeLlmServer server([](const Json&, size_t) { return ScriptedReply{200, TextReply("hi"), 0}; });
  auto client = OpenAiChatClient::Create({server.BaseUrl(), "m"});
  ASSERT_TRUE(client.ok());
  ASSERT_TRUE((*client)->Complete(Hello()).ok());
  EXPECT_EQ(server.AuthHeaders()[0], "");
}

TEST(LlmClient, KeyFileOthersCanReadIsRefusedWithoutQuotingIt) {
  TempDir dir;
  auto client = OpenAiChatClient::Create({"http://127.0.0.1:1/v1", "m", dir.Write("key", "sk-secret-9\n", 0644)});
  ASSERT_FALSE(client.ok());
  EXPECT_EQ(client.status().code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(client.status().message().find("sk-secret-9"), std::string::npos);
  auto missing = OpenAiChatClient::Create({"http://127.0.0.1:1/v1", "m", dir.path() + "/nope"});
  EXPECT_FALSE(missing.ok());
  EXPECT_FALSE(OpenAiChatClient::Create({"http://127.0.0.1:1/v1", ""}).ok());  // no model
}

TEST(LlmClient, KeyEchoedByServerNeverReachesTheError) {
  FakeLlmServer server([](const Json&, size_t) {
    return ScriptedReply{401, R"({"error":{"message":"invalid api key sk-echo-777"}})", 0};
  });
  TempDir dir;
  auto client = OpenAiChatClient::Create({server.BaseUrl(), "m", dir.Write("key", "sk-echo-777", 0600)});
  ASSERT_TRUE(client.ok());
  auto reply = (*client)->Complete(Hello());
  ASSERT_FALSE(reply.ok());
  EXPECT_EQ(reply.status().code(), StatusCode::kPermissionDenied);
  EXPECT_NE(reply.status().message().find("HTTP 401"), std::string::npos);
  EXPECT_EQ(reply.status().message().find("sk-echo-777"), std::string::npos) << reply.status().message();
  EXPECT_NE(reply.status().message().find("[redacted]"), std::string::npos);
  // And when the echo comes inside a 200 error object.
  FakeLlmServer server2([](const Json&, size_t) {
    return ScriptedReply{200, R"({"error":{"message":"quota for sk-echo-777 exceeded"}})", 0};
  });
  auto client2 = OpenAiChatClient::Create({server2.BaseUrl(), "m", dir.Write("key2", "sk-echo-777", 0600)});
  ASSERT_TRUE(client2.ok());
  auto reply2 = (*client2)->Complete(Hello());
  ASSERT_FALSE(reply2.ok());
  EXPECT_EQ(reply2.status().message().find("sk-echo-777"), std::string::npos) << reply2.status().message();
}

// Issue 25: a key the model (or whatever answers as it) echoes reached the transcript.
TEST(LlmClient, SecretsEchoedInTheReplyAreRedactedBeforeTheCallerSeesThem) {
  FakeLlmServer server([](const Json&, size_t i) {
    if (i == 0) {
      return ScriptedReply{
          200, ToolCallsReply({{"search_kb", R"({"query":"sk-echo-777 and bmc-pass-55"})"}, {"sk-echo-777", "{}"}}), 0};
    }
    return ScriptedReply{200, TextReply("Your key is sk-echo-777; the BMC's is bmc-pass-55."), 0};
  });
  TempDir dir;
  LlmConfig config{server.BaseUrl(), "m", dir.Write("key", "sk-echo-777\n", 0600)};
  config.secrets = {"bmc-pass-55", ""};  // an empty one is no secret (and must not match everywhere)
  auto client = OpenAiChatClient::Create(config);
  ASSERT_TRUE(client.ok()) << client.status().ToString();
  auto calls = (*client)->Complete(Hello());
  ASSERT_TRUE(calls.ok()) << calls.status().ToString();
  ASSERT_EQ(calls->message.tool_calls.size(), 2u);
  EXPECT_EQ(calls->message.tool_calls[0].arguments, R"({"query":"[redacted] and [redacted]"})");
  EXPECT_EQ(calls->message.tool_calls[1].name, "[redacted]");
  auto text = (*client)->Complete(Hello());
  ASSERT_TRUE(text.ok()) << text.status().ToString();
  EXPECT_EQ(text->message.content, "Your key is [redacted]; the BMC's is [redacted].");
}

// Issue 25: the key went in clear to any http:// URL.
TEST(LlmClient, PlainHttpToAHostThatIsNotLoopbackNeedsTheOptIn) {
  TempDir dir;
  const std::string key = dir.Write("key", "sk-never-sent\n", 0600);
  for (const char* url : {"http://10.1.2.3:8080/v1", "http://llm.example/v1", "http://127.0.0.1.evil.example/v1",
                          "http://localhost.evil.example/v1", "http://2130706433/v1", "http://[::ffff:10.0.0.1]/v1",
                          "http://[2001:db8::1]:8080/v1"}) {
    auto refused = OpenAiChatClient::Create({url, "m", key});
    ASSERT_FALSE(refused.ok()) << url;
    EXPECT_EQ(refused.status().code(), StatusCode::kInvalidArgument) << url;
    EXPECT_NE(refused.status().message().find("--llm-allow-http"), std::string::npos) << refused.status().message();
    EXPECT_EQ(refused.status().message().find("sk-never-sent"), std::string::npos);
    LlmConfig allowed{url, "m", key};
    allowed.allow_http = true;
    EXPECT_TRUE(OpenAiChatClient::Create(allowed).ok()) << url;  // nothing is sent by Create
  }
  for (const char* url :
       {"http://127.0.0.1:8080/v1", "http://127.8.9.10/v1", "http://localhost:1/v1", "http://LOCALHOST:1/v1",
        "http://[::1]:8080/v1", "http://[::ffff:127.0.0.1]:1/v1", "https://10.1.2.3/v1", "https://llm.example/v1"}) {
    EXPECT_TRUE(OpenAiChatClient::Create({url, "m", key}).ok()) << url;
    EXPECT_TRUE(CheckLlmUrl(url, false).ok()) << url;
  }
  EXPECT_EQ(CheckLlmUrl("http://user@127.0.0.1/v1", true).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(CheckLlmUrl("ftp://127.0.0.1/v1", true).code(), StatusCode::kInvalidArgument);
}

TEST(LlmClient, TenMegabyteReplyIsRefused) {
  const std::string huge = TextReply(std::string(10 << 20, 'x'));
  FakeLlmServer server([&](const Json&, size_t) { return ScriptedReply{200, huge, 0}; });
  auto client = OpenAiChatClient::Create({server.BaseUrl(), "m"});
  ASSERT_TRUE(client.ok());
  auto reply = (*client)->Complete(Hello());
  ASSERT_FALSE(reply.ok());
  EXPECT_EQ(reply.status().code(), StatusCode::kCorrupt);
  EXPECT_NE(reply.status().message().find("larger than"), std::string::npos) << reply.status().message();
}

TEST(LlmClient, SlowServerTimesOut) {
  FakeLlmServer server([](const Json&, size_t) { return ScriptedReply{200, TextReply("late"), 3000}; });
  LlmConfig config{server.BaseUrl(), "m"};
  config.timeout_ms = 200;
  auto client = OpenAiChatClient::Create(config);
  ASSERT_TRUE(client.ok());
  auto reply = (*client)->Complete(Hello());
  ASSERT_FALSE(reply.ok());
  EXPECT_EQ(reply.status().code(), StatusCode::kTimeout);
  // The request's own (smaller) timeout wins over the client's.
  LlmConfig roomy{server.BaseUrl(), "m"};
  auto client2 = OpenAiChatClient::Create(roomy);
  ChatRequest req = Hello();
  req.timeout_ms = 200;
  auto reply2 = (*client2)->Complete(req);
  ASSERT_FALSE(reply2.ok());
  EXPECT_EQ(reply2.status().code(), StatusCode::kTimeout);
}

TEST(LlmClient, MalformedBodyAndServerErrors) {
  FakeLlmServer server([](const Json&, size_t i) {
    if (i == 0) return ScriptedReply{200, "{\"choices\": [{\"message\": ", 0};
    if (i == 1) return ScriptedReply{500, "upstream exploded", 0};
    return ScriptedReply{200, R"({"choices":[{"message":{"content":["not","a","string"]}}]})", 0};
  });
  auto client = OpenAiChatClient::Create({server.BaseUrl(), "m"});
  ASSERT_TRUE(client.ok());
  auto a = (*client)->Complete(Hello());
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.status().code(), StatusCode::kCorrupt);
  auto b = (*client)->Complete(Hello());
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(b.status().message().find("HTTP 500"), std::string::npos);
  auto c = (*client)->Complete(Hello());
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("content is array"), std::string::npos);
}

TEST(LlmClient, NothingListeningIsUnavailable) {
  // A port the kernel handed out and that was closed again: nothing listens there.
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  socklen_t len = sizeof(addr);
  ASSERT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  ::close(fd);
  LlmConfig config{"http://127.0.0.1:" + std::to_string(ntohs(addr.sin_port)) + "/v1", "m"};
  config.timeout_ms = 5000;
  auto client = OpenAiChatClient::Create(config);
  ASSERT_TRUE(client.ok());
  auto reply = (*client)->Complete(Hello());
  ASSERT_FALSE(reply.ok());
  EXPECT_EQ(reply.status().code(), StatusCode::kUnavailable);
}

TEST(LlmClient, TlsIsVerified) {
  TempDir dir;
  auto cert = sim::GenerateSelfSignedCert(dir.path());
  ASSERT_TRUE(cert.ok()) << cert.status().ToString();
  FakeLlmServer server(
      [](const Json&, size_t) {
        return ScriptedReply{200, TextReply("over tls"), 0};
      },
      cert->cert_path, cert->key_path);
  // An untrusted certificate is refused.
  auto untrusted = OpenAiChatClient::Create({server.BaseUrl(), "m"});
  ASSERT_TRUE(untrusted.ok());
  auto refused = (*untrusted)->Complete(Hello());
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(server.Bodies().size(), 0u);  // nothing was sent to it
  // Trusted through --llm-ca.
  LlmConfig config{server.BaseUrl(), "m"};
  config.ca_file = cert->cert_path;
  auto trusted = OpenAiChatClient::Create(config);
  ASSERT_TRUE(trusted.ok());
  auto reply = (*trusted)->Complete(Hello());
  ASSERT_TRUE(reply.ok()) << reply.status().ToString();
  EXPECT_EQ(reply->message.content, "over tls");
}

}  // namespace
}  // namespace faultline::assistant
