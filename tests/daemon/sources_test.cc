#include "daemon/sources.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "core/json.h"
#include "daemon/agent.h"
#include "sim/fake_sysfs/fake_sysfs.h"
#include "sim/mock_bmc/mock_bmc.h"
#include "store/store.h"
#include "test_util.h"

namespace faultline::daemon {
namespace {

using testing::kBoot;
using testing::kSec;
using testing::kT0;
using testing::QuietConfig;
using testing::ScratchDir;

int64_t FarDeadline() { return int64_t{1} << 62; }

TEST(DaemonSources, SysfsReadsAFakeTree) {
  const std::string root = FakeSysfsScratchDir("daemon_sysfs");
  auto tree = FakeSysfsTree::Create(root);
  ASSERT_TRUE(tree.ok()) << tree.status().ToString();
  FakeClock clock(kT0, kBoot);
  SysfsSection options;
  options.root = root;
  auto source = MakeSysfsSource(options, "node7", clock, nullptr);
  auto batch = source->Poll(FarDeadline());
  std::filesystem::remove_all(root);
  ASSERT_TRUE(batch.ok()) << batch.status().ToString();
  ASSERT_FALSE(batch->observations.empty());
  for (const Observation& o : batch->observations) {
    EXPECT_EQ(o.layer, Layer::kFabric);
    EXPECT_EQ(o.node, "node7");
  }
}

TEST(DaemonSources, SysfsWithNothingReadableIsUnavailable) {
  FakeClock clock(kT0, kBoot);
  SysfsSection options;
  options.root = "/nonexistent/faultline-root";
  auto source = MakeSysfsSource(options, "node7", clock, nullptr);
  auto batch = source->Poll(FarDeadline());
  ASSERT_FALSE(batch.ok());
  EXPECT_EQ(batch.status().code(), StatusCode::kUnavailable);
}

TEST(DaemonSources, AgentOnFakeSysfsFindsADowntrainedLink) {
  ScratchDir dir("sysfs_agent");
  const std::string root = FakeSysfsScratchDir("daemon_sysfs_agent");
  auto tree = FakeSysfsTree::Create(root);
  ASSERT_TRUE(tree.ok()) << tree.status().ToString();
  FakeClock clock(kT0, kBoot);
  std::ostringstream log;
  Logger logger(log, LogLevel::kWarn, clock);
  AgentConfig config = QuietConfig(dir);
  config.sysfs.enabled = true;
  config.sysfs.root = root;
  auto agent = Agent::Create(config, clock, logger);
  ASSERT_TRUE(agent.ok()) << agent.status().ToString();
  ASSERT_TRUE((*agent)->RunOnce().ok());
  const std::string gpu = tree->Bdfs("gpu").front();
  ASSERT_TRUE(tree->SetLink(gpu, 16.0, 8).ok());  // Gen5 x16 -> Gen4 x8
  for (int i = 0; i < 3; ++i) {
    clock.Advance(10 * kSec);
    ASSERT_TRUE((*agent)->RunOnce().ok());
  }
  const auto dx = (*agent)->LastDiagnoses();
  ASSERT_TRUE((*agent)->Stop().ok());
  std::filesystem::remove_all(root);
  ASSERT_FALSE(dx.empty());
  EXPECT_EQ(dx.front().fault_class, FaultClass::kPcieLinkDegraded) << dx.front().summary;
  EXPECT_GT((*agent)->stats().observations_inserted, 0u);
}

std::string FakeNvmlLibrary() { return std::string(FAULTLINE_BINARY_DIR) + "/src/sim/fake_nvml/libnvidia-ml.so.1"; }

TEST(DaemonSources, NvmlReadsTheFakeLibrary) {
  if (!std::filesystem::exists(FakeNvmlLibrary())) GTEST_SKIP() << "fake NVML library not built";
  const std::string state = std::string(FAULTLINE_SOURCE_DIR) + "/fuzz/corpus/fake_nvml_state/hgx_h100_8gpu.json";
  if (!std::filesystem::exists(state)) GTEST_SKIP() << "fake NVML state file absent";
  ::setenv("FAKE_NVML_STATE", state.c_str(), 1);
  FakeClock clock(kT0, kBoot);
  NvmlSection options;
  options.library_path = FakeNvmlLibrary();
  auto source = MakeNvmlSource(options, "node7", clock);
  auto batch = source->Poll(FarDeadline());
  ASSERT_TRUE(batch.ok()) << batch.status().ToString();
  ASSERT_FALSE(batch->observations.empty());
  size_t gpu_layer = 0;
  for (const Observation& o : batch->observations) {
    EXPECT_EQ(o.source, Source::kNvml);
    EXPECT_EQ(o.node, "node7");
    gpu_layer += o.layer == Layer::kGpu;  // NVLink/PCIe readings are fabric-layer
  }
  EXPECT_GT(gpu_layer, 0u);
}

// With NVML's event API the source waits for news between polls: a GPU falling off the
// bus makes WaitForData return at once (not at the 10 s interval), and the poll after it
// reports the lost GPU, which wakes the evaluation (nvml_events.h).
TEST(DaemonSources, NvmlWaitsForEventsAndALostGpuEndsTheWait) {
  if (!std::filesystem::exists(FakeNvmlLibrary())) GTEST_SKIP() << "fake NVML library not built";
  const std::string corpus = std::string(FAULTLINE_SOURCE_DIR) + "/fuzz/corpus/fake_nvml_state/hgx_h100_8gpu.json";
  if (!std::filesystem::exists(corpus)) GTEST_SKIP() << "fake NVML state file absent";
  ScratchDir dir("nvml_events");
  const std::string state = dir.File("state.json");
  Json healthy = Json::parse(std::ifstream(corpus));
  std::ofstream(state) << healthy.dump();
  ::setenv("FAKE_NVML_STATE", state.c_str(), 1);
  FakeClock clock(kT0, kBoot);
  NvmlSection options;
  options.library_path = FakeNvmlLibrary();
  auto source = MakeNvmlSource(options, "node7", clock);
  ASSERT_TRUE(source->Poll(FarDeadline()).ok());
  ASSERT_TRUE(source->CanWaitForData());
  std::thread falls_off([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    Json lost = healthy;
    lost["gpus"][3]["lost"] = true;
    std::ofstream(state + ".tmp") << lost.dump();
    std::rename((state + ".tmp").c_str(), state.c_str());
  });
  source->WaitForData(int64_t{600} * kSec);  // returns on the event (a hang here is the failure)
  falls_off.join();
  auto batch = source->Poll(FarDeadline());
  ASSERT_TRUE(batch.ok()) << batch.status().ToString();
  size_t lost = 0;
  for (const Observation& o : batch->observations) lost += o.kind == ObsKind::kGpuLost && o.component.name == "3";
  EXPECT_EQ(lost, 1u);
  // Nothing new: Cancel ends the next wait (the agent's stop).
  std::thread stopper([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    source->Cancel();
  });
  source->WaitForData(int64_t{600} * kSec);
  stopper.join();
  ::unsetenv("FAKE_NVML_STATE");
}

TEST(DaemonSources, MissingNvmlLibraryIsAnErrorNotACrash) {
  FakeClock clock(kT0, kBoot);
  NvmlSection options;
  options.library_path = "/nonexistent/libnvidia-ml.so.1";
  auto source = MakeNvmlSource(options, "node7", clock);
  EXPECT_FALSE(source->Poll(FarDeadline()).ok());
  EXPECT_FALSE(source->Poll(FarDeadline()).ok());  // retried, still absent
}

// A loopback port free right now: the kernel picks it for a socket that never connects, so
// it leaves no TIME_WAIT behind (a port derived from the pid could be taken or lingering).
int FreeLoopbackPort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  int port = -1;
  if (fd >= 0 && ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  if (fd >= 0) ::close(fd);
  return port;
}

TEST(DaemonSources, WorkloadHttpOnLoopback) {
  FakeClock clock(kT0, kBoot);
  const int port = FreeLoopbackPort();
  ASSERT_GT(port, 0);
  auto source = MakeWorkloadHttpSource(WorkloadSection{.listen = "127.0.0.1:" + std::to_string(port)}, "node7", clock);
  auto first = source->Poll(FarDeadline());
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_TRUE(first->observations.empty());
  httplib::Client client("127.0.0.1", port);
  auto reply =
      client.Post("/v1/workload", R"({"job":"llama","rank":0,"step":10,"step_time_s":1.5})", "application/json");
  ASSERT_TRUE(reply) << "no reply";
  EXPECT_LT(reply->status, 300);
  auto batch = source->Poll(FarDeadline());
  ASSERT_TRUE(batch.ok());
  ASSERT_EQ(batch->observations.size(), 1u);
  EXPECT_EQ(batch->observations.front().layer, Layer::kWorkload);
  source->Shutdown();
}

TEST(DaemonSources, WorkloadHttpBadListenAddressIsAnError) {
  FakeClock clock(kT0, kBoot);
  auto source = MakeWorkloadHttpSource(WorkloadSection{.listen = "127.0.0.1:notaport"}, "node7", clock);
  EXPECT_FALSE(source->Poll(FarDeadline()).ok());
}

TEST(DaemonSources, WorkloadFileResumesFromItsCursor) {
  ScratchDir dir("workload_file");
  const std::string path = dir.File("steps.log");
  testing::AppendText(path, "job=a step=1 step_time_s=1\njob=a step=2 step_time_s=1\n");
  FakeClock clock(kT0, kBoot);
  auto source = MakeWorkloadFileSource(path, "node7", clock, std::nullopt);
  auto batch = source->Poll(FarDeadline());
  ASSERT_TRUE(batch.ok()) << batch.status().ToString();
  EXPECT_EQ(batch->observations.size(), 2u);
  ASSERT_EQ(batch->cursors.size(), 1u);
  testing::AppendText(path, "job=a step=3 step_time_s=1\n");
  auto resumed = MakeWorkloadFileSource(path, "node7", clock, batch->cursors.front().value);
  auto more = resumed->Poll(FarDeadline());
  ASSERT_TRUE(more.ok());
  EXPECT_EQ(more->observations.size(), 1u);
}

}  // namespace
}  // namespace faultline::daemon

