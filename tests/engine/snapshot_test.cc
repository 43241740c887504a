// Snapshot sniffing and parsing: every accepted form, and damage that must cost only the
// damaged part (never a crash, never the rest of the file).
#include "engine/offline/snapshot.h"

#include <gtest/gtest.h>

#include "core/json.h"

namespace faultline {
namespace {

constexpr const char* kObs =
    R"({"time_ns":1741946400000000000,"node":"n1","layer":"gpu","kind":"row_remap_pending","source":"nvml",)"
    R"("value":1,"component":{"type":"gpu","name":"1","keys":{"index":"1","bdf":"0000:2a:00.0"}}})";

std::string Sample(const std::string& observations, const std::string& extra = "") {
  return R"({"time_ns":1741946400000000000,"node":"n1","gpu_count":2,"observations":[)" + observations +
         R"(],"findings":[],"errors":[])" + extra + "}";
}

Snapshot MustParse(std::string_view text, SnapshotFormat format = SnapshotFormat::kJson) {
  Result<Snapshot> s = ParseSnapshot(text, format);
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  return s.ok() ? *s : Snapshot{};
}

TEST(SnapshotSniffTest, TellsTheFormsApart) {
  EXPECT_EQ(SniffSnapshot("{\"observations\":[]}"), SnapshotFormat::kJson);
  EXPECT_EQ(SniffSnapshot("\xEF\xBB\xBF\n  [\n  {\"kind\":\"xid\"}]"), SnapshotFormat::kJson);
  EXPECT_EQ(SniffSnapshot("[]"), SnapshotFormat::kJson);
  EXPECT_EQ(SniffSnapshot("[    1.000000] usb 1-1: new device\n"), SnapshotFormat::kKernelLog);
  EXPECT_EQ(SniffSnapshot("[12345.5] NVRM: Xid"), SnapshotFormat::kKernelLog);
  EXPECT_EQ(SniffSnapshot("[Sun Feb 23 16:24:18 2025] NVRM: Xid"), SnapshotFormat::kKernelLog);
  EXPECT_EQ(SniffSnapshot("6,41577,902113004,-;NVRM: Xid"), SnapshotFormat::kKernelLog);
  EXPECT_EQ(SniffSnapshot("Mar 14 02:11:05 gpu-node-12 kernel: x"), SnapshotFormat::kKernelLog);
  EXPECT_EQ(SniffSnapshot("# HELP DCGM_FI_DEV_GPU_TEMP GPU temperature (in C).\n"), SnapshotFormat::kPrometheus);
  EXPECT_EQ(SniffSnapshot("\n# TYPE DCGM_FI_DEV_GPU_TEMP gauge\n"), SnapshotFormat::kPrometheus);
  EXPECT_EQ(SniffSnapshot("DCGM_FI_DEV_GPU_TEMP{gpu=\"0\"} 41\n"), SnapshotFormat::kPrometheus);
  EXPECT_EQ(SniffSnapshot(""), SnapshotFormat::kKernelLog);
  EXPECT_EQ(SniffSnapshot(" \n\t"), SnapshotFormat::kKernelLog);
  EXPECT_EQ(SniffSnapshot(std::string_view("\0\xff[", 3)), SnapshotFormat::kKernelLog);
}

// A first line starting with '[' is a kernel log when it reads as one: every dmesg stamp
// form, and bare messages whose bracket holds no JSON value.
TEST(SnapshotSniffTest, BracketedKernelLinesAreNotJson) {
  for (const char* head : {
           "[  +0.000844] NVRM: Xid (PCI:0000:3b:00): 31, x\n",
           "[<    0.000844>] nvidia 0000:3b:00.0: PCIe Bus Error\n",
           "[  991.250000 <    0.000844>] NVRM: Xid (PCI:0000:3b:00): 31, x\n",
           "[Feb14 07:03] NVRM: Xid (PCI:0000:3b:00): 31, x\n",
           "[Dec 1 10:00] usb 1-1: new device\n",
           "[Mon Mar  3 01:02:03 2025] usb 1-1: new device\n",
           "[drm] Initialized nvidia-drm 0.0.0 for 0000:3b:00.0 on minor 1\n",
           "[nvidia-drm] x\n",
           "[Hardware Error]: Machine check events logged\n",
           "[ 12.5]\n[ 12.6] x\n",
           "\xEF\xBB\xBF[  1.000000] usb 1-1: new device\n",
       }) {
    EXPECT_EQ(SniffSnapshot(head), SnapshotFormat::kKernelLog) << head;
  }
  for (const char* head : {"[\n  {\"kind\": \"xid\"}\n]", "[{\"kind\":\"xid\"}]", "[ ]", "[1, 2, 3]", "[-1]", "[\"a\"]",
                           "[[1]]", "[true]", "[null, 1]", "[false ]", "[\r\n{}]"}) {
    EXPECT_EQ(SniffSnapshot(head), SnapshotFormat::kJson) << head;
  }
}

// The caller's share of a total across files: observations past it are counted, not kept.
TEST(SnapshotParseTest, ObservationsPastTheBudgetAreCountedNotKept) {
  const std::string text = Sample(std::string(kObs) + "," + kObs) + "\n" + Sample(kObs) + "\n";
  SnapshotOptions options;
  options.max_observations = 2;
  Result<Snapshot> s = ParseSnapshot(text, SnapshotFormat::kJson, options);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->observations.size(), 2u);
  EXPECT_EQ(s->dropped, 1u);
  EXPECT_EQ(s->rejected, 0u);
  options.max_observations = 0;
  Result<Snapshot> none = ParseSnapshot(text, SnapshotFormat::kJson, options);
  ASSERT_TRUE(none.ok()) << "a snapshot over budget is still a valid snapshot";
  EXPECT_TRUE(none->observations.empty());
  EXPECT_EQ(none->dropped, 3u);
}

TEST(SnapshotParseTest, CollectJsonLinesOneSamplePerLine) {
  const std::string text = Sample(kObs) + "\n" + Sample(std::string(kObs) + "," + kObs) + "\n";
  Snapshot s = MustParse(text);
  EXPECT_EQ(s.records, 2u);
  EXPECT_EQ(s.observations.size(), 3u);
  EXPECT_EQ(s.rejected, 0u);
  EXPECT_EQ(s.sources, std::set<Source>{Source::kNvml});
  EXPECT_EQ(s.observations[0].kind, ObsKind::kRowRemapPending);
  EXPECT_EQ(s.observations[0].component.Id(), "gpu/1");
}

TEST(SnapshotParseTest, PrettyPrintedObjectsOneAfterAnother) {
  const Json one = Json::parse(Sample(kObs));
  Snapshot s = MustParse(one.dump(2) + "\n" + one.dump(2) + "\n");
  EXPECT_EQ(s.records, 2u);
  EXPECT_EQ(s.observations.size(), 2u);
}

TEST(SnapshotParseTest, GenericObservationArrayAndLines) {
  Snapshot array = MustParse(std::string("[") + kObs + "," + kObs + "]");
  EXPECT_EQ(array.observations.size(), 2u);
  Snapshot pretty = MustParse(Json::parse(std::string("[") + kObs + "]").dump(0));
  EXPECT_EQ(pretty.observations.size(), 1u);
  Snapshot lines = MustParse(std::string(kObs) + "\n\n" + kObs + "\n");
  EXPECT_EQ(lines.observations.size(), 2u);
  EXPECT_TRUE(MustParse("[]").observations.empty());
}

TEST(SnapshotParseTest, NodeComesFromTheObservationThenTheRecordThenTheOption) {
  Json o = Json::parse(kObs);
  o.erase("node");
  SnapshotOptions options;
  options.node = "fallback";
  Result<Snapshot> s = ParseSnapshot(o.dump() + "\n" + Sample(o.dump()) + "\n", SnapshotFormat::kJson, options);
  ASSERT_TRUE(s.ok());
  ASSERT_EQ(s->observations.size(), 2u);
  EXPECT_EQ(s->observations[0].node, "fallback");
  EXPECT_EQ(s->observations[1].node, "n1");
}

TEST(SnapshotParseTest, ADamagedLineCostsOnlyThatLine) {
  const std::string text =
      Sample(kObs) + "\n" + "{\"observations\":[{\"kind\":\n" + "garbage line\n" + Sample(kObs) + "\n";
  Snapshot s = MustParse(text);
  EXPECT_EQ(s.observations.size(), 2u);
  EXPECT_EQ(s.rejected, 2u);
  ASSERT_GE(s.warnings.size(), 2u);
  EXPECT_NE(s.warnings[0].find("line 2"), std::string::npos) << s.warnings[0];
  EXPECT_NE(s.warnings[1].find("line 3"), std::string::npos) << s.warnings[1];
}

TEST(SnapshotParseTest, ABadObservationCostsOnlyThatObservation) {
  Json bad_kind = Json::parse(kObs);
  bad_kind["kind"] = "no_such_kind";
  Json float_time = Json::parse(kObs);
  float_time["time_ns"] = 1e300;  // out of int64 range: refused, not cast
  Json wrong_type = Json::parse(kObs);
  wrong_type["value"] = "hot";
  Snapshot s = MustParse(
      Sample(std::string(kObs) + "," + bad_kind.dump() + "," + float_time.dump() + "," + wrong_type.dump() + ",42"));
  EXPECT_EQ(s.observations.size(), 1u);
  EXPECT_EQ(s.rejected, 4u);
  ASSERT_EQ(s.warnings.size(), 4u);
  EXPECT_NE(s.warnings[0].find("no_such_kind"), std::string::npos) << s.warnings[0];
  EXPECT_NE(s.warnings[1].find("time_ns"), std::string::npos) << s.warnings[1];
}

TEST(SnapshotParseTest, TruncatedSingleObjectIsAnError) {
  const std::string whole = Json::parse(Sample(kObs)).dump(2);
  Result<Snapshot> s = ParseSnapshot(whole.substr(0, whole.size() / 2), SnapshotFormat::kJson);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), StatusCode::kCorrupt);
  EXPECT_NE(s.status().message().find("truncated"), std::string::npos) << s.status().message();
}

