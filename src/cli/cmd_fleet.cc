// `faultline fleet`: the fleet analyzer as a NATS JetStream consumer (docs/fleet.md). The
// loop itself lives in fleet/nats/consumer_loop.h; this file parses flags, prints
// diagnoses and stops on SIGINT/SIGTERM (after a last checkpoint).
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <iostream>
#include <thread>

#include "actions/fleet_actor.h"
#include "actions/webhook.h"
#include "cli/commands.h"
#include "core/clock.h"
#include "core/json.h"
#include "core/time.h"
#include "fleet/analyzer.h"
#include "fleet/fleet_topology.h"
#include "fleet/nats/client.h"
#include "fleet/nats/consumer_loop.h"
#include "fleet/nats/ticket_ledger.h"
#include "sources/redfish/curl_http_client.h"

namespace faultline::cli {
namespace {

struct FleetArgs {
  std::string nats;
  std::string topology;
  std::string stream = "FAULTLINE";
  std::string durable = "faultline-fleet";
  std::string filter = "faultline.>";
  std::string kv = "faultline-fleet";
  std::string instance;
  std::string site;
  std::string credentials;
  std::string ca;
  int replicas = 1;
  int64_t max_bytes = int64_t{8} << 30;
  // Given on the command line: only these change an existing stream (the rest is kept).
  bool replicas_given = false;
  bool max_bytes_given = false;
  bool json = false;
  bool once = false;
  double for_seconds = 0;
  double evaluate_interval = 1;
  double snapshot_interval = 10;
  // The one action per shared cause (actions/fleet_actor.h): dry run unless --act.
  std::string webhook_url;
  std::string webhook_secret_file;
  std::string webhook_secret_env;
  std::string webhook_ca;
  bool act = false;
};

constexpr const char* kFooter = R"(
How it works:
  Agents with [fleet] enabled publish their stored observations, findings, diagnoses
  and actions to NATS JetStream subjects faultline.<site>.<rack>.<node>.<kind>. This
  command makes sure the stream exists (--stream, subjects faultline.>), binds the
  durable pull consumer --durable and feeds every envelope to the fleet analyzer: the
  slow node among its job's peers, and shared causes through the --topology file (PDU,
  feed, cooling loop, cable, switch, driver, rack). New or changed fleet diagnoses are
  printed and published to faultline.<site>.fleet.fleet.fleet. An existing stream keeps
  its settings (replicas, max age, ...) unless --replicas / --max-bytes are given; what
  differs is printed as a warning. Judgement runs on the data's own clock (the agents'
  send times), so a late start or a replay reaches the same answer; --once reads until
  the durable has nothing left to deliver. A message whose envelope speaks for another
  node than its subject names is refused (counted as forged).

Scaling out and restarts:
  Every process started with the same --durable shares that consumer's messages. Give
  each partition (e.g. --filter 'faultline.site1.>') its own --durable so one analyzer
  sees all nodes of the jobs and racks it judges. State is saved to the KV bucket --kv
  (key snap.<durable>.<instance>, instance = host name unless --instance) every
  --snapshot-interval, and messages are acked only
  once saved: after a crash the unacked ones come back and nothing is counted twice.

Acting on shared causes:
  A shared cause (PDU, feed, cooling loop, cable, switch, congestion, driver, rack) gets
  one webhook here, to --webhook-url (HTTPS, HMAC-signed with --webhook-secret-file or
  --webhook-secret-env, X-Faultline-Delivery = the ticket's id so a receiver drops
  repeats), while each agent stands down for the per-node tickets it replaces. Posted
  tickets are remembered in --kv, so a restart does not post again, and a cause that
  grows (a rack's slowdown later found to be its PDU) stays the same ticket
  (docs/remediation.md "Shared causes"). Stragglers are left to their node's agent. Like
  the agents' policy this is a dry run until --act: it prints what it would post.

Examples:
  faultline fleet --nats nats://10.0.0.2:4222,nats://10.0.0.3:4222 --topology fleet.json
  faultline fleet --nats nats://127.0.0.1:4222 --topology fleet.json --once --json
  faultline fleet --nats tls://nats.example:4222 --ca /etc/faultline/nats-ca.pem \
                  --credentials /etc/faultline/nats.creds --topology fleet.json --replicas 3

Exit status: 0 ran, 1 NATS or the stream could not be used, 2 bad arguments or files.
)";

Result<fleet::FleetTopology> LoadTopology(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status(StatusCode::kNotFound, "cannot read " + path);
  std::string text(fleet::kMaxFleetTopologyBytes + 1, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<size_t>(in.gcount()));
  if (text.size() > fleet::kMaxFleetTopologyBytes) return Status(StatusCode::kInvalidArgument, path + ": too large");
  auto t = fleet::ParseFleetTopology(text);
  if (!t.ok()) return Status(t.status().code(), path + ": " + t.status().message());
  return t;
}

