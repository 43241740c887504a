#include "sim/mock_bmc/mock_bmc.h"

#include <arpa/inet.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/time.h"
#include "sim/mock_bmc/mock_bmc_impl.h"

namespace faultline::sim {
namespace {

using nlohmann::json;

bool IsLoopback(const std::string& addr) {
  in_addr v4{};
  if (inet_pton(AF_INET, addr.c_str(), &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;
  in6_addr v6{};
  if (inet_pton(AF_INET6, addr.c_str(), &v6) == 1) return IN6_IS_ADDR_LOOPBACK(&v6);
  return false;
}

Result<std::string> ReadText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status(StatusCode::kNotFound, "cannot read '" + path + "'");
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

Status CheckOptions(const MockBmcOptions& o) {
  if (o.mockup_dir.empty()) return Status(StatusCode::kInvalidArgument, "mock BMC: mockup_dir is required");
  if (!o.allow_non_loopback && o.bind_address != "localhost" && !IsLoopback(o.bind_address)) {
    return Status(StatusCode::kInvalidArgument,
                  "mock BMC: refusing to bind non-loopback address '" + o.bind_address + "'");
  }
  if (o.port < 0 || o.port > 65535) return Status(StatusCode::kInvalidArgument, "mock BMC: bad port");
  if (o.cert_path.empty() != o.key_path.empty()) {
    return Status(StatusCode::kInvalidArgument, "mock BMC: give both cert_path and key_path, or neither");
  }
  if (o.worker_threads < 1 || o.max_sessions < 0 || o.page_size < 0 || o.time_scale < 0) {
    return Status(StatusCode::kInvalidArgument, "mock BMC: worker_threads, max_sessions, page_size, time_scale");
  }
  return Status::Ok();
}

// Where the SSE stream is served: the default URI plus whatever the mockup's
// EventService declares; optionally advertise the default in an EventService lacking one.
std::vector<std::string> SetUpSse(ResourceTree& tree, bool advertise) {
  std::vector<std::string> uris = {kDefaultSseUri};
  Resource* es = tree.FindMutable("/redfish/v1/EventService");
  if (es == nullptr || !es->is_json || !es->doc.is_object()) return uris;
  auto it = es->doc.find("ServerSentEventUri");
  if (it != es->doc.end() && it->is_string()) {
    uris.push_back(ResourceTree::Canonical(it->get<std::string>()));
  } else if (advertise) {
    es->doc["ServerSentEventUri"] = kDefaultSseUri;
  }
  return uris;
}

Status LoadScenario(MockBmc::Impl& impl) {
  if (impl.options.scenario_file.empty()) return Status::Ok();
  Result<std::string> text = ReadText(impl.options.scenario_file);
  if (!text.ok()) return text.status();
  Result<Scenario> scenario = ParseScenario(*text);
  if (!scenario.ok()) {
    return Status(scenario.status().code(), impl.options.scenario_file + ": " + scenario.status().message());
  }
  // Steps that name an absent resource are a typo in the scenario: fail now, not at t.
  for (const ScenarioStep& step : scenario->steps) {
    if (step.kind != StepKind::kEvent && impl.tree.Find(step.resource) == nullptr) {
      return Status(StatusCode::kNotFound,
                    impl.options.scenario_file + ": no resource " + step.resource + " in the mockup");
    }
  }
  impl.player.emplace(std::move(*scenario));
  impl.AdvanceLocked(0);
  return Status::Ok();
}

Status PrepareTls(MockBmc::Impl& impl) {
  if (!impl.options.tls) return Status::Ok();
  if (!impl.options.cert_path.empty()) {
    impl.ca_cert = impl.options.cert_path;
    return Status::Ok();
  }
  std::string pattern = (std::filesystem::temp_directory_path() / "faultline-mock-bmc-XXXXXX").string();
  if (mkdtemp(pattern.data()) == nullptr) return Status(StatusCode::kIoError, "mock BMC: mkdtemp failed");
  impl.temp_dir = pattern;
  Result<CertPaths> paths = GenerateSelfSignedCert(impl.temp_dir);
  if (!paths.ok()) return paths.status();
  impl.options.cert_path = paths->cert_path;
  impl.options.key_path = paths->key_path;
  impl.ca_cert = paths->cert_path;
  return Status::Ok();
}

}  // namespace

// ---- ScenarioTarget (mu held) ----

Status MockBmc::Impl::Set(const std::string& resource, const std::string& pointer, const json& value) {
  return tree.Set(resource, pointer, value);
}

Result<json> MockBmc::Impl::Get(const std::string& resource, const std::string& pointer) const {
  return tree.Get(resource, pointer);
}

Status MockBmc::Impl::Append(const std::string& collection, const json& member) {
  Result<std::string> uri = tree.Append(collection, member, NowIso());
  return uri.status();
}

void MockBmc::Impl::Emit(const BmcEvent& event) {
  events.Push(event, NowIso());
  cv.notify_all();
}

std::string MockBmc::Impl::NowIso() const { return FormatIso8601(clock->NowNs()); }

void MockBmc::Impl::AdvanceLocked(double seconds) {
  if (seconds < scenario_now) return;
  scenario_now = seconds;
  if (!player) return;
  for (const Status& s : player->AdvanceTo(seconds, *this)) scenario_errors.push_back(s.ToString());
}

void MockBmc::Impl::TickerLoop() {
  std::unique_lock<std::mutex> lock(mu);
  while (!stopping) {
    cv.wait_for(lock, std::chrono::milliseconds(50));
    if (stopping) break;
    double elapsed_s = static_cast<double>(clock->MonotonicNs() - start_mono_ns) / 1e9;
    AdvanceLocked(elapsed_s * options.time_scale);
  }
}

// ---- lifecycle ----

Result<std::unique_ptr<MockBmc>> MockBmc::Start(const MockBmcOptions& options) {
  if (Status s = CheckOptions(options); !s.ok()) return s;
  auto impl = std::make_unique<Impl>(options);
  impl->host = options.bind_address == "localhost" ? "127.0.0.1" : options.bind_address;
  Result<ResourceTree> tree = ResourceTree::Load(options.mockup_dir);
  if (!tree.ok()) return tree.status();
  impl->tree = std::move(*tree);
  impl->sse_uris = SetUpSse(impl->tree, options.advertise_sse);
  impl->start_mono_ns = impl->clock->MonotonicNs();
  {
    std::lock_guard<std::mutex> lock(impl->mu);
    if (Status s = LoadScenario(*impl); !s.ok()) return s;
  }
  std::unique_ptr<MockBmc> bmc(new MockBmc(std::move(impl)));
  Impl& i = *bmc->impl_;
  if (Status s = PrepareTls(i); !s.ok()) return s;  // the destructor removes a half-made temp dir
  if (Status s = i.CreateServer(); !s.ok()) return s;
  i.listen_thread = std::thread([&i] { i.server->listen_after_bind(); });
  // stop() is a no-op until the accept loop runs, so wait for it before handing out Stop().
  for (int waited_ms = 0; !i.server->is_running(); ++waited_ms) {
    if (waited_ms > 5000) return Status(StatusCode::kInternal, "mock BMC: server did not start");
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  if (options.time_scale > 0) i.ticker_thread = std::thread([&i] { i.TickerLoop(); });
  return bmc;
}

MockBmc::MockBmc(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

MockBmc::~MockBmc() { Stop(); }

void MockBmc::Stop() {
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    if (impl_->stopped) return;
    impl_->stopped = true;
    impl_->stopping = true;
  }
  impl_->cv.notify_all();
  // Start() returned only once the accept loop ran, so stop() takes effect here.
  if (impl_->server) impl_->server->stop();
  if (impl_->listen_thread.joinable()) impl_->listen_thread.join();
  if (impl_->ticker_thread.joinable()) impl_->ticker_thread.join();
  if (!impl_->temp_dir.empty()) {
    std::error_code ec;
    std::filesystem::remove_all(impl_->temp_dir, ec);
  }
}

int MockBmc::port() const { return impl_->port; }

std::string MockBmc::base_url() const {
  const std::string host = impl_->host.find(':') != std::string::npos ? "[" + impl_->host + "]" : impl_->host;
  return std::string(impl_->options.tls ? "https://" : "http://") + host + ":" + std::to_string(impl_->port);
}

std::string MockBmc::ca_cert_path() const { return impl_->ca_cert; }

// ---- counters ----

uint64_t MockBmc::total_requests() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->total_requests;
}

uint64_t MockBmc::requests_for(const std::string& path) const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  auto it = impl_->counts.find(ResourceTree::Canonical(path));
  return it == impl_->counts.end() ? 0 : it->second;
}

std::map<std::string, uint64_t> MockBmc::request_counts() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->counts;
}

uint64_t MockBmc::connections_seen() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->client_ports.size();
}

