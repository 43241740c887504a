// resolve, active diagnoses, the policy over the Slurm actuator (in-memory Slurm double), and
// `faultline check --slurm` / `resolve` through the real binary on a store (no Slurm call
// needed without --apply; the real-Slurm run is tests/actions/slurm_real_test.sh).
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <filesystem>

#include "../actions/slurm_fake.h"
#include "actions/slurm.h"
#include "core/clock.h"
#include "policy/active.h"
#include "policy/engine.h"
#include "policy/resolve.h"
#include "policy_fakes.h"
#include "store/agent_state.h"
#include "store/store.h"

namespace faultline::policy {
namespace {

using actions::ActionClass;
using actions::testing::FakeSlurm;
using testing::MakeDiagnosis;

constexpr int64_t kT0 = 1'764'400'000LL * 1'000'000'000LL;
constexpr int64_t kSec = 1'000'000'000LL;

class PolicyResolveTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto s = Store::Open(":memory:");
    ASSERT_TRUE(s.ok());
    store_ = std::move(*s);
    fake_.nodes["gpu-7"] = {};
    fake_.nodes["gpu-8"] = {};
  }
  Row<Diagnosis> Put(const Diagnosis& d) {
    auto id = store_->PutDiagnosis("gpu-7", d, d.last_ns);
    EXPECT_TRUE(id.ok());
    return Row<Diagnosis>{*id, "gpu-7", d};
  }
  Engine MakeEngine() {
    PolicyConfig c;
    c.settle_ns = 0;  // settling has its own tests (policy_settle_test.cc)
    c.enable = {ActionClass::kDrain, ActionClass::kCordon};
    Engine e(c, *store_, "gpu-7", {&slurm_}, &slurm_);
    e.UseClock(nullptr, [](int64_t) {});  // the breaker's settle wait (policy_breaker_test.cc): no sleeping here
    return e;
  }
  std::unique_ptr<Store> store_;
  FakeSlurm fake_;
  actions::SlurmActuator slurm_{fake_};
};

TEST_F(PolicyResolveTest, DrainThenResolveResumesOnlyOurDrain) {
  auto row = Put(MakeDiagnosis(FaultClass::kGpuFellOffBus, Action::kDrain, GpuComponent("2"), kT0));
  Engine e = MakeEngine();
  auto out = e.OnDiagnoses({row}, kT0 + 60 * kSec);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  ASSERT_TRUE(fake_.nodes["gpu-7"].drained);
  EXPECT_EQ(fake_.nodes["gpu-7"].reason, "faultline: gpu_fell_off_bus gpu/2 gpu-7/d" + std::to_string(row.id));
  auto active = ActiveDiagnoses(*store_, "gpu-7");
  ASSERT_TRUE(active.ok());
  ASSERT_EQ(active->size(), 1u);

  auto r = ResolveIncident(*store_, row.id, "reseated GPU 2 (ops: kim)", &slurm_, "", kT0 + 3600 * kSec);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(r->resumed);
  EXPECT_FALSE(fake_.nodes["gpu-7"].drained);
  active = ActiveDiagnoses(*store_, "gpu-7");
  ASSERT_TRUE(active.ok());
  EXPECT_TRUE(active->empty());
  // Resolved: the policy does not drain again for the same incident, even re-diagnosed.
  ASSERT_TRUE(e.OnDiagnoses({row, Put(row.value)}, kT0 + 3700 * kSec).ok());
  EXPECT_FALSE(fake_.nodes["gpu-7"].drained);
  // Resolving again is harmless.
  auto again = ResolveIncident(*store_, row.id, "x", &slurm_, "", kT0 + 3800 * kSec);
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(again->already_resolved);
  // The resolution is kept with the incident.
  RecordQuery q;
  q.limit = 0;
  bool kept = false;
  auto listed = store_->ListActions(q);
  ASSERT_TRUE(listed.ok());
  for (const auto& a : listed->rows) {
    kept |= a.value.attrs.count("fixed_by") && a.value.attrs.at("fixed_by") == "reseated GPU 2 (ops: kim)";
  }
  EXPECT_TRUE(kept);
}

