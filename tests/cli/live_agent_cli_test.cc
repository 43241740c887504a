// End-to-end in real time (issue 24), the combination operators run: `faultline sim` serves a
// node in real time, the production `faultline agent` watches it with the config the
// simulator wrote, and `faultline check --slurm` (Slurm's health check, without --apply)
// reads the store the agent is writing. GPU 2 falls off the bus 10 s in and the policy
// records its drain as a dry run (the default), at once or after the diagnosis has settled
// (policy/rules.h NeedsNoSettling; the settle is 20 s). The test waits for that or for the
// node's 60 s to end, and asserts what was decided, never how fast. scripts/live-agent.sh
// runs the shipped scenarios the same way, several times.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <regex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "run_faultline.h"
#include "store/store.h"

namespace faultline {
namespace {

namespace fs = std::filesystem;
using testing_cli::Faultline;
using testing_cli::RunResult;
using testing_cli::Slurp;

const std::string kNode = "sim-node";  // the node name in the agent.toml `faultline sim` writes

// A child process of the built `faultline`; stdout and stderr go to `log`, and `env_name`
// (when given) is set to `env_value` in its environment. SIGTERM at scope exit.
class Child {
 public:
  Child(std::vector<std::string> args, const std::string& log, const std::string& env_name = "",
        const std::string& env_value = "") {
    args.insert(args.begin(), std::string(FAULTLINE_BINARY_DIR) + "/faultline");
    pid_ = fork();
    if (pid_ != 0) return;
    if (!env_name.empty()) setenv(env_name.c_str(), env_value.c_str(), 1);
    const int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    dup2(fd, 1);
    dup2(fd, 2);
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    _exit(127);
  }
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;
  ~Child() { Stop(); }

  // False once it has exited (reaped here).
  bool Running() {
    if (pid_ <= 0 || exited_) return false;
    if (waitpid(pid_, &status_, WNOHANG) == pid_) exited_ = true;
    return !exited_;
  }
  // SIGTERM if it still runs, then its exit code (-1 when a signal ended it).
  int Stop() {
    if (Running()) {
      kill(pid_, SIGTERM);
      waitpid(pid_, &status_, 0);
      exited_ = true;
    }
    return exited_ && WIFEXITED(status_) ? WEXITSTATUS(status_) : -1;
  }

 private:
  pid_t pid_ = -1;
  bool exited_ = false;
  int status_ = 0;
};

// The value `faultline sim` prints for FAKE_NVML_STATE ("" if it exits first or never says).
std::string WaitForNvmlState(Child& sim, const std::string& log) {
  const std::regex re(R"(FAKE_NVML_STATE=(\S+))");
  for (int i = 0; i < 600 && sim.Running(); ++i) {
    std::smatch m;
    const std::string text = Slurp(log);
    if (std::regex_search(text, m, re)) return m[1].str();
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return "";
}

// Asks the health check once a second until it reports the agent's dry-run drain or the
// node's scenario ends; then once more, so the answer is what the store says at the end.
RunResult CheckUntilDrainDecided(Child& sim, const std::string& store) {
  const std::string args = "check --slurm --store " + store + " --node " + kNode;
  while (sim.Running()) {
    RunResult r = Faultline(args);
    if (r.out.find("(dry run") != std::string::npos) return r;
    std::this_thread::sleep_for(std::chrono::seconds(1));
  }
  return Faultline(args);
}

std::string Attr(const ActionRecord& r, const std::string& key) {
  auto it = r.attrs.find(key);
  return it == r.attrs.end() ? "" : it->second;
}

// Decisions taken (carried out or a dry run; not held, withdrawn or refused), one per
// ledger key as "<class> for <fault key> (<state>[, dry run])", in the order stored.
std::vector<std::string> TakenDecisions(const std::string& store_path) {
  StoreOptions options;
  options.read_only = true;
  auto store = Store::Open(store_path, options);
  if (!store.ok()) return {"store: " + store.status().ToString()};
  RecordQuery q;
  q.node = kNode;
  auto rows = (*store)->ListActions(q);
  if (!rows.ok()) return {"actions: " + rows.status().ToString()};
  const std::set<std::string> taken{"dry_run", "decided", "done", "failed"};
  std::set<std::string> keys;
  std::vector<std::string> out;
  for (const auto& row : rows->rows) {
    const ActionRecord& a = row.value;
    if (!taken.contains(Attr(a, "state")) || !keys.insert(Attr(a, "key")).second) continue;
    out.push_back(Attr(a, "class") + " for " + Attr(a, "fault") + " (" + Attr(a, "state") +
                  (a.dry_run ? ", dry run)" : ")"));
  }
  return out;
}

std::string Joined(const std::vector<std::string>& lines) {
  std::string s;
  for (const std::string& l : lines) s += l + "\n";
  return s;
}

class CliLiveAgent : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "/live_agent_cli." + std::to_string(getpid());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string dir_;
};

TEST_F(CliLiveAgent, FellOffBusIsDrainedAsADryRunAndTheHealthCheckSaysDrain) {
  const std::string node_dir = dir_ + "/node";  // made by the simulator (one level)
  const std::string store = node_dir + "/faultline.db";
  const std::string sim_log = dir_ + "/sim.log";
  const std::string agent_log = dir_ + "/agent.log";
  Child sim({"sim", "--scenario", std::string(FAULTLINE_SOURCE_DIR) + "/tests/cli/data/live-gpu2-fell-off-bus.yaml",
             "--workdir", node_dir},
            sim_log);
  const std::string nvml_state = WaitForNvmlState(sim, sim_log);
  ASSERT_FALSE(nvml_state.empty()) << Slurp(sim_log);
  Child agent({"agent", "--config", node_dir + "/agent.toml"}, agent_log, "FAKE_NVML_STATE", nvml_state);

  const RunResult check = CheckUntilDrainDecided(sim, store);
  EXPECT_EQ(sim.Stop(), 0) << Slurp(sim_log);
  EXPECT_EQ(agent.Stop(), 0) << Slurp(agent_log);
  // Slurm's health check (report only): the node must be drained, the agent decided it as a dry run.
  EXPECT_EQ(check.exit_code, 1) << check.out << check.err;
  EXPECT_NE(check.out.find("faultline: drain: " + kNode + ": gpu_fell_off_bus "), std::string::npos)
      << check.out << Slurp(agent_log);
  EXPECT_NE(check.out.find("not drained (dry run; --apply drains)"), std::string::npos) << check.out;

  // The store the agent wrote: a dry-run drain for the lost GPU, and no decision for anything else.
  const std::vector<std::string> taken = TakenDecisions(store);
  bool drain = false;
  std::vector<std::string> wrong;
  for (const std::string& d : taken) {
    drain = drain || (d.starts_with("drain for gpu_fell_off_bus|") && d.ends_with("(dry_run, dry run)"));
    if (d.find(" for gpu_fell_off_bus|") == std::string::npos) wrong.push_back(d);
  }
  EXPECT_TRUE(drain) << "decisions taken:\n" << Joined(taken) << Slurp(agent_log);
  EXPECT_TRUE(wrong.empty()) << "decisions for another fault class:\n" << Joined(wrong);
}

}  // namespace
}  // namespace faultline
