// An OpenAI-compatible chat-completions server scripted by the test, on 127.0.0.1 port 0
// (plain HTTP, or HTTPS with a test-time certificate): each POST /v1/chat/completions is
// answered by the script with (status, body, delay), and every request is recorded.
// Plus helpers that write the replies a real server would send.
#pragma once

#include <httplib.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/json.h"

namespace faultline::assistant::testing {

struct ScriptedReply {
  int status = 200;
  std::string body;
  int delay_ms = 0;
};

// Reply `index` (0-based) to a request whose parsed body is `request`.
using Script = std::function<ScriptedReply(const Json& request, size_t index)>;

class FakeLlmServer {
 public:
  explicit FakeLlmServer(Script script, const std::string& cert = "", const std::string& key = "")
      : script_(std::move(script)) {
    if (!cert.empty()) {
      server_ = std::make_unique<httplib::SSLServer>(cert.c_str(), key.c_str());
      scheme_ = "https";
    } else {
      server_ = std::make_unique<httplib::Server>();
    }
    server_->Post("/v1/chat/completions", [this](const httplib::Request& req, httplib::Response& res) {
      size_t index = 0;
      {
        std::lock_guard<std::mutex> lock(mu_);
        index = bodies_.size();
        bodies_.push_back(req.body);
        auth_.push_back(req.get_header_value("Authorization"));
      }
      Json parsed = Json::parse(req.body, nullptr, false);
      ScriptedReply r = script_(parsed, index);
      for (int waited = 0; waited < r.delay_ms && !stopping_; waited += 10) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
      res.status = r.status;
      res.set_content(r.body, "application/json");
    });
    port_ = server_->bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_->listen_after_bind(); });
    while (!server_->is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  ~FakeLlmServer() {
    stopping_ = true;
    server_->stop();
    thread_.join();
  }
  std::string BaseUrl() const { return scheme_ + "://127.0.0.1:" + std::to_string(port_) + "/v1"; }
  std::vector<std::string> Bodies() {
    std::lock_guard<std::mutex> lock(mu_);
    return bodies_;
  }
  std::vector<std::string> AuthHeaders() {
    std::lock_guard<std::mutex> lock(mu_);
    return auth_;
  }

 private:
  Script script_;
  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
  std::string scheme_ = "http";
  int port_ = 0;
  std::atomic<bool> stopping_{false};
  std::mutex mu_;
  std::vector<std::string> bodies_;
  std::vector<std::string> auth_;
};

// A reply whose message calls tools: {name, arguments text}.
inline std::string ToolCallsReply(const std::vector<std::pair<std::string, std::string>>& calls, int tokens = 50) {
  Json tc = Json::array();
  for (size_t i = 0; i < calls.size(); ++i) {
    tc.push_back({{"id", "call_" + std::to_string(i)},
                  {"type", "function"},
                  {"function", {{"name", calls[i].first}, {"arguments", calls[i].second}}}});
  }
  return Json{{"id", "chatcmpl-test"},
              {"object", "chat.completion"},
              {"choices",
               {{{"index", 0},
                 {"message", {{"role", "assistant"}, {"content", nullptr}, {"tool_calls", tc}}},
                 {"finish_reason", "tool_calls"}}}},
              {"usage", {{"prompt_tokens", tokens - 10}, {"completion_tokens", 10}, {"total_tokens", tokens}}}}
      .dump();
}

// A final text answer.
inline std::string TextReply(const std::string& text, int tokens = 50) {
  return Json{
      {"id", "chatcmpl-test"},
      {"object", "chat.completion"},
      {"choices", {{{"index", 0}, {"message", {{"role", "assistant"}, {"content", text}}}, {"finish_reason", "stop"}}}},
      {"usage", {{"prompt_tokens", tokens - 10}, {"completion_tokens", 10}, {"total_tokens", tokens}}}}
      .dump();
}

}  // namespace faultline::assistant::testing
