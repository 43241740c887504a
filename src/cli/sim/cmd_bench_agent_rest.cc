// `faultline bench agent-rest`: the agent at rest and at the moment of a fault (issue 16).
//
// Runs the production agent (daemon::Agent::Create: the configured sources on their
// threads, default intervals) against a simulated healthy 8-GPU node served by a child
// process (fake NVML state file, fake sysfs tree, mock Redfish BMC over HTTPS, workload
// file: sim/node), plus a kernel log in /dev/kmsg record form that this command appends
// to. The node runs in its own process so that this process's getrusage and smaps are
// the agent's (and this command's small bookkeeping), not the simulator's.
//
// Phases: warm-up (--warmup s; the agent starts, reads the boot log and any --kernel-log
// history, warm-starts), rest (--seconds s, nothing written: CPU, RSS/PSS, rows and bytes
// the store gains, findings written without news), then --faults N critical kernel lines
// one at a time, each timed from just before its write() to the end of the evaluation that
// committed its finding (and the diagnosis row when the primary changed), as the agent's
// evaluation listener reports it.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "cli/sim/bench_measure.h"
#include "cli/sim/sim_commands.h"
#include "core/clock.h"
#include "daemon/agent.h"
#include "daemon/config.h"
#include "daemon/log.h"
#include "sim/harness/lockstep.h"
#include "sim/harness/workdir.h"
#include "sim/node/node_scenario.h"
#include "sim/node/sim_node.h"
#include "store/store.h"

