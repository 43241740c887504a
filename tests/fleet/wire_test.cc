#include "fleet/wire.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <iterator>
#include <limits>
#include <string>

namespace faultline::fleet {
namespace {

// An observation with every field set, strings holding what the line format must escape.
Observation FullObservation(int i) {
  Observation o;
  o.time_ns = 1'760'000'000'000'000'000 + i;
  o.mono_us = 123'456'789 + i;
  o.seq = std::numeric_limits<uint64_t>::max() - static_cast<uint64_t>(i);
  o.node = "gpu-node-" + std::to_string(i);
  o.layer = Layer::kGpu;
  o.component = GpuComponent(std::to_string(i % 8));
  o.component.keys = {{"uuid", "GPU-1b2c\t3d"}, {"bdf", "0000:1b:00.0"}, {"serial", "ünïcode-序列"}};
  o.kind = ObsKind::kClock;
  o.value = 1410.25 + i * 0.001;
  o.code = -42 - i;
  o.text = "line one\nline two\ttabbed \\ backslash \\t literal";
  o.source = Source::kNvml;
  o.raw = std::string("raw\r\n\x01\x1e\x1f\x7f\0 end", 14);  // with a NUL byte
  o.attrs = {{"job", "train-7"},
             {"rank", "3"},
             {"k=v;x",
              "a\x1f"
              "b"},
             {"", ""}};
  o.count = 7 + static_cast<uint64_t>(i);
  return o;
}

Envelope Batch(size_t n) {
  Envelope e;
  e.kind = RecordKind::kObservations;
  e.place = {.site = "dc-1", .rack = "r12", .node = "gpu-node-0"};
  e.msg_id = MakeMsgId("gpu-node-0", RecordKind::kObservations, 100, 100 + static_cast<int64_t>(n) - 1);
  e.sent_ns = 1'760'000'000'123'000'000;
  for (size_t i = 0; i < n; ++i) {
    e.observations.push_back(FullObservation(static_cast<int>(i)));
    e.observation_ids.push_back(100 + static_cast<int64_t>(i));
  }
  return e;
}

TEST(FleetWire, ObservationBatchRoundTripsEveryField) {
  const Envelope e = Batch(5);
  auto d = Decode(Encode(e));
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(*d, e);
}

TEST(FleetWire, EmptyOptionalFieldsStayEmpty) {
  Envelope e = Batch(0);
  Observation o;  // every optional unset, strings and maps empty
  o.kind = ObsKind::kStepTime;
  o.layer = Layer::kWorkload;
  e.observations.push_back(o);
  e.observation_ids.push_back(-1);
  Observation zero = o;  // set-but-zero is not unset
  zero.value = 0.0;
  zero.code = 0;
  zero.mono_us = 0;
  zero.seq = 0;
  e.observations.push_back(zero);
  e.observation_ids.push_back(0);
  auto d = Decode(Encode(e));
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(*d, e);
  EXPECT_FALSE(d->observations[0].value.has_value());
  EXPECT_TRUE(d->observations[1].value.has_value());
}

TEST(FleetWire, ExtremeNumbersRoundTrip) {
  Envelope e = Batch(1);
  Observation& o = e.observations[0];
  o.time_ns = std::numeric_limits<int64_t>::min();
  o.code = std::numeric_limits<int64_t>::max();
  o.value = -1.0e-308;
  o.count = 0;
  auto d = Decode(Encode(e));
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(*d, e);
  e.observations[0].value = std::numeric_limits<double>::infinity();
  d = Decode(Encode(e));
  ASSERT_TRUE(d.ok());
  EXPECT_TRUE(std::isinf(*d->observations[0].value));
}

TEST(FleetWire, EmptyBatchRoundTrips) {
  const Envelope e = Batch(0);
  auto d = Decode(Encode(e));
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(*d, e);
}

TEST(FleetWire, EncodedSizeIsTheLineLength) {
  const Envelope one = Batch(1);
  Envelope none = one;  // same header but "n":0 (same length as "n":1)
  none.observations.clear();
  none.observation_ids.clear();
  EXPECT_EQ(Encode(one).size() - Encode(none).size(), EncodedSize(one.observations[0], one.observation_ids[0]));
}

Finding SampleFinding() {
  Finding f;
  f.layer = Layer::kOob;
  f.component = {ComponentType::kPsu, "PSU1", {{"serial", "X\t1"}}};
  f.fault_class = FaultClass::kPowerSupply;
  f.severity = Severity::kCritical;
  f.action = Action::kFacilityTicket;
  f.confidence = 0.9;
  f.first_ns = 10;
  f.last_ns = 20;
  f.count = 3;
  f.summary = "PSU1 lost input\nsecond line";
  f.evidence = {
      {.time_ns = 10, .mono_us = 5, .source = Source::kRedfish, .component = "psu/PSU1", .text = "SEL", .count = 2}};
  f.attrs = {{"rule", "psu"}};
  f.key = "psu|PSU1|10";
  return f;
}

Diagnosis SampleDiagnosis() {
  Diagnosis d;
  d.fault_class = FaultClass::kIbLinkErrors;
  d.layer = Layer::kFabric;
  d.component = {ComponentType::kIb, "mlx5_0/1", {{"device", "mlx5_0"}, {"port", "1"}}};
  d.action = Action::kReseatOrReplaceLink;
  d.confidence = 0.8;
  d.severity = Severity::kWarning;
  d.first_ns = 100;
  d.last_ns = 200;
  d.summary = "symbol errors";
  d.evidence = {{.time_ns = 100, .source = Source::kSysfs, .component = "ib/mlx5_0/1", .text = "symbol_error +40"}};
  d.ruled_out = {{.layer = Layer::kGpu, .reason = "clocks normal", .evidence = {}}};
  d.explains = {"slow steps"};
  return d;
}

Envelope Record(RecordKind kind) {
  Envelope e;
  e.kind = kind;
  e.place = {.site = "dc-1", .rack = "r 12", .node = "n.07"};
  e.msg_id = MakeMsgId("n.07", kind, 55, 55);
  e.sent_ns = 999;
  e.row_id = 55;
  return e;
}

TEST(FleetWire, RecordsRoundTrip) {
  Envelope f = Record(RecordKind::kFinding);
  f.finding = SampleFinding();
  Envelope d = Record(RecordKind::kDiagnosis);
  d.diagnosis = SampleDiagnosis();
  Envelope a = Record(RecordKind::kAction);
  a.action = ActionRecord{.time_ns = 5,
                          .node = "n.07",
                          .action = Action::kDrain,
                          .diagnosis_id = 55,
                          .dry_run = false,
                          .outcome = "ok",
                          .reason = "drain: ib",
                          .attrs = {{"slurm", "yes"}}};
  Envelope fl = Record(RecordKind::kFleetDiagnosis);
  fl.fleet = FleetDiagnosis{.id = "pdu/r12-a/100",
                            .cause = "pdu",
                            .component = "pdu/r12-a",
                            .fault_class = FaultClass::kPowerSupply,
                            .action = Action::kFacilityTicket,
                            .severity = Severity::kCritical,
                            .confidence = 0.85,
                            .first_ns = 100,
                            .last_ns = 300,
                            .nodes = {"n01", "n02"},
                            .linked = {"n01#4", "n02#9"},
                            .job = "",
                            .summary = "PDU r12-a",
                            .evidence = SampleDiagnosis().evidence,
                            .node_diagnoses = {SampleDiagnosis()}};
  for (const Envelope& e : {f, d, a, fl}) {
    auto got = Decode(Encode(e));
    ASSERT_TRUE(got.ok()) << ToString(e.kind) << ": " << got.status().ToString();
    EXPECT_EQ(*got, e) << ToString(e.kind);
  }
}

TEST(FleetWire, RecordWithoutPayloadIsRefused) {
  Envelope e = Record(RecordKind::kDiagnosis);  // no diagnosis set
  auto got = Decode(Encode(e));
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), StatusCode::kCorrupt);
}

