// End to end: the real `faultline agent` binary as a child process, stopped by SIGTERM,
// then `faultline why-slow` over the store it left. Skipped when the CLI is not built.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <thread>

#include "store/store.h"
#include "test_util.h"

namespace faultline::daemon {
namespace {

using testing::AppendText;
using testing::ScratchDir;

std::string Binary() { return std::string(FAULTLINE_BINARY_DIR) + "/faultline"; }

int64_t StoredDiagnoses(const std::string& path) {
  if (!std::filesystem::exists(path)) return 0;
  // Read-only, as why-slow opens it: the poll must not race the agent to create the schema.
  StoreOptions options;
  options.read_only = true;
  auto store = Store::Open(path, options);
  if (!store.ok()) return 0;
  auto stats = (*store)->Stats();
  return stats.ok() ? stats->diagnoses : 0;
}

// Waits (bounded; no timing is asserted) for the child to exit; -1 if it did not.
int WaitExit(pid_t pid, int max_tries) {
  for (int i = 0; i < max_tries; ++i) {
    int status = 0;
    if (::waitpid(pid, &status, WNOHANG) == pid) return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return -1;
}

std::string RunCapture(const std::string& command) {
  std::string out;
  FILE* p = ::popen(command.c_str(), "r");
  if (p == nullptr) return out;
  char buf[4096];
  size_t n = 0;
  while ((n = std::fread(buf, 1, sizeof(buf), p)) > 0) out.append(buf, n);
  ::pclose(p);
  return out;
}

TEST(DaemonProcess, SigtermStopsTheAgentCleanlyAndWhySlowReadsItsStore) {
  if (!std::filesystem::exists(Binary())) GTEST_SKIP() << "faultline CLI not built";
  ScratchDir dir("process");
  const std::string log = dir.File("kern.log");
  const std::string store = dir.File("store.db");
  AppendText(log,
             "[  103.000001] NVRM: Xid (PCI:0000:b5:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off "
             "the bus.\n");
  const std::string config = dir.File("agent.toml");
  AppendText(config, "[agent]\nnode = \"node7\"\nstore_path = \"" + store +
                         "\"\nevaluate_interval = \"50ms\"\nlog_level = \"debug\"\n"
                         "[kmsg]\npath = \"" +
                         log +
                         "\"\ninterval = \"50ms\"\n"
                         "[nvml]\nenabled = false\n[sysfs]\nenabled = false\n"
                         // "[ 103.0]" lines are dated from this host's boot: keep them in the window.
                         "[isolate]\nwindow = \"3650d\"\n");
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    const std::string err = dir.File("agent.err");
    if (std::freopen(err.c_str(), "w", stderr) == nullptr) ::_exit(126);
    ::execl(Binary().c_str(), "faultline", "agent", "--config", config.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  for (int i = 0; i < 400 && StoredDiagnoses(store) == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_EQ(::kill(pid, SIGTERM), 0);
  const int rc = WaitExit(pid, 400);
  if (rc == -1) {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
  }
  ASSERT_EQ(rc, 0) << RunCapture("cat " + dir.File("agent.err"));
  EXPECT_NE(RunCapture("cat " + dir.File("agent.err")).find("received SIGTERM"), std::string::npos);
  EXPECT_EQ(StoredDiagnoses(store), 1);

  const std::string json = RunCapture(Binary() + " why-slow --node node7 --store " + store + " --json");
  EXPECT_NE(json.find("\"primary\""), std::string::npos) << json;
  EXPECT_NE(json.find("gpu_fell_off_bus"), std::string::npos) << json;
}

// why-slow never writes: it reads a store in a directory it may not write to (as an
// unprivileged user when the test runs as root, since root writes through mode bits).
TEST(DaemonProcess, WhySlowReadsAReadOnlyStore) {
  if (!std::filesystem::exists(Binary())) GTEST_SKIP() << "faultline CLI not built";
  ScratchDir dir("process_ro");
  const std::string sub = dir.File("ro");
  std::filesystem::create_directories(sub);
  const std::string store = sub + "/store.db";
  {
    auto s = Store::Open(store);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    Finding f;
    f.layer = Layer::kGpu;
    f.fault_class = FaultClass::kGpuFellOffBus;
    f.component = ComponentRef{ComponentType::kGpu, "3", {}};
    f.severity = Severity::kFatal;
    f.action = Action::kResetGpu;
    f.confidence = 0.9;
    f.first_ns = f.last_ns = 1'772'359'200LL * 1'000'000'000;
    ASSERT_TRUE((*s)->PutFinding("node7", f).ok());
  }
  ::chmod(store.c_str(), 0444);
  ::chmod(sub.c_str(), 0555);
  ::chmod(dir.path().c_str(), 0755);
  const std::string out = dir.File("out.json");
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    if (std::freopen(out.c_str(), "w", stdout) == nullptr) ::_exit(126);
    if (::geteuid() == 0 && (::setgid(65534) != 0 || ::setuid(65534) != 0)) ::_exit(125);
    ::execl(Binary().c_str(), "faultline", "why-slow", "--node", "node7", "--store", store.c_str(), "--json",
            static_cast<char*>(nullptr));
    ::_exit(127);
  }
  const int rc = WaitExit(pid, 400);
  ::chmod(sub.c_str(), 0755);
  EXPECT_EQ(rc, 0);
  const std::string json = RunCapture("cat " + out);
  EXPECT_NE(json.find("gpu_fell_off_bus"), std::string::npos) << json;
  EXPECT_FALSE(std::filesystem::exists(store + "-wal"));
}

TEST(DaemonProcess, WhySlowWithoutAStoreIsAUsageError) {
  if (!std::filesystem::exists(Binary())) GTEST_SKIP() << "faultline CLI not built";
  const int status = std::system((Binary() + " why-slow --node n --store /nonexistent/x.db 2>/dev/null").c_str());
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 2);
}

TEST(DaemonProcess, AgentWithBadConfigIsAUsageError) {
  if (!std::filesystem::exists(Binary())) GTEST_SKIP() << "faultline CLI not built";
  ScratchDir dir("process_bad");
  const std::string config = dir.File("agent.toml");
  AppendText(config, "[nvml]\nintervall = 3\n");
  const int status = std::system((Binary() + " agent --config " + config + " 2>/dev/null").c_str());
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 2);
}

}  // namespace
}  // namespace faultline::daemon