namespace faultline::daemon {
namespace {

TEST(DaemonSources, AgentSweepsTheMockBmcAndDeletesItsSessionAtStop) {
  const std::string mockup = std::string(FAULTLINE_SOURCE_DIR) + "/tests/mock_bmc/data/mini-server";
  if (!std::filesystem::exists(mockup)) GTEST_SKIP() << "mini-server mockup absent";
  sim::MockBmcOptions bmc_options;
  bmc_options.mockup_dir = mockup;
  auto bmc = sim::MockBmc::Start(bmc_options);
  ASSERT_TRUE(bmc.ok()) << bmc.status().ToString();

  ScratchDir dir("redfish");
  const std::string password_file = dir.File("bmc.pw");
  testing::AppendText(password_file, bmc_options.password + "\n");
  std::filesystem::permissions(password_file, std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  AgentConfig config = QuietConfig(dir);
  config.redfish.url = (*bmc)->base_url();
  config.redfish.user = bmc_options.username;
  config.redfish.password_file = password_file;
  config.redfish.ca_file = (*bmc)->ca_cert_path();
  FakeClock clock(kT0, kBoot);
  std::ostringstream log;
  Logger logger(log, LogLevel::kDebug, clock);
  auto agent = Agent::Create(config, clock, logger);
  ASSERT_TRUE(agent.ok()) << agent.status().ToString();
  ASSERT_TRUE((*agent)->RunOnce().ok());
  EXPECT_EQ((*agent)->stats().poll_failures, 0u) << log.str();
  EXPECT_GT((*agent)->stats().observations_inserted, 0u) << log.str();
  EXPECT_EQ((*bmc)->sessions_created(), 1u);
  ASSERT_TRUE((*agent)->Stop().ok());
  EXPECT_EQ((*bmc)->sessions_deleted(), 1u);
  EXPECT_EQ(log.str().find(bmc_options.password), std::string::npos);  // never logged
}

TEST(DaemonSources, UnreachableBmcIsUnavailableNotFatal) {
  ScratchDir dir("redfish_down");
  AgentConfig config = QuietConfig(dir);
  config.redfish.url = "https://127.0.0.1:1";  // nothing listens on port 1
  config.redfish.sweep_deadline_ns = 2 * kSec;
  FakeClock clock(kT0, kBoot);
  std::ostringstream log;
  Logger logger(log, LogLevel::kWarn, clock);
  auto agent = Agent::Create(config, clock, logger);
  ASSERT_TRUE(agent.ok()) << agent.status().ToString();
  ASSERT_TRUE((*agent)->RunOnce().ok());
  EXPECT_EQ((*agent)->stats().poll_failures, 1u);
  EXPECT_NE(log.str().find("source redfish unavailable"), std::string::npos) << log.str();
  ASSERT_TRUE((*agent)->Stop().ok());
}

}  // namespace
}  // namespace faultline::daemon