TEST(SnapshotParseTest, TruncatedLastValueKeepsTheEarlierOnes) {
  const std::string whole = Json::parse(Sample(kObs)).dump(2);
  Snapshot s = MustParse(whole + "\n" + whole.substr(0, 40));
  EXPECT_EQ(s.observations.size(), 1u);
  EXPECT_EQ(s.rejected, 1u);
}

TEST(SnapshotParseTest, WrongShapesAreErrorsNamingTheProblem) {
  for (const char* text : {"{\"observations\": 5}", "{\"hello\": \"world\"}", "[1, 2, 3]", "{}", "[[{}]]"}) {
    Result<Snapshot> s = ParseSnapshot(text, SnapshotFormat::kJson);
    EXPECT_FALSE(s.ok()) << text;
    EXPECT_EQ(s.status().code(), StatusCode::kCorrupt) << text;
  }
  EXPECT_NE(ParseSnapshot("{\"observations\": 5}", SnapshotFormat::kJson).status().message().find("not an array"),
            std::string::npos);
}

TEST(SnapshotParseTest, HostileNestingIsSkippedUnparsed) {
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  Result<Snapshot> s = ParseSnapshot(deep, SnapshotFormat::kJson);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("nested"), std::string::npos) << s.status().message();
  // One deep line among good ones costs that line.
  Snapshot mixed = MustParse(Sample(kObs) + "\n" + std::string(5000, '{') + "\n" + deep + "\n" + Sample(kObs));
  EXPECT_EQ(mixed.observations.size(), 2u);
  EXPECT_EQ(mixed.rejected, 2u);
}