TEST(FleetWire, TruncatedBatchIsCorruptAtEveryCut) {
  const std::string bytes = Encode(Batch(3));
  // Every cut inside the body: a line cut short, a line missing, a header cut.
  for (size_t cut = 0; cut + 1 < bytes.size(); cut += 7) {
    auto got = Decode(std::string_view(bytes).substr(0, cut));
    EXPECT_FALSE(got.ok()) << "cut at " << cut;
  }
  auto whole = Decode(bytes);
  EXPECT_TRUE(whole.ok());
}

TEST(FleetWire, OversizedMessageIsInvalidArgument) {
  const std::string bytes = Encode(Batch(50));
  WireLimits small;
  small.max_message_bytes = bytes.size() - 1;
  auto got = Decode(bytes, small);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), StatusCode::kInvalidArgument);
}

TEST(FleetWire, CountOverLimitIsRefusedBeforeReading) {
  WireLimits limits;
  limits.max_observations = 4;
  auto got = Decode(Encode(Batch(5)), limits);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), StatusCode::kInvalidArgument);
  // A header announcing a huge count with no body is refused without allocating it.
  auto lie =
      Decode(R"({"v":1,"kind":"obs","site":"s","rack":"r","node":"n","msg_id":"m","sent_ns":0,"row_id":0,"n":19999})"
             "\n1\t2\n");
  ASSERT_FALSE(lie.ok());
  EXPECT_EQ(lie.status().code(), StatusCode::kCorrupt);
}

