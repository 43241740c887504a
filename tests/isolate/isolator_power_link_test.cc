// The isolator's rules for a supply losing its input (GPUs off the bus within seconds) and
// for a fatal PCIe error on a GPU's link (the GPU off the bus, the program's XID 31, the
// driver's failures on that GPU are its consequences).
#include <gtest/gtest.h>

#include "engine/isolate/causal_rules.h"
#include "isolate_test_util.h"

namespace faultline {
namespace {

using namespace testing_isolate;  // NOLINT(google-build-using-namespace)

ComponentRef Psu(const std::string& id, std::map<std::string, std::string> keys = {}) {
  return Ref(ComponentType::kPsu, id, std::move(keys));
}

ComponentRef KernelGpu(const std::string& bdf, std::map<std::string, std::string> extra = {}) {
  extra["bdf"] = bdf;
  return Ref(ComponentType::kGpu, bdf, std::move(extra));
}

Finding OffBus(const std::string& bdf, int64_t at, std::map<std::string, std::string> extra = {}) {
  return Make(Layer::kOs, FaultClass::kGpuFellOffBus, KernelGpu(bdf, std::move(extra)), at)
      .Sev(Severity::kFatal)
      .Act(Action::kDrain);
}

Finding SupplyLost(FaultClass cls, const ComponentRef& psu, int64_t at) {
  return Make(Layer::kOob, cls, psu, at).Sev(Severity::kCritical).Act(Action::kFacilityTicket);
}

TEST(IsolatePowerOffBus, SupplyLosingInputThenGpusOffTheBusIsOnePowerFault) {
  // SEL "AC lost" / Redfish LossOfInputPower (power_supply) and an input reading out of
  // range (voltage_out_of_range): each, followed within a second by GPUs off the bus.
  for (FaultClass cls : {FaultClass::kPowerSupply, FaultClass::kVoltageOutOfRange}) {
    IsolateInput in = AllLayers();
    in.findings = {SupplyLost(cls, Psu("PSU3"), kT0), OffBus("0000:1b:00.0", kT0 + kSec / 2),
                   OffBus("0000:3b:00.0", kT0 + kSec)};
    auto ds = Isolate(in);
    ASSERT_FALSE(ds.empty());
    EXPECT_EQ(ds[0].fault_class, cls) << ToString(cls);
    EXPECT_EQ(ds[0].component.Id(), "psu/PSU3");
    EXPECT_EQ(ds[0].explains.size(), 2u);
    EXPECT_FALSE(HasClass(ds, FaultClass::kGpuFellOffBus)) << "the GPUs are explained, not diagnosed";
    for (const Diagnosis& d : ds) EXPECT_NE(d.action, Action::kRma) << ToString(d.fault_class);
  }
}

TEST(IsolatePowerOffBus, GpusOffTheBusMinutesLaterAreNotTheSupply) {
  IsolateInput in = AllLayers();
  in.findings = {SupplyLost(FaultClass::kPowerSupply, Psu("PSU3"), kT0), OffBus("0000:1b:00.0", kT0 + 45 * kSec)};
  auto ds = Isolate(in);
  const Diagnosis* gpu = Find(ds, FaultClass::kGpuFellOffBus);
  ASSERT_NE(gpu, nullptr) << "45 s later is another event";
  const Diagnosis* psu = Find(ds, FaultClass::kPowerSupply);
  ASSERT_NE(psu, nullptr);
  EXPECT_TRUE(psu->explains.empty());
}

TEST(IsolatePowerOffBus, PowerDomainScopesTheRule) {
  IsolateInput in = AllLayers();
  in.findings = {SupplyLost(FaultClass::kPowerSupply, Psu("PSU1", {{"power_domain", "A"}}), kT0),
                 OffBus("0000:1b:00.0", kT0 + kSec, {{"power_domain", "A"}}),
                 OffBus("0000:9b:00.0", kT0 + kSec, {{"power_domain", "B"}})};
  auto ds = Isolate(in);
  const Diagnosis* psu = Find(ds, FaultClass::kPowerSupply);
  ASSERT_NE(psu, nullptr);
  EXPECT_EQ(psu->explains.size(), 1u);
  EXPECT_TRUE(ExplainsSomething(*psu, "0000:1b:00.0"));
  const Diagnosis* other = Find(ds, FaultClass::kGpuFellOffBus);
  ASSERT_NE(other, nullptr) << "a GPU in another power domain is its own fault";
  EXPECT_EQ(other->component.Id(), "gpu/0000:9b:00.0");
}

TEST(IsolatePowerOffBus, DeclaredBmcClockUncertaintyWidensTheWindow) {
  IsolateInput in = AllLayers();
  Finding psu = SupplyLost(FaultClass::kPowerSupply, Psu("PSU2"), kT0);
  in.findings = {psu, OffBus("0000:1b:00.0", kT0 + 6 * kSec)};
  EXPECT_NE(Find(Isolate(in), FaultClass::kGpuFellOffBus), nullptr) << "6 s apart with exact clocks: unrelated";
  psu.attrs["clock_skew_ns"] = std::to_string(5 * kSec);
  in.findings = {psu, OffBus("0000:1b:00.0", kT0 + 6 * kSec)};
  auto ds = Isolate(in);
  EXPECT_EQ(Find(ds, FaultClass::kGpuFellOffBus), nullptr) << "a BMC clock known to +-5 s: within reach";
  ASSERT_NE(Find(ds, FaultClass::kPowerSupply), nullptr);
  EXPECT_EQ(Find(ds, FaultClass::kPowerSupply)->explains.size(), 1u);
}

TEST(IsolatePowerOffBus, SupplyLossExplainsTheSurpriseDownOnTheLinks) {
  IsolateInput in = AllLayers();
  Finding port =
      Make(Layer::kFabric, FaultClass::kPcieLinkDegraded,
           Ref(ComponentType::kPcie, "0000:15:01.0", {{"bdf", "0000:15:01.0"}, {"downstream_bdf", "0000:1b:00.0"}}),
           kT0 + kSec / 4)
          .Sev(Severity::kFatal)
          .Act(Action::kDrain);
  in.findings = {SupplyLost(FaultClass::kPowerSupply, Psu("PSU4"), kT0), port,
                 OffBus("0000:1b:00.0", kT0 + kSec / 2, {{"upstream_port", "0000:15:01.0"}})};
  auto ds = Isolate(in);
  ASSERT_FALSE(ds.empty());
  EXPECT_EQ(ds[0].fault_class, FaultClass::kPowerSupply);
  EXPECT_FALSE(HasClass(ds, FaultClass::kPcieLinkDegraded));
  EXPECT_FALSE(HasClass(ds, FaultClass::kGpuFellOffBus));
}

// A fatal error on GPU 0000:1b:00.0's upstream port 0000:15:01.0.
Finding FatalPort(int64_t at) {
  return Make(Layer::kFabric, FaultClass::kPcieLinkDegraded,
              Ref(ComponentType::kPcie, "0000:15:01.0",
                  {{"bdf", "0000:15:01.0"}, {"driver", "pcieport"}, {"downstream_bdf", "0000:1b:00.0"}}),
              at)
      .Sev(Severity::kFatal)
      .Act(Action::kDrain);
}

Finding ProgramXid31(const std::string& bdf, int64_t at) {
  return Make(Layer::kOs, FaultClass::kUserApplication, KernelGpu(bdf), at).Act(Action::kNotifyUser);
}

TEST(IsolateFatalLink, FatalPortErrorExplainsTheGpuOffTheBusAndTheProgramsXid31) {
  IsolateInput in = AllLayers();
  in.findings = {FatalPort(kT0), OffBus("0000:1b:00.0", kT0 + kSec), ProgramXid31("0000:1b:00.0", kT0 + 2 * kSec)};
  auto ds = Isolate(in);
  ASSERT_FALSE(ds.empty());
  EXPECT_EQ(ds[0].fault_class, FaultClass::kPcieLinkDegraded);
  EXPECT_EQ(ds[0].component.Id(), "pcie/0000:15:01.0");
  EXPECT_FALSE(HasClass(ds, FaultClass::kUserApplication)) << "XID 31 after the link died is not a program bug";
  EXPECT_FALSE(HasClass(ds, FaultClass::kGpuFellOffBus));
  EXPECT_EQ(ds[0].explains.size(), 2u);
}

TEST(IsolateFatalLink, Xid31WithoutTheGpuFallingOffIsStillExplainedThroughTheAttachKey) {
  IsolateInput in = AllLayers();
  in.findings = {FatalPort(kT0), ProgramXid31("0000:1b:00.0", kT0 + 3 * kSec)};
  auto ds = Isolate(in);
  ASSERT_FALSE(ds.empty());
  EXPECT_EQ(ds[0].fault_class, FaultClass::kPcieLinkDegraded);
  EXPECT_FALSE(HasClass(ds, FaultClass::kUserApplication));
}

TEST(IsolateFatalLink, ProgramOnAnotherGpuAndAWarningLinkAreNotExplained) {
  IsolateInput in = AllLayers();
  in.findings = {FatalPort(kT0), ProgramXid31("0000:9b:00.0", kT0 + 3 * kSec)};
  EXPECT_TRUE(HasClass(Isolate(in), FaultClass::kUserApplication)) << "not behind that port";
  Finding weak = FatalPort(kT0);
  weak.severity = Severity::kWarning;  // a replay-counter warning does not kill programs
  in.findings = {weak, ProgramXid31("0000:1b:00.0", kT0 + 3 * kSec)};
  EXPECT_TRUE(HasClass(Isolate(in), FaultClass::kUserApplication));
}

TEST(IsolateFatalLink, ALinkSeenDownOnlyAfterTheFallIsItsConsequence) {
  // sysfs reads the GPU's link at width 0 a poll after the GPU fell off: the GPU's absence.
  Finding absent = Make(Layer::kFabric, FaultClass::kPcieLinkDegraded,
                        Ref(ComponentType::kPcie, "0000:1b:00.0", {{"bdf", "0000:1b:00.0"}}), kT0 + 3 * kSec)
                       .Sev(Severity::kCritical)
                       .Act(Action::kReseatOrReplaceLink);
  IsolateInput in = AllLayers();
  in.findings = {OffBus("0000:1b:00.0", kT0), absent};
  auto ds = Isolate(in);
  ASSERT_FALSE(ds.empty());
  EXPECT_EQ(ds[0].fault_class, FaultClass::kGpuFellOffBus);
  // The kernel printing the port's AER lines a moment after "fallen off the bus" is one
  // incident: the link still explains the GPU.
  in.findings = {OffBus("0000:1b:00.0", kT0), FatalPort(kT0 + kSec / 2)};
  ds = Isolate(in);
  ASSERT_FALSE(ds.empty());
  EXPECT_EQ(ds[0].fault_class, FaultClass::kPcieLinkDegraded);
  EXPECT_FALSE(HasClass(ds, FaultClass::kGpuFellOffBus));
}

// In real time the polls land in any order: a sysfs poll may read the link at width 0 (or
// its fatal AER counter) a fraction of a second after XID 79, inside the kernel's print-order
// lag. A polled reading is stamped when the poll ran: it is the fall's consequence, whatever
// the order, unless it was seen before the fall.
TEST(IsolateFatalLink, APolledLinkReadingJustAfterTheFallIsItsConsequence) {
  for (Source polled : {Source::kSysfs, Source::kNvml}) {
    for (int64_t after : {int64_t{1}, kSec / 10, kSec / 2, kSec - 1}) {
      SCOPED_TRACE(std::string(ToString(polled)) + " +" + std::to_string(after) + " ns");
      Finding link = Make(Layer::kFabric, FaultClass::kPcieLinkDegraded,
                          Ref(ComponentType::kPcie, "0000:1b:00.0", {{"bdf", "0000:1b:00.0"}}), kT0 + after)
                         .Sev(Severity::kCritical)
                         .Act(Action::kReseatOrReplaceLink)
                         .From(polled);
      IsolateInput in = AllLayers();
      in.findings = {OffBus("0000:1b:00.0", kT0), link};
      auto ds = Isolate(in);
      ASSERT_FALSE(ds.empty());
      EXPECT_EQ(ds[0].fault_class, FaultClass::kGpuFellOffBus);
      EXPECT_EQ(ds[0].action, Action::kDrain);
    }
  }
  // The same reading from a poll before the fall is evidence from before the failure.
  Finding before = Make(Layer::kFabric, FaultClass::kPcieLinkDegraded,
                        Ref(ComponentType::kPcie, "0000:1b:00.0", {{"bdf", "0000:1b:00.0"}}), kT0 - 20 * kSec)
                       .Sev(Severity::kWarning)
                       .Act(Action::kReseatOrReplaceLink)
                       .From(Source::kSysfs);
  IsolateInput in = AllLayers();
  in.findings = {before, OffBus("0000:1b:00.0", kT0)};
  auto ds = Isolate(in);
  ASSERT_FALSE(ds.empty());
  EXPECT_EQ(ds[0].fault_class, FaultClass::kPcieLinkDegraded);
  EXPECT_FALSE(HasClass(ds, FaultClass::kGpuFellOffBus));
}

TEST(IsolateFatalLink, RulesWithTheirOwnWindowAreOnlyThePowerOnes) {
  for (const isolate::CausalRule& r : isolate::CausalRules()) {
    if (r.within_ns == 0) continue;
    EXPECT_TRUE(r.cause == FaultClass::kPowerSupply || r.cause == FaultClass::kVoltageOutOfRange);
    EXPECT_LE(r.within_ns, 5 * kSec);
  }
}

}  // namespace
}  // namespace faultline