void MockBmc::ResetCounters() {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->total_requests = 0;
  impl_->counts.clear();
  impl_->client_ports.clear();
}

// ---- sessions ----

std::vector<SessionInfo> MockBmc::open_sessions() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  std::vector<SessionInfo> out;
  for (const Session& s : impl_->sessions.Open()) {
    out.push_back({s.id, s.user, std::string(kSessionsUri) + "/" + s.id});
  }
  return out;
}

uint64_t MockBmc::sessions_created() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->sessions.created();
}

uint64_t MockBmc::sessions_deleted() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->sessions.deleted();
}

void MockBmc::SetMaxSessions(int max_sessions) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->sessions.SetMax(max_sessions);
}

// ---- faults ----

void MockBmc::AddFault(const Fault& fault) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->faults.Add(fault);
}

void MockBmc::ClearFaults() {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->faults.Clear();
}

void MockBmc::SetLatency(std::chrono::milliseconds latency) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->faults.SetLatency(latency);
}

void MockBmc::ReleaseStalled() {
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    ++impl_->release_generation;
  }
  impl_->cv.notify_all();
}

int MockBmc::stalled_requests() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->stalled;
}

// ---- events ----

uint64_t MockBmc::PushEvent(const BmcEvent& event) {
  uint64_t id;
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    id = impl_->events.Push(event, impl_->NowIso());
  }
  impl_->cv.notify_all();
  return id;
}