TEST(FleetWire, FieldOverLimitIsRefused) {
  Envelope e = Batch(1);
  e.observations[0].raw = std::string(300, 'r');
  WireLimits limits;
  limits.max_field_bytes = 200;
  auto got = Decode(Encode(e), limits);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), StatusCode::kInvalidArgument);
  e.observations[0].raw.clear();
  e.observations[0].attrs["big"] = std::string(201, 'a');
  got = Decode(Encode(e), limits);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), StatusCode::kInvalidArgument);
  Envelope d = Record(RecordKind::kDiagnosis);
  d.diagnosis = SampleDiagnosis();
  d.diagnosis->summary = std::string(201, 's');
  got = Decode(Encode(d), limits);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), StatusCode::kInvalidArgument);
}

TEST(FleetWire, WrongVersionIsUnsupported) {
  std::string bytes = Encode(Batch(1));
  const size_t at = bytes.find("\"v\":1");
  ASSERT_NE(at, std::string::npos);
  bytes.replace(at, 5, "\"v\":2");
  auto got = Decode(bytes);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), StatusCode::kUnsupported);
}

// Replaces the first `from` after the header line by `to`.
std::string Mutate(std::string bytes, std::string_view from, std::string_view to) {
  const size_t body = bytes.find('\n');  // the header's newline starts the first line
  const size_t at = bytes.find(from, body);
  if (at != std::string::npos) bytes.replace(at, from.size(), to);
  return bytes;
}

TEST(FleetWire, MalformedInputIsCorrupt) {
  const std::string good = Encode(Batch(2));
  const std::vector<std::string> bad = {
      "",
      "not json\n",
      "[1,2]\n",
      "{\"v\":1}\n",
      R"({"v":1,"kind":"nope","site":"s","rack":"r","node":"n","msg_id":"m","sent_ns":0,"row_id":0,"n":0})"
      "\n",
      R"({"v":"1","kind":"obs","site":"s","rack":"r","node":"n","msg_id":"m","sent_ns":0,"row_id":0,"n":0})"
      "\n",
      R"({"v":1,"kind":"obs","site":1,"rack":"r","node":"n","msg_id":"m","sent_ns":0,"row_id":0,"n":0})"
      "\n",
      Mutate(good, "\tgpu\t", "\tgpx\t"),       // unknown layer
      Mutate(good, "\tclock\t", "\tclocks\t"),  // unknown kind
      Mutate(good, "\tnvml\t", "\tnvmlx\t"),    // unknown source
      Mutate(good, "\\n", "\\q"),               // unknown escape
      Mutate(good, "\\x01", "\\x0g"),           // bad hex escape
      Mutate(good, "\t1410.25\t", "\t1410.2.5\t"),
      Mutate(good, "\n100\t", "\n100x\t"),      // row id
      Mutate(good, "\tgpu\t", "\tgpu\tgpu\t"),  // extra field
      Mutate(good, "line one", "line\x02one"),  // bare control character
      good + "trailing\n",
      good + std::string(1, '\0'),
  };
  for (size_t i = 0; i < bad.size(); ++i) {
    auto got = Decode(bad[i]);
    EXPECT_FALSE(got.ok()) << "case " << i;
  }
  // Deep nesting in a record body is refused, not recursed into.
  std::string deep = Encode(Record(RecordKind::kFinding));
  deep = deep.substr(0, deep.find('\n') + 1) + std::string(100000, '[') + "\n";
  EXPECT_FALSE(Decode(deep).ok());
}