void Print(const fleet::FleetDiagnosis& d, bool json) {
  if (json) {
    Json j = d;
    std::cout << j.dump(-1, ' ', false, Json::error_handler_t::replace) << "\n";
  } else {
    std::string nodes;
    for (const auto& n : d.nodes) nodes += (nodes.empty() ? "" : ",") + n;
    std::cout << FormatIso8601(d.first_ns) << "  " << d.cause << "  " << d.component << "  " << ToString(d.fault_class)
              << " -> " << ToString(d.action) << "  nodes " << nodes << "  (confidence " << d.confidence << ")\n    "
              << d.summary << "\n";
    if (!d.linked.empty()) {
      std::cout << "    explains " << d.linked.size() << " node diagnoses (act on this one, not on each)\n";
    }
  }
  std::cout.flush();
}

// Each process of a shared durable keeps its own snapshot: by default one per host.
std::string HostName() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof(buf) - 1) != 0 || buf[0] == '\0') return "default";
  return buf;
}

int64_t Seconds(double s) { return static_cast<int64_t>(s * 1e9); }

bool StopRequested(const sigset_t& set) {
  timespec zero{};
  return sigtimedwait(&set, nullptr, &zero) > 0;
}

// The webhook the fleet's actor posts through; null without --webhook-url.
struct FleetWebhook {
  std::unique_ptr<redfish::CurlHttpClient> http;
  std::unique_ptr<actions::WebhookActuator> actuator;
};

Result<FleetWebhook> MakeWebhook(const FleetArgs& a) {
  FleetWebhook w;
  if (a.webhook_url.empty()) return w;
  if (Status s = actions::CheckWebhookUrl(a.webhook_url, false); !s.ok()) {
    return Status(StatusCode::kInvalidArgument, "--webhook-url: " + s.message());
  }
  auto secret = actions::LoadWebhookSecret(a.webhook_secret_file, a.webhook_secret_env);
  if (!secret.ok()) return Status(StatusCode::kInvalidArgument, "webhook secret: " + secret.status().message());
  redfish::CurlOptions curl;
  curl.ca_file = a.webhook_ca;
  curl.max_body_bytes = 1u << 20;
  w.http = std::make_unique<redfish::CurlHttpClient>(curl);
  actions::WebhookOptions options;
  options.url = a.webhook_url;
  options.secret = std::move(*secret);
  options.ca_file = a.webhook_ca;
  w.actuator = std::make_unique<actions::WebhookActuator>(*w.http, std::move(options));
  return w;
}

void Report(const actions::FleetActOutcome& o) {
  std::cerr << "faultline fleet: " << (o.dry_run ? "dry run: " : "") << o.detail
            << (o.status.ok() ? "" : " (retried with back-off)") << "\n";
}

void Warn(const std::string& what) { std::cerr << "faultline fleet: warning: " << what << "\n"; }

// The one webhook per shared cause, remembered in the KV bucket (fleet/nats/ticket_ledger.h):
// a restarted process does not post a ticket again, and a cause that grows stays one ticket.
class Tickets {
 public:
  Tickets(actions::FleetActor& actor, fleet::nats::TicketLedger& ledger, bool json)
      : actor_(actor), ledger_(ledger), json_(json) {}

  // Prints a new or changed fleet diagnosis and acts on it once per ticket.
  void OnDiagnosis(const fleet::FleetDiagnosis& d, int64_t now_ns) {
    Print(d, json_);
    auto step = ledger_.OnDiagnosis(d);
    if (!step.ok()) Warn("ticket ledger: " + step.status().ToString() + " (this process still posts once)");
    if (step.ok() && !step->note.empty()) std::cerr << "faultline fleet: " << step->note << "\n";
    if (step.ok() && !step->as_ticket && !step->ticket_id.empty()) return;  // posted before
    const fleet::FleetDiagnosis& what = step.ok() && step->as_ticket ? *step->as_ticket : d;
    if (auto acted = actor_.OnDiagnosis(what, now_ns)) Done(*acted);
  }
  void RetryDue(int64_t now_ns) {
    for (const auto& retried : actor_.RetryDue(now_ns)) Done(retried);
  }

 private:
  void Done(const actions::FleetActOutcome& o) {
    Report(o);
    if (o.dry_run || !o.status.ok()) return;
    if (Status s = ledger_.MarkPosted(o.key); !s.ok() && s.code() != StatusCode::kNotFound) {
      Warn("ticket ledger: " + s.ToString() + " (a restart may post " + o.key + " again, same delivery key)");
    }
  }
  actions::FleetActor& actor_;
  fleet::nats::TicketLedger& ledger_;
  bool json_;
};