namespace faultline::cli {
namespace {

struct RestArgs {
  double seconds = 60;
  double warmup_s = 10;
  int faults = 0;
  int gpus_lost = 0;
  int bmc_pushes = 0;
  std::string kernel_log;
  std::string scenario;
  std::string workdir;
  std::string nvml_lib;
  bool keep = false;
  bool no_sim = false;
  // What-if schedules (0 = the agent's default): how the idle cost moves with them.
  double evaluate_interval_s = 0;
  double workload_interval_s = 0;
};

// What the simulated node tells the bench (one "key=value" line each).
struct NodePaths {
  std::string kmsg, nvml_state, sysfs_root, workload, bmc_url, bmc_ca, bmc_user, bmc_password_file;
};

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// One command from the bench, obeyed at once:
// - "lose <gpu>": the GPU falls off the bus (NVML answers GPU_IS_LOST from this publish
//   on); the reply "lost <gpu> <monotonic ns>" is stamped once that state is published,
//   so the bench times the loss from the moment NVML can see it.
// - "psu <id>": power supply <id> (1-based) fails; the BMC appends the SEL entry and pushes
//   its Critical PowerSupplyFailed event to the SSE subscribers; the reply
//   "pushed <id> <monotonic ns>" is stamped once the event is queued for them.
void ObeyCommand(sim::SimNode& node, const std::string& command, double t, int report) {
  int id = -1;
  sim::NodeFault f;
  f.at = t;
  std::string reply;
  if (std::sscanf(command.c_str(), "lose %d", &id) == 1 && id >= 0 &&
      id < static_cast<int>(node.model().state().gpus.size())) {
    f.kind = sim::NodeFaultKind::kFallOffBus;
    f.gpu = id;
    reply = "lost ";
  } else if (std::sscanf(command.c_str(), "psu %d", &id) == 1 && id >= 1 &&
             id <= static_cast<int>(node.model().state().psus.size())) {
    f.kind = sim::NodeFaultKind::kPsuFail;
    f.psu = id;
    reply = "pushed ";
  } else {
    return;
  }
  node.Inject(f);
  (void)node.AdvanceTo(t);
  reply += std::to_string(id) + " " + std::to_string(SystemClock().MonotonicNs()) + "\n";
  (void)!::write(report, reply.data(), reply.size());
}

// Child: serves the node in real time until the parent closes `control` (EOF), and obeys
// the commands it writes there (ObeyCommand).
[[noreturn]] void ServeNode(const sim::NodeScenario& sc, const std::string& dir, int report, int control) {
  SystemClock sys;
  sim::SimNodeOptions so{.workdir = dir, .time = {sys.NowNs(), sys.BootTimeNs(), 1.0}};
  auto node = sim::SimNode::Create(sc, so);
  std::string msg;
  if (!node.ok()) {
    msg = "error=" + node.status().ToString() + "\n";
  } else {
    const sim::SimNode& n = **node;
    msg = "kmsg=" + n.kmsg_path() + "\nnvml_state=" + n.nvml_state_path() + "\nsysfs_root=" + n.sysfs_root() +
          "\nworkload=" + n.workload_path() + "\nbmc_url=" + n.bmc_url() + "\nbmc_ca=" + n.bmc_ca_file() +
          "\nbmc_user=" + n.bmc_user() + "\nbmc_password_file=" + n.bmc_password_file() + "\nend=1\n";
  }
  (void)!::write(report, msg.data(), msg.size());
  if (!node.ok()) ::_exit(1);
  const auto start = std::chrono::steady_clock::now();
  auto now = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
  // The NVML state is rebuilt every 10 s (the agent's NVML interval) and at once when a GPU
  // is lost, not every second: the fake library's event wait re-reads the file whenever it
  // changes, in the agent's thread, a cost a real driver's wait does not have (it sleeps in
  // the kernel). Every other interface is published each second.
  constexpr double kNvmlEvery = 10;
  double nvml_at = 0;
  std::string commands;
  for (;;) {
    pollfd p{control, POLLIN, 0};
    const int ready = ::poll(&p, 1, 1000);
    if (ready < 0 && errno != EINTR) break;
    if (ready > 0) {
      char buf[256];
      const ssize_t n = ::read(control, buf, sizeof buf);
      if (n <= 0) break;  // EOF or error: the parent is done
      commands.append(buf, static_cast<size_t>(n));
      for (size_t eol; (eol = commands.find('\n')) != std::string::npos; commands.erase(0, eol + 1)) {
        ObeyCommand(**node, commands.substr(0, eol), now(), report);
      }
      continue;
    }
    const double t = now();
    const bool nvml = t - nvml_at >= kNvmlEvery;
    if (nvml) nvml_at = t;
    (void)(*node)->AdvanceTo(t, sim::SimPublish{.nvml = nvml, .bmc_sensors = true});
  }
  ::close(report);
  node->reset();
  ::_exit(0);
}

Result<NodePaths> ParseNodePaths(const std::string& text) {
  NodePaths p;
  std::istringstream in(text);
  std::string line;
  bool end = false;
  while (std::getline(in, line)) {
    const size_t eq = line.find('=');
    if (eq == std::string::npos) continue;
    const std::string k = line.substr(0, eq), v = line.substr(eq + 1);
    if (k == "error") return Status(StatusCode::kUnavailable, "simulated node: " + v);
    if (k == "kmsg") p.kmsg = v;
    if (k == "nvml_state") p.nvml_state = v;
    if (k == "sysfs_root") p.sysfs_root = v;
    if (k == "workload") p.workload = v;
    if (k == "bmc_url") p.bmc_url = v;
    if (k == "bmc_ca") p.bmc_ca = v;
    if (k == "bmc_user") p.bmc_user = v;
    if (k == "bmc_password_file") p.bmc_password_file = v;
    if (k == "end") end = true;
  }
  if (!end) return Status(StatusCode::kUnavailable, "simulated node did not start");
  return p;
}

// A line from `fd` within `timeout_ms`; "" on timeout, EOF or error.
std::string ReadLine(int fd, int timeout_ms) {
  std::string line;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    pollfd p{fd, POLLIN, 0};
    if (left.count() <= 0 || ::poll(&p, 1, static_cast<int>(left.count())) <= 0) return "";
    char c = 0;
    if (::read(fd, &c, 1) != 1) return "";
    if (c == '\n') return line;
    line.push_back(c);
  }
}

// The node process: forked before this process starts any thread.
struct NodeProcess {
  pid_t pid = -1;
  int control = -1;  // commands (ObeyCommand); closing it stops the node
  int events = -1;   // the node's replies
  ~NodeProcess() { Stop(); }
  void Stop() {
    if (control >= 0) ::close(control), control = -1;
    if (events >= 0) ::close(events), events = -1;
    if (pid > 0) {
      int status = 0;
      ::waitpid(pid, &status, 0);
      pid = -1;
    }
  }
};

Result<NodePaths> StartNode(const sim::NodeScenario& sc, const std::string& dir, NodeProcess& proc) {
  int report[2], control[2];
  if (::pipe2(report, O_CLOEXEC) != 0 || ::pipe2(control, O_CLOEXEC) != 0) {
    return Status(StatusCode::kIoError, "pipe failed");
  }
  std::cout << std::flush;
  const pid_t pid = ::fork();
  if (pid < 0) return Status(StatusCode::kIoError, "fork failed");
  if (pid == 0) {
    ::close(report[0]);
    ::close(control[1]);
    const int devnull = ::open("/dev/null", O_WRONLY);
    if (devnull >= 0) ::dup2(devnull, 1), ::dup2(devnull, 2);
    ServeNode(sc, dir, report[1], control[0]);
  }
  ::close(report[1]);
  ::close(control[0]);
  proc.pid = pid;
  proc.control = control[1];
  proc.events = report[0];
  // Line by line up to "end=1" (or an error, or EOF): the pipe stays open for replies.
  std::string text;
  for (;;) {
    const std::string line = ReadLine(report[0], 120'000);
    if (line.empty()) break;
    text += line + "\n";
    if (line == "end=1" || line.rfind("error=", 0) == 0) break;
  }
  return ParseNodePaths(text);
}

// --- measurements ------------------------------------------------------------------

double CpuSeconds() {
  rusage ru{};
  ::getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

// One point of the rest phase's timeline.
struct TimelinePoint {
  double at_s = 0;         // seconds into the rest phase
  double cpu_percent = 0;  // of one core by the agent's threads, since the previous point
  double pss_mib = 0;
  double anon_mib = 0;
};

// CPU ticks (utime + stime) per thread name of this process (/proc/self/task/*/stat):
// the agent names its threads "fl-<source>" and "fl-evaluate".
std::map<std::string, double> ThreadCpuSeconds() {
  std::map<std::string, double> out;
  const double hz = static_cast<double>(::sysconf(_SC_CLK_TCK));
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/proc/self/task", ec)) {
    const std::string stat = ReadFile(e.path().string() + "/stat");
    const size_t open = stat.find('('), close = stat.rfind(')');
    if (open == std::string::npos || close == std::string::npos) continue;
    const std::string name = stat.substr(open + 1, close - open - 1);
    std::istringstream rest(stat.substr(close + 2));
    std::string field;
    double utime = 0, stime = 0;
    for (int i = 3; i <= 15 && rest >> field; ++i) {  // fields 14 and 15: utime, stime
      if (i == 14) utime = std::atof(field.c_str());
      if (i == 15) stime = std::atof(field.c_str());
    }
    out[name] += (utime + stime) / hz;
  }
  return out;
}

// The agent's threads ("fl-*"): the process without this command's own bookkeeping
// (its main thread reads smaps every 10 s).
double AgentCpuSeconds(const std::map<std::string, double>& threads) {
  double sum = 0;
  for (const auto& [name, s] : threads) sum += name.rfind("fl-", 0) == 0 ? s : 0;
  return sum;
}

// What the agent's evaluation listener saw, for matching faults to their evaluation.
class EvaluationLog {
 public:
  void Record(const daemon::EvaluateResult& r, int64_t done_mono_ns) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (r.findings_stored > 0 || r.diagnosis_stored) {
        stored_.push_back({done_mono_ns, r.diagnosis_stored});
      }
    }
    cv_.notify_all();
  }
  // The end of the first evaluation after `since` that stored something; nullopt after
  // `timeout`. `diagnosis` tells whether it also stored a diagnosis row.
  std::optional<int64_t> WaitStoredAfter(int64_t since, std::chrono::milliseconds timeout, bool& diagnosis) {
    std::unique_lock<std::mutex> lock(mu_);
    std::optional<int64_t> found;
    cv_.wait_for(lock, timeout, [&] {
      for (const auto& e : stored_) {
        if (e.done > since) {
          found = e.done;
          diagnosis = e.diagnosis;
          return true;
        }
      }
      return false;
    });
    return found;
  }