TEST(SnapshotParseTest, BracketsInsideStringsDoNotConfuseTheScanner) {
  Json o = Json::parse(kObs);
  o["text"] = "]]}} \\\" [[{{";
  Snapshot s = MustParse(Json::array({o}).dump(2));
  ASSERT_EQ(s.observations.size(), 1u);
  EXPECT_EQ(s.observations[0].text, "]]}} \\\" [[{{");
}

TEST(SnapshotParseTest, CollectorErrorsBecomeWarningsAndWarningsAreBounded) {
  Snapshot s = MustParse(Sample(kObs, R"(,"errors":["GET /redfish/v1/Chassis/1U/Thermal: HTTP 503",)"
                                      R"({"gpu":1,"message":"nvmlDeviceGetPowerUsage: NOT_SUPPORTED"}])"));
  ASSERT_EQ(s.warnings.size(), 2u);
  EXPECT_NE(s.warnings[0].find("HTTP 503"), std::string::npos);
  EXPECT_NE(s.warnings[1].find("NOT_SUPPORTED"), std::string::npos);
  std::string many = Sample(kObs) + "\n";
  for (int i = 0; i < 100; ++i) many += "not json\n";
  Snapshot bounded = MustParse(many);
  EXPECT_EQ(bounded.rejected, 100u);
  EXPECT_EQ(bounded.warnings.size(), 21u);  // 20 verbatim + one "N more" line
}

