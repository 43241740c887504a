// Scenario files: the documented format parses; every kind of bad input is refused with
// an error that names the place, never a guess or a crash.
#include "sim/node/node_scenario.h"

#include <gtest/gtest.h>

#include <string>

namespace faultline::sim {
namespace {

constexpr const char* kGood = R"(
name: psu-sag
description: two faults
duration_s: 300
seed: 9
node: {gpus: 4, psus: 4, bmc: true}
noise: {sbe_per_gpu_hour: 2, user_xid_per_hour: 0}
workload: {step_s: 0.5, job: bert}
truth:
  fault_class: voltage_out_of_range
  components: [psu/PSU1, psu/PSU2]
  action: facility_ticket
  start_s: 60.5
  slow: true
faults:
  - {at: 100, fault: segfault}
  - {at: 60.5, until: 200, fault: input_sag, psus: [1, 2], value: 140, ramp_s: 30}
)";

TEST(NodeScenarioParse, ReadsEverySectionAndSortsFaultsByTime) {
  auto sc = ParseNodeScenario(kGood);
  ASSERT_TRUE(sc.ok()) << sc.status().ToString();
  EXPECT_EQ(sc->name, "psu-sag");
  EXPECT_EQ(sc->duration_s, 300);
  EXPECT_EQ(sc->seed, 9u);
  EXPECT_EQ(sc->node.gpus, 4);
  EXPECT_EQ(sc->node.psus, 4);
  EXPECT_EQ(sc->noise.sbe_per_gpu_hour, 2);
  EXPECT_EQ(sc->workload.job, "bert");
  EXPECT_EQ(sc->truth.fault_class, FaultClass::kVoltageOutOfRange);
  EXPECT_EQ(sc->truth.components, (std::vector<std::string>{"psu/PSU1", "psu/PSU2"}));
  EXPECT_EQ(sc->truth.action, Action::kFacilityTicket);
  EXPECT_TRUE(sc->truth.slow);
  ASSERT_EQ(sc->faults.size(), 2u);
  EXPECT_EQ(sc->faults[0].kind, NodeFaultKind::kInputSag);  // sorted by `at`
  EXPECT_EQ(sc->faults[0].psus, (std::vector<int>{1, 2}));
  ASSERT_TRUE(sc->faults[0].until);
  EXPECT_EQ(*sc->faults[0].until, 200);
  EXPECT_EQ(sc->faults[1].kind, NodeFaultKind::kSegfault);
}

TEST(NodeScenarioParse, JsonIsAcceptedToo) {
  auto sc = ParseNodeScenario(
      R"({"name": "j", "truth": {"fault_class": "none"}, "faults": [{"at": 1, "fault": "job_stop"}]})");
  ASSERT_TRUE(sc.ok()) << sc.status().ToString();
  EXPECT_EQ(sc->faults.at(0).kind, NodeFaultKind::kJobStop);
}

TEST(NodeScenarioParse, NoiseFalseSilencesTheBackground) {
  auto sc = ParseNodeScenario("name: q\nnoise: false\ntruth: {fault_class: none}\n");
  ASSERT_TRUE(sc.ok()) << sc.status().ToString();
  EXPECT_EQ(sc->noise.sbe_per_gpu_hour, 0);
  EXPECT_EQ(sc->noise.step_jitter, 0);
}

TEST(NodeScenarioParse, EveryKindNameRoundTrips) {
  for (int k = 0; k <= static_cast<int>(NodeFaultKind::kSel); ++k) {
    const auto kind = static_cast<NodeFaultKind>(k);
    auto back = ParseNodeFaultKind(ToString(kind));
    ASSERT_TRUE(back) << ToString(kind);
    EXPECT_EQ(*back, kind);
  }
}

struct BadCase {
  const char* name;
  std::string text;
  const char* expect;  // a fragment of the error
};

class NodeScenarioBadInput : public ::testing::TestWithParam<BadCase> {};

TEST_P(NodeScenarioBadInput, RefusedWithAClearError) {
  auto sc = ParseNodeScenario(GetParam().text);
  ASSERT_FALSE(sc.ok());
  EXPECT_NE(sc.status().message().find(GetParam().expect), std::string::npos) << sc.status().message();
}

const std::string kTruth = "truth: {fault_class: none}\n";

INSTANTIATE_TEST_SUITE_P(
    All, NodeScenarioBadInput,
    ::testing::Values(
        BadCase{"NoTruth", "name: a\n", "truth"}, BadCase{"NoName", kTruth, "name"},
        BadCase{"UnknownTopKey", "name: a\nwhatever: 1\n" + kTruth, "unknown key 'whatever'"},
        BadCase{"UnknownClass", "name: a\ntruth: {fault_class: gremlins}\n", "unknown fault class"},
        BadCase{"UnknownAction", "name: a\ntruth: {fault_class: none, action: pray}\n", "unknown action"},
        BadCase{"BadComponent", "name: a\ntruth: {fault_class: none, component: nonsense}\n", "not a component id"},
        BadCase{"AlsoWithoutWhy",
                "name: a\ntruth: {fault_class: none, also: [{fault_class: user_application, start_s: 1}]}\n",
                "truth.also[0].why"},
        BadCase{"AlsoUnknownClass",
                "name: a\ntruth: {fault_class: none, also: [{fault_class: gremlins, start_s: 1, why: x}]}\n",
                "truth.also[0].fault_class"},
        BadCase{"AlsoNotAList", "name: a\ntruth: {fault_class: none, also: {fault_class: user_application}}\n",
                "truth.also"},
        BadCase{"AlsoUnknownKey",
                "name: a\ntruth: {fault_class: none, also: [{fault_class: user_application, why: x, when: 3}]}\n",
                "unknown key 'when'"},
        BadCase{"UnknownFault", "name: a\n" + kTruth + "faults: [{at: 1, fault: meteor}]\n", "unknown fault kind"},
        BadCase{"MissingAt", "name: a\n" + kTruth + "faults: [{fault: segfault}]\n", "faults[0].at"},
        BadCase{"MissingParam", "name: a\n" + kTruth + "faults: [{at: 1, fault: psu_fail}]\n", "faults[0].psu"},
        BadCase{"GpuOutOfRange", "name: a\n" + kTruth + "faults: [{at: 1, fault: dbe, gpu: 8}]\n", "out of range"},
        BadCase{"GpuBeyondNode", "name: a\nnode: {gpus: 2}\n" + kTruth + "faults: [{at: 1, fault: dbe, gpu: 3}]\n",
                "out of range"},
        BadCase{"WrongType", "name: a\nduration_s: soon\n" + kTruth, "expected a number"},
        BadCase{"NegativeTime", "name: a\n" + kTruth + "faults: [{at: -5, fault: segfault}]\n", "out of range"},
        BadCase{"NegativeRate", "name: a\n" + kTruth + "faults: [{at: 1, fault: sbe_storm, gpu: 0, value: -5}]\n",
                "out of range"},
        BadCase{"SpeedupStraggler", "name: a\n" + kTruth + "faults: [{at: 1, fault: straggler, value: 0.5}]\n", ">= 1"},
        BadCase{"UntilBeforeAt", "name: a\n" + kTruth + "faults: [{at: 5, until: 2, fault: job_stop}]\n", "after 'at'"},
        BadCase{"MultiLineText", "name: a\n" + kTruth + "faults: [{at: 1, fault: kmsg, text: \"a\\nb\"}]\n",
                "one line"},
        BadCase{"BadSeverity", "name: a\n" + kTruth + "faults: [{at: 1, fault: sel, text: x, severity: Meh}]\n",
                "severity"},
        BadCase{"FaultsNotAList", "name: a\n" + kTruth + "faults: {at: 1}\n", "expected a list"},
        BadCase{"NotAMapping", "- just\n- a list\n", "expected a mapping"},
        BadCase{"Truncated", "name: a\ntruth: {fault_class: no", ""},
        BadCase{"DeepNesting", "name: a\n" + kTruth + "x: " + std::string(200, '[') + std::string(200, ']') + "\n", ""},
        BadCase{"Oversized", "name: a\n" + kTruth + "description: \"" + std::string(2 << 20, 'x') + "\"\n",
                "larger than 1 MiB"},
        BadCase{"Binary", std::string("name: a\0\xff\xfe\x01", 12), ""},
        // The name becomes a directory: anything but a plain file name is refused.
        BadCase{"NameClimbsOut", "name: ../x\n" + kTruth, "scenario.name: not a plain file name"},
        BadCase{"NameIsDotDot", "name: ..\n" + kTruth, "scenario.name: not a plain file name"},
        BadCase{"NameIsDot", "name: .\n" + kTruth, "scenario.name: not a plain file name"},
        BadCase{"NameAbsolute", "name: /etc\n" + kTruth, "scenario.name: not a plain file name"},
        BadCase{"NameWithSlash", "name: a/b\n" + kTruth, "scenario.name: not a plain file name"},
        BadCase{"NameDeepClimb", "name: a/../../..\n" + kTruth, "scenario.name: not a plain file name"},
        BadCase{"NameBackslash", "name: 'a\\..\\b'\n" + kTruth, "scenario.name: not a plain file name"},
        BadCase{"NameHidden", "name: .ssh\n" + kTruth, "scenario.name: not a plain file name"},
        BadCase{"NameOptionLike", "name: -rf\n" + kTruth, "scenario.name: not a plain file name"},
        BadCase{"NameWithSpace", "name: 'a b'\n" + kTruth, "scenario.name: not a plain file name"},
        BadCase{"NameWithNul", "name: \"a\\0b\"\n" + kTruth, "scenario.name"},
        BadCase{"NameWithNewline", "name: \"a\\nb\"\n" + kTruth, "scenario.name: not a plain file name"},
        BadCase{"NameNonAscii", "name: \"caf\xc3\xa9\"\n" + kTruth, "scenario.name: not a plain file name"},
        BadCase{"AgentUnknownKey", "name: a\nagent: {poll_s: 1}\n" + kTruth, "agent: unknown key 'poll_s'"},
        BadCase{"AgentNotAMapping", "name: a\nagent: fast\n" + kTruth, "agent: expected a mapping"},
        BadCase{"AgentTickTooFine", "name: a\nagent: {tick_s: 0.001}\n" + kTruth, "agent.tick_s: out of range"},
        BadCase{"AgentIntervalBelowTick", "name: a\nagent: {tick_s: 2, fast_interval_s: 1}\n" + kTruth,
                "agent.fast_interval_s: shorter than tick_s"},
        BadCase{"AgentIntervalHuge", "name: a\nagent: {redfish_interval_s: 1e9}\n" + kTruth,
                "agent.redfish_interval_s: out of range"},
        BadCase{"AgentIntervalNotANumber", "name: a\nagent: {sample_interval_s: .nan}\n" + kTruth,
                "agent.sample_interval_s"},
        BadCase{"NameEmpty", "name: ''\n" + kTruth, "scenario.name: missing"},
        BadCase{"NameNotAString", "name: [a]\n" + kTruth, "scenario.name: expected a string"},
        BadCase{"NameVeryLong", "name: " + std::string(4096, 'a') + "\n" + kTruth, "scenario.name: longer than"}),
    [](const ::testing::TestParamInfo<BadCase>& info) { return std::string(info.param.name); });

TEST(NodeScenarioName, PlainFileNamesAreAccepted) {
  for (const std::string& name :
       std::vector<std::string>{"a", "psu-degrade-then-fail", "GPU_7.v2", "x..y", std::string(128, 'n')}) {
    auto sc = ParseNodeScenario("name: '" + name + "'\n" + kTruth);
    ASSERT_TRUE(sc.ok()) << name << ": " << sc.status().ToString();
    EXPECT_EQ(sc->name, name);
  }
  EXPECT_FALSE(CheckScenarioName(std::string(129, 'n')).ok());
  EXPECT_FALSE(CheckScenarioName(std::string("a\0b", 3)).ok());
}

TEST(NodeScenarioParse, AgentScheduleIsOptional) {
  auto none = ParseNodeScenario("name: a\n" + kTruth);
  ASSERT_TRUE(none.ok()) << none.status().ToString();
  EXPECT_FALSE(none->agent.has_value());
  auto sc = ParseNodeScenario("name: a\nagent: {fast_interval_s: 60, sample_interval_s: 300, tick_s: 1}\n" + kTruth);
  ASSERT_TRUE(sc.ok()) << sc.status().ToString();
  ASSERT_TRUE(sc->agent.has_value());
  EXPECT_EQ(sc->agent->fast_interval_s, 60);
  EXPECT_EQ(sc->agent->sample_interval_s, 300);
  EXPECT_EQ(sc->agent->redfish_interval_s, 10);  // default kept
  EXPECT_EQ(sc->agent->tick_s, 1);
}

TEST(NodeScenarioLoad, MissingFileNamesThePath) {
  auto sc = LoadNodeScenario("/nonexistent/scenario.yaml");
  ASSERT_FALSE(sc.ok());
  EXPECT_EQ(sc.status().code(), StatusCode::kNotFound);
  EXPECT_NE(sc.status().message().find("/nonexistent/scenario.yaml"), std::string::npos);
}

TEST(NodeScenarioLoad, EveryScenarioInTheCorpusParses) {
  int n = 0;
  for (const char* name : {"demo-psu-degrading-power-brake", "healthy-node", "nvswitch1-fatal", "hbm-sbe-aging-gpu2",
                           "power-brake-bmc-blind"}) {
    auto sc = LoadNodeScenario(std::string(FAULTLINE_SOURCE_DIR) + "/scenarios/" + name + ".yaml");
    ASSERT_TRUE(sc.ok()) << sc.status().ToString();
    EXPECT_EQ(sc->name, name);
    ++n;
  }
  EXPECT_EQ(n, 5);
}

}  // namespace
}  // namespace faultline::sim