 private:
  struct Entry {
    int64_t done;
    bool diagnosis;
  };
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Entry> stored_;
};

// The GPUs' bus ids the boot log names ("NVRM: GPU at PCI:0000:18:00: GPU-..."); an
// HGX layout when it names none.
std::vector<std::string> GpuBuses(const std::string& boot_log) {
  std::vector<std::string> buses;
  const std::string tag = "GPU at PCI:0000:";
  for (size_t at = boot_log.find(tag); at != std::string::npos; at = boot_log.find(tag, at + 1)) {
    buses.push_back(boot_log.substr(at + tag.size(), 2));
  }
  if (buses.empty()) buses = {"18", "2a", "3a", "5d", "9a", "ab", "ba", "db"};
  return buses;
}

// Critical kernel lines (engine/detect/critical.h), each distinct (pid, GPU, code), in
// /dev/kmsg record form dated now.
std::string FaultLine(int i, const std::vector<std::string>& buses, uint64_t seq) {
  static const char* const kForms[] = {
      "79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.",
      ("48, pid=%d, name=bench, An uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer "
       "at partition 0, subpartition 0."),
      "95, pid=%d, name=bench, Uncontained: FBHUB. RST: Yes, D-RST: No",
      "119, pid=%d, name=bench, Timeout after 6s of waiting for RPC response from GPU1 GSP! Expected function 76",
      "74, pid=%d, name=bench, NVLink: fatal error detected on link 3(0x0, 0x0, 0x10000, 0x0, 0x0, 0x0, 0x0)",
      "94, pid=%d, name=bench, Contained: SM (0x1). RST: No, D-RST: No",
      "64, pid=%d, name=bench, Ch 00000010, row remapping failure",
  };
  const int form = i % 7;
  char tail[256];
  std::snprintf(tail, sizeof tail, kForms[form], 20000 + i);
  timespec ts{};
  ::clock_gettime(CLOCK_BOOTTIME, &ts);
  const long long usec = static_cast<long long>(ts.tv_sec) * 1'000'000 + ts.tv_nsec / 1000;
  char line[512];
  std::snprintf(line, sizeof line, "2,%llu,%lld,-;NVRM: Xid (PCI:0000:%s:00): %s\n",
                static_cast<unsigned long long>(seq), usec, buses[static_cast<size_t>(i) % buses.size()].c_str(), tail);
  return line;
}