TEST_F(PolicyResolveTest, ResolveNeverResumesAnOperatorsDrain) {
  auto row = Put(MakeDiagnosis(FaultClass::kGpuFellOffBus, Action::kDrain, GpuComponent("2"), kT0));
  Engine e = MakeEngine();
  ASSERT_TRUE(e.OnDiagnoses({row}, kT0 + 60 * kSec).ok());
  // The operator re-drains with their own reason meanwhile.
  fake_.nodes["gpu-7"].reason = "bios update, ticket 99";
  auto r = ResolveIncident(*store_, row.id, "fixed", &slurm_, "", kT0 + 3600 * kSec);
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->resumed);
  EXPECT_TRUE(fake_.nodes["gpu-7"].drained);
  EXPECT_EQ(fake_.nodes["gpu-7"].reason, "bios update, ticket 99");
  // A diagnosis faultline never drained for: nothing is resumed either.
  fake_.nodes["gpu-8"] = {"IDLE", true, "faultline: other gpu/1 d999"};
  auto user = Put(MakeDiagnosis(FaultClass::kUserApplication, Action::kNotifyUser, GpuComponent("0"), kT0));
  auto r2 = ResolveIncident(*store_, user.id, "user fixed their job", &slurm_, "gpu-8", kT0 + 3600 * kSec);
  ASSERT_TRUE(r2.ok());
  EXPECT_FALSE(r2->resumed);
  EXPECT_TRUE(fake_.nodes["gpu-8"].drained);
}

// Each node's store numbers its own diagnoses: gpu-8's store has a diagnosis with the id of
// gpu-7's. Resolving gpu-8's, even aimed at gpu-7 (--slurm-node), never resumes gpu-7.
TEST_F(PolicyResolveTest, AnotherNodesDiagnosisWithTheSameIdNeverResumes) {
  auto other = Store::Open(":memory:");
  ASSERT_TRUE(other.ok());
  const Diagnosis fault = MakeDiagnosis(FaultClass::kGpuFellOffBus, Action::kDrain, GpuComponent("2"), kT0);
  const Row<Diagnosis> mine = Put(fault);
  auto their_id = (*other)->PutDiagnosis("gpu-8", fault, fault.last_ns);
  ASSERT_TRUE(their_id.ok());
  ASSERT_EQ(*their_id, mine.id);
  PolicyConfig c;
  c.settle_ns = 0;
  c.breaker_max_percent = 100.0;  // both nodes of this two-node fleet may go out
  c.enable = {ActionClass::kDrain};
  Engine on7(c, *store_, "gpu-7", {&slurm_}, &slurm_);
  Engine on8(c, **other, "gpu-8", {&slurm_}, &slurm_);
  for (Engine* e : {&on7, &on8}) e->UseClock(nullptr, [](int64_t) {});
  ASSERT_TRUE(on7.OnDiagnoses({mine}, kT0 + 60 * kSec).ok());
  ASSERT_TRUE(on8.OnDiagnoses({Row<Diagnosis>{*their_id, "gpu-8", fault}}, kT0 + 60 * kSec).ok());
  ASSERT_TRUE(fake_.nodes["gpu-7"].drained);
  ASSERT_TRUE(fake_.nodes["gpu-8"].drained);

  auto slip = ResolveIncident(**other, *their_id, "fixed", &slurm_, "gpu-7", kT0 + 3600 * kSec);
  ASSERT_TRUE(slip.ok()) << slip.status().ToString();
  EXPECT_FALSE(slip->resumed);
  EXPECT_TRUE(fake_.nodes["gpu-7"].drained);
  auto r = ResolveIncident(*store_, mine.id, "reseated GPU 2", &slurm_, "", kT0 + 3700 * kSec);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(r->resumed);
  EXPECT_FALSE(fake_.nodes["gpu-7"].drained);
  EXPECT_TRUE(fake_.nodes["gpu-8"].drained);
}