TEST(FleetWire, SubjectTokensAreSafe) {
  EXPECT_EQ(SubjectToken("r12"), "r12");
  EXPECT_EQ(SubjectToken(""), "_");
  EXPECT_EQ(SubjectToken("a.b*c>d e\tf"), "a_b_c_d_e_f");
  EXPECT_EQ(Subject({.site = "dc 1", .rack = "r.1", .node = "n>7"}, RecordKind::kDiagnosis),
            "faultline.dc_1.r_1.n_7.diagnosis");
  EXPECT_EQ(Subject({}, RecordKind::kObservations), "faultline.default.default._.obs");
}

TEST(FleetWire, RecordKindNamesRoundTrip) {
  for (RecordKind k : {RecordKind::kObservations, RecordKind::kFinding, RecordKind::kDiagnosis, RecordKind::kAction,
                       RecordKind::kFleetDiagnosis}) {
    EXPECT_EQ(ParseRecordKind(ToString(k)), k);
  }
  EXPECT_FALSE(ParseRecordKind("obs ").has_value());
  EXPECT_EQ(MakeMsgId("n1", RecordKind::kObservations, 5, 9), "n1/obs/5-9");
  EXPECT_EQ(MakeMsgId("n1", RecordKind::kDiagnosis, 5, 5), "n1/diagnosis/5");
}

}  // namespace
}  // namespace faultline::fleet

