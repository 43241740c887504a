#include "sim/fleet/fleet_nats.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <ctime>
#include <filesystem>
#include <thread>

#include "fleet/nats/client.h"
#include "fleet/wire.h"
#include "sim/fleet/fleet_sim.h"

extern char** environ;

namespace faultline::sim {
namespace {

namespace fs = std::filesystem;
namespace nats = fleet::nats;
using SteadyClock = std::chrono::steady_clock;

double Since(SteadyClock::time_point t0) { return std::chrono::duration<double>(SteadyClock::now() - t0).count(); }

double ThreadCpuS() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

Result<std::unique_ptr<nats::Connection>> Connect(const std::string& urls, const std::string& credentials) {
  nats::ConnectOptions c;
  c.urls = nats::SplitUrls(urls);
  if (c.urls.empty()) return Status(StatusCode::kInvalidArgument, "no NATS URL");
  c.name = "faultline-sim-fleet";
  c.credentials_file = credentials;
  return nats::Connection::Connect(c);
}

Status SendBatch(nats::Connection& conn, std::vector<nats::OutMessage>& batch, FleetNatsPublishStats& st) {
  if (batch.empty()) return Status::Ok();
  const auto t0 = SteadyClock::now();
  const std::vector<nats::PublishResult> results = conn.PublishBatch(batch, int64_t{30} * 1'000'000'000);
  st.publish_s += Since(t0);
  for (const nats::PublishResult& r : results) {
    if (!r.status.ok()) {
      ++st.failed;
      if (st.first_error.empty()) st.first_error = r.status.ToString();
    } else if (r.ack.duplicate) {
      ++st.duplicates;
    }
  }
  batch.clear();
  return Status::Ok();
}

int FreeLoopbackPort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return 0;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(a);
  int port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0) {
    port = ntohs(a.sin_port);
  }
  ::close(fd);
  return port;
}

bool PortAccepts(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return false;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(static_cast<uint16_t>(port));
  const bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0;
  ::close(fd);
  return ok;
}

}  // namespace

Result<FleetNatsPublishStats> PublishFleetScenario(const FleetScenario& sc, const FleetNatsPublishOptions& o) {
  auto conn = Connect(o.urls, o.credentials_file);
  if (!conn.ok()) return conn.status();
  if (o.ensure_stream) {
    nats::StreamConfig cfg;
    cfg.name = o.stream;
    cfg.subjects = o.subjects;
    cfg.memory_storage = o.memory_storage;
    auto st = (*conn)->EnsureStream(cfg);
    if (!st.ok()) return st.status();
  }
  FleetNatsPublishStats stats;
  FleetSim sim(sc);
  const double duration = o.duration_s.value_or(sc.duration_s);
  const double step = sc.agent.evaluate_s;
  std::vector<fleet::Envelope> envs;
  std::vector<nats::OutMessage> batch;
  const auto wall0 = SteadyClock::now();
  const auto steps = static_cast<int64_t>(std::ceil(duration / step - 1e-9));
  for (int64_t k = 1; k <= steps; ++k) {
    const double t = std::min(duration, static_cast<double>(k) * step);
    envs.clear();
    sim.AdvanceTo(t, envs);
    if (k == steps) sim.Flush(envs);
    if (o.speed > 0) {  // the agents publish as their clock runs
      const double due = t / o.speed - Since(wall0);
      if (due > 0) std::this_thread::sleep_for(std::chrono::duration<double>(due));
    }
    for (const fleet::Envelope& e : envs) {
      batch.push_back({fleet::Subject(e.place, e.kind), fleet::Encode(e), e.msg_id});
      stats.bytes += batch.back().data.size();
      stats.observations += e.observations.size();
      ++stats.messages;
      if (batch.size() >= o.batch) {
        if (Status s = SendBatch(**conn, batch, stats); !s.ok()) return s;
      }
    }
    if (o.speed > 0) {
      if (Status s = SendBatch(**conn, batch, stats); !s.ok()) return s;
    }
  }
  if (Status s = SendBatch(**conn, batch, stats); !s.ok()) return s;
  return stats;
}