// A drain made before tags named the node ("... d<id>"): whose diagnosis it is cannot be
// told, so resolve leaves it, says how to resume by hand, and still closes the incident.
TEST_F(PolicyResolveTest, AnOldTagWithoutTheNodeIsLeftWithHowToResume) {
  auto row = Put(MakeDiagnosis(FaultClass::kGpuFellOffBus, Action::kDrain, GpuComponent("2"), kT0));
  fake_.nodes["gpu-7"] = {"IDLE", true, "faultline: gpu_fell_off_bus gpu/2 d" + std::to_string(row.id)};
  Engine e = MakeEngine();
  ASSERT_TRUE(e.OnDiagnoses({row}, kT0 + 60 * kSec).ok());  // already faultline's: recorded done
  auto r = ResolveIncident(*store_, row.id, "reseated GPU 2", &slurm_, "", kT0 + 3600 * kSec);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_FALSE(r->resumed);
  EXPECT_TRUE(fake_.nodes["gpu-7"].drained);
  bool told = false;
  for (const auto& note : r->notes) {
    told |= note.find("scontrol update nodename=gpu-7 state=resume") != std::string::npos;
  }
  EXPECT_TRUE(told);
  auto active = ActiveDiagnoses(*store_, "gpu-7");
  ASSERT_TRUE(active.ok());
  EXPECT_TRUE(active->empty());
}

TEST_F(PolicyResolveTest, ResolveEndsTheCooldownOfItsIncident) {
  auto first = Put(MakeDiagnosis(FaultClass::kGpuFellOffBus, Action::kDrain, GpuComponent("2"), kT0));
  Engine e = MakeEngine();
  ASSERT_TRUE(e.OnDiagnoses({first}, kT0 + 60 * kSec).ok());
  ASSERT_TRUE(fake_.nodes["gpu-7"].drained);
  // A second fault while the first is open: within the cool-down, held (the node is out anyway).
  auto second = Put(MakeDiagnosis(FaultClass::kHbmUncorrectable, Action::kRma, GpuComponent("5"), kT0 + 100 * kSec));
  auto held = e.OnDiagnoses({second}, kT0 + 120 * kSec);
  ASSERT_TRUE(held.ok());
  bool was_held = false;
  for (const auto& o : *held) was_held |= o.state == State::kHeldByCooldown;
  EXPECT_TRUE(was_held);
  ASSERT_TRUE(ResolveIncident(*store_, first.id, "swapped GPU 2", &slurm_, "", kT0 + 200 * kSec)->resumed);
  // After the repair a new fault drains at once, cool-down or not.
  Engine after = MakeEngine();
  ASSERT_TRUE(after.OnDiagnoses({second}, kT0 + 300 * kSec).ok());
  EXPECT_TRUE(fake_.nodes["gpu-7"].drained);
  EXPECT_EQ(fake_.nodes["gpu-7"].reason, "faultline: hbm_uncorrectable gpu/5 gpu-7/d" + std::to_string(second.id));
}

TEST_F(PolicyResolveTest, ResolveErrors) {
  EXPECT_EQ(ResolveIncident(*store_, 12345, "x", &slurm_, "", kT0).status().code(), StatusCode::kNotFound);
  auto row = Put(MakeDiagnosis(FaultClass::kGpuFellOffBus, Action::kDrain, GpuComponent("2"), kT0));
  EXPECT_EQ(ResolveIncident(*store_, row.id, "", &slurm_, "", kT0).status().code(), StatusCode::kInvalidArgument);
  Engine e = MakeEngine();
  ASSERT_TRUE(e.OnDiagnoses({row}, kT0 + 60 * kSec).ok());
  // Slurm down: an error, and the incident stays open so it can be run again.
  fake_.controller_down = true;
  EXPECT_FALSE(ResolveIncident(*store_, row.id, "fixed", &slurm_, "", kT0 + 100 * kSec).ok());
  auto active = ActiveDiagnoses(*store_, "gpu-7");
  ASSERT_TRUE(active.ok());
  EXPECT_EQ(active->size(), 1u);
  fake_.controller_down = false;
  EXPECT_TRUE(ResolveIncident(*store_, row.id, "fixed", &slurm_, "", kT0 + 200 * kSec)->resumed);
}

