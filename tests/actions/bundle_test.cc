// RMA bundle and facility ticket: built from a store made with the Store API, written as
// .tar.gz, opened again with the system's `tar`, and checked file by file; the refusals;
// and the command through the real binary.
#include "actions/bundle.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "../cli/run_faultline.h"
#include "actions/tar.h"
#include "core/json.h"
#include "core/time.h"
#include "store/store.h"

namespace faultline::actions {
namespace {

namespace fs = std::filesystem;

constexpr int64_t kT0 = int64_t{1'767'300'000} * kNsPerSec;  // some day in 2026
constexpr int64_t kMin = 60 * kNsPerSec;
constexpr char kNode[] = "gpu-node-7";

std::string Slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

fs::path FreshDir(const std::string& name) {
  fs::path dir = fs::path(::testing::TempDir()) / ("bundle_" + name + "_" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

// Extracts `archive` into `dir` with the system tar; returns the member names it lists.
std::vector<std::string> Untar(const fs::path& archive, const fs::path& dir) {
  fs::create_directories(dir);
  const std::string list = (dir / "list.txt").string();
  const std::string cmd = "tar -xzf '" + archive.string() + "' -C '" + dir.string() + "' && tar -tzf '" +
                          archive.string() + "' > '" + list + "'";
  EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
  std::vector<std::string> names;
  std::istringstream in(Slurp(list));
  for (std::string line; std::getline(in, line);) names.push_back(line);
  return names;
}

Observation Obs(int64_t t, Layer layer, ComponentRef c, ObsKind kind, std::optional<double> value, Source source,
                std::string raw = "") {
  Observation o;
  o.time_ns = t;
  o.node = kNode;
  o.layer = layer;
  o.component = std::move(c);
  o.kind = kind;
  o.value = value;
  o.source = source;
  o.raw = std::move(raw);
  o.text = o.raw;
  return o;
}

ComponentRef Gpu3() {
  ComponentRef c = GpuComponent("3");
  c.keys = {{"index", "3"},
            {"serial", "1322021000457"},
            {"uuid", "GPU-0d6f2c4e-8a1b-4b7e-9c55-2f3a1e0b9d41"},
            {"bdf", "0000:3b:00.0"}};
  return c;
}

Diagnosis GpuDiagnosis(ComponentRef part, FaultClass fc = FaultClass::kHbmUncorrectable) {
  Diagnosis d;
  d.fault_class = fc;
  d.layer = Layer::kGpu;
  d.component = std::move(part);
  d.action = Action::kRma;
  d.confidence = 0.93;
  d.severity = Severity::kFatal;
  d.first_ns = kT0 + 10 * kMin;
  d.last_ns = kT0 + 12 * kMin;
  d.summary = "GPU 3: uncorrectable HBM error | row remapping failed";
  d.evidence = {{kT0 + 10 * kMin, std::nullopt, Source::kKmsg, "gpu/3", "Xid 48: DBE", 1},
                {kT0 + 11 * kMin, std::nullopt, Source::kNvml, "gpu/3", "row remap failure", 1}};
  d.ruled_out = {{Layer::kOob, "PSUs and inlet temperature normal", {}}};
  return d;
}

Diagnosis PowerDiagnosis() {
  Diagnosis d;
  d.fault_class = FaultClass::kPowerSupply;
  d.layer = Layer::kOob;
  d.component = {ComponentType::kPsu, "2", {{"rack", "R14"}, {"pdu", "R14-PDU-B"}, {"feed", "B"}}};
  d.action = Action::kFacilityTicket;
  d.confidence = 0.88;
  d.severity = Severity::kCritical;
  d.first_ns = kT0 + 20 * kMin;
  d.last_ns = kT0 + 25 * kMin;
  d.summary = "PSU 2 input lost: feed B";
  return d;
}

class BundleTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = FreshDir(::testing::UnitTest::GetInstance()->current_test_info()->name());
    store_path_ = (dir_ / "faultline.db").string();
    auto s = Store::Open(store_path_);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    store_ = std::move(s).value();
  }

  // A node with a failing GPU 3, a healthy GPU 1, kernel lines, SEL entries and PSU readings.
  void FillNode() {
    std::vector<Observation> obs;
    Observation id = Obs(kT0, Layer::kGpu, GpuComponent("3"), ObsKind::kGpuIdentity, std::nullopt, Source::kNvml);
    id.attrs = {{"name", "Example GPU 80GB"},
                {"serial", "1322021000457"},
                {"driver_version", "550.54.15"},
                {"vbios_version", "96.00.74.00.01"}};
    obs.push_back(id);
    for (int i = 0; i < 5; ++i) {
      Observation dbe =
          Obs(kT0 + i * 3 * kMin, Layer::kGpu, GpuComponent("3"), ObsKind::kEccDbe, i < 3 ? 0 : i - 2, Source::kNvml);
      dbe.attrs["counter"] = "volatile";
      obs.push_back(dbe);
      obs.push_back(Obs(kT0 + i * 3 * kMin, Layer::kGpu, GpuComponent("1"), ObsKind::kEccDbe, 0, Source::kNvml));
      obs.push_back(Obs(kT0 + i * 3 * kMin, Layer::kFabric, {ComponentType::kNvlink, "3/11", {}},
                        ObsKind::kNvlinkCrcFlit, 100.0 * i, Source::kNvml));
    }
    obs.push_back(Obs(kT0 + 11 * kMin, Layer::kGpu, GpuComponent("3"), ObsKind::kRowRemapFailure, 1, Source::kNvml));
    obs.push_back(Obs(kT0 + 10 * kMin, Layer::kOs, Gpu3(), ObsKind::kXid, std::nullopt, Source::kKmsg,
                      "NVRM: Xid (PCI:0000:3b:00): 48, pid=4242, name=train.py, An uncorrectable double bit error"));
    obs.back().code = 48;
    obs.push_back(Obs(kT0 + 10 * kMin + kNsPerSec, Layer::kOs, HostComponent(), ObsKind::kOther, std::nullopt,
                      Source::kKmsg, "audit: op=login acct=ops password=hunter2 res=failed\nFORGED: line"));
    obs.push_back(Obs(kT0 - 5 * 3600 * kNsPerSec, Layer::kOs, HostComponent(), ObsKind::kOther, std::nullopt,
                      Source::kKmsg, "long before the fault: outside the window"));
    obs.push_back(Obs(kT0 + 11 * kMin, Layer::kOob, {ComponentType::kChassis, "1", {}}, ObsKind::kSelEntry,
                      std::nullopt, Source::kRedfish,
                      R"({"Id":"77","Message":"GPU 3 memory error","X-Auth-Token":"c0ffee-77aa"})"));
    for (int i = 0; i < 4; ++i) {
      Observation w = Obs(kT0 + (19 + i * 2) * kMin, Layer::kOob, {ComponentType::kPsu, "2", {}}, ObsKind::kPower,
                          i < 2 ? 1450.0 : 0.0, Source::kRedfish);
      w.attrs = {{"units", "W"}, {"line_input", "feed-B"}};
      obs.push_back(w);
      obs.push_back(Obs(kT0 + (19 + i * 2) * kMin, Layer::kOob, {ComponentType::kPsu, "2", {}}, ObsKind::kVoltage,
                        i < 2 ? 230.0 : 0.0, Source::kRedfish));
    }
    obs.push_back(Obs(kT0 + 20 * kMin, Layer::kOob, {ComponentType::kCoolant, "loop1", {}}, ObsKind::kCoolantTemp, 31.5,
                      Source::kRedfish));
    obs.push_back(Obs(kT0 + 21 * kMin, Layer::kOob, {ComponentType::kChassis, "1", {}}, ObsKind::kSelEntry,
                      std::nullopt, Source::kIpmi, "0x0042 | PS2 Status | Power Supply AC lost | Asserted"));
    auto r = store_->Append(obs);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
  }

  int64_t Put(const Diagnosis& d, const std::string& node = kNode) {
    auto id = store_->PutDiagnosis(node, d, d.last_ns);
    EXPECT_TRUE(id.ok());
    return id.ok() ? *id : -1;
  }

  BundleOptions Options(std::optional<int64_t> id = std::nullopt) const {
    BundleOptions o;
    o.diagnosis_id = id;
    o.now_ns = kT0 + 3600 * kNsPerSec;
    return o;
  }

  fs::path dir_;
  std::string store_path_;
  std::unique_ptr<Store> store_;
};

TEST_F(BundleTest, RmaBundleHoldsEverythingAVendorAsksFor) {
  FillNode();
  const int64_t id = Put(GpuDiagnosis(Gpu3()));
  auto bundle = BuildBundle(*store_, BundleKind::kRma, Options(id));
  ASSERT_TRUE(bundle.ok()) << bundle.status().ToString();
  const fs::path out = dir_ / "rma.tar.gz";
  ASSERT_TRUE(WriteBundle(*bundle, out.string(), kT0).ok());
  struct stat st {};
  ASSERT_EQ(stat(out.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  const fs::path x = dir_ / "x";
  EXPECT_EQ(Untar(out, x), (std::vector<std::string>{"summary.md", "diagnosis.json", "counters.csv", "kernel.log",
                                                     "bmc_sel.log", "node_facts.json"}));

  const std::string md = Slurp(x / "summary.md");
  EXPECT_NE(md.find("# RMA evidence: GPU gpu/3 on node gpu-node-7"), std::string::npos) << md;
  EXPECT_NE(md.find("| Serial number | 1322021000457 |"), std::string::npos) << md;
  EXPECT_NE(md.find("| UUID | GPU-0d6f2c4e-8a1b-4b7e-9c55-2f3a1e0b9d41 |"), std::string::npos);
  EXPECT_NE(md.find("| PCI bus id | 0000:3b:00.0 |"), std::string::npos);
  EXPECT_NE(md.find("| Model | Example GPU 80GB |"), std::string::npos);
  EXPECT_NE(md.find("hbm_uncorrectable"), std::string::npos);
  EXPECT_NE(md.find("Since: " + FormatIso8601(kT0 + 10 * kMin)), std::string::npos);
  EXPECT_NE(md.find("uncorrectable HBM error \\| row remapping"), std::string::npos);  // table-safe
  EXPECT_NE(md.find("PSUs and inlet temperature normal"), std::string::npos);
  EXPECT_NE(md.find("| driver_version | 550.54.15 |"), std::string::npos);
  EXPECT_NE(md.find("| gpu/3 | xid:48 | - | 1 event(s) |"), std::string::npos) << md;  // events counted
  EXPECT_NE(md.find("| bmc_firmware_version | not recorded in the store |"), std::string::npos);
  EXPECT_NE(md.find("| VBIOS version | 96.00.74.00.01 |"), std::string::npos) << md;
  EXPECT_NE(md.find("| Driver version | 550.54.15 |"), std::string::npos);
  EXPECT_NE(md.find("| Board part number | not recorded |"), std::string::npos);  // never guessed

  Json dx = Json::parse(Slurp(x / "diagnosis.json"));
  EXPECT_EQ(dx["diagnosis_id"], id);
  EXPECT_EQ(dx["kind"], "rma_bundle");
  EXPECT_EQ(dx["diagnosis"]["fault_class"], "hbm_uncorrectable");

  const std::string csv = Slurp(x / "counters.csv");
  EXPECT_EQ(csv.rfind("time_utc,component,kind,name,value,text,source\n", 0), 0u);
  EXPECT_NE(csv.find("gpu/3,ecc_dbe,ecc_dbe:volatile,2,"), std::string::npos) << csv;
  EXPECT_NE(csv.find("row_remap_failure"), std::string::npos);
  EXPECT_NE(csv.find("nvlink/3/11,nvlink_crc_flit"), std::string::npos);  // the GPU's own links
  EXPECT_EQ(csv.find("gpu/1,"), std::string::npos);                       // another GPU is not this part
  EXPECT_EQ(csv.find("psu/2"), std::string::npos);

  const std::string kernel = Slurp(x / "kernel.log");
  EXPECT_NE(kernel.find("Xid (PCI:0000:3b:00): 48"), std::string::npos);
  EXPECT_EQ(kernel.find("outside the window"), std::string::npos);
  EXPECT_EQ(kernel.find("\nFORGED"), std::string::npos);  // one record, one line
  EXPECT_NE(Slurp(x / "bmc_sel.log").find("GPU 3 memory error"), std::string::npos);

  Json facts = Json::parse(Slurp(x / "node_facts.json"));
  EXPECT_EQ(facts["facts"]["driver_version"], "550.54.15");
  EXPECT_FALSE(facts["facts"].contains("vbios_version"));  // a GPU's, not the node's
  EXPECT_EQ(facts["part"]["vbios_version"], "96.00.74.00.01");
  EXPECT_EQ(facts["part"]["serial"], "1322021000457");
  EXPECT_EQ(facts["part_not_recorded"], Json::array({"board_part_number", "pci_id"})) << facts.dump(2);
}

TEST_F(BundleTest, GpuVersionsAndSerialsAreThePartsOwnOrNotRecorded) {
  std::vector<Observation> obs;
  Observation gpu3 = Obs(kT0, Layer::kGpu, GpuComponent("3"), ObsKind::kGpuIdentity, std::nullopt, Source::kNvml);
  gpu3.attrs = {{"name", "Example GPU 80GB"},
                {"serial", "1322021000457"},
                {"uuid", "GPU-0d6f2c4e"},
                {"bdf", "0000:3b:00.0"},
                {"board_part_number", "692-2G520-0200-000"},
                {"vbios_version", "96.00.74.00.01"}};
  obs.push_back(gpu3);
  Observation gpu1 = Obs(kT0, Layer::kGpu, GpuComponent("1"), ObsKind::kGpuIdentity, std::nullopt, Source::kNvml);
  gpu1.attrs = {{"name", "Example GPU 80GB"}, {"vbios_version", "99.99.99.99.99"}};  // no serial recorded
  obs.push_back(gpu1);
  Observation driver = Obs(kT0 + kMin, Layer::kOs, HostComponent(), ObsKind::kOther, std::nullopt, Source::kSysfs);
  driver.attrs = {{"driver_version", "550.54.15"}};
  obs.push_back(driver);
  // Many newer rows: the history read does not reach the identity rows, which are read on their own.
  for (int i = 0; i < 20; ++i) {
    obs.push_back(Obs(kT0 + (2 + i) * kMin, Layer::kGpu, GpuComponent("3"), ObsKind::kEccSbe, i, Source::kNvml));
  }
  ASSERT_TRUE(store_->Append(obs).ok());

  BundleOptions o = Options(Put(GpuDiagnosis(GpuComponent("3"))));
  o.max_counter_rows = 5;
  auto b = BuildBundle(*store_, BundleKind::kRma, o);
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  const std::string& md = b->files[0].data;
  EXPECT_NE(md.find("| Model | Example GPU 80GB |"), std::string::npos) << md;
  EXPECT_NE(md.find("| Serial number | 1322021000457 |"), std::string::npos);
  EXPECT_NE(md.find("| Board part number | 692-2G520-0200-000 |"), std::string::npos);
  EXPECT_NE(md.find("| UUID | GPU-0d6f2c4e |"), std::string::npos);
  EXPECT_NE(md.find("| PCI bus id | 0000:3b:00.0 |"), std::string::npos);
  EXPECT_NE(md.find("| VBIOS version | 96.00.74.00.01 |"), std::string::npos);
  EXPECT_EQ(md.find("99.99.99.99.99"), std::string::npos);  // another GPU's VBIOS is not this one's
  EXPECT_NE(md.find("| PCI vendor:device | not recorded |"), std::string::npos);

  // GPU 1: what NVML did not record is said so; the node's driver is the node's.
  Diagnosis d1 = GpuDiagnosis(GpuComponent("1"));
  d1.summary = "GPU 1: uncorrectable HBM error";
  b = BuildBundle(*store_, BundleKind::kRma, Options(Put(d1)));
  ASSERT_TRUE(b.ok());
  const std::string& md1 = b->files[0].data;
  EXPECT_NE(md1.find("| Serial number | not recorded |"), std::string::npos) << md1;
  EXPECT_NE(md1.find("| Board part number | not recorded |"), std::string::npos);
  EXPECT_NE(md1.find("| VBIOS version | 99.99.99.99.99 |"), std::string::npos);
  EXPECT_NE(md1.find("| Driver version | 550.54.15 |"), std::string::npos);
  EXPECT_EQ(md1.find("1322021000457"), std::string::npos);
  Json facts = Json::parse(b->files[5].data);
  EXPECT_NE(facts["part_not_recorded"].dump().find("\"serial\""), std::string::npos) << facts.dump(2);
}

// A PSU the BMC reports through Redfish: the resource it served (stored as the reading's raw JSON).
Observation PsuState(int64_t t, const std::string& raw) {
  Observation o = Obs(t, Layer::kOob, {ComponentType::kPsu, "PSU2", {{"serial", "PSU-SN-04418"}, {"chassis", "HGX"}}},
                      ObsKind::kPsuState, 2, Source::kRedfish, raw);
  o.attrs = {{"health", "Warning"}, {"state", "Enabled"}};
  return o;
}

Diagnosis PsuRmaDiagnosis() {
  Diagnosis d;
  d.fault_class = FaultClass::kPowerSupply;
  d.layer = Layer::kOob;
  d.component = {ComponentType::kPsu, "PSU2", {{"serial", "PSU-SN-04418"}}};
  d.action = Action::kRma;  // failed with its input normal: the part goes back
  d.confidence = 0.9;
  d.severity = Severity::kCritical;
  d.first_ns = kT0 + 20 * kMin;
  d.last_ns = kT0 + 25 * kMin;
  d.summary = "PSU2 predictive failure; the board brakes every GPU";
  return d;
}

TEST_F(BundleTest, PsuRmaNamesThePsuFromTheBmcWhenThePlanCallsForIt) {
  FillNode();
  ASSERT_TRUE(
      store_
          ->Append({PsuState(kT0 + 19 * kMin, R"({"MemberId":"PSU2","SerialNumber":"PSU-SN-04418","Model":"PWS-3K01",)"
                                              R"("Manufacturer":"ACME Power","FirmwareVersion":"1.04.2"})"),
                    PsuState(kT0 + 21 * kMin, "not json")})
          .ok());
  const int64_t id = Put(PsuRmaDiagnosis());
  // The fault class alone sends power to facilities ...
  EXPECT_EQ(BuildBundle(*store_, BundleKind::kRma, Options(id)).status().code(), StatusCode::kInvalidArgument);
  // ... the action plan returns the failed PSU itself.
  BundleOptions o = Options(id);
  o.warrant = Warrant::kActionPlan;
  o.warrant_note = "rule physical_part_rma";
  auto b = BuildBundle(*store_, BundleKind::kRma, o);
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  const std::string& md = b->files[0].data;
  EXPECT_NE(md.find("# RMA evidence: Power supply psu/PSU2 on node gpu-node-7"), std::string::npos) << md;
  EXPECT_NE(md.find("Called for by faultline's action plan for this diagnosis (rule physical_part_rma)"),
            std::string::npos);
  EXPECT_NE(md.find("| Model | PWS-3K01 |"), std::string::npos) << md;
  EXPECT_NE(md.find("| Manufacturer | ACME Power |"), std::string::npos);
  EXPECT_NE(md.find("| Serial number | PSU-SN-04418 |"), std::string::npos);
  EXPECT_NE(md.find("| Firmware version | 1.04.2 |"), std::string::npos);
  EXPECT_NE(md.find("| Part number | not recorded |"), std::string::npos);
  EXPECT_EQ(md.find("VBIOS"), std::string::npos);  // not a GPU's fields
  EXPECT_EQ(md.find("1322021000457"), std::string::npos);
  EXPECT_NE(md.find("## Readings of the part"), std::string::npos);
  EXPECT_NE(b->files[2].data.find("psu/PSU2,psu_state"), std::string::npos) << b->files[2].data;
  EXPECT_EQ(b->files[2].data.find("gpu/3"), std::string::npos);
  Json dx = Json::parse(b->files[1].data);
  EXPECT_EQ(dx["warrant"]["by"], "action_plan");
  Json facts = Json::parse(b->files[5].data);
  EXPECT_EQ(facts["part"]["firmware_version"], "1.04.2");
  EXPECT_EQ(facts["part_not_recorded"], Json::array({"part_number"}));
}

TEST_F(BundleTest, ForcedBundlesSaySoAndTheHardFloorHolds) {
  FillNode();
  BundleOptions o = Options(Put(PowerDiagnosis()));  // the plan files a facility ticket
  o.warrant = Warrant::kForced;
  o.warrant_note = "its plan: facility_ticket, webhook";
  auto b = BuildBundle(*store_, BundleKind::kRma, o);
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  EXPECT_NE(b->files[0].data.find("Prepared on an operator's request (--force)"), std::string::npos);
  EXPECT_EQ(Json::parse(b->files[1].data)["warrant"]["by"], "forced");
  // Never a GPU returned for a power, cooling or leak cause, nor anything for a user program.
  for (FaultClass fc : {FaultClass::kCoolantLeak, FaultClass::kUserApplication, FaultClass::kNone}) {
    for (Warrant w : {Warrant::kActionPlan, Warrant::kForced}) {
      BundleOptions f = Options(Put(GpuDiagnosis(Gpu3(), fc)));
      f.warrant = w;
      auto r = BuildBundle(*store_, BundleKind::kRma, f);
      EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << ToString(fc);
    }
  }
  // A cable fault the plan hands to facilities gets its ticket, not a power/cooling wording.
  Diagnosis cable = GpuDiagnosis({ComponentType::kIb, "mlx5_3/1", {}}, FaultClass::kIbLinkErrors);
  cable.action = Action::kFacilityTicket;
  BundleOptions c = Options(Put(cable));
  EXPECT_FALSE(BuildBundle(*store_, BundleKind::kFacility, c).ok());
  c.warrant = Warrant::kActionPlan;
  auto ticket = BuildBundle(*store_, BundleKind::kFacility, c);
  ASSERT_TRUE(ticket.ok()) << ticket.status().ToString();
  EXPECT_NE(ticket->files[0].data.find("hands this ib_link_errors fault to facilities"), std::string::npos);
  // The plan's word needs the diagnosis named.
  BundleOptions unnamed = Options();
  unnamed.warrant = Warrant::kActionPlan;
  EXPECT_EQ(BuildBundle(*store_, BundleKind::kRma, unnamed).status().code(), StatusCode::kInvalidArgument);
}

TEST_F(BundleTest, NoSecretFromTheLogsReachesTheBundle) {
  FillNode();
  const int64_t id = Put(GpuDiagnosis(Gpu3()));
  auto bundle = BuildBundle(*store_, BundleKind::kRma, Options(id));
  ASSERT_TRUE(bundle.ok());
  for (const TarEntry& f : bundle->files) {
    EXPECT_EQ(f.data.find("hunter2"), std::string::npos) << f.name;
    EXPECT_EQ(f.data.find("c0ffee-77aa"), std::string::npos) << f.name;
  }
  EXPECT_NE(bundle->files[3].data.find("password=[redacted]"), std::string::npos);
}

TEST_F(BundleTest, RedactionCoversTheUsualForms) {
  EXPECT_EQ(RedactSecrets("password=hunter2 user=x"), "password=[redacted] user=x");
  EXPECT_EQ(RedactSecrets(R"({"Password": "p@ss", "UserName": "admin"})"),
            R"({"Password": "[redacted]", "UserName": "admin"})");
  EXPECT_EQ(RedactSecrets("Authorization: Bearer eyJhbGci.x.y next"), "Authorization: [redacted] next");
  EXPECT_EQ(RedactSecrets("X-Auth-Token: abc123"), "X-Auth-Token: [redacted]");
  EXPECT_EQ(RedactSecrets("api_key=k&x=1"), "api_key=[redacted]&x=1");
  EXPECT_EQ(RedactSecrets("NVRM: GPU token ring idle"), "NVRM: GPU token ring idle");  // no separator: prose
  EXPECT_EQ(RedactSecrets("token="), "token=");
  EXPECT_EQ(RedactSecrets(""), "");
}

TEST_F(BundleTest, NvlinkAndPcieParts) {
  FillNode();
  Diagnosis link = GpuDiagnosis({ComponentType::kNvlink, "3/11", {}}, FaultClass::kNvlinkErrors);
  auto b = BuildBundle(*store_, BundleKind::kRma, Options(Put(link)));
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  EXPECT_NE(b->files[0].data.find("# RMA evidence: NVLink link nvlink/3/11"), std::string::npos);
  EXPECT_NE(b->files[2].data.find("nvlink_crc_flit"), std::string::npos);
  EXPECT_NE(b->files[0].data.find("| Serial number | 1322021000457 |"), std::string::npos);  // the GPU's identity

  Diagnosis pcie = GpuDiagnosis(PcieComponent("0000:3b:00.0"), FaultClass::kPcieLinkDegraded);
  pcie.component.keys["pci_id"] = "10de:2330";
  b = BuildBundle(*store_, BundleKind::kRma, Options(Put(pcie)));
  ASSERT_TRUE(b.ok());
  EXPECT_NE(b->files[0].data.find("| PCI vendor:device | 10de:2330 |"), std::string::npos);
  EXPECT_NE(b->files[2].data.find("xid"), std::string::npos);  // the XID logged against that bus id
}

TEST_F(BundleTest, PhysicalAndUserCausesNeverGetAGpuRma) {
  FillNode();
  const int64_t power = Put(PowerDiagnosis());
  auto refused = BuildBundle(*store_, BundleKind::kRma, Options(power));
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(refused.status().message().find("facility-ticket"), std::string::npos) << refused.status().message();

  for (FaultClass fc : {FaultClass::kUserApplication, FaultClass::kDriverFault, FaultClass::kNone,
                        FaultClass::kCoolantLeak, FaultClass::kThermalInlet}) {
    Diagnosis d = GpuDiagnosis(Gpu3(), fc);
    auto r = BuildBundle(*store_, BundleKind::kRma, Options(Put(d)));
    ASSERT_FALSE(r.ok()) << ToString(fc);
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(r.status().message().find("refusing"), std::string::npos);
  }
  const int64_t gpu = Put(GpuDiagnosis(Gpu3()));
  auto ticket = BuildBundle(*store_, BundleKind::kFacility, Options(gpu));
  ASSERT_FALSE(ticket.ok());
  EXPECT_NE(ticket.status().message().find("rma-bundle"), std::string::npos);
}

TEST_F(BundleTest, CauseGroupsCoverEveryFaultClass) {
  int facility = 0;
  for (FaultClass fc : AllFaultClasses()) facility += GroupOf(fc) == CauseGroup::kFacility;
  EXPECT_EQ(facility, 6);
  EXPECT_EQ(GroupOf(FaultClass::kUserApplication), CauseGroup::kUserProgram);
  EXPECT_EQ(GroupOf(FaultClass::kRowRemapExhausted), CauseGroup::kPart);
  EXPECT_EQ(GroupOf(FaultClass::kNvswitchFault), CauseGroup::kPart);
}

TEST_F(BundleTest, FacilityTicketIsAddressedToFacilitiesWithReadings) {
  FillNode();
  Put(GpuDiagnosis(Gpu3()));
  const int64_t power = Put(PowerDiagnosis());
  Put(GpuDiagnosis(Gpu3(), FaultClass::kUserApplication));  // newest, but not a facility matter
  auto ticket = BuildBundle(*store_, BundleKind::kFacility, Options());
  ASSERT_TRUE(ticket.ok()) << ticket.status().ToString();
  EXPECT_EQ(ticket->diagnosis_id, power);
  const fs::path out = dir_ / "ticket.tar.gz";
  ASSERT_TRUE(WriteBundle(*ticket, out.string(), kT0).ok());
  const fs::path x = dir_ / "t";
  EXPECT_EQ(Untar(out, x), (std::vector<std::string>{"summary.md", "diagnosis.json", "readings.csv", "bmc_sel.log",
                                                     "node_facts.json"}));
  const std::string md = Slurp(x / "summary.md");
  EXPECT_NE(md.find("To: data-center facilities"), std::string::npos);
  EXPECT_NE(md.find("| pdu | R14-PDU-B |"), std::string::npos) << md;
  EXPECT_NE(md.find("| rack | R14 |"), std::string::npos);
  EXPECT_NE(md.find("| line_input | feed-B |"), std::string::npos);
  EXPECT_NE(md.find("| psu/2 | power | 1450 | 0 | 0 | 1450 |"), std::string::npos) << md;
  ASSERT_NE(md.find("| coolant/loop1 | coolant_temp |"), std::string::npos);
  EXPECT_LT(md.find("| psu/2 |"), md.find("| coolant/loop1 |"));  // the diagnosed part's readings first
  EXPECT_EQ(md.find("Serial number"), std::string::npos);         // no GPU part named for return
  EXPECT_EQ(md.find("RMA evidence"), std::string::npos);
  const std::string readings = Slurp(x / "readings.csv");
  EXPECT_NE(readings.find("psu/2,voltage,voltage,230,"), std::string::npos) << readings;
  EXPECT_EQ(readings.find("ecc_dbe"), std::string::npos);
  EXPECT_NE(Slurp(x / "bmc_sel.log").find("Power Supply AC lost"), std::string::npos);
  EXPECT_FALSE(fs::exists(x / "kernel.log"));
}

TEST_F(BundleTest, NewestEligibleDiagnosisIsChosenAndUnknownIdsAreErrors) {
  FillNode();
  const int64_t older = Put(GpuDiagnosis(Gpu3()));
  Diagnosis newer = GpuDiagnosis({ComponentType::kNvswitch, "2", {}}, FaultClass::kNvswitchFault);
  const int64_t newest = Put(newer);
  Put(PowerDiagnosis());
  auto b = BuildBundle(*store_, BundleKind::kRma, Options());
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->diagnosis_id, newest);
  EXPECT_NE(newest, older);
  auto missing = BuildBundle(*store_, BundleKind::kRma, Options(newest + 100));
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  BundleOptions other = Options();
  other.node = "some-other-node";
  auto none = BuildBundle(*store_, BundleKind::kRma, other);
  EXPECT_EQ(none.status().code(), StatusCode::kNotFound);
  EXPECT_NE(none.status().message().find("--diagnosis"), std::string::npos);
}

TEST_F(BundleTest, EmptyStoreAndTruncation) {
  auto none = BuildBundle(*store_, BundleKind::kRma, Options());
  EXPECT_EQ(none.status().code(), StatusCode::kNotFound);
  FillNode();
  const int64_t id = Put(GpuDiagnosis(Gpu3()));
  BundleOptions o = Options(id);
  o.max_lines = 1;
  auto b = BuildBundle(*store_, BundleKind::kRma, o);
  ASSERT_TRUE(b.ok());
  EXPECT_NE(b->files[3].data.find("only the newest 1 lines"), std::string::npos);
  o.window_pad_ns = -1;
  EXPECT_EQ(BuildBundle(*store_, BundleKind::kRma, o).status().code(), StatusCode::kInvalidArgument);
}

TEST(TarTest, ArchiveRoundTripsThroughSystemTar) {
  const fs::path dir = FreshDir("tar");
  std::string big(70'000, 'x');
  for (size_t i = 0; i < big.size(); i += 97) big[i] = static_cast<char>('a' + i % 26);
  auto tar = MakeTar({{"a.txt", "hello\n"}, {"empty", ""}, {"sub/big.bin", big}, {"exact", std::string(512, 'z')}},
                     1'700'000'000);
  ASSERT_TRUE(tar.ok());
  EXPECT_EQ(tar->size() % 512, 0u);
  auto gz = Gzip(*tar);
  ASSERT_TRUE(gz.ok());
  ASSERT_TRUE(WriteFileAtomically((dir / "t.tar.gz").string(), *gz, 0644).ok());
  const auto names = Untar(dir / "t.tar.gz", dir / "x");
  EXPECT_EQ(names, (std::vector<std::string>{"a.txt", "empty", "sub/big.bin", "exact"}));
  EXPECT_EQ(Slurp(dir / "x/a.txt"), "hello\n");
  EXPECT_EQ(Slurp(dir / "x/empty"), "");
  EXPECT_EQ(Slurp(dir / "x/sub/big.bin"), big);
  EXPECT_EQ(Slurp(dir / "x/exact"), std::string(512, 'z'));
}

TEST(TarTest, BadNamesAndUnwritablePathsAreRefused) {
  for (const std::string& name : std::vector<std::string>{"", "/etc/passwd", "../x", "a/../../b", "a//b", "sp ace",
                                                          std::string(101, 'n'), "new\nline", "./x"}) {
    EXPECT_EQ(MakeTar({{name, "x"}}, 0).status().code(), StatusCode::kInvalidArgument) << name;
  }
  EXPECT_FALSE(WriteFileAtomically("/nonexistent-dir/x.tar.gz", "x").ok());
  const fs::path dir = FreshDir("tar_dir");
  fs::create_directories(dir / "is-a-dir");
  EXPECT_FALSE(WriteFileAtomically((dir / "is-a-dir").string(), "x").ok());
  // Nothing half-written is left behind.
  size_t entries = 0;
  for (const auto& e : fs::directory_iterator(dir)) entries += e.path().filename() != "is-a-dir";
  EXPECT_EQ(entries, 0u);
}

// ---- the command, through the real binary ---------------------------------------------

TEST_F(BundleTest, CommandWritesTheBundleAndRefusesBadInput) {
  using testing_cli::Faultline;
  FillNode();
  const int64_t gpu = Put(GpuDiagnosis(Gpu3()));
  const int64_t power = Put(PowerDiagnosis());
  ASSERT_TRUE(store_->Close().ok());
  const std::string store = " --store '" + store_path_ + "'";
  const fs::path out = dir_ / "cli.tar.gz";

  auto ok = Faultline("rma-bundle" + store + " --diagnosis " + std::to_string(gpu) + " --out '" + out.string() + "'");
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_NE(ok.out.find("hbm_uncorrectable on gpu/3"), std::string::npos) << ok.out;
  const auto names = Untar(out, dir_ / "cli");
  EXPECT_EQ(names.size(), 6u);
  EXPECT_NE(Slurp(dir_ / "cli/summary.md").find("1322021000457"), std::string::npos);

  auto json =
      Faultline("rma-bundle --json" + store + " --diagnosis " + std::to_string(gpu) + " --out '" + out.string() + "'");
  ASSERT_EQ(json.exit_code, 0) << json.err;
  EXPECT_EQ(Json::parse(json.out)["diagnosis_id"], gpu);
  EXPECT_EQ(Json::parse(json.out)["warrant"], "action_plan");

  auto refused = Faultline("rma-bundle" + store + " --diagnosis " + std::to_string(power) + " --out '" +
                           (dir_ / "no.tar.gz").string() + "'");
  EXPECT_EQ(refused.exit_code, 2);
  EXPECT_NE(refused.err.find("facility-ticket"), std::string::npos) << refused.err;
  EXPECT_NE(refused.err.find("--force"), std::string::npos) << refused.err;
  EXPECT_FALSE(fs::exists(dir_ / "no.tar.gz"));

  // The power diagnosis is the node's active one, and its plan files a facility ticket.
  auto ticket = Faultline("facility-ticket --json" + store + " --out '" + (dir_ / "f.tar.gz").string() + "'");
  ASSERT_EQ(ticket.exit_code, 0) << ticket.err;
  EXPECT_EQ(Json::parse(ticket.out)["diagnosis_id"], power);
  EXPECT_TRUE(fs::exists(dir_ / "f.tar.gz"));

  auto unknown = Faultline("rma-bundle" + store + " --diagnosis 999999 --out '" + out.string() + "'");
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_NE(unknown.err.find("no diagnosis #999999"), std::string::npos);

  auto no_store = Faultline("rma-bundle --store '" + (dir_ / "missing.db").string() + "' --out '" + out.string() + "'");
  EXPECT_EQ(no_store.exit_code, 2);
  EXPECT_NE(no_store.err.find("no store at"), std::string::npos);
  EXPECT_FALSE(fs::exists(dir_ / "missing.db"));  // asking never creates a store

  auto unwritable =
      Faultline("rma-bundle" + store + " --diagnosis " + std::to_string(gpu) + " --out /nonexistent-dir/x.tar.gz");
  EXPECT_EQ(unwritable.exit_code, 1);
  EXPECT_NE(unwritable.err.find("/nonexistent-dir"), std::string::npos) << unwritable.err;

  { std::ofstream(dir_ / "garbage.db") << std::string(8192, 'g'); }
  auto garbage = Faultline("rma-bundle --store '" + (dir_ / "garbage.db").string() + "' --out '" + out.string() + "'");
  EXPECT_EQ(garbage.exit_code, 1);

  EXPECT_EQ(Faultline("rma-bundle" + store).exit_code, 2);  // --out is required
  EXPECT_EQ(Faultline("rma-bundle" + store + " --diagnosis -3 --out x").exit_code, 2);
  EXPECT_EQ(Faultline("rma-bundle" + store + " --window soon --out x").exit_code, 2);
  EXPECT_EQ(Faultline("rma-bundle" + store + " --force --out x").exit_code, 2);  // --force names a diagnosis
  auto help = Faultline("rma-bundle --help");
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_NE(help.out.find("serial"), std::string::npos);
}

// Which diagnosis without --diagnosis: the node's active one whose action plan calls for the
// document (policy::PlanActions over policy::ActiveDiagnoses), never a superseded one.
class BundleChoiceTest : public BundleTest {
 protected:
  testing_cli::RunResult Run(const std::string& command, const std::string& extra = "") {
    if (store_) {
      EXPECT_TRUE(store_->Close().ok());
    }
    store_.reset();
    out_ = dir_ / ("out" + std::to_string(++runs_) + ".tar.gz");
    return testing_cli::Faultline(command + " --json --store '" + store_path_ + "' --out '" + out_.string() + "' " +
                                  extra);
  }

  void Reopen() {
    auto s = Store::Open(store_path_);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    store_ = std::move(s).value();
  }

  // A real (not dry-run) drain done for `id`: the node is out for it, so it stays active.
  void Drained(int64_t id, const Diagnosis& d) {
    ActionRecord a;
    a.time_ns = d.last_ns + kMin;
    a.node = kNode;
    a.action = Action::kDrain;
    a.diagnosis_id = id;
    a.dry_run = false;
    a.outcome = "ok";
    a.attrs = {{"state", "done"},
               {"class", "drain"},
               {"key", std::string(kNode) + "|drain|" + std::string(ToString(d.fault_class)) + "|" + d.component.Id()},
               {"fault", std::string(ToString(d.fault_class)) + "|" + d.component.Id()}};
    ASSERT_TRUE(store_->PutAction(a).ok());
  }

  fs::path out_;
  int runs_ = 0;
};

TEST_F(BundleChoiceTest, TheOneActiveDiagnosisCallingForAnRmaIsPicked) {
  FillNode();
  const int64_t gpu = Put(GpuDiagnosis(Gpu3()));
  auto r = Run("rma-bundle");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Json j = Json::parse(r.out);
  EXPECT_EQ(j["diagnosis_id"], gpu);
  EXPECT_EQ(j["component"], "gpu/3");
  EXPECT_EQ(j["warrant"], "action_plan");
  Untar(out_, dir_ / "x");
  const std::string md = Slurp(dir_ / "x" / "summary.md");
  EXPECT_NE(md.find("Called for by faultline's action plan"), std::string::npos) << md;
  EXPECT_NE(md.find("| Serial number | 1322021000457 |"), std::string::npos);
}

TEST_F(BundleChoiceTest, ASupersededDiagnosisIsNeverPickedTheLaterPrimaryIs) {
  FillNode();
  ASSERT_TRUE(
      store_
          ->Append({PsuState(kT0 + 19 * kMin,
                             R"({"SerialNumber":"PSU-SN-04418","Model":"PWS-3K01","FirmwareVersion":"1.04.2"})")})
          .ok());
  // The isolator first blamed healthy GPU 0, then settled on the PSU: GPU 0's row is superseded.
  Diagnosis early = GpuDiagnosis(GpuComponent("0"));
  early.summary = "GPU 0 throttled (an intermediate guess)";
  early.last_ns = kT0 + 15 * kMin;
  const int64_t gpu0 = Put(early);
  const int64_t psu = Put(PsuRmaDiagnosis());
  auto r = Run("rma-bundle");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Json j = Json::parse(r.out);
  EXPECT_EQ(j["diagnosis_id"], psu);
  EXPECT_NE(j["diagnosis_id"], gpu0);
  EXPECT_EQ(j["component"], "psu/PSU2");
  Untar(out_, dir_ / "x");
  const std::string md = Slurp(dir_ / "x" / "summary.md");
  EXPECT_NE(md.find("# RMA evidence: Power supply psu/PSU2"), std::string::npos) << md;
  EXPECT_NE(md.find("| Serial number | PSU-SN-04418 |"), std::string::npos);
  EXPECT_NE(md.find("| Model | PWS-3K01 |"), std::string::npos);
  EXPECT_NE(md.find("| Firmware version | 1.04.2 |"), std::string::npos);
  EXPECT_NE(md.find("| Part number | not recorded |"), std::string::npos);
  EXPECT_EQ(md.find("gpu/0"), std::string::npos);
  // The operator can still name the old one: its plan calls for an RMA of GPU 0.
  auto old = Run("rma-bundle", "--diagnosis " + std::to_string(gpu0));
  EXPECT_EQ(old.exit_code, 0) << old.err;
}

TEST_F(BundleChoiceTest, SeveralActiveCandidatesAreListedAndNoneIsGuessed) {
  FillNode();
  const Diagnosis first = GpuDiagnosis(Gpu3());
  const int64_t gpu3 = Put(first);
  Drained(gpu3, first);  // still active: the node is out for it
  Diagnosis second = GpuDiagnosis(GpuComponent("1"), FaultClass::kRowRemapExhausted);
  second.first_ns = kT0 + 30 * kMin;
  second.last_ns = kT0 + 31 * kMin;
  const int64_t gpu1 = Put(second);
  auto r = Run("rma-bundle");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_FALSE(fs::exists(out_));
  EXPECT_NE(r.err.find("2 active diagnoses of node gpu-node-7 call for an RMA bundle"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("#" + std::to_string(gpu3) + " hbm_uncorrectable on gpu/3 at " + FormatIso8601(kT0 + 12 * kMin)),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("#" + std::to_string(gpu1) + " row_remap_exhausted on gpu/1"), std::string::npos);
  EXPECT_NE(r.err.find("--diagnosis"), std::string::npos);
  auto named = Run("rma-bundle", "--diagnosis " + std::to_string(gpu1));
  ASSERT_EQ(named.exit_code, 0) << named.err;
  EXPECT_EQ(Json::parse(named.out)["component"], "gpu/1");
}

TEST_F(BundleChoiceTest, NoCandidateNamesTheActiveDiagnosisAndForceOverridesThePlan) {
  FillNode();
  Put(GpuDiagnosis(Gpu3()));                    // superseded
  const int64_t power = Put(PowerDiagnosis());  // the active one: its plan files a facility ticket
  auto r = Run("rma-bundle");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_FALSE(fs::exists(out_));
  EXPECT_NE(r.err.find("no active diagnosis of node gpu-node-7 calls for an RMA bundle"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("#" + std::to_string(power) + " power_supply on psu/2"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("faultline facility-ticket"), std::string::npos);
  EXPECT_EQ(r.err.find("gpu/3"), std::string::npos);

  auto refused = Run("rma-bundle", "--diagnosis " + std::to_string(power));
  EXPECT_EQ(refused.exit_code, 2);
  EXPECT_NE(refused.err.find("does not call for an RMA bundle"), std::string::npos) << refused.err;
  auto forced = Run("rma-bundle", "--force --diagnosis " + std::to_string(power));
  ASSERT_EQ(forced.exit_code, 0) << forced.err;
  EXPECT_EQ(Json::parse(forced.out)["warrant"], "forced");
  Untar(out_, dir_ / "x");
  EXPECT_NE(Slurp(dir_ / "x" / "summary.md").find("(--force)"), std::string::npos);

  // The hard floor holds even when forced: no GPU goes back for a leak.
  Reopen();
  const int64_t leak = Put(GpuDiagnosis(Gpu3(), FaultClass::kCoolantLeak));
  auto floor = Run("rma-bundle", "--force --diagnosis " + std::to_string(leak));
  EXPECT_EQ(floor.exit_code, 2);
  EXPECT_NE(floor.err.find("refusing an RMA bundle"), std::string::npos) << floor.err;
}

TEST_F(BundleChoiceTest, AWrongNodeIsExitThreeAndSeveralNodesNeedOne) {
  FillNode();
  Put(GpuDiagnosis(Gpu3()));
  auto wrong = Run("rma-bundle", "--node gpu-node-77");
  EXPECT_EQ(wrong.exit_code, 3) << wrong.err;
  EXPECT_NE(wrong.err.find("no rows for node gpu-node-77"), std::string::npos) << wrong.err;
  EXPECT_NE(wrong.err.find("gpu-node-7)"), std::string::npos);  // the nodes it does hold
  EXPECT_EQ(Run("facility-ticket", "--node gpu-node-77").exit_code, 3);
  EXPECT_EQ(Run("rma-bundle", "--node gpu-node-77 --diagnosis 1").exit_code, 3);
  EXPECT_EQ(Run("rma-bundle", "--node gpu-node-7").exit_code, 0);

  Reopen();
  Put(GpuDiagnosis(Gpu3()), "gpu-node-8");
  auto several = Run("rma-bundle");
  EXPECT_EQ(several.exit_code, 2);
  EXPECT_NE(several.err.find("several nodes (gpu-node-7, gpu-node-8)"), std::string::npos) << several.err;
}

TEST_F(BundleChoiceTest, AnEmptyStoreHasNothingToJudge) {
  auto r = Run("rma-bundle");
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find("no rows"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace faultline::actions