// The bucket the tickets are kept in (null without --kv, or when it cannot be bound: then
// only this process remembers what it posted).
std::unique_ptr<fleet::nats::KeyValue> TicketBucket(fleet::nats::Connection& conn, const FleetArgs& a) {
  if (a.kv.empty()) return nullptr;
  auto kv = conn.EnsureKeyValue(fleet::nats::KvConfig{.bucket = a.kv, .replicas = a.replicas});
  if (kv.ok()) return std::move(kv).value();
  Warn("ticket ledger: " + kv.status().ToString());
  return nullptr;
}

// Steps the loop until a stop signal, --for's end, or (--once) nothing is left to deliver.
void Consume(const FleetArgs& a, fleet::nats::FleetLoop& loop, Tickets& tickets, const Clock& clock,
             const sigset_t& stop_signals) {
  const auto start = std::chrono::steady_clock::now();
  bool warned = false;
  for (;;) {
    const uint64_t before = loop.stats().messages;
    auto step = loop.Step();
    if (!step.ok()) {
      if (!warned) std::cerr << "faultline fleet: " << step.status().ToString() << " (retrying)\n";
      warned = true;
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    } else {
      warned = false;
      for (const auto& d : *step) tickets.OnDiagnosis(d, clock.NowNs());
    }
    tickets.RetryDue(clock.NowNs());
    if (StopRequested(stop_signals)) return;
    // Drained only when the server says nothing is left: a fetch that timed out on large
    // messages says nothing about what is left.
    if (a.once && step.ok() && loop.stats().messages == before) {
      auto drained = loop.Drained();
      if (drained.ok() && *drained) return;
    }
    if (a.for_seconds > 0 && std::chrono::steady_clock::now() - start >= std::chrono::duration<double>(a.for_seconds)) {
      return;
    }
  }
}

// The stream as asked: only the settings given on the command line change an existing one.
fleet::nats::FleetLoopOptions LoopOptions(const FleetArgs& a, const std::string& site) {
  fleet::nats::FleetLoopOptions o;
  o.stream.name = a.stream;
  o.stream.replicas = a.replicas;
  o.stream.max_bytes = a.max_bytes;
  o.stream_overrides.replicas = a.replicas_given;
  o.stream_overrides.max_bytes = a.max_bytes_given;
  o.consumer.stream = a.stream;
  o.consumer.durable = a.durable;
  o.consumer.filter_subject = a.filter;
  o.kv_bucket = a.kv;
  o.kv_replicas = a.replicas;
  o.instance = a.instance.empty() ? HostName() : a.instance;
  o.site = site;
  o.evaluate_interval_ns = Seconds(a.evaluate_interval);
  o.snapshot_interval_ns = Seconds(a.snapshot_interval);
  o.warn = Warn;
  return o;
}

int Run(const FleetArgs& a) {
  auto webhook = MakeWebhook(a);
  if (!webhook.ok()) {
    std::cerr << "faultline fleet: " << webhook.status().ToString() << "\n";
    return kExitUsage;
  }
  actions::FleetActor actor(webhook->actuator.get(), a.act);
  auto topology = LoadTopology(a.topology);
  if (!topology.ok()) {
    std::cerr << "faultline fleet: topology " << topology.status().ToString() << "\n";
    return kExitUsage;
  }
  // Blocked before libnats starts its threads, so they inherit the mask and the signal
  // waits for us to take it between steps.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  fleet::nats::ConnectOptions co;
  co.urls = fleet::nats::SplitUrls(a.nats);
  co.name = "faultline-fleet " + a.durable;
  co.credentials_file = a.credentials;
  co.ca_file = a.ca;
  auto conn = fleet::nats::Connection::Connect(co);
  if (!conn.ok()) {
    std::cerr << "faultline fleet: " << conn.status().ToString() << "\n";
    return conn.status().code() == StatusCode::kInvalidArgument ? kExitUsage : kExitFailure;
  }
  const fleet::nats::FleetLoopOptions o = LoopOptions(a, a.site.empty() ? topology->site : a.site);
  SystemClock clock;
  fleet::FleetAnalyzer analyzer(std::move(topology).value());
  fleet::nats::FleetLoop loop(**conn, analyzer, o, clock);
  if (Status s = loop.Start(); !s.ok()) {
    std::cerr << "faultline fleet: " << s.ToString() << "\n";
    return s.code() == StatusCode::kInvalidArgument ? kExitUsage : kExitFailure;
  }
  if (loop.stats().restored) std::cerr << "faultline fleet: state restored from " << a.kv << "\n";
  auto bucket = TicketBucket(**conn, a);
  fleet::nats::TicketLedger ledger(bucket.get(), a.durable);
  if (Status s = ledger.Load(); !s.ok()) Warn("ticket ledger: " + s.ToString());
  Tickets tickets(actor, ledger, a.json);
  Consume(a, loop, tickets, clock, stop_signals);
  if (auto last = loop.EvaluateNow(); last.ok()) {
    for (const auto& d : *last) tickets.OnDiagnosis(d, clock.NowNs());
  }
  Status saved = loop.Checkpoint();
  const auto& st = loop.stats();
  std::cerr << "faultline fleet: " << st.messages << " messages, " << st.ingested << " ingested, " << st.malformed
            << " malformed, " << st.oversized << " oversized, " << st.forged << " forged, " << st.diagnoses
            << " fleet diagnoses (" << st.published << " published), " << analyzer.stats().duplicates
            << " duplicates dropped\n";
  if (!saved.ok()) {
    std::cerr << "faultline fleet: last checkpoint failed: " << saved.ToString()
              << " (unacked messages will be delivered again)\n";
    return kExitFailure;
  }
  return kExitOk;
}

}  // namespace

