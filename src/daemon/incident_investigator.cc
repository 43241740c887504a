#include "daemon/incident_investigator.h"

#include <pthread.h>

#include <algorithm>
#include <utility>

#include "assistant/tools.h"
#include "daemon/why_slow.h"
#include "sources/redfish/curl_http_client.h"
#include "store/store.h"

namespace faultline::daemon {

namespace {

constexpr int64_t kHourNs = int64_t{3600} * 1'000'000'000;

std::string ErrorForLog(const std::string& error) {
  // The client's errors are redacted of the key already; keep the log line short and on one line.
  std::string out = error.size() > 300 ? error.substr(0, 300) + "..." : error;
  for (char& c : out) {
    if (static_cast<unsigned char>(c) < 0x20) c = ' ';
  }
  return out;
}

// Refuses every request once the investigator stops, so a loop cut short does not try
// its next step against a cancelled transfer.
class StopAwareModel final : public assistant::ChatModel {
 public:
  StopAwareModel(assistant::ChatModel& inner, const std::atomic<bool>& cancel) : inner_(inner), cancel_(cancel) {}
  Result<assistant::ChatReply> Complete(const assistant::ChatRequest& request) override {
    if (cancel_.load()) return Status(StatusCode::kUnavailable, "agent stopping: model request not sent");
    return inner_.Complete(request);
  }
  std::string ModelName() const override { return inner_.ModelName(); }

 private:
  assistant::ChatModel& inner_;
  const std::atomic<bool>& cancel_;
};

}  // namespace

class IncidentInvestigator::CancellableHttp final : public redfish::HttpClient {
 public:
  CancellableHttp(std::unique_ptr<redfish::HttpClient> inner, const std::atomic<bool>& cancel)
      : inner_(std::move(inner)), cancel_(cancel) {}
  Result<redfish::HttpResponse> Send(const redfish::HttpRequest& request) override {
    redfish::HttpRequest r = request;
    r.cancel = &cancel_;
    return inner_->Send(r);
  }
  Result<int> Stream(const redfish::HttpRequest& request,
                     const std::function<bool(std::string_view)>& on_data) override {
    redfish::HttpRequest r = request;
    r.cancel = &cancel_;
    return inner_->Stream(r, on_data);
  }

 private:
  std::unique_ptr<redfish::HttpClient> inner_;
  const std::atomic<bool>& cancel_;
};

InvestigatorOptions InvestigatorOptionsFor(const AssistantSection& s) {
  InvestigatorOptions o;
  o.llm.url = s.llm_url;
  o.llm.model = s.llm_model;
  o.llm.api_key_file = s.llm_key_file;
  o.llm.ca_file = s.llm_ca_file;
  o.llm.allow_http = s.llm_allow_http;
  o.llm.timeout_ms = std::max<int64_t>(1, s.llm_timeout_ns / 1'000'000);
  o.ask.max_steps = static_cast<size_t>(std::max<int64_t>(1, s.llm_max_steps));
  o.ask.max_tokens = std::max<int64_t>(1, s.llm_max_tokens);
  o.ask.max_wall_ns = s.llm_max_seconds_ns;
  o.queue_capacity = static_cast<size_t>(std::max<int64_t>(1, s.llm_queue));
  o.max_per_hour = s.llm_max_per_hour;
  return o;
}

std::string InvestigationQuestion(const Investigation& inv) {
  const std::string dx = inv.diagnosis_id != 0 ? "diagnosis:" + std::to_string(inv.diagnosis_id) + " (" +
                                                     std::string(ToString(inv.fault_class)) + ")"
                                               : std::string(ToString(inv.fault_class));
  if (inv.trigger == Investigation::Trigger::kSlowUnexplained) {
    return "Automated investigation (no operator is asking): this node runs slower than its own baseline and no "
           "rule explains it (" +
           dx +
           "). Use the tools to look for what could explain the slowdown, then write the incident summary for the "
           "operator (what is known, the evidence with its ids, what is ruled out) and the next steps.";
  }
  return "Automated investigation (no operator is asking): a new diagnosis was stored for this node, " + dx +
         ". Use the tools, then write the incident summary for the operator (what failed, where, since when, the "
         "evidence with its ids, what is ruled out) and the next steps.";
}

IncidentInvestigator::IncidentInvestigator(const InvestigatorOptions& options, Store& store, std::string node,
                                           const assistant::Retriever* kb, const Clock& clock, Logger& logger)
    : options_(options), store_(store), node_(std::move(node)), kb_(kb), clock_(clock), logger_(logger) {}

IncidentInvestigator::IncidentInvestigator(const InvestigatorOptions& options,
                                           std::unique_ptr<assistant::ChatModel> model, Store& store, std::string node,
                                           const assistant::Retriever* kb, const Clock& clock, Logger& logger)
    : IncidentInvestigator(options, store, std::move(node), kb, clock, logger) {
  model_ = std::move(model);
  worker_ = std::thread([this] { Loop(); });
}

Result<std::unique_ptr<IncidentInvestigator>> IncidentInvestigator::Create(const InvestigatorOptions& options,
                                                                           Store& store, std::string node,
                                                                           const assistant::Retriever* kb,
                                                                           const Clock& clock, Logger& logger) {
  std::unique_ptr<IncidentInvestigator> inv(
      new IncidentInvestigator(options, store, std::move(node), kb, clock, logger));
  redfish::CurlOptions curl;
  curl.ca_file = options.llm.ca_file;
  curl.max_body_bytes = options.llm.max_reply_bytes;
  inv->http_ = std::make_unique<CancellableHttp>(std::make_unique<redfish::CurlHttpClient>(curl), inv->cancel_);
  auto client = assistant::OpenAiChatClient::Create(options.llm, inv->http_.get());
  if (!client.ok()) return client.status();
  inv->model_ = std::move(client).value();
  inv->worker_ = std::thread([p = inv.get()] { p->Loop(); });
  return inv;
}

IncidentInvestigator::~IncidentInvestigator() { Stop(); }

bool IncidentInvestigator::Submit(Investigation investigation) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) {
      ++stats_.dropped;
      return false;
    }
    ++stats_.submitted;
    auto same =
        std::find_if(queue_.begin(), queue_.end(), [&](const Investigation& q) { return q.key == investigation.key; });
    if (same != queue_.end()) {
      // The newer one carries the newer diagnosis; the model reads the store when it runs.
      *same = std::move(investigation);
      ++stats_.coalesced;
      return true;
    }
    if (queue_.size() >= options_.queue_capacity) {
      logger_.Warn("assistant: investigation queue full; dropping the oldest waiting one (" + queue_.front().key + ")");
      queue_.pop_front();
      ++stats_.dropped;
    }
    queue_.push_back(std::move(investigation));
  }
  wake_.notify_one();
  return true;
}

