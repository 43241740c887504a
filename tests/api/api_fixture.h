// Shared by the API tests: a store filled with a simulated incident through the Store
// API (an XID 79 diagnosis with its evidence, NVML ECC readings, BMC PSU readings, fabric
// counters), an in-process server on 127.0.0.1 port 0, and small HTTP helpers (cpp-httplib
// client, and raw sockets for what a well-behaved client never sends).
#pragma once

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <sstream>
#include <string>

#include "api/metrics.h"
#include "api/provider.h"
#include "api/server.h"
#include "core/clock.h"
#include "core/json.h"
#include "daemon/log.h"
#include "store/store.h"

namespace faultline::api_test {

inline constexpr int64_t kT0 = 1764410400LL * 1'000'000'000;  // 2025-11-29T10:00:00Z
inline constexpr int64_t kSec = 1'000'000'000;
inline const std::string kNode = "gpu-node-07";

class TempDir {
 public:
  TempDir() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    path_ = std::filesystem::temp_directory_path() / ("faultline-api-" + std::string(info->test_suite_name()) + "-" +
                                                      info->name() + "-" + std::to_string(::getpid()));
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  std::string File(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

inline ComponentRef Gpu(int index) {
  ComponentRef c = GpuComponent(std::to_string(index));
  c.keys["index"] = std::to_string(index);
  c.keys["uuid"] = "GPU-5a1c0d4e-0000-4000-8000-00000000000" + std::to_string(index);
  c.keys["bdf"] = "0000:" + std::to_string(18 + index * 16) + ":00.0";
  return c;
}

inline Observation Reading(ObsKind kind, Layer layer, Source source, ComponentRef c, double value, int64_t t,
                           std::map<std::string, std::string> attrs = {}) {
  Observation o;
  o.time_ns = t;
  o.node = kNode;
  o.layer = layer;
  o.component = std::move(c);
  o.kind = kind;
  o.value = value;
  o.source = source;
  o.attrs = std::move(attrs);
  o.raw = std::string(ToString(kind)) + "=" + std::to_string(value);
  return o;
}

inline ComponentRef Named(ComponentType type, std::string name) {
  ComponentRef c;
  c.type = type;
  c.name = std::move(name);
  return c;
}

// The incident: a PSU sags, the board brakes the GPUs, GPU 3 falls off the bus (XID 79).
inline std::vector<Observation> IncidentObservations() {
  std::vector<Observation> obs;
  for (int sample = 0; sample < 3; ++sample) {
    const int64_t t = kT0 + sample * 30 * kSec;
    for (int g = 0; g < 8; ++g) {
      obs.push_back(Reading(ObsKind::kEccSbe, Layer::kGpu, Source::kNvml, Gpu(g), g == 3 ? 40 + sample : 2, t,
                            {{"counter", "aggregate"}}));
      obs.push_back(
          Reading(ObsKind::kEccDbe, Layer::kGpu, Source::kNvml, Gpu(g), g == 3 ? 1 : 0, t, {{"counter", "aggregate"}}));
      // Per-location counters must not be summed into the totals.
      obs.push_back(Reading(ObsKind::kEccSbe, Layer::kGpu, Source::kNvml, Gpu(g), 999, t,
                            {{"counter", "aggregate"}, {"location", "dram"}}));
      obs.push_back(Reading(ObsKind::kClockThrottle, Layer::kGpu, Source::kNvml, Gpu(g), sample == 0 ? 0 : 0x88, t,
                            {{"mask", sample == 0 ? "0x0" : "0x88"}}));
      obs.push_back(Reading(ObsKind::kTemperature, Layer::kGpu, Source::kNvml, Gpu(g), 61 + g, t, {{"sensor", "gpu"}}));
    }
    obs.push_back(Reading(ObsKind::kPsuState, Layer::kOob, Source::kRedfish, Named(ComponentType::kPsu, "1"),
                          sample == 0 ? 0 : 1, t, {{"health", sample == 0 ? "OK" : "Warning"}}));
    obs.push_back(Reading(ObsKind::kVoltage, Layer::kOob, Source::kRedfish, Named(ComponentType::kPsu, "1"),
                          sample == 0 ? 230.5 : 187.25, t, {{"role", "input"}, {"units", "V"}}));
    obs.push_back(Reading(ObsKind::kNvlinkCrcFlit, Layer::kFabric, Source::kNvml, Named(ComponentType::kNvlink, "3/11"),
                          12 + sample, t));
    obs.push_back(Reading(ObsKind::kIbPortState, Layer::kFabric, Source::kSysfs, Named(ComponentType::kIb, "mlx5_0/1"),
                          4, t, {{"state", "ACTIVE"}}));
    obs.push_back(Reading(ObsKind::kFanSpeed, Layer::kOob, Source::kRedfish, Named(ComponentType::kFan, "fan1"), 9800,
                          t, {{"units", "RPM"}}));
    // A sensor named with characters the exposition must escape.
    obs.push_back(Reading(ObsKind::kTemperature, Layer::kOob, Source::kRedfish,
                          Named(ComponentType::kSensor, "inlet \"front\"\\1"), 24.5, t,
                          {{"physical_context", "Intake"}}));
    // ...and one whose name cannot be a label value at all (a newline): dropped, counted.
    obs.push_back(Reading(ObsKind::kTemperature, Layer::kOob, Source::kRedfish,
                          Named(ComponentType::kSensor, "bad\nname"), 25, t, {{"physical_context", "Intake"}}));
  }
  Observation xid;
  xid.time_ns = kT0 + 61 * kSec;
  xid.mono_us = 227996636;
  xid.seq = 3973;
  xid.node = kNode;
  xid.layer = Layer::kOs;
  xid.component = Gpu(3);
  xid.kind = ObsKind::kXid;
  xid.code = 79;
  xid.source = Source::kKmsg;
  xid.text = "GPU has fallen off the bus.";
  xid.raw = "NVRM: Xid (PCI:0000:66:00): 79, pid=1234, GPU has fallen off the bus.";
  obs.push_back(xid);
  return obs;
}

inline Diagnosis IncidentDiagnosis() {
  Diagnosis d;
  d.fault_class = FaultClass::kGpuFellOffBus;
  d.layer = Layer::kGpu;
  d.component = Gpu(3);
  d.action = Action::kResetGpu;
  d.confidence = 0.9;
  d.severity = Severity::kCritical;
  d.first_ns = kT0 + 61 * kSec;
  d.last_ns = kT0 + 61 * kSec;
  d.summary = "GPU 3 fell off the bus (XID 79)";
  d.evidence.push_back(Evidence{kT0 + 61 * kSec, 227996636, Source::kKmsg, "gpu/3",
                                "NVRM: Xid (PCI:0000:66:00): 79, pid=1234, GPU has fallen off the bus.", 1});
  d.evidence.push_back(Evidence{kT0 + 30 * kSec, std::nullopt, Source::kNvml, "gpu/3", "ecc_sbe aggregate 41", 1});
  d.ruled_out.push_back(RuledOut{Layer::kFabric, "no PCIe AER or link change on the GPU's port", {}});
  d.explains.push_back("hw_power_brake_slowdown on gpu/3 at 10:00:30");
  return d;
}

inline Finding IncidentFinding() {
  Finding f;
  f.layer = Layer::kGpu;
  f.component = Gpu(3);
  f.fault_class = FaultClass::kGpuFellOffBus;
  f.severity = Severity::kCritical;
  f.action = Action::kResetGpu;
  f.confidence = 0.9;
  f.first_ns = kT0 + 61 * kSec;
  f.last_ns = kT0 + 61 * kSec;
  f.summary = "XID 79";
  return f;
}

struct Incident {
  int64_t diagnosis_id = 0;
  int64_t older_diagnosis_id = 0;
  size_t observations = 0;
};

// Fills `store` with the incident; returns the ids.
inline Incident FillIncident(Store& store) {
  Incident inc;
  const auto obs = IncidentObservations();
  auto appended = store.Append(obs);
  EXPECT_TRUE(appended.ok()) << appended.status().ToString();
  inc.observations = obs.size();
  EXPECT_TRUE(store.PutFinding(kNode, IncidentFinding()).ok());
  Diagnosis earlier = IncidentDiagnosis();
  earlier.fault_class = FaultClass::kGpuPowerBrake;
  earlier.action = Action::kMonitor;
  earlier.first_ns = kT0 + 30 * kSec;
  earlier.last_ns = kT0 + 30 * kSec;
  inc.older_diagnosis_id = *store.PutDiagnosis(kNode, earlier, kT0 + 31 * kSec);
  inc.diagnosis_id = *store.PutDiagnosis(kNode, IncidentDiagnosis(), kT0 + 62 * kSec);
  ActionRecord a;
  a.time_ns = kT0 + 63 * kSec;
  a.node = kNode;
  a.action = Action::kResetGpu;
  a.diagnosis_id = inc.diagnosis_id;
  a.dry_run = true;
  a.outcome = "skipped: dry-run";
  a.reason = "XID 79 on gpu/3";
  EXPECT_TRUE(store.PutAction(a).ok());
  return inc;
}

// One reading for every row of the metrics table (api/metrics.h), on components of their
// own (gpu/9, nvlink/9/0, ib/mlx5_9/1, ...) at kT0 + 45 s, so each metric name appears.
inline void FillEveryMetric(Store& store) {
  std::vector<Observation> obs;
  for (const api::MetricSpec& spec : api::ObservationMetrics()) {
    ComponentRef c = Gpu(9);
    if (spec.component_type && *spec.component_type != ComponentType::kGpu) c = Named(*spec.component_type, "9");
    if (spec.kind >= ObsKind::kNvlinkState && spec.kind <= ObsKind::kNvlinkRecovery)
      c = Named(ComponentType::kNvlink, "9/0");
    if (spec.kind >= ObsKind::kIbPortState && spec.kind <= ObsKind::kIbXmitDiscards)
      c = Named(ComponentType::kIb, "mlx5_9/1");
    std::map<std::string, std::string> attrs;
    if (!spec.attr_key.empty()) attrs[std::string(spec.attr_key)] = std::string(spec.attr_value);
    if (!spec.value_attr.empty()) attrs[std::string(spec.value_attr)] = "16";
    obs.push_back(Reading(spec.kind, Layer::kGpu, Source::kSysfs, c, 1, kT0 + 45 * kSec, attrs));
    obs.back().raw = std::string(spec.name);  // attrs are not in the store's dedup key: keep rows apart
  }
  auto appended = store.Append(obs);
  EXPECT_TRUE(appended.ok()) << appended.status().ToString();
}

// An in-process server over `provider`; the log goes to `log`.
class RunningServer {
 public:
  RunningServer(api::DataProvider& provider, api::ServerOptions options)
      : clock_(),
        logger_(log_, daemon::LogLevel::kDebug, clock_),
        server_(provider, FixListen(std::move(options)), &logger_) {
    auto started = server_.Start();
    EXPECT_TRUE(started.ok()) << started.status().ToString();
  }
  int port() const { return server_.port(); }
  api::Server& server() { return server_; }
  std::string Log() const { return log_.str(); }
  httplib::Client Client() const {
    httplib::Client c("127.0.0.1", server_.port());
    c.set_read_timeout(30, 0);
    c.set_connection_timeout(10, 0);
    return c;
  }

 private:
  static api::ServerOptions FixListen(api::ServerOptions o) {
    if (o.listen == "127.0.0.1:9465") o.listen = "127.0.0.1:0";
    return o;
  }
  SystemClock clock_;
  std::ostringstream log_;  // written only through the logger's mutex; read after requests
  daemon::Logger logger_;
  api::Server server_;
};

inline Json ParseBody(const httplib::Result& r) {
  if (!r) return Json();
  return Json::parse(r->body, nullptr, false);
}

// A raw TCP connection to 127.0.0.1:port (optionally with a small receive buffer).
inline int Connect(int port, int rcvbuf = 0) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (rcvbuf > 0) setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

inline bool SendAll(int fd, const std::string& data) {
  size_t sent = 0;
  while (sent < data.size()) {
    const ssize_t n = send(fd, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) return false;
    sent += static_cast<size_t>(n);
  }
  return true;
}

// Sends a raw request and reads until the server closes (bounded by a 20 s receive timeout).
inline std::string RawRequest(int port, const std::string& request) {
  const int fd = Connect(port);
  if (fd < 0) return "";
  timeval tv{20, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  SendAll(fd, request);
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = recv(fd, buf, sizeof buf, 0)) > 0) out.append(buf, static_cast<size_t>(n));
  close(fd);
  return out;
}

inline int StatusOf(const std::string& raw_response) {
  if (raw_response.rfind("HTTP/1.1 ", 0) != 0 || raw_response.size() < 12) return -1;
  return std::stoi(raw_response.substr(9, 3));
}

}  // namespace faultline::api_test