void AddFleetCommand(CliApp& app) {
  auto args = std::make_shared<FleetArgs>();
  CLI::App* cmd = app.root->add_subcommand(
      "fleet", "Fleet analyzer: consume agents' NATS JetStream stream, find slow nodes among peers and shared causes");
  cmd->footer(kFooter);
  cmd->add_option("--nats", args->nats, "NATS server URL(s), comma-separated (nats:// or tls://)")->required();
  cmd->add_option("--topology", args->topology, "Fleet topology file (JSON; docs/fleet.md)")->required();
  cmd->add_option("--stream", args->stream, "JetStream stream (created/updated to faultline.> with faultline's limits)")
      ->capture_default_str();
  cmd->add_option("--durable", args->durable,
                  "Durable consumer (one per --filter partition; processes sharing one split its messages, so each "
                  "sees only part of every job)")
      ->capture_default_str();
  cmd->add_option("--filter", args->filter, "Subject filter of this durable (a partition, e.g. faultline.site1.>)")
      ->capture_default_str();
  cmd->add_option("--kv", args->kv, "KV bucket for state snapshots (\"\" = none: ack at once, no restore)")
      ->capture_default_str();
  cmd->add_option("--instance", args->instance,
                  "This process's snapshot name within the durable (default: the host name; give each process "
                  "sharing a durable on one host its own)");
  cmd->add_option("--site", args->site, "Site token of published fleet diagnoses (default: the topology's site)");
  cmd->add_option("--credentials", args->credentials,
                  "Credentials file, mode 600: a NATS .creds file, user:password, or a token");
  cmd->add_option("--ca", args->ca, "PEM CA bundle: TLS with server certificate verification");
  cmd->add_option("--replicas", args->replicas,
                  "Stream and KV replicas when creating them (3 on a 3-server cluster); given, it also changes an "
                  "existing stream's (left out, an existing stream keeps its own)")
      ->check(CLI::Range(1, 5))
      ->capture_default_str()
      ->each([args](const std::string&) { args->replicas_given = true; });
  cmd->add_option("--max-bytes", args->max_bytes,
                  "Stream size limit in bytes (oldest dropped past it; reserved on the servers' disks); given, it "
                  "also changes an existing stream's")
      ->check(CLI::Range(int64_t{1} << 20, int64_t{1} << 50))
      ->capture_default_str()
      ->each([args](const std::string&) { args->max_bytes_given = true; });
  cmd->add_flag("--json", args->json, "One JSON object per fleet diagnosis (NDJSON)");
  auto* once = cmd->add_flag("--once", args->once, "Process what is on the stream now, evaluate, save, exit");
  cmd->add_option("--for", args->for_seconds, "Run this many seconds, then save and exit")
      ->check(CLI::PositiveNumber)
      ->excludes(once);
  cmd->add_option("--evaluate-interval", args->evaluate_interval, "Seconds between evaluations")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--snapshot-interval", args->snapshot_interval,
                  "Seconds between state snapshots (messages are acked at each)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--webhook-url", args->webhook_url,
                  "HTTPS URL told once about each shared cause (on-call, ticketing); see \"Acting on shared causes\"");
  cmd->add_option("--webhook-secret-file", args->webhook_secret_file,
                  "HMAC-SHA256 key for the webhook: first line of this file (mode 600)");
  cmd->add_option("--webhook-secret-env", args->webhook_secret_env,
                  "Or: the environment variable holding the HMAC key");
  cmd->add_option("--webhook-ca", args->webhook_ca, "PEM CA bundle to trust for the webhook");
  cmd->add_flag("--act", args->act, "Post for real (default: a dry run that prints what it would post)");
  cmd->callback([&app, args] { app.exit_code = Run(*args); });
}

}  // namespace faultline::cli