namespace faultline::fleet {
namespace {

std::string ReadSeed(const std::string& name) {
  std::ifstream in(std::string(FAULTLINE_SOURCE_DIR) + "/fuzz/corpus/fleet_wire/" + name, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// The fuzzer's seeds are valid messages (so the fuzzer starts from deep inside the format).
TEST(FleetWire, FuzzSeedsDecode) {
  const std::string batch = ReadSeed("obs_batch.txt");
  if (batch.empty()) GTEST_SKIP() << "no fuzz corpus in this tree";
  auto b = Decode(batch);
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  ASSERT_EQ(b->observations.size(), 2u);
  EXPECT_EQ(b->observations[1].text, "line\tone\n");
  EXPECT_EQ(b->observations[1].raw, "raw\x01");
  EXPECT_EQ(b->observations[1].component.keys.at("uuid"), "GPU-1");
  EXPECT_EQ(b->observations[0].attrs.at("rank"), "3");
  // A header in another JSON spelling (unknown key, escapes, spaces) reads the same.
  auto h = Decode(ReadSeed("obs_json_header.txt"));
  ASSERT_TRUE(h.ok()) << h.status().ToString();
  EXPECT_EQ(h->place.site, "dc-1");
  EXPECT_EQ(h->kind, RecordKind::kObservations);
  ASSERT_EQ(h->observations.size(), 1u);
  EXPECT_EQ(h->observations[0].attrs.at("job"), "train-1");
  auto d = Decode(ReadSeed("diagnosis.txt"));
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->diagnosis->fault_class, FaultClass::kPowerSupply);
}

}  // namespace
}  // namespace faultline::fleet

// The header is read by a fast reader for the form Encode writes and by the general JSON
// path for anything else; these pin that both give the same answers (docs/fleet.md).
namespace faultline::fleet {
namespace {

// A one-observation batch message whose header line is `header`.
std::string WithHeader(const std::string& header) {
  const std::string bytes = Encode(Batch(1));
  return header + bytes.substr(bytes.find('\n'));
}

constexpr const char* kCanonical =
    R"({"kind":"obs","msg_id":"m/obs/1","n":1,"node":"gpu-node-0","rack":"r12","row_id":0,"sent_ns":-5,"site":"dc-1","v":1})";

TEST(FleetWireHeader, EveryJsonSpellingOfAHeaderDecodesAlike) {
  auto want = Decode(WithHeader(kCanonical));
  ASSERT_TRUE(want.ok()) << want.status().ToString();
  EXPECT_EQ(want->sent_ns, -5);
  EXPECT_EQ(want->msg_id, "m/obs/1");
  EXPECT_EQ(want->place, (NodePlace{.site = "dc-1", .rack = "r12", .node = "gpu-node-0"}));
  const std::vector<std::string> same = {
      // other key order, JSON whitespace around every token
      " \t{ \"v\" : 1 ,\r\"n\":1,\"node\":\"gpu-node-0\",\"rack\":\"r12\",\"site\":\"dc-1\",\"kind\":\"obs\","
      "\"msg_id\":\"m/obs/1\",\"sent_ns\":-5,\"row_id\":0 } ",
      // unknown keys of every JSON type are ignored
      R"({"v":1,"x":{"a":[1,2.5,null,true]},"y":1e300,"z":"\u00e9","kind":"obs","site":"dc-1","rack":"r12",)"
      R"("node":"gpu-node-0","msg_id":"m/obs/1","sent_ns":-5,"row_id":0,"n":1})",
      // escapes in the known strings
      R"({"v":1,"kind":"o\u0062s","site":"dc\u002d1","rack":"r12","node":"gpu-node-0","msg_id":"m\/obs\/1",)"
      R"("sent_ns":-5,"row_id":0,"n":1})",
  };
  for (size_t i = 0; i < same.size(); ++i) {
    auto got = Decode(WithHeader(same[i]));
    ASSERT_TRUE(got.ok()) << "case " << i << ": " << got.status().ToString();
    EXPECT_EQ(*got, *want) << "case " << i;
  }
  // Non-ASCII and DEL are ordinary string bytes.
  auto utf8 = Decode(WithHeader(R"({"v":1,"kind":"obs","site":"dc-ü","rack":"r)"
                                "\x7f"
                                R"(","node":"gpu-node-0","msg_id":"m/obs/1","sent_ns":-5,"row_id":0,"n":1})"));
  ASSERT_TRUE(utf8.ok()) << utf8.status().ToString();
  EXPECT_EQ(utf8->place.site, "dc-ü");
  EXPECT_EQ(utf8->place.rack, "r\x7f");
}

TEST(FleetWireHeader, ExtremeIntegersAreReadExactly) {
  const std::string h =
      R"({"v":1,"kind":"obs","site":"s","rack":"r","node":"n","msg_id":"m","sent_ns":-9223372036854775808,)"
      R"("row_id":9223372036854775807,"n":1})";
  auto got = Decode(WithHeader(h));
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got->sent_ns, std::numeric_limits<int64_t>::min());
  EXPECT_EQ(got->row_id, std::numeric_limits<int64_t>::max());
}

TEST(FleetWireHeader, BadHeadersAreRefusedWithTheirReason) {
  const auto h = [](std::string_view from, std::string_view to) {
    std::string s = kCanonical;
    const size_t at = s.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    if (at != std::string::npos) s.replace(at, from.size(), to);
    return s;
  };
  struct Case {
    std::string header;
    StatusCode code;
  };
  const std::vector<Case> cases = {
      {h("\"v\":1", "\"v\":2"), StatusCode::kUnsupported},
      {h("\"v\":1", "\"v\":-1"), StatusCode::kUnsupported},
      {h("\"v\":1", "\"v\":1.0"), StatusCode::kCorrupt},  // not an integer
      {h("\"v\":1", "\"v\":1e0"), StatusCode::kCorrupt},
      {h("\"v\":1", "\"v\":01"), StatusCode::kCorrupt},  // not JSON
      {h("\"v\":1", "\"v\":+1"), StatusCode::kCorrupt},
      {h("\"v\":1", "\"v\":true"), StatusCode::kCorrupt},
      {h("\"v\":1", "\"w\":1"), StatusCode::kCorrupt},           // v missing
      {h("\"n\":1", "\"n\":-1"), StatusCode::kInvalidArgument},  // a count no batch can have
      {h("\"n\":1", "\"n\":20001"), StatusCode::kInvalidArgument},
      {h("\"n\":1", "\"n\":2"), StatusCode::kCorrupt},  // fewer lines than announced
      {h("\"n\":1", "\"n\":\"1\""), StatusCode::kCorrupt},
      {h("\"sent_ns\":-5", "\"sent_ns\":99999999999999999999999"), StatusCode::kCorrupt},  // no integer fits
      {h("\"sent_ns\":-5", "\"sent_ns\":-"), StatusCode::kCorrupt},
      {h("\"site\":\"dc-1\"", "\"site\":null"), StatusCode::kCorrupt},
      {h("\"site\":\"dc-1\"", "\"site\":\"dc\t1\""), StatusCode::kCorrupt},   // bare control byte
      {h("\"site\":\"dc-1\"", "\"site\":\"dc\\q1\""), StatusCode::kCorrupt},  // bad escape
      {h("\"site\":\"dc-1\"", "\"site\":\"dc\xff\""), StatusCode::kCorrupt},  // not UTF-8
      {h("\"site\":\"dc-1\"", std::string("\"site\":\"dc\0\"", 11)), StatusCode::kCorrupt},
      {h("\"site\":\"dc-1\"", "\"site\":\"dc-1"), StatusCode::kCorrupt},  // unterminated
      {h("\"kind\":\"obs\"", "\"kind\":\"OBS\""), StatusCode::kCorrupt},
      {h("\"kind\":\"obs\",", ""), StatusCode::kCorrupt},
      {h(",\"v\":1}", ",\"v\":1}}"), StatusCode::kCorrupt},
      {h(",\"v\":1}", ",\"v\":1,}"), StatusCode::kCorrupt},
      {h(",\"v\":1}", ",\"v\":1} x"), StatusCode::kCorrupt},
      {h("{", "[{"), StatusCode::kCorrupt},
      {h("\"rack\":\"r12\"", "\"rack\"\"r12\""), StatusCode::kCorrupt},
      {h("\"rack\":\"r12\"", "\"rack\":\"" + std::string(70000, 'r') + "\""), StatusCode::kInvalidArgument},
      {h("\"rack\":\"r12\"", "\"" + std::string(70000, 'k') + "\":0,\"rack\":\"r12\""), StatusCode::kInvalidArgument},
      {h("\"rack\":\"r12\"", "\"x\":" + std::string(100, '[') + std::string(100, ']') + ",\"rack\":\"r12\""),
       StatusCode::kInvalidArgument},  // nested too deeply
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    auto got = Decode(WithHeader(cases[i].header));
    ASSERT_FALSE(got.ok()) << "case " << i;
    EXPECT_EQ(got.status().code(), cases[i].code) << "case " << i << ": " << got.status().ToString();
  }
}

// The line scanner looks at eight bytes at a time: every byte that matters (escape, tab,
// newline, map separators, bytes next to the 0x20 and 0x80 edges) must be seen at every
// offset within a word, in strings and in map entries.
TEST(FleetWireScan, EveryByteRoundTripsAtEveryOffset) {
  const std::string bytes = {'\\', '\t',   '\n',   '\r',   '\x1e', '\x1f', '\x00', '\x01',
                             ' ',  '\x7f', '\x80', '\xff', '[',    '\\',   ']'};
  for (size_t len = 0; len <= 19; ++len) {
    for (size_t at = 0; at <= len; ++at) {
      for (char b : bytes) {
        std::string s(len, 'a');
        s.insert(s.begin() + static_cast<std::ptrdiff_t>(at), b);
        Envelope e = Batch(2);
        e.observations[0].text = s;
        e.observations[0].attrs = {{s, s}, {"z", s}};
        e.observations[1].component.name = s;
        auto d = Decode(Encode(e));
        ASSERT_TRUE(d.ok()) << len << "/" << at << "/" << int(b) << ": " << d.status().ToString();
        ASSERT_EQ(*d, e) << len << "/" << at << "/" << int(b);
      }
    }
  }
}

TEST(FleetWireScan, ABareControlByteIsRefusedAtEveryOffset) {
  const std::string good = Encode(Batch(1));
  const size_t text = good.find("line one");
  ASSERT_NE(text, std::string::npos);
  for (char b : {'\x00', '\x02', '\x1b', '\x1e', '\x1f'}) {
    for (size_t at = text; at < text + 16; ++at) {
      std::string bad = good;
      bad.insert(bad.begin() + static_cast<std::ptrdiff_t>(at), b);
      auto got = Decode(bad);
      ASSERT_FALSE(got.ok()) << int(b) << " at " << at;
      EXPECT_EQ(got.status().code(), StatusCode::kCorrupt);
    }
  }
  // A map entry with a bare control byte inside a key.
  const size_t keys = good.find("bdf");
  ASSERT_NE(keys, std::string::npos);
  std::string bad = good;
  bad.insert(keys + 1, 1, '\x03');
  EXPECT_FALSE(Decode(bad).ok());
}

// Encode writes plain headers itself and others with the JSON library: the header line is
// the JSON library's text for the same object either way.
TEST(FleetWireHeader, EncodedHeaderIsTheJsonOfItsFields) {
  const std::vector<NodePlace> places = {
      {.site = "dc-1", .rack = "r12", .node = "gpu-node-0"},
      {.site = "", .rack = "", .node = ""},
      {.site = "dc \"1\"", .rack = "r\\12", .node = "gpu\tnode"},
      {.site = "dc-ü", .rack = "r\x7f", .node = std::string("n\xff", 2)},
  };
  for (const NodePlace& place : places) {
    for (RecordKind kind : {RecordKind::kObservations, RecordKind::kAction}) {
      Envelope e;
      e.kind = kind;
      e.place = place;
      e.msg_id = place.node + "/x/1-2@5f";
      e.sent_ns = std::numeric_limits<int64_t>::min();
      e.row_id = std::numeric_limits<int64_t>::max();
      const std::string bytes = Encode(e);
      const Json want{
          {"v", kWireVersion},    {"kind", ToString(kind)}, {"site", place.site},
          {"rack", place.rack},   {"node", place.node},     {"msg_id", e.msg_id},
          {"sent_ns", e.sent_ns}, {"row_id", e.row_id},     {"n", kind == RecordKind::kObservations ? 0 : 1}};
      EXPECT_EQ(bytes.substr(0, bytes.find('\n')), want.dump(-1, ' ', false, Json::error_handler_t::replace))
          << place.site;
    }
  }
}

TEST(FleetWireHeader, RepeatedKeysAreReadAsJsonReadsThem) {
  // The general JSON reader keeps the last of repeated keys; whichever path reads the
  // header, the answer is the same.
  const std::string h =
      R"({"v":1,"kind":"obs","site":"first","rack":"r","node":"n","msg_id":"m","sent_ns":0,"row_id":0,"n":1,)"
      R"("site":"last"})";
  auto got = Decode(WithHeader(h));
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got->place.site, "last");
}

TEST(FleetWireHeader, AHeaderCutAnywhereIsRefused) {
  const std::string bytes = Encode(Batch(2));
  const size_t nl = bytes.find('\n');
  for (size_t cut = 0; cut < nl; ++cut) {
    auto got = Decode(bytes.substr(0, cut) + bytes.substr(nl));
    EXPECT_FALSE(got.ok()) << "cut " << cut;
  }
  EXPECT_TRUE(Decode(bytes).ok());
}

TEST(FleetWireHeader, RecordEnvelopesKeepTheirHeader) {
  Envelope e;
  e.kind = RecordKind::kAction;
  e.place = {.site = "s", .rack = "r", .node = "n"};
  e.msg_id = "n/action/9";
  e.row_id = 9;
  e.sent_ns = 1'760'000'000'000'000'123;
  e.action = ActionRecord{.time_ns = 5, .node = "n", .action = Action::kDrain, .outcome = "ok"};
  auto got = Decode(Encode(e));
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(*got, e);
}

}  // namespace
}  // namespace faultline::fleet
