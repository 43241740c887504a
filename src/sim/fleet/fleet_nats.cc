#include "sim/fleet/fleet_nats.h"

#include <chrono>
#include <cmath>
#include <ctime>
#include <thread>

#include "fleet/nats/client.h"
#include "fleet/wire.h"
#include "sim/fleet/fleet_sim.h"

namespace faultline::sim {
namespace {

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

}  // namespace faultline::sim