TEST(SnapshotParseTest, WarningsNeverCarryControlBytes) {
  Snapshot s = MustParse(Sample(kObs) + "\nnot json \x1b[31m red \x07\n");
  ASSERT_EQ(s.warnings.size(), 1u);
  EXPECT_EQ(s.warnings[0].find('\x1b'), std::string::npos);
}

constexpr const char* kScrape =
    "# HELP DCGM_FI_DEV_ROW_REMAP_PENDING Row remap pending.\n"
    "# TYPE DCGM_FI_DEV_ROW_REMAP_PENDING gauge\n"
    "DCGM_FI_DEV_ROW_REMAP_PENDING{gpu=\"1\",UUID=\"GPU-0001\",pci_bus_id=\"00000000:2A:00.0\","
    "device=\"nvidia1\",modelName=\"NVIDIA H100 80GB HBM3\",Hostname=\"gpu-node-07\"} 1\n"
    "DCGM_FI_DEV_GPU_TEMP{gpu=\"1\",UUID=\"GPU-0001\",Hostname=\"gpu-node-07\"} 41\n";

TEST(SnapshotParseTest, PrometheusScrapeIsMappedLikeTheLiveSource) {
  SnapshotOptions options;
  options.scrape_time_ns = 1741946400000000000;
  Result<Snapshot> s = ParseSnapshot(kScrape, SnapshotFormat::kPrometheus, options);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->format, SnapshotFormat::kPrometheus);
  EXPECT_EQ(s->records, 2u);
  ASSERT_GE(s->observations.size(), 2u);  // the two readings (the mapping may add the GPU's identity)
  EXPECT_EQ(s->sources, std::set<Source>{Source::kDcgmExporter});
  bool pending = false;
  for (const Observation& o : s->observations) {
    pending |= o.kind == ObsKind::kRowRemapPending && o.value == 1.0;
    EXPECT_EQ(o.time_ns, options.scrape_time_ns);
    EXPECT_EQ(o.node, "gpu-node-07");
    EXPECT_EQ(o.component.Id(), "gpu/1");
  }
  EXPECT_TRUE(pending);
}

TEST(SnapshotParseTest, PrometheusDamage) {
  Result<Snapshot> partly =
      ParseSnapshot(std::string(kScrape) + "DCGM_FI_DEV_GPU_TEMP{gpu=\"1 41\n", SnapshotFormat::kPrometheus);
  ASSERT_TRUE(partly.ok());
  EXPECT_EQ(partly->observations.size(), ParseSnapshot(kScrape, SnapshotFormat::kPrometheus)->observations.size());
  EXPECT_EQ(partly->rejected, 1u);
  EXPECT_FALSE(ParseSnapshot("# HELP x\n{{{{\n", SnapshotFormat::kPrometheus).ok());
  Result<Snapshot> other = ParseSnapshot("# HELP up x\nup 1\n", SnapshotFormat::kPrometheus);
  ASSERT_TRUE(other.ok());
  EXPECT_TRUE(other->observations.empty());
  EXPECT_FALSE(other->warnings.empty());
}

TEST(SnapshotParseTest, KernelLogsAreNotParsedHere) {
  EXPECT_EQ(ParseSnapshot("[ 1.0] x", SnapshotFormat::kKernelLog).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace faultline