void IncidentInvestigator::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!stopping_) {
      stopping_ = true;
      stats_.dropped += queue_.size();
      queue_.clear();
    }
  }
  cancel_.store(true);
  wake_.notify_all();
  if (worker_.joinable()) worker_.join();
  idle_.notify_all();
}

bool IncidentInvestigator::WaitIdle(std::chrono::nanoseconds max) {
  std::unique_lock<std::mutex> lock(mu_);
  return idle_.wait_for(lock, max, [this] { return stopping_ || (queue_.empty() && !running_); });
}

InvestigatorStats IncidentInvestigator::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

void IncidentInvestigator::Loop() {
  (void)pthread_setname_np(pthread_self(), "fl-assistant");
  for (;;) {
    Investigation next;
    {
      std::unique_lock<std::mutex> lock(mu_);
      wake_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (stopping_) break;
      next = std::move(queue_.front());
      queue_.pop_front();
      running_ = true;
    }
    if (TakeBudget()) {
      Run(next);
    } else {
      std::lock_guard<std::mutex> lock(mu_);
      ++stats_.over_budget;
      logger_.Warn("assistant: hourly budget of " + std::to_string(options_.max_per_hour) +
                   " model investigation(s) spent; " + next.key + " keeps its deterministic note");
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      running_ = false;
    }
    idle_.notify_all();
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    running_ = false;
  }
  idle_.notify_all();
}

bool IncidentInvestigator::TakeBudget() {
  const int64_t now = clock_.MonotonicNs();
  while (!starts_mono_ns_.empty() && now - starts_mono_ns_.front() >= kHourNs) starts_mono_ns_.pop_front();
  if (static_cast<int64_t>(starts_mono_ns_.size()) >= options_.max_per_hour) return false;
  starts_mono_ns_.push_back(now);
  return true;
}

void IncidentInvestigator::Run(const Investigation& inv) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++stats_.runs;
  }
  assistant::ToolContext ctx;
  ctx.store = &store_;
  ctx.node = node_;
  ctx.retriever = kb_;
  ctx.now_ns = clock_.NowNs();
  ctx.why_slow = [this](int64_t since, int64_t until) -> Result<std::vector<Diagnosis>> {
    auto a = WhySlow(store_, {.node = node_, .since_ns = since, .until_ns = until});
    if (!a.ok()) return a.status();
    return a->diagnoses;
  };
  const assistant::Toolbox tools(ctx);
  const assistant::AskRequest request{.question = InvestigationQuestion(inv)};
  StopAwareModel model(*model_, cancel_);
  assistant::AskAnswer answer = assistant::AskWithModel(model, tools, request, options_.ask);
  if (inv.diagnosis_id != 0) answer.diagnosis_id = inv.diagnosis_id;  // the note goes with its incident

  size_t accepted = 0;
  for (const assistant::ProposalVerdict& p : answer.proposals) accepted += p.accepted ? 1 : 0;
  const bool answered = answer.stop_reason == "answered";
  const bool cancelled = !answered && cancel_.load();
  // A failed run stores nothing of its own (the deterministic note stands) unless the model
  // proposed something: every proposal, and the refusal of each, stays on record.
  Result<int64_t> id = int64_t{0};
  if (answered || !answer.proposals.empty())
    id = assistant::StoreTranscript(store_, node_, request, answer, clock_.NowNs());

  std::lock_guard<std::mutex> lock(mu_);
  stats_.proposals_accepted += accepted;
  stats_.proposals_refused += answer.proposals.size() - accepted;
  if (!id.ok()) {
    ++stats_.store_errors;
    logger_.Error("assistant: model note for " + inv.key + " not stored: " + id.status().ToString());
  }
  if (answered) {
    if (id.ok()) ++stats_.answered;
    logger_.Info("assistant: model note " + std::to_string(id.ok() ? *id : 0) + " for " + inv.key + " (" +
                 std::to_string(answer.steps) + " step(s), " + std::to_string(answer.tokens) + " token(s), " +
                 std::to_string(answer.proposals.size() - accepted) + " proposal(s) refused)");
    return;
  }
  if (cancelled) {
    ++stats_.cancelled;
    logger_.Info("assistant: model investigation of " + inv.key + " cancelled by shutdown");
    return;
  }
  ++stats_.failures;
  logger_.Warn("assistant: model investigation of " + inv.key + " did not finish (" + answer.stop_reason +
               (answer.error.empty() ? "" : ": " + ErrorForLog(answer.error)) + " after " +
               std::to_string(answer.steps) + " step(s)); the deterministic note stands");
}

}  // namespace faultline::daemon
