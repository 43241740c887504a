// Sources behind a library or a network peer: NVML, dcgm-exporter, Redfish, and the
// workload HTTP endpoint. Each connects lazily at its first poll so an absent peer is
// "unavailable, retried" rather than a startup failure.
#include <charconv>
#include <thread>

#include <httplib.h>

#include "daemon/sources.h"
#include "sources/dcgm_exporter/dcgm_exporter.h"
#include "sources/dcgm_exporter/http_fetcher.h"
#include "sources/nvml/nvml_collector.h"
#include "sources/redfish/credentials.h"
#include "sources/redfish/curl_http_client.h"
#include "sources/redfish/redfish_client.h"
#include "sources/redfish/redfish_collector.h"
#include "sources/workload/http_mount.h"
#include "sources/workload/queue.h"

namespace faultline::daemon {
namespace {

class NvmlSource final : public AgentSource {
 public:
  NvmlSource(const NvmlSection& options, const std::string& node, const Clock& clock)
      : options_(options), node_(node), clock_(clock) {}

  std::string name() const override { return "nvml"; }
  Layer layer() const override { return Layer::kGpu; }

  Result<SourceBatch> Poll(int64_t /*deadline_mono_ns*/) override {
    if (collector_ == nullptr) {
      nvml::NvmlOptions o;
      o.library_path = options_.library_path;
      o.node = node_;
      o.clock = &clock_;
      auto opened = nvml::NvmlCollector::Open(std::move(o));
      if (!opened.ok()) return opened.status();
      collector_ = std::move(opened).value();
    }
    nvml::NvmlSample sample = collector_->Sample();
    SourceBatch batch;
    for (const nvml::NvmlError& e : sample.errors) {
      if (e.gpu < 0 && sample.observations.empty()) {
        collector_.reset();  // the library itself failed: reload at the next poll
        return Status(StatusCode::kUnavailable, "nvml: " + e.message);
      }
      batch.warnings.push_back(e.message);
    }
    for (std::string& n : sample.notes) batch.warnings.push_back(std::move(n));
    batch.observations = std::move(sample.observations);
    return batch;
  }

 private:
  NvmlSection options_;
  std::string node_;
  const Clock& clock_;
  std::unique_ptr<nvml::NvmlCollector> collector_;
};

class DcgmSource final : public AgentSource {
 public:
  DcgmSource(const DcgmExporterSection& options, const std::string& node, const Clock& clock)
      : source_(DcgmExporterOptions{.url = options.url, .node = node}, clock, &fetcher_) {}

  std::string name() const override { return "dcgm_exporter"; }
  Layer layer() const override { return Layer::kGpu; }

  Result<SourceBatch> Poll(int64_t /*deadline_mono_ns*/) override {
    auto scrape = source_.Collect();
    if (!scrape.ok()) return scrape.status();
    SourceBatch batch;
    batch.observations = std::move(scrape->observations);
    batch.warnings = std::move(scrape->errors);
    return batch;
  }

 private:
  CurlHttpFetcher fetcher_;
  DcgmExporterSource source_;
};

constexpr const char* kRedfishSource = "redfish";

Result<redfish::Credentials> LoadCredentials(const RedfishSection& o) {
  if (!o.password_file.empty()) {
    auto password = redfish::ReadPasswordFile(o.password_file);
    if (!password.ok()) return password.status();
    return redfish::Credentials{o.user, *password};
  }
  auto env = redfish::CredentialsFromEnv();
  if (env.ok()) return env;
  return redfish::Credentials{o.user, ""};
}

class RedfishSource final : public AgentSource {
 public:
  RedfishSource(const RedfishSection& options, const std::string& node, const Clock& clock,
                const std::vector<Cursor>& cursors)
      : node_(node),
        http_(redfish::CurlOptions{.ca_file = options.ca_file, .insecure = options.insecure}),
        client_(http_, clock, ClientOptions(options)),
        collector_(client_, redfish::CollectorOptions{.node = node}) {
    std::map<std::string, redfish::LogCursor> restored;
    for (const Cursor& c : cursors) {
      if (c.source != kRedfishSource || c.key.rfind("log:", 0) != 0) continue;
      uint64_t id = 0;
      if (std::from_chars(c.value.data(), c.value.data() + c.value.size(), id).ec == std::errc()) {
        restored[c.key.substr(4)].last_numeric_id = id;
      }
    }
    collector_.set_cursors(std::move(restored));
    auto creds = LoadCredentials(options);
    if (!creds.ok()) credentials_error_ = creds.status();
  }

  std::string name() const override { return kRedfishSource; }
  Layer layer() const override { return Layer::kOob; }

