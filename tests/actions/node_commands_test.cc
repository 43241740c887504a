// GPU reset and node reboot actuators (node_commands.h) with a fake command runner: which
// GPU a component names (and the refusals), the argv run, and the reboot's crash safety
// through the boot id marker.
#include "actions/node_commands.h"

#include <gtest/gtest.h>
#include <sys/statfs.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace faultline::actions {
namespace {

namespace fs = std::filesystem;

class FakeRunner final : public ipmi::CommandRunner {
 public:
  Result<std::string> Run(const std::vector<std::string>& argv, const ipmi::CommandOptions& options) override {
    calls.push_back(argv);
    timeouts.push_back(options.timeout_ms);
    return next;
  }
  std::vector<std::vector<std::string>> calls;
  std::vector<int64_t> timeouts;
  Result<std::string> next = std::string();
};

ComponentRef Gpu(std::string name, std::map<std::string, std::string> keys = {}) {
  return ComponentRef{ComponentType::kGpu, std::move(name), std::move(keys)};
}

Decision DecisionFor(ActionClass c, ComponentRef component,
                     std::string key = "gpu-node-7|x|hbm_uncorrectable|gpu/3|1") {
  Decision d;
  d.key = std::move(key);
  d.node = d.target_node = "gpu-node-7";
  d.action_class = c;
  d.diagnosis_id = 9;
  d.diagnosis.fault_class = FaultClass::kHbmUncorrectable;
  d.diagnosis.component = std::move(component);
  return d;
}

std::string Slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(GpuSelector, PrefersTheBusIdThenUuidThenIndex) {
  const std::string uuid = "GPU-0d6f2c4e-8a1b-4b7e-9c55-2f3a1e0b9d41";
  EXPECT_EQ(*GpuSelector(Gpu("3", {{"index", "3"}, {"uuid", uuid}, {"bdf", "0000:3b:00.0"}})), "0000:3b:00.0");
  // NVML's 8-digit domain and upper case name the same device.
  EXPECT_EQ(*GpuSelector(Gpu("3", {{"pci_bus_id", "00000000:3B:00.0"}})), "0000:3b:00.0");
  EXPECT_EQ(*GpuSelector(Gpu("0000:b5:00.0")), "0000:b5:00.0");  // the isolator named it by bus id
  EXPECT_EQ(*GpuSelector(Gpu(uuid)), uuid);
  EXPECT_EQ(*GpuSelector(Gpu("3", {{"uuid", uuid}, {"serial", "1322021000457"}})), uuid);
  EXPECT_EQ(*GpuSelector(Gpu("7")), "7");
  EXPECT_EQ(*GpuSelector(Gpu("07", {{"index", "7"}})), "7");
}

TEST(GpuSelector, RefusesWhatDoesNotNameOneGpu) {
  const std::pair<ComponentRef, const char*> cases[] = {
      {ComponentRef{ComponentType::kNvlink, "3/11", {}}, "is not a GPU"},
      {ComponentRef{ComponentType::kHost, "", {}}, "is not a GPU"},
      {Gpu("0000:3b:00.0", {{"bdf", "0000:b5:00.0"}}), "ambiguous"},
      {Gpu("3", {{"index", "4"}}), "ambiguous"},
      {Gpu("GPU-aaaa1111", {{"uuid", "GPU-bbbb2222"}}), "ambiguous"},
      {Gpu("", {}), "names no PCI bus id"},
      {Gpu("A100-SXM4-80GB", {{"serial", "1322021000457"}}), "names no PCI bus id"},
      {Gpu("-i 0; reboot", {}), "names no PCI bus id"},
      {Gpu("99999", {}), "names no PCI bus id"},
  };
  for (const auto& [component, want] : cases) {
    auto s = GpuSelector(component);
    ASSERT_FALSE(s.ok()) << component.Id();
    EXPECT_EQ(s.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(s.status().message().find(want), std::string::npos) << s.status().message();
    EXPECT_NE(s.status().message().find("nothing was reset"), std::string::npos);
  }
}

TEST(GpuResetActuator, RunsTheConfiguredCommandForTheDiagnosedGpuOnly) {
  FakeRunner runner;
  GpuResetActuator reset(runner);
  EXPECT_TRUE(reset.Handles(ActionClass::kResetGpu));
  EXPECT_FALSE(reset.Handles(ActionClass::kRebootNode));
  EXPECT_FALSE(reset.Handles(ActionClass::kDrain));
  const Decision d = DecisionFor(ActionClass::kResetGpu, Gpu("3", {{"index", "3"}, {"bdf", "0000:3b:00.0"}}));
  ASSERT_TRUE(reset.Apply(d).ok());
  ASSERT_EQ(runner.calls.size(), 1u);
  EXPECT_EQ(runner.calls[0], (std::vector<std::string>{"nvidia-smi", "--gpu-reset", "-i", "0000:3b:00.0"}));
  EXPECT_GT(runner.timeouts[0], 0);
  // A reset leaves nothing to observe: the policy re-applies after a crash.
  EXPECT_EQ(*reset.Observe(d), Observed::kUnknown);

  // A site's wrapper without the placeholder gets the GPU appended.
  FakeRunner custom_runner;
  GpuResetActuator custom(custom_runner, {{"/usr/local/sbin/gpu-reset", "--wait"}, 5000});
  ASSERT_TRUE(custom.Apply(DecisionFor(ActionClass::kResetGpu, Gpu("5"))).ok());
  EXPECT_EQ(custom_runner.calls[0], (std::vector<std::string>{"/usr/local/sbin/gpu-reset", "--wait", "5"}));
  EXPECT_EQ(custom_runner.timeouts[0], 5000);

  // Refused before anything runs.
  EXPECT_EQ(reset.Apply(DecisionFor(ActionClass::kResetGpu, Gpu("3", {{"index", "4"}}))).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(reset.Apply(DecisionFor(ActionClass::kRebootNode, Gpu("3"))).code(), StatusCode::kUnsupported);
  EXPECT_EQ(runner.calls.size(), 1u);

  // The tool failing is an error the policy stores as failed.
  runner.next = Status(StatusCode::kUnavailable, "GPU 00000000:3B:00.0 is in use by another client");
  Status failed = reset.Apply(d);
  EXPECT_EQ(failed.code(), StatusCode::kUnavailable);
  EXPECT_NE(failed.message().find("nvidia-smi"), std::string::npos);
  EXPECT_NE(failed.message().find("in use"), std::string::npos);
}

class RebootTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) / ("reboot_" + std::to_string(getpid()) + "_" +
                                             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    options_.state_dir = (dir_ / "state").string();
    options_.boot_id_path = (dir_ / "boot_id").string();
    Boot("0a1b2c3d-1111-4222-8333-444455556666");
  }
  void Boot(const std::string& id) { std::ofstream(options_.boot_id_path) << id << "\n"; }

  fs::path dir_;
  RebootOptions options_;
  FakeRunner runner_;
};

TEST_F(RebootTest, RebootsOnceAndNeverAgainAfterTheNodeCameBack) {
  RebootActuator reboot(runner_, options_);
  EXPECT_TRUE(reboot.Handles(ActionClass::kRebootNode));
  EXPECT_FALSE(reboot.Handles(ActionClass::kResetGpu));
  const Decision d = DecisionFor(ActionClass::kRebootNode, ComponentRef{ComponentType::kHost, "", {}});
  EXPECT_EQ(*reboot.Observe(d), Observed::kNotInEffect);
  ASSERT_TRUE(reboot.Apply(d).ok());
  ASSERT_EQ(runner_.calls.size(), 1u);
  EXPECT_EQ(runner_.calls[0], (std::vector<std::string>{"systemctl", "reboot"}));
  // The marker holds this boot's id, written before the command ran.
  EXPECT_EQ(Slurp(reboot.MarkerPath(d)), "0a1b2c3d-1111-4222-8333-444455556666\n");
  EXPECT_EQ(fs::path(reboot.MarkerPath(d)).parent_path(), fs::path(options_.state_dir));

  // Still the same boot (the agent restarted before the shutdown got to it): not yet in
  // effect, and running the command again is still one reboot.
  EXPECT_EQ(*reboot.Observe(d), Observed::kNotInEffect);

  // The node came back: a new boot id. The decision is in effect; Apply does nothing.
  Boot("99999999-aaaa-4bbb-8ccc-dddddddddddd");
  RebootActuator after_restart(runner_, options_);
  EXPECT_EQ(*after_restart.Observe(d), Observed::kInEffect);
  ASSERT_TRUE(after_restart.Apply(d).ok());
  EXPECT_EQ(runner_.calls.size(), 1u);

  // Another decision (another fault, after the reboot) is its own marker: it may reboot.
  const Decision other =
      DecisionFor(ActionClass::kRebootNode, ComponentRef{ComponentType::kHost, "", {}}, "gpu-node-7|reboot_node|x|y|2");
  EXPECT_NE(after_restart.MarkerPath(other), after_restart.MarkerPath(d));
  EXPECT_EQ(*after_restart.Observe(other), Observed::kNotInEffect);
  ASSERT_TRUE(after_restart.Apply(other).ok());
  EXPECT_EQ(runner_.calls.size(), 2u);
}

TEST_F(RebootTest, NothingRunsWithoutABootIdOrAMarker) {
  const Decision d = DecisionFor(ActionClass::kRebootNode, ComponentRef{ComponentType::kHost, "", {}});
  for (const std::string& bad : {std::string(""), std::string("not a boot id\n"), std::string(200, 'a')}) {
    std::ofstream(options_.boot_id_path) << bad;
    RebootActuator reboot(runner_, options_);
    EXPECT_EQ(reboot.Apply(d).code(), StatusCode::kUnavailable) << bad;
    EXPECT_EQ(reboot.Observe(d).status().code(), StatusCode::kUnavailable);
  }
  options_.boot_id_path = (dir_ / "missing").string();
  EXPECT_EQ(RebootActuator(runner_, options_).Apply(d).code(), StatusCode::kUnavailable);
  EXPECT_TRUE(runner_.calls.empty());

  // The marker cannot be written (state_dir is a file): no reboot without crash safety.
  options_.boot_id_path = (dir_ / "boot_id").string();
  Boot("0a1b2c3d-1111-4222-8333-444455556666");
  std::ofstream(dir_ / "blocker") << "x";
  options_.state_dir = (dir_ / "blocker").string();
  Status s = RebootActuator(runner_, options_).Apply(d);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("not rebooting"), std::string::npos) << s.message();
  EXPECT_TRUE(runner_.calls.empty());
}