Result<FleetNatsConsumeStats> ConsumeFleetScenario(const FleetScenario& sc, const FleetNatsConsumeOptions& o) {
  auto conn = Connect(o.urls, o.credentials_file);
  if (!conn.ok()) return conn.status();
  nats::ConsumerConfig cc;
  cc.stream = o.stream;
  cc.durable = o.durable;
  cc.filter_subject = o.filter_subject;
  cc.max_ack_pending = std::max<int64_t>(cc.max_ack_pending, o.fetch_batch * 4);
  auto consumer = (*conn)->BindPullConsumer(cc);
  if (!consumer.ok()) return consumer.status();
  fleet::FleetAnalyzer analyzer(sc.topology, o.analyzer);
  FleetNatsConsumeStats st;
  const int64_t tick_ns = static_cast<int64_t>(sc.agent.evaluate_s * 1e9);
  int64_t next_eval_ns = sc.start_ns + tick_ns;
  auto evaluate_until = [&](int64_t t_ns) {
    while (next_eval_ns <= t_ns) {
      const auto v0 = SteadyClock::now();
      analyzer.Evaluate(next_eval_ns);
      st.evaluate_s += Since(v0);
      ++st.evaluations;
      next_eval_ns += tick_ns;
    }
  };
  SteadyClock::time_point first{}, last{};
  double cpu0 = 0;
  auto idle_since = SteadyClock::now();
  while (o.expect_messages == 0 || st.messages < o.expect_messages) {
    const auto f0 = SteadyClock::now();
    auto msgs = (*consumer)->Fetch(o.fetch_batch, 1'000'000'000);
    if (!msgs.ok()) return msgs.status();
    if (msgs->empty()) {
      if (std::chrono::duration<double>(SteadyClock::now() - idle_since).count() * 1e9 >
          static_cast<double>(o.idle_timeout_ns)) {
        break;
      }
      continue;
    }
    if (st.messages == 0) {
      first = f0;
      cpu0 = ThreadCpuS();
    }
    st.fetch_s += Since(f0);
    for (nats::JsMessage& m : *msgs) {
      ++st.messages;
      st.bytes += m.data().size();
      const auto d0 = SteadyClock::now();
      auto env = fleet::Decode(m.data());
      st.decode_s += Since(d0);
      const auto a0 = SteadyClock::now();
      if (!env.ok()) {
        ++st.malformed;
        (void)m.Term();
        st.ack_s += Since(a0);
        continue;
      }
      evaluate_until(env->sent_ns - 1);  // what the analyzer would have answered before this arrived
      const auto i0 = SteadyClock::now();
      analyzer.Ingest(*env);
      st.ingest_s += Since(i0);
      st.observations += env->observations.size();
      const auto k0 = SteadyClock::now();
      (void)m.Ack();
      st.ack_s += Since(k0);
    }
    last = SteadyClock::now();
    idle_since = last;
  }
  evaluate_until(sc.start_ns + static_cast<int64_t>(sc.duration_s * 1e9));
  st.wall_s = std::chrono::duration<double>(last - first).count();
  st.cpu_s = ThreadCpuS() - cpu0;
  st.open_diagnoses = analyzer.Open().size();
  (void)(*conn)->DeleteConsumer(o.stream, o.durable);
  return st;
}

Result<std::unique_ptr<LocalNatsServer>> LocalNatsServer::Start(const std::string& parent) {
  std::string binary;
  for (const char* p : {"/usr/sbin/nats-server", "/usr/bin/nats-server", "/usr/local/bin/nats-server"}) {
    if (::access(p, X_OK) == 0) binary = p;
  }
  if (binary.empty()) return Status(StatusCode::kNotFound, "nats-server is not installed");
  std::string tmpl = (fs::path(parent) / "faultline-nats-XXXXXX").string();
  if (::mkdtemp(tmpl.data()) == nullptr) return Status(StatusCode::kIoError, "cannot create a directory in " + parent);
  std::unique_ptr<LocalNatsServer> s(new LocalNatsServer());
  s->dir_ = tmpl;
  const int port = FreeLoopbackPort();
  if (port == 0) return Status(StatusCode::kUnavailable, "no free loopback port");
  std::vector<std::string> args = {binary, "-a",  "127.0.0.1",     "-p", std::to_string(port),
                                   "-js",  "-sd", s->dir_ + "/js", "-l", s->dir_ + "/server.log"};
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = -1;
  if (::posix_spawn(&pid, argv[0], nullptr, nullptr, argv.data(), environ) != 0) {
    return Status(StatusCode::kUnavailable, "cannot start nats-server");
  }
  s->pid_ = pid;
  s->url_ = "nats://127.0.0.1:" + std::to_string(port);
  for (int i = 0; i < 200 && !PortAccepts(port); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  if (!PortAccepts(port)) return Status(StatusCode::kUnavailable, "nats-server did not start (see its log)");
  return s;
}

LocalNatsServer::~LocalNatsServer() {
  if (pid_ > 0) {
    ::kill(pid_, SIGTERM);
    int st = 0;
    for (int i = 0; i < 100; ++i) {
      if (::waitpid(pid_, &st, WNOHANG) == pid_) {
        pid_ = -1;
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, &st, 0);
    }
  }
  std::error_code ec;
  if (!dir_.empty()) fs::remove_all(dir_, ec);
}

}  // namespace faultline::sim