  Result<SourceBatch> Poll(int64_t deadline_mono_ns) override {
    if (!credentials_error_.ok()) return credentials_error_;
    if (!logged_in_) {
      if (Status s = client_.Login(deadline_mono_ns); !s.ok()) return s;
      logged_in_ = true;
    }
    redfish::SweepResult sweep = collector_.Sweep(deadline_mono_ns);
    if (sweep.resources == 0 && !sweep.errors.empty()) {
      logged_in_ = false;  // the session may have expired; log in again next time
      return Status(StatusCode::kUnavailable, "redfish: " + sweep.errors.front());
    }
    SourceBatch batch;
    batch.observations = std::move(sweep.observations);
    batch.warnings = std::move(sweep.errors);
    for (const auto& [path, cursor] : collector_.cursors()) {
      if (cursor.last_numeric_id) {
        batch.cursors.push_back({node_, kRedfishSource, "log:" + path, std::to_string(*cursor.last_numeric_id)});
      }
    }
    return batch;
  }

  void Shutdown() override {
    if (logged_in_) client_.Logout();
    logged_in_ = false;
  }
  void Cancel() override { client_.Cancel(); }

 private:
  static redfish::RedfishClientOptions ClientOptions(const RedfishSection& o) {
    redfish::RedfishClientOptions co;
    co.base_url = o.url;
    auto creds = LoadCredentials(o);
    if (creds.ok()) co.credentials = *creds;
    return co;
  }

  std::string node_;
  redfish::CurlHttpClient http_;
  redfish::RedfishClient client_;
  redfish::RedfishCollector collector_;
  Status credentials_error_;
  bool logged_in_ = false;
};

class WorkloadHttpSource final : public AgentSource {
 public:
  WorkloadHttpSource(std::string listen, const std::string& node, const Clock& clock)
      : listen_(std::move(listen)), clock_(clock) {
    options_.node = node;
  }
  ~WorkloadHttpSource() override { Shutdown(); }

  std::string name() const override { return "workload_http"; }
  Layer layer() const override { return Layer::kWorkload; }

  Result<SourceBatch> Poll(int64_t /*deadline_mono_ns*/) override {
    if (!thread_.joinable()) {
      if (Status s = Listen(); !s.ok()) return s;
    }
    SourceBatch batch;
    batch.observations = queue_.Drain();
    return batch;
  }

  void Shutdown() override {
    if (!thread_.joinable()) return;
    server_.stop();
    thread_.join();
  }

 private:
  Status Listen() {
    const size_t colon = listen_.rfind(':');
    std::string host = listen_.substr(0, colon);
    if (host.size() >= 2 && host.front() == '[') host = host.substr(1, host.size() - 2);
    int port = 0;
    const std::string p = listen_.substr(colon + 1);
    if (std::from_chars(p.data(), p.data() + p.size(), port).ec != std::errc() || port <= 0 || port > 65535) {
      return Status(StatusCode::kInvalidArgument, "workload: bad listen port in " + listen_);
    }
    if (!mounted_) {
      server_.set_payload_max_length(options_.max_body_bytes);
      MountWorkloadEndpoint(server_, options_, clock_, [this](std::vector<Observation> b) {
        return queue_.Push(std::move(b));
      });
      mounted_ = true;
    }
    if (!server_.bind_to_port(host, port)) {
      return Status(StatusCode::kUnavailable, "workload: cannot listen on " + listen_);
    }
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    return Status::Ok();
  }

  std::string listen_;
  const Clock& clock_;
  WorkloadHttpOptions options_;
  ObservationQueue queue_;
  httplib::Server server_;
  bool mounted_ = false;
  std::thread thread_;
};

}  // namespace

std::unique_ptr<AgentSource> MakeNvmlSource(const NvmlSection& options, const std::string& node, const Clock& clock) {
  return std::make_unique<NvmlSource>(options, node, clock);
}

std::unique_ptr<AgentSource> MakeDcgmExporterSource(const DcgmExporterSection& options, const std::string& node,
                                                    const Clock& clock) {
  return std::make_unique<DcgmSource>(options, node, clock);
}

std::unique_ptr<AgentSource> MakeRedfishSource(const RedfishSection& options, const std::string& node,
                                               const Clock& clock, const std::vector<Cursor>& cursors) {
  return std::make_unique<RedfishSource>(options, node, clock, cursors);
}

std::unique_ptr<AgentSource> MakeWorkloadHttpSource(const std::string& listen, const std::string& node,
                                                    const Clock& clock) {
  return std::make_unique<WorkloadHttpSource>(listen, node, clock);
}

}  // namespace faultline::daemon