int MockBmc::sse_subscribers() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->sse_subscribers;
}

std::string MockBmc::last_sse_filter() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->last_filter;
}

// ---- scenario and state ----

void MockBmc::AdvanceTo(double seconds) {
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    impl_->AdvanceLocked(seconds);
  }
  impl_->cv.notify_all();
}

std::vector<std::string> MockBmc::scenario_errors() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->scenario_errors;
}

double MockBmc::scenario_time() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->scenario_now;
}

Status MockBmc::SetValue(const std::string& resource, const std::string& pointer, const std::string& json_value) {
  json value = json::parse(json_value, nullptr, /*allow_exceptions=*/false);
  if (value.is_discarded()) return Status(StatusCode::kInvalidArgument, "SetValue: value is not JSON");
  try {
    json::json_pointer check(pointer);
  } catch (const std::exception& e) {
    return Status(StatusCode::kInvalidArgument, std::string("SetValue: bad pointer: ") + e.what());
  }
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->tree.Set(resource, pointer, value);
}

Result<std::string> MockBmc::AppendMember(const std::string& collection, const std::string& member_json) {
  json member = json::parse(member_json, nullptr, /*allow_exceptions=*/false);
  if (member.is_discarded()) return Status(StatusCode::kInvalidArgument, "AppendMember: member is not JSON");
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->tree.Append(collection, std::move(member), impl_->NowIso());
}

Result<std::string> MockBmc::ResourceJson(const std::string& resource) const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  const Resource* r = impl_->tree.Find(resource);
  if (r == nullptr) return Status(StatusCode::kNotFound, "no resource " + resource);
  return r->is_json ? DumpJson(r->doc) : r->raw;
}

}  // namespace faultline::sim
