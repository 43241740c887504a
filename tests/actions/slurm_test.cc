#include "actions/slurm.h"

#include <gtest/gtest.h>

#include <cctype>
#include <cstdint>

#include "slurm_fake.h"

namespace faultline::actions {
namespace {

using testing::FakeSlurm;

Decision DrainDecision(const std::string& node, int64_t diag_id = 42) {
  Decision d;
  d.key = node + "|drain|hbm_uncorrectable|gpu/3|1000";
  d.node = node;
  d.target_node = node;
  d.action_class = ActionClass::kDrain;
  d.diagnosis_id = diag_id;
  d.diagnosis.fault_class = FaultClass::kHbmUncorrectable;
  d.diagnosis.component = GpuComponent("3");
  d.diagnosis.action = Action::kRma;
  return d;
}

size_t UpdateCalls(const FakeSlurm& s) {
  size_t n = 0;
  for (const auto& c : s.calls) n += c.size() > 1 && c[1] == "update";
  return n;
}

TEST(ActionsSlurm, ReasonNamesClassComponentAndWhoseDiagnosis) {
  EXPECT_EQ(SlurmDrainReason(DrainDecision("n1")), "faultline: hbm_uncorrectable gpu/3 n1/d42");
  Decision pcie = DrainDecision("n1", 7);
  pcie.diagnosis.fault_class = FaultClass::kPcieLinkDegraded;
  pcie.diagnosis.component = PcieComponent("0000:3b:00.0");
  EXPECT_EQ(SlurmDrainReason(pcie), "faultline: pcie_link_degraded pcie/0000:3b:00.0 n1/d7");
  // The tag names the node whose store holds the diagnosis, not the Slurm node drained.
  Decision renamed = DrainDecision("gpu-7.cluster.local");
  renamed.target_node = "gpu7";
  EXPECT_EQ(SlurmDrainReason(renamed), "faultline: hbm_uncorrectable gpu/3 gpu-7.cluster.local/d42");
}

TEST(ActionsSlurm, DiagnosisTagKeepsHostileAndLongNodeNamesSafeBoundedAndApart) {
  EXPECT_EQ(DiagnosisTag("gpu-7", 42), "gpu-7/d42");
  EXPECT_EQ(DiagnosisTag("", 42), "_/d42");
  const std::string hostile = "gpu 7\" state=resume reason='x'\n; $(id)";
  const std::string tag = DiagnosisTag(hostile, 42);
  EXPECT_EQ(tag.find(' '), std::string::npos) << tag;
  const std::string node_part = tag.substr(0, tag.rfind("/d42"));
  for (char c : node_part) {
    EXPECT_TRUE(std::isalnum(static_cast<unsigned char>(c)) || std::string("._-").find(c) != std::string::npos)
        << "byte " << static_cast<int>(c);
  }
  // Names that read alike once made safe, or share a long beginning, keep their own tags.
  EXPECT_NE(DiagnosisTag("a b", 1), DiagnosisTag("a;b", 1));
  EXPECT_NE(DiagnosisTag("a b", 1), DiagnosisTag("a_b", 1));
  const std::string long_name(200, 'n');
  EXPECT_NE(DiagnosisTag(long_name, 1), DiagnosisTag(long_name + "x", 1));
  EXPECT_LE(DiagnosisTag(long_name, 1).size(), kDiagnosisTagNodeMaxBytes + 3);
  EXPECT_EQ(DiagnosisTag(long_name, 1), DiagnosisTag(long_name, 1));
}

TEST(ActionsSlurm, HostileComponentNamesAreBoundedAndNeutralised) {
  Decision d = DrainDecision("n1", 123456789);
  d.diagnosis.component.name =
      std::string("3\" state=resume reason='x'\n; rm -rf / $(id) `id`") + std::string(500, 'A');
  const std::string r = SlurmDrainReason(d);
  EXPECT_LE(r.size(), kSlurmReasonMaxBytes);
  EXPECT_TRUE(IsFaultlineReason(r));
  for (char c : r) {
    EXPECT_TRUE(std::isalnum(static_cast<unsigned char>(c)) || std::string(" _./:#=+-").find(c) != std::string::npos)
        << "byte " << static_cast<int>(c);
  }
  // The diagnosis tag survives the cut: resolve and recovery match on it.
  EXPECT_EQ(r.substr(r.size() - 14), " n1/d123456789");
}

TEST(ActionsSlurm, TheWholeTagSurvivesTheCutWithTheLongestNodeAndId) {
  Decision d = DrainDecision(std::string(300, 'x') + " \"; rm -rf /", INT64_MAX);
  d.diagnosis.component.name = std::string(300, 'c');
  const std::string r = SlurmDrainReason(d);
  const std::string tag = DiagnosisTag(d.node, d.diagnosis_id);
  EXPECT_LE(r.size(), kSlurmReasonMaxBytes);
  EXPECT_TRUE(IsFaultlineReason(r)) << r;
  ASSERT_GT(r.size(), tag.size());
  EXPECT_EQ(r.substr(r.size() - tag.size() - 1), " " + tag) << r;
  for (char c : r) {
    EXPECT_TRUE(std::isalnum(static_cast<unsigned char>(c)) || std::string(" _./:#=+-").find(c) != std::string::npos)
        << "byte " << static_cast<int>(c);
  }
  // What was written is what resolve matches: the node is resumed.
  FakeSlurm slurm;
  slurm.nodes["gpu-7"] = {};
  d.target_node = "gpu-7";
  SlurmActuator act(slurm);
  ASSERT_TRUE(act.Apply(d).ok());
  ASSERT_TRUE(act.Revert(d).ok());
  EXPECT_FALSE(slurm.nodes["gpu-7"].drained);
}

TEST(ActionsSlurm, DrainsThroughScontrolWithoutAShell) {
  FakeSlurm slurm;
  slurm.nodes["gpu-7"] = {};
  SlurmActuator act(slurm);
  ASSERT_TRUE(act.Apply(DrainDecision("gpu-7")).ok());
  EXPECT_TRUE(slurm.nodes["gpu-7"].drained);
  EXPECT_EQ(slurm.nodes["gpu-7"].reason, "faultline: hbm_uncorrectable gpu/3 gpu-7/d42");
  // The reason travels as one argv element, never through a shell.
  bool found = false;
  for (const auto& c : slurm.calls) {
    if (c.size() == 5 && c[1] == "update") {
      EXPECT_EQ(c[2], "nodename=gpu-7");
      EXPECT_EQ(c[3], "state=drain");
      EXPECT_EQ(c[4], "reason=faultline: hbm_uncorrectable gpu/3 gpu-7/d42");
      found = true;
    }
  }
  EXPECT_TRUE(found);
  auto seen = act.Observe(DrainDecision("gpu-7"));
  ASSERT_TRUE(seen.ok());
  EXPECT_EQ(*seen, Observed::kInEffect);
}

TEST(ActionsSlurm, SecondApplyDoesNotDrainAgain) {
  FakeSlurm slurm;
  slurm.nodes["gpu-7"] = {};
  SlurmActuator act(slurm);
  ASSERT_TRUE(act.Apply(DrainDecision("gpu-7")).ok());
  ASSERT_TRUE(act.Apply(DrainDecision("gpu-7")).ok());
  ASSERT_TRUE(act.Apply(DrainDecision("gpu-7", 43)).ok());
  EXPECT_EQ(UpdateCalls(slurm), 1u);
}

TEST(ActionsSlurm, AnOperatorsDrainIsNeverOverwrittenNorResumed) {
  FakeSlurm slurm;
  slurm.nodes["gpu-7"] = {"IDLE", true, "bad DIMM, ticket 4411"};
  SlurmActuator act(slurm);
  auto seen = act.Observe(DrainDecision("gpu-7"));
  ASSERT_TRUE(seen.ok());
  EXPECT_EQ(*seen, Observed::kOtherOwner);
  ASSERT_TRUE(act.Apply(DrainDecision("gpu-7")).ok());
  EXPECT_EQ(slurm.nodes["gpu-7"].reason, "bad DIMM, ticket 4411");
  Status resumed = act.ResumeIfOurs("gpu-7", "gpu-7/d42");
  EXPECT_EQ(resumed.code(), StatusCode::kPermissionDenied);
  EXPECT_TRUE(slurm.nodes["gpu-7"].drained);
  EXPECT_EQ(UpdateCalls(slurm), 0u);
}

TEST(ActionsSlurm, ResumesOnlyItsOwnDrainForThatDiagnosis) {
  FakeSlurm slurm;
  slurm.nodes["gpu-7"] = {};
  SlurmActuator act(slurm);
  ASSERT_TRUE(act.Apply(DrainDecision("gpu-7", 42)).ok());
  // Another diagnosis (d4), one whose id merely ends the same (d2), another node's diagnosis
  // with the same id, or a node whose name merely ends the same, does not resume it.
  for (const char* tag : {"gpu-7/d4", "gpu-7/d2", "gpu-8/d42", "pu-7/d42", "7/d42", "d42"}) {
    EXPECT_EQ(act.ResumeIfOurs("gpu-7", tag).code(), StatusCode::kPermissionDenied) << tag;
  }
  EXPECT_TRUE(slurm.nodes["gpu-7"].drained);
  ASSERT_TRUE(act.ResumeIfOurs("gpu-7", "gpu-7/d42").ok());
  EXPECT_FALSE(slurm.nodes["gpu-7"].drained);
  // Not drained any more: resuming again is a no-op.
  ASSERT_TRUE(act.ResumeIfOurs("gpu-7", "gpu-7/d42").ok());
}

TEST(ActionsSlurm, AnotherNodesDiagnosisWithTheSameIdNeverResumes) {
  FakeSlurm slurm;
  slurm.nodes["gpu-7"] = {};
  slurm.nodes["gpu-8"] = {};
  SlurmActuator act(slurm);
  ASSERT_TRUE(act.Apply(DrainDecision("gpu-7", 2)).ok());
  ASSERT_TRUE(act.Apply(DrainDecision("gpu-8", 2)).ok());
  // gpu-8's diagnosis 2, aimed at gpu-7 (an operator's --slurm-node slip): gpu-7 stays out.
  Decision other = DrainDecision("gpu-8", 2);
  other.target_node = "gpu-7";
  Status refused = act.Revert(other);
  EXPECT_EQ(refused.code(), StatusCode::kPermissionDenied);
  EXPECT_NE(refused.message().find("another diagnosis"), std::string::npos) << refused.message();
  EXPECT_TRUE(slurm.nodes["gpu-7"].drained);
  ASSERT_TRUE(act.Revert(DrainDecision("gpu-8", 2)).ok());
  EXPECT_FALSE(slurm.nodes["gpu-8"].drained);
  EXPECT_TRUE(slurm.nodes["gpu-7"].drained);
}

TEST(ActionsSlurm, AReasonWithoutTheNodeIsRefusedWithHowToResumeByHand) {
  FakeSlurm slurm;
  // Written by a faultline from before tags named the node: whose diagnosis 42 is unknown.
  slurm.nodes["gpu-7"] = {"IDLE", true, "faultline: hbm_uncorrectable gpu/3 d42"};
  SlurmActuator act(slurm);
  Status s = act.Revert(DrainDecision("gpu-7", 42));
  EXPECT_EQ(s.code(), StatusCode::kPermissionDenied);
  EXPECT_NE(s.message().find("scontrol update nodename=gpu-7 state=resume"), std::string::npos) << s.message();
  // An old tag for another id is plainly another diagnosis: no hint to resume it.
  Status other = act.Revert(DrainDecision("gpu-7", 7));
  EXPECT_EQ(other.code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(other.message().find("scontrol"), std::string::npos) << other.message();
  EXPECT_TRUE(slurm.nodes["gpu-7"].drained);
  EXPECT_EQ(UpdateCalls(slurm), 0u);
}

TEST(ActionsSlurm, ControllerDownIsAnErrorNeverSuccess) {
  FakeSlurm slurm;
  slurm.nodes["gpu-7"] = {};
  slurm.controller_down = true;
  SlurmActuator act(slurm);
  Status s = act.Apply(DrainDecision("gpu-7"));
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("Unable to contact slurm controller"), std::string::npos);
  EXPECT_FALSE(act.Read().ok());
}

TEST(ActionsSlurm, ScontrolMissingIsAnError) {
  ipmi::ProcessRunner runner;
  SlurmOptions o;
  o.scontrol = "/nonexistent/faultline-test/scontrol";
  o.sinfo = "/nonexistent/faultline-test/sinfo";
  SlurmActuator act(runner, o);
  EXPECT_FALSE(act.Apply(DrainDecision("gpu-7")).ok());
  EXPECT_FALSE(act.Observe(DrainDecision("gpu-7")).ok());
  EXPECT_FALSE(act.Read().ok());
}

TEST(ActionsSlurm, FleetViewCountsFaultlineDrainsOnly) {
  FakeSlurm slurm;
  slurm.nodes["a"] = {};
  slurm.nodes["b"] = {"IDLE", true, "faultline: gpu_fell_off_bus gpu/1 d3"};
  slurm.nodes["c"] = {"IDLE", true, "operator maintenance"};
  slurm.nodes["d"] = {};
  SlurmActuator act(slurm);
  auto fleet = act.Read();
  ASSERT_TRUE(fleet.ok()) << fleet.status().ToString();
  EXPECT_EQ(fleet->known_nodes, 4u);
  ASSERT_EQ(fleet->faultline_drains.size(), 1u);
  EXPECT_EQ(fleet->faultline_drains[0].node, "b");
  EXPECT_GT(fleet->faultline_drains[0].since_ns, 0);
}

TEST(ActionsSlurmParse, ScontrolLineOfSlurm2205) {
  auto n = ParseScontrolNode(
      "NodeName=vm Arch=x86_64 CoresPerSocket=1  CPUAlloc=0 State=IDLE+DRAIN ThreadsPerCore=1 Partitions=debug  "
      "ExtSensorsTemp=n/s Reason=faultline: hbm_uncorrectable gpu/3 d42 [root@2026-12-01T18:50:50]\n");
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(n->name, "vm");
  EXPECT_EQ(n->state, "IDLE+DRAIN");
  EXPECT_TRUE(n->Drained());
  EXPECT_EQ(n->reason, "faultline: hbm_uncorrectable gpu/3 d42");
  EXPECT_EQ(n->reason_time_ns, ParseSlurmTime("2026-12-01T18:50:50"));
  EXPECT_GT(n->reason_time_ns, 0);
  for (const char* state : {"DRAINED", "MIXED+DRAIN", "ALLOCATED+DRAIN+NOT_RESPONDING", "drained", "draining"}) {
    SlurmNode s{"x", state, "", 0};
    EXPECT_TRUE(s.Drained()) << state;
  }
  SlurmNode idle{"x", "IDLE+NOT_RESPONDING", "", 0};
  EXPECT_FALSE(idle.Drained());
}

TEST(ActionsSlurmParse, BadScontrolOutputIsAnError) {
  for (std::string_view bad : {"", "Node gpu-9 not found", "NodeName=vm Arch=x86_64", "State=IDLE",
                               "NodeName= State=", "\x01\x02\xff garbage"}) {
    EXPECT_EQ(ParseScontrolNode(bad).status().code(), StatusCode::kCorrupt) << bad;
  }
  // A reason without Slurm's stamp, truncated, or huge: kept as text, never a crash.
  auto n = ParseScontrolNode("NodeName=vm State=DRAIN Reason=half [root@2026-12-0");
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(n->reason_time_ns, 0);
  auto big = ParseScontrolNode("NodeName=vm State=DRAIN Reason=" + std::string(1 << 20, 'x'));
  ASSERT_TRUE(big.ok());
  EXPECT_EQ(big->reason.size(), size_t{1} << 20);
}

TEST(ActionsSlurmParse, SinfoLinesPerPartitionAreOneNode) {
  auto nodes = ParseSinfoNodes(
      "a|idle|Unknown|none\n"
      "a|idle|Unknown|none\n"
      "b|drained*|2026-12-01T18:50:50|faultline: x gpu/1 d1 | with a pipe\n"
      "\n");
  ASSERT_TRUE(nodes.ok());
  ASSERT_EQ(nodes->size(), 2u);
  EXPECT_EQ((*nodes)[1].state, "drained");
  EXPECT_EQ((*nodes)[1].reason, "faultline: x gpu/1 d1 | with a pipe");
  EXPECT_EQ((*nodes)[0].reason, "");
  EXPECT_FALSE(ParseSinfoNodes("a|idle\n").ok());
  EXPECT_FALSE(ParseSinfoNodes("|idle|x|y\n").ok());
  EXPECT_EQ(ParseSlurmTime("Unknown"), 0);
  EXPECT_EQ(ParseSlurmTime("2026-13-01T00:00:00"), 0);
  EXPECT_EQ(ParseSlurmTime("2026-12-01T18:50:50junk"), 0);
  // Years no drain happened in, and negative fields, are no time (nor an overflow in ns).
  EXPECT_EQ(ParseSlurmTime("026-12-01T18:50:50"), 0);
  EXPECT_EQ(ParseSlurmTime("9999-12-01T18:50:50"), 0);
  EXPECT_EQ(ParseSlurmTime("2026-12-01T-1:50:50"), 0);
  EXPECT_GT(ParseSlurmTime("2026-12-01T18:50:50"), 0);
}

}  // namespace
}  // namespace faultline::actions