bool AppendLine(int fd, const std::string& line) {
  return ::write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size());
}

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t i = static_cast<size_t>(p * static_cast<double>(v.size() - 1) + 0.5);
  return v[std::min(i, v.size() - 1)];
}

// Node-side faults, one at a time, each timed from the node making it visible (the NVML
// state published, the SSE event queued) to the committed evaluation: GPU losses are
// NVML's own signal, with no kernel line (the node's kmsg is not this agent's); PSU
// failures reach the agent only as the BMC's push (the next sweep is up to 60 s away).
struct NodeFaultTimes {
  std::vector<double> ms;
  int missed = 0;
};

// `command` and `reply_word` name the node's command and the first word of its reply
// ("lose"/"lost" for GPUs first.., "psu"/"pushed" for PSUs first..), `count` of them.
NodeFaultTimes TimeNodeFaults(NodeProcess& node, EvaluationLog& evaluations, const std::string& command,
                              const std::string& reply_word, int first, int count) {
  NodeFaultTimes out;
  for (int i = 0; i < count; ++i) {
    const int id = first + i;
    if (!AppendLine(node.control, command + " " + std::to_string(id) + "\n")) break;
    const std::string reply = ReadLine(node.events, 10'000);
    long long published = 0;
    int got = -1;
    bool diagnosis = false;
    std::optional<int64_t> done;
    if (std::sscanf(reply.c_str(), (reply_word + " %d %lld").c_str(), &got, &published) == 2 && got == id) {
      done = evaluations.WaitStoredAfter(published, std::chrono::seconds(10), diagnosis);
    }
    if (!done) {
      ++out.missed;
      continue;
    }
    out.ms.push_back(static_cast<double>(*done - published) / 1e6);
    // Past the NVML source's one-early-poll-a-second bound, so each fault meets a quiet
    // source (losses closer together are read by the early poll of the first).
    std::this_thread::sleep_for(std::chrono::milliseconds(1100 + (i * 37) % 200));
  }
  return out;
}

void PrintNodeFaultTimes(const char* name, const char* noun, const char* what, int asked, const NodeFaultTimes& t) {
  std::printf("%s: %s %d, measured %zu, missed %d, median %.2f, p99 %.2f, max %.2f (%s)\n", name, noun, asked, t.ms.size(),
              t.missed, Percentile(t.ms, 0.5), Percentile(t.ms, 0.99),
              t.ms.empty() ? 0.0 : *std::max_element(t.ms.begin(), t.ms.end()), what);
  std::string each;
  for (double ms : t.ms) each += (each.empty() ? "" : " ") + std::to_string(static_cast<int>(ms + 0.5));
  std::printf("%s_each: %s\n", name, each.c_str());
}

daemon::AgentConfig BenchConfig(const std::string& dir, const std::string& kmsg, const NodePaths* node,
                                const std::string& nvml_lib, const RestArgs& a) {
  daemon::AgentConfig c;  // default intervals, as deployed, unless asked otherwise
  if (a.evaluate_interval_s > 0) c.agent.evaluate_interval_ns = static_cast<int64_t>(a.evaluate_interval_s * 1e9);
  if (a.workload_interval_s > 0) c.workload.interval_ns = static_cast<int64_t>(a.workload_interval_s * 1e9);
  c.agent.node = "bench-node";
  c.agent.store_path = dir + "/faultline.db";
  c.agent.log_level = daemon::LogLevel::kWarn;
  c.kmsg.path = kmsg;
  if (node == nullptr) {
    c.nvml.enabled = false;
    c.sysfs.enabled = false;
    return c;
  }
  c.nvml.library_path = nvml_lib;
  c.sysfs.root = node->sysfs_root;
  c.workload.file = node->workload;
  if (!node->bmc_url.empty()) {
    c.redfish.url = node->bmc_url;
    c.redfish.user = node->bmc_user;
    c.redfish.password_file = node->bmc_password_file;
    c.redfish.ca_file = node->bmc_ca;
  }
  return c;
}

void SleepFor(double seconds) { std::this_thread::sleep_for(std::chrono::duration<double>(seconds)); }

int RunRest(const RestArgs& a) {
  if (a.seconds <= 0 || a.warmup_s < 0 || a.faults < 0 || a.evaluate_interval_s < 0 || a.workload_interval_s < 0) {
    std::cerr << "faultline bench agent-rest: --seconds must be > 0, --warmup, --faults and the intervals >= 0\n";
    return kExitUsage;
  }
  if (a.gpus_lost < 0 || a.gpus_lost > 8 || (a.gpus_lost > 0 && a.no_sim)) {
    std::cerr << "faultline bench agent-rest: --gpus-lost is 0..8 and needs the simulated node (not --no-sim)\n";
    return kExitUsage;
  }
  std::string history;
  if (!a.kernel_log.empty()) {
    history = ReadFile(a.kernel_log);
    if (history.empty()) {
      std::cerr << "faultline bench agent-rest: cannot read --kernel-log " << a.kernel_log << " (or it is empty)\n";
      return kExitUsage;
    }
  }
  auto sc = a.scenario.empty() ? sim::ParseNodeScenario(kBenchHealthyNode) : sim::LoadNodeScenario(a.scenario);
  if (!sc.ok()) {
    std::cerr << "faultline bench agent-rest: " << sc.status().ToString() << "\n";
    return kExitUsage;
  }
  if (a.bmc_pushes < 0 || a.bmc_pushes > sc->node.psus || (a.bmc_pushes > 0 && (a.no_sim || !sc->node.bmc))) {
    std::cerr << "faultline bench agent-rest: --bmc-pushes is 0.." << sc->node.psus
              << " (the node's power supplies) and needs the simulated node with its BMC (not --no-sim, not "
                 "node.bmc: false)\n";
    return kExitUsage;
  }
  const std::string nvml_lib = a.nvml_lib.empty() ? sim::DefaultFakeNvmlPath() : a.nvml_lib;
  const bool with_node = !a.no_sim;
  if (with_node && nvml_lib.empty()) {
    std::cerr << "faultline bench agent-rest: fake NVML library not found (--nvml-lib, or --no-sim)\n";
    return kExitUsage;
  }
  // The store goes where the run's files go: on a disk, not /dev/shm (the simulator's
  // default), since every commit is fsynced and that is part of the latency.
  auto made = sim::MakeUniqueDir(BenchParentDir(a.workdir), "agent-rest");
  if (!made.ok()) {
    std::cerr << "faultline bench agent-rest: " << made.status().message() << "\n";
    return kExitUsage;
  }
  struct Cleanup {
    sim::RunDir dir;
    bool keep;
    ~Cleanup() {
      if (!keep) sim::RemoveIfCreated(dir);
    }
  } cleanup{sim::RunDir{*made, true}, a.keep};
  const std::string dir = *made;

  // The node first: fork before any thread exists in this process.
  NodeProcess node_proc;
  std::optional<NodePaths> node;
  std::string boot_log;
  if (with_node) {
    auto paths = StartNode(*sc, dir + "/node", node_proc);
    if (!paths.ok()) {
      std::cerr << "faultline bench agent-rest: " << paths.status().ToString() << "\n";
      return kExitFailure;
    }
    node = *paths;
    boot_log = ReadFile(node->kmsg);
    ::setenv("FAKE_NVML_STATE", node->nvml_state.c_str(), 1);
  }
  const std::string kmsg = dir + "/kmsg.log";
  {
    std::ofstream out(kmsg, std::ios::binary);
    out << history << boot_log;
  }
  const int kmsg_fd = ::open(kmsg.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
  if (kmsg_fd < 0) {
    std::cerr << "faultline bench agent-rest: cannot open " << kmsg << "\n";
    return kExitFailure;
  }

  SystemClock clock;
  daemon::Logger logger(std::cerr, daemon::LogLevel::kWarn, clock);
  const daemon::AgentConfig config = BenchConfig(dir, kmsg, node ? &*node : nullptr, nvml_lib, a);
  daemon::TuneAllocatorForLongRun();  // as `faultline agent` does, before the agent's threads
  const double cpu_before_agent = CpuSeconds();
  auto agent = daemon::Agent::Create(config, clock, logger);
  if (!agent.ok()) {
    std::cerr << "faultline bench agent-rest: " << agent.status().ToString() << "\n";
    ::close(kmsg_fd);
    return kExitFailure;
  }
  EvaluationLog evaluations;
  (*agent)->SetEvaluationListener(
      [&evaluations](const daemon::EvaluateResult& r, int64_t done) { evaluations.Record(r, done); });
  (*agent)->Start();
  SleepFor(a.warmup_s);

  // Rest: nothing written by the bench.
  const daemon::AgentStats s0 = (*agent)->stats();
  const daemon::PipelineStats p0 = (*agent)->pipeline_stats();
  const StoreSnapshot st0 = SnapshotStore(config.agent.store_path);
  const Memory m0 = ReadMemory();
  const auto threads0 = ThreadCpuSeconds();
  const double cpu0 = CpuSeconds();
  const auto t0 = std::chrono::steady_clock::now();
  Memory peak = m0;
  // Memory every 10 s: reading smaps_rollup walks every mapping, which is this
  // process's CPU time too (sampling it every second cost ~0.03 % of a core). A tenth of
  // the rest phase at a time, the CPU used and the PSS are kept for the timeline, which
  // shows whether the agent stays flat or creeps.
  const double slice_s = std::max(10.0, a.seconds / 10);
  std::vector<TimelinePoint> timeline;
  double slice_cpu = AgentCpuSeconds(threads0), slice_at = 0;
  for (double left = a.seconds, elapsed = 0; left > 0; left -= 10) {
    const double step = std::min(10.0, left);
    SleepFor(step);
    elapsed += step;
    const Memory m = ReadMemory();
    peak.rss_mib = std::max(peak.rss_mib, m.rss_mib);
    peak.pss_mib = std::max(peak.pss_mib, m.pss_mib);
    peak.anon_mib = std::max(peak.anon_mib, m.anon_mib);
    peak.uss_mib = std::max(peak.uss_mib, m.uss_mib);
    if (elapsed - slice_at >= slice_s - 1e-6 || left <= 10) {
      const double cpu = AgentCpuSeconds(ThreadCpuSeconds());
      timeline.push_back({elapsed, 100.0 * (cpu - slice_cpu) / (elapsed - slice_at), m.pss_mib, m.anon_mib});
      slice_cpu = cpu;
      slice_at = elapsed;
    }
  }
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const double cpu1 = CpuSeconds();
  const auto threads1 = ThreadCpuSeconds();
  const Memory m1 = ReadMemory();
  const std::string heap = HeapBreakdown();
  const StoreSnapshot st1 = SnapshotStore(config.agent.store_path);
  const daemon::AgentStats s1 = (*agent)->stats();
  const daemon::PipelineStats p1 = (*agent)->pipeline_stats();

  // Faults: one at a time, each until its finding is committed (or 10 s).
  std::vector<double> latencies_ms;
  int missed = 0, with_diagnosis = 0;
  const std::vector<std::string> buses = GpuBuses(boot_log);
  for (int i = 0; i < a.faults; ++i) {
    const std::string line = FaultLine(i, buses, 1'000'000 + static_cast<uint64_t>(i));
    const int64_t written = clock.MonotonicNs();
    if (!AppendLine(kmsg_fd, line)) {
      std::cerr << "faultline bench agent-rest: write to " << kmsg << " failed\n";
      break;
    }
    bool diagnosis = false;
    auto done = evaluations.WaitStoredAfter(written, std::chrono::seconds(10), diagnosis);
    if (!done) {
      ++missed;
      continue;
    }
    latencies_ms.push_back(static_cast<double>(*done - written) / 1e6);
    with_diagnosis += diagnosis ? 1 : 0;
    // Spaced so each fault meets a quiet agent, not the previous one's evaluation.
    std::this_thread::sleep_for(std::chrono::milliseconds(50 + (i * 37) % 100));
  }
  ::close(kmsg_fd);

  const NodeFaultTimes lost = node ? TimeNodeFaults(node_proc, evaluations, "lose", "lost", 0, a.gpus_lost)
                                   : NodeFaultTimes{};
  const NodeFaultTimes pushed = node ? TimeNodeFaults(node_proc, evaluations, "psu", "pushed", 1, a.bmc_pushes)
                                     : NodeFaultTimes{};
  const Status stopped = (*agent)->Stop();
  node_proc.Stop();

  const double hours = wall / 3600;
  const daemon::AgentStats s2 = (*agent)->stats();
  std::printf(
      "agent-rest: %s, %.0f s at rest after %.0f s warm-up, %s intervals (evaluate %.1f s, workload %.1f s)%s\n",
      with_node ? "simulated healthy 8-GPU node (fake NVML, fake sysfs, mock BMC, workload file)"
                : "kernel log only (--no-sim)",
      wall, a.warmup_s, a.evaluate_interval_s > 0 || a.workload_interval_s > 0 ? "what-if" : "default",
      static_cast<double>(config.agent.evaluate_interval_ns) / 1e9,
      static_cast<double>(config.workload.interval_ns) / 1e9,
      history.empty() ? "" : ", kernel log history loaded first");
  if (!history.empty()) {
    std::printf("history: %zu bytes of %s read before the rest phase\n", history.size(), a.kernel_log.c_str());
  }
  std::printf("cpu_percent_of_one_core: %.3f\n", 100.0 * (cpu1 - cpu0) / wall);
  std::printf("cpu_percent_agent_threads: %.3f\n",
              100.0 * (AgentCpuSeconds(threads1) - AgentCpuSeconds(threads0)) / wall);
  std::printf("cpu_seconds_startup_and_warmup: %.2f\n", cpu0 - cpu_before_agent);
  std::string per_thread;
  for (const auto& [name, s] : threads1) {
    auto before = threads0.find(name);
    const double used = s - (before == threads0.end() ? 0 : before->second);
    if (used <= 0) continue;
    char item[96];
    std::snprintf(item, sizeof item, "%s%s %.3f%%", per_thread.empty() ? "" : ", ", name.c_str(), 100.0 * used / wall);
    per_thread += item;
  }
  std::printf("cpu_percent_by_thread: %s (clock ticks: %ld/s)\n", per_thread.empty() ? "-" : per_thread.c_str(),
              ::sysconf(_SC_CLK_TCK));
  std::printf("rss_mib: start %.1f end %.1f max %.1f\n", m0.rss_mib, m1.rss_mib, peak.rss_mib);
  std::printf("pss_mib: start %.1f end %.1f max %.1f\n", m0.pss_mib, m1.pss_mib, peak.pss_mib);
  std::printf("uss_mib: start %.1f end %.1f max %.1f\n", m0.uss_mib, m1.uss_mib, peak.uss_mib);
  std::printf("anonymous_mib: start %.1f end %.1f max %.1f; heap at the end: %s\n", m0.anon_mib, m1.anon_mib,
              peak.anon_mib, heap.c_str());
  std::printf("timeline (s at rest: agent threads' cpu %% of one core since the previous point, pss MiB, anonymous MiB):");
  for (const TimelinePoint& p : timeline) {
    std::printf(" %.0f: %.3f%% %.1f %.1f;", p.at_s, p.cpu_percent, p.pss_mib, p.anon_mib);
  }
  std::printf("\n");
  std::printf("store_rows_per_hour: %.0f (observations %+lld, findings %+lld, diagnoses %+lld)\n",
              static_cast<double>((st1.observations - st0.observations) + (st1.findings - st0.findings) +
                                  (st1.diagnoses - st0.diagnoses)) /
                  hours,
              static_cast<long long>(st1.observations - st0.observations),
              static_cast<long long>(st1.findings - st0.findings),
              static_cast<long long>(st1.diagnoses - st0.diagnoses));
  std::printf("store_bytes_per_hour: %.0f (pages in use %+lld bytes; file+wal %lld -> %lld)\n",
              static_cast<double>(st1.used_bytes - st0.used_bytes) / hours,
              static_cast<long long>(st1.used_bytes - st0.used_bytes), static_cast<long long>(st0.file_bytes),
              static_cast<long long>(st1.file_bytes));
  std::printf("findings_written_without_new_input: %llu\n",
              static_cast<unsigned long long>(s1.findings_stored - s0.findings_stored));
  std::printf("diagnoses_written_without_new_input: %llu\n",
              static_cast<unsigned long long>(s1.diagnoses_stored - s0.diagnoses_stored));
  std::printf("evaluations_at_rest: %llu (%.2f/s)\n", static_cast<unsigned long long>(s1.evaluations - s0.evaluations),
              static_cast<double>(s1.evaluations - s0.evaluations) / wall);
  std::printf("polls_at_rest: %llu\n", static_cast<unsigned long long>(s1.polls - s0.polls));
  std::printf("isolator_runs_at_rest: %llu (answers reused at %llu evaluations); "
              "detectors asked %llu times, reused %llu\n",
              static_cast<unsigned long long>((s1.evaluations - s0.evaluations) -
                                              (p1.isolations_skipped - p0.isolations_skipped)),
              static_cast<unsigned long long>(p1.isolations_skipped - p0.isolations_skipped),
              static_cast<unsigned long long>(p1.detector_recomputations - p0.detector_recomputations),
              static_cast<unsigned long long>(p1.detector_reuses - p0.detector_reuses));
  if (a.faults > 0) {
    std::printf(
        "fault_to_diagnosis_ms: faults %d, measured %zu, missed %d, median %.2f, p99 %.2f, max %.2f "
        "(write() to the committed evaluation; %d of them also stored a new primary diagnosis row)\n",
        a.faults, latencies_ms.size(), missed, Percentile(latencies_ms, 0.5), Percentile(latencies_ms, 0.99),
        latencies_ms.empty() ? 0.0 : *std::max_element(latencies_ms.begin(), latencies_ms.end()), with_diagnosis);
    std::printf("evaluations_on_demand: %llu for %llu critical batches\n",
                static_cast<unsigned long long>(s2.evaluations_on_demand - s1.evaluations_on_demand),
                static_cast<unsigned long long>(s2.critical_batches - s1.critical_batches));
  } else {
    std::printf("fault_to_diagnosis_ms: no faults injected (--faults N)\n");
  }
  if (a.gpus_lost > 0) {
    PrintNodeFaultTimes("gpu_lost_to_diagnosis_ms", "losses",
                        "NVML state published by the node to the committed evaluation", a.gpus_lost, lost);
  }
  if (a.bmc_pushes > 0) {
    PrintNodeFaultTimes("bmc_push_to_diagnosis_ms", "pushes",
                        "a PSU's failure event queued by the mock BMC for SSE to the committed evaluation",
                        a.bmc_pushes, pushed);
  }
  if (a.keep) std::printf("files kept in %s\n", dir.c_str());
  if (!stopped.ok()) {
    std::cerr << "faultline bench agent-rest: agent stop: " << stopped.ToString() << "\n";
    return kExitFailure;
  }
  return missed + lost.missed + pushed.missed > 0 ? kExitFailure : kExitOk;
}

}  // namespace

void AddBenchAgentRestCommand(CliApp& app) {
  auto args = std::make_shared<RestArgs>();
  CLI::App* b = app.bench->add_subcommand(
      "agent-rest",
      "The agent's idle cost and fault-to-diagnosis latency, against a simulated healthy node in real time");
  b->footer(
      "What it runs: the production agent (same code path as `faultline agent`, default intervals: kmsg 1 s,\n"
      "NVML/sysfs 10 s, Redfish 60 s, workload and evaluation 5 s) against a healthy 8-GPU node simulated in\n"
      "a child process (fake NVML library, fake sysfs tree, mock BMC over HTTPS on loopback, workload file),\n"
      "reading a kernel log in /dev/kmsg record form that the bench appends to.\n"
      "\n"
      "Phases: --warmup seconds (start, boot log, --kernel-log history), --seconds at rest (nothing written\n"
      "by the bench), then --faults critical kernel lines (XID 79/48/95/119/74/94/64), one at a time, then\n"
      "--gpus-lost GPUs falling off the bus as NVML alone reports it (the agent waits on NVML events), then\n"
      "--bmc-pushes power supplies failing as the BMC's SSE push alone reports it (the next sweep is 60 s away).\n"
      "\n"
      "Prints (one 'name: value' line each): cpu_percent_of_one_core (getrusage of this process, which is\n"
      "the agent: the node runs in its own), cpu_percent_agent_threads (the agent's fl-* threads only, without\n"
      "this command's sampling), rss_mib, pss_mib, uss_mib and anonymous_mib (/proc/self/smaps_rollup: start,\n"
      "end, max; PSS shares library pages among the processes mapping them, so it rises when other programs\n"
      "exit: the anonymous and private (USS) figures are the agent's own), a timeline (the agent threads' CPU,\n"
      "PSS and anonymous memory at each tenth of the rest phase, at least 10 s apart: flat or creeping),\n"
      "store_rows_per_hour and store_bytes_per_hour (read-only store snapshots; the job's step reports are\n"
      "thinned to one a minute once a day old, so a run shorter than a day shows the first day's rate:\n"
      "`faultline bench agent-days` shows the steady state), findings and diagnoses\n"
      "written without new input, evaluations and polls at rest, isolator_runs_at_rest (evaluations whose\n"
      "answer was computed, not reused; detectors asked and reused), and fault_to_diagnosis_ms (median, p99,\n"
      "max: from just before write() to the end of the evaluation that committed the fault's finding),\n"
      "gpu_lost_to_diagnosis_ms (from the node publishing the lost GPU's NVML state to that evaluation),\n"
      "bmc_push_to_diagnosis_ms (from the mock BMC queueing the PSU's event for its SSE subscribers).\n"
      "\n"
      "Examples:\n"
      "  faultline bench agent-rest                                   # 60 s at rest\n"
      "  faultline bench agent-rest --seconds 600 --faults 300        # idle figures, then 300 faults\n"
      "  faultline bench agent-rest --seconds 30 --gpus-lost 8         # NVML GPU-lost latency\n"
      "  faultline bench agent-rest --seconds 30 --bmc-pushes 6        # Redfish SSE push latency\n"
      "  bench/gen_kernel_log.py --mb 50 > /tmp/heavy.log\n"
      "  faultline bench agent-rest --kernel-log /tmp/heavy.log --warmup 60   # idle cost after a long history\n"
      "\n"
      "Exit codes: 0 ran (and every fault was diagnosed); 1 the agent or node failed, or a fault was not\n"
      "diagnosed within 10 s; 2 bad arguments.");
  b->add_option("--seconds", args->seconds, "Seconds at rest that the figures cover (default 60)");
  b->add_option("--warmup", args->warmup_s, "Seconds after the start not counted (default 10)");
  b->add_option("--faults", args->faults, "Critical kernel lines to inject after the rest phase (default 0)");
  b->add_option("--gpus-lost", args->gpus_lost,
                "GPUs (0..8) the node loses one at a time after the kernel faults, NVML's GPU_IS_LOST only "
                "(default 0)");
  b->add_option("--bmc-pushes", args->bmc_pushes,
                "Power supplies (0..the node's, 6 by default) that fail one at a time after the GPU losses, "
                "reported only by the BMC's SSE push (default 0)");
  b->add_option("--kernel-log", args->kernel_log,
                "A kernel log (any form; e.g. from bench/gen_kernel_log.py) the agent reads first, as history")
      ->check(CLI::ExistingFile);
  b->add_option("--scenario", args->scenario, "Node scenario file (default: a built-in healthy 8-GPU node)")
      ->check(CLI::ExistingFile);
  b->add_option("--workdir", args->workdir,
                "Existing parent directory for the run's files, store included (default: $TMPDIR, else /tmp); "
                "the run makes agent-rest-XXXXXX inside and removes only that");
  b->add_option("--nvml-lib", args->nvml_lib, "The fake libnvidia-ml.so.1 (default: the one built with faultline)");
  b->add_flag("--keep", args->keep, "Keep the run's files (store, kernel log, node) and print where");
  b->add_flag("--no-sim", args->no_sim, "No simulated node: the agent reads only the kernel log");
  b->add_option("--evaluate-interval", args->evaluate_interval_s,
                "What-if: [agent] evaluate_interval in seconds (default: the agent's, 5 s)");
  b->add_option("--workload-interval", args->workload_interval_s,
                "What-if: [workload] interval in seconds (default: the agent's, 5 s)");
  b->callback([args, &app] { app.exit_code = RunRest(*args); });
}

}  // namespace faultline::cli