TEST_F(PolicyResolveTest, SlurmControllerDownIsStoredFailedThenDone) {
  auto row = Put(MakeDiagnosis(FaultClass::kHbmUncorrectable, Action::kRma, GpuComponent("3"), kT0));
  fake_.controller_down = true;
  Engine e = MakeEngine();
  auto out = e.OnDiagnoses({row}, kT0 + 60 * kSec);
  ASSERT_TRUE(out.ok());
  bool failed = false;
  for (const auto& o : *out) failed |= o.state == State::kFailed && o.decision.action_class == ActionClass::kDrain;
  EXPECT_TRUE(failed);
  fake_.controller_down = false;
  ASSERT_TRUE(e.OnDiagnoses({row}, kT0 + 600 * kSec).ok());
  EXPECT_TRUE(fake_.nodes["gpu-7"].drained);
}

// ---- through the real binary -------------------------------------------------------------

struct Ran {
  int rc = -1;
  std::string out;
};
Ran RunBinary(const std::string& args) {
  const std::string cmd = std::string(FAULTLINE_BINARY_DIR) + "/faultline " + args + " 2>&1";
  Ran r;
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return r;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  const int status = pclose(p);
  r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

TEST(PolicyCheckBinary, ReportOnlyModeReadsTheStoreAndExitsByVerdict) {
  const std::string dir = ::testing::TempDir() + "/faultline-check-bin-" + std::to_string(getpid());
  std::filesystem::create_directories(dir);
  const std::string path = dir + "/faultline.db";
  {
    auto store = Store::Open(path);
    ASSERT_TRUE(store.ok());
    ASSERT_TRUE((*store)
                    ->PutDiagnosis(
                        "gpu-7", MakeDiagnosis(FaultClass::kGpuThermal, Action::kMonitor, GpuComponent("1"), kT0), kT0)
                    .ok());
  }
  // No observation yet: the node is unknown (exit 3), never "ok".
  Ran blind = RunBinary("check --slurm --store " + path + " --slurm-node gpu-7 --node gpu-7");
  EXPECT_EQ(blind.rc, 3) << blind.out;
  EXPECT_EQ(blind.out.rfind("faultline: unknown: gpu-7: no data for gpu-7", 0), 0u) << blind.out;
  {
    auto store = Store::Open(path);
    ASSERT_TRUE(store.ok());
    Observation heard;  // the agent's sources answered just now
    heard.time_ns = SystemClock().NowNs();
    heard.node = "gpu-7";
    heard.layer = Layer::kGpu;
    heard.component = GpuComponent("1");
    heard.text = "heard";
    ASSERT_TRUE((*store)->Append({heard}).ok());
  }
  // A wrong node name is unknown too, and names the node the store holds.
  Ran wrong = RunBinary("check --slurm --store " + path + " --slurm-node gpu-7 --node gpu-07");
  EXPECT_EQ(wrong.rc, 3) << wrong.out;
  EXPECT_NE(wrong.out.find("the store holds: gpu-7"), std::string::npos) << wrong.out;
  Ran ok = RunBinary("check --slurm --store " + path + " --slurm-node gpu-7");
  EXPECT_EQ(ok.rc, 0) << ok.out;
  EXPECT_EQ(ok.out.rfind("faultline: ok: gpu-7: gpu_thermal gpu/1", 0), 0u) << ok.out;
  int64_t id = 0;
  {
    auto store = Store::Open(path);
    ASSERT_TRUE(store.ok());
    id = *(*store)->PutDiagnosis(
        "gpu-7", MakeDiagnosis(FaultClass::kGpuFellOffBus, Action::kDrain, GpuComponent("2"), kT0), kT0);
  }
  std::filesystem::permissions(path, std::filesystem::perms::owner_read);  // read-only: nothing may write
  Ran bad = RunBinary("check --slurm --store " + path + " --slurm-node gpu-7");
  EXPECT_EQ(bad.rc, 1) << bad.out;
  EXPECT_EQ(bad.out, "faultline: drain: gpu-7: gpu_fell_off_bus gpu/2 (diagnosis " + std::to_string(id) +
                         "): not drained (--apply drains)\n");
  std::filesystem::permissions(path, std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  EXPECT_EQ(RunBinary("check --slurm --store " + dir + "/none.db").rc, 3);  // no store: unknown
  EXPECT_EQ(RunBinary("check --store " + path).rc, 2);
  Ran help = RunBinary("check --help");
  EXPECT_NE(help.out.find("HealthCheckProgram"), std::string::npos);
  EXPECT_NE(help.out.find("--apply"), std::string::npos);
  // resolve without Slurm closes the incident; check is fine afterwards.
  Ran res =
      RunBinary("resolve --no-slurm --diagnosis " + std::to_string(id) + " --fixed-by 'reseated' --store " + path);
  EXPECT_EQ(res.rc, 0) << res.out;
  Ran after = RunBinary("check --slurm --store " + path + " --slurm-node gpu-7");
  EXPECT_EQ(after.rc, 0) << after.out;
  EXPECT_EQ(RunBinary("resolve --diagnosis 99999 --fixed-by x --no-slurm --store " + path).rc, 2);
  EXPECT_EQ(RunBinary("resolve --diagnosis 1 --store " + path).rc, 2);  // --fixed-by is required
  std::filesystem::remove_all(dir);
}

// The agent recorded that every source fails (store/agent_state.h): check is unknown (exit 3)
// naming the sources, never ok and never a drain, even over a fresh drain-worthy diagnosis;
// --apply drains nothing and writes nothing. Sight back, the diagnosis counts again.
TEST(PolicyCheckBinary, AnAgentRecordedBlindIsUnknownAndNeverDrains) {
  const std::string dir = ::testing::TempDir() + "/faultline-check-blind-" + std::to_string(getpid());
  std::filesystem::create_directories(dir);
  const std::string path = dir + "/faultline.db";
  const int64_t now = SystemClock().NowNs();
  AgentState blind;
  blind.blind = true;
  blind.since_ns = now - 120 * kSec;
  blind.updated_ns = blind.since_ns;
  blind.sources = {{.source = "kmsg", .failing = true, .error = "unavailable: /dev/kmsg: Permission denied"},
                   {.source = "nvml", .failing = true, .error = "unavailable: NVML_ERROR_DRIVER_NOT_LOADED"}};
  {
    auto store = Store::Open(path);
    ASSERT_TRUE(store.ok());
    Observation heard;  // data is fresh: only the agent's own word makes it unknown
    heard.time_ns = now;
    heard.node = "gpu-7";
    heard.layer = Layer::kGpu;
    heard.component = GpuComponent("2");
    heard.text = "heard";
    ASSERT_TRUE((*store)->Append({heard}).ok());
    ASSERT_TRUE((*store)
                    ->PutDiagnosis(
                        "gpu-7", MakeDiagnosis(FaultClass::kGpuFellOffBus, Action::kDrain, GpuComponent("2"), kT0), kT0)
                    .ok());
    ASSERT_TRUE(PutAgentState(**store, "gpu-7", blind).ok());
  }
  Ran unknown = RunBinary("check --slurm --store " + path + " --slurm-node gpu-7");
  EXPECT_EQ(unknown.rc, 3) << unknown.out;
  EXPECT_EQ(unknown.out.rfind("faultline: unknown: gpu-7: the agent is blind: every source failing for 12", 0), 0u)
      << unknown.out;
  EXPECT_NE(unknown.out.find("kmsg: unavailable: /dev/kmsg: Permission denied; nvml: "), std::string::npos)
      << unknown.out;
  // --apply (with no scontrol reachable) stops at the same verdict, before any Slurm call.
  Ran applied = RunBinary("check --slurm --apply --timeout 1 --store " + path + " --slurm-node gpu-7");
  EXPECT_EQ(applied.rc, 3) << applied.out;
  {
    auto store = Store::Open(path);
    ASSERT_TRUE(store.ok());
    auto actions = (*store)->ListActions(RecordQuery{.node = "gpu-7"});
    ASSERT_TRUE(actions.ok());
    EXPECT_TRUE(actions->rows.empty());  // no decision, no drain
    blind.blind = false;
    ASSERT_TRUE(PutAgentState(**store, "gpu-7", blind).ok());
  }
  Ran sees = RunBinary("check --slurm --store " + path + " --slurm-node gpu-7");
  EXPECT_EQ(sees.rc, 1) << sees.out;  // the diagnosis warrants a drain again (report only)
  EXPECT_EQ(sees.out.rfind("faultline: drain: gpu-7: gpu_fell_off_bus gpu/2", 0), 0u) << sees.out;
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace faultline::policy