TEST_F(RebootTest, ACommandThatFailsIsAnErrorAndAnEmptyMarkerIsNotAReboot) {
  options_.command = {"/usr/sbin/shutdown", "-r", "+0"};
  runner_.next = Status(StatusCode::kUnavailable, "Failed to connect to bus");
  RebootActuator reboot(runner_, options_);
  const Decision d = DecisionFor(ActionClass::kRebootNode, ComponentRef{ComponentType::kHost, "", {}});
  Status s = reboot.Apply(d);
  EXPECT_EQ(s.code(), StatusCode::kUnavailable);
  EXPECT_NE(s.message().find("/usr/sbin/shutdown"), std::string::npos);
  EXPECT_EQ(runner_.calls.at(0), options_.command);
  // A marker cut short by a crash while it was written (the command runs only after it).
  std::ofstream(reboot.MarkerPath(d), std::ios::trunc).flush();
  Boot("99999999-aaaa-4bbb-8ccc-dddddddddddd");
  EXPECT_EQ(*reboot.Observe(d), Observed::kNotInEffect);
}

TEST(CheckPersistentDir, RefusesTmpfs) {
  struct statfs fs {};
  if (::statfs("/dev/shm", &fs) != 0 || fs.f_type != 0x01021994) GTEST_SKIP() << "/dev/shm is not tmpfs here";
  Status s = CheckPersistentDir("/dev/shm/faultline/actions");
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("tmpfs"), std::string::npos);
}

TEST(CheckPersistentDir, AcceptsADiskDirectoryEvenBeforeItExists) {
  const fs::path here = fs::current_path() / ("not_yet_" + std::to_string(getpid())) / "actions";
  struct statfs fs {};
  ASSERT_EQ(::statfs(fs::current_path().c_str(), &fs), 0);
  if (fs.f_type == 0x01021994) GTEST_SKIP() << "the build directory is on tmpfs";
  EXPECT_TRUE(CheckPersistentDir(here.string()).ok());
  EXPECT_FALSE(fs::exists(here));  // checking creates nothing
}

}  // namespace
}  // namespace faultline::actions
