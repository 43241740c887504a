// ParseScenario and ScenarioPlayer: the scenario file's schema, its bad inputs, and the
// timeline semantics (set / ramp / append / event applied at the right scenario times).
#include "sim/mock_bmc/scenario.h"

#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <sstream>

#include "fixture.h"

namespace faultline::sim {
namespace {

using nlohmann::json;

constexpr char kYaml[] = R"(
name: demo
steps:
  - at: 10
    ramp: {resource: /redfish/v1/Chassis/1U/Thermal, pointer: /Temperatures/0/ReadingCelsius, from: 20, to: 40, until: 30}
  - at: 5
    set: {resource: /redfish/v1/Chassis/1U/Power, pointer: /PowerSupplies/0/Status/State, value: "Absent"}
  - at: 5
    append: {collection: /redfish/v1/Systems/1/LogServices/SEL/Entries, member: {Message: "PSU lost"}}
  - at: 7
    event: {MessageId: ResourceEvent.1.0.ResourceErrorsDetected, MessageArgs: [Bay1, 3], MessageSeverity: Critical,
            OriginOfCondition: {"@odata.id": /redfish/v1/Chassis/1U}}
)";

TEST(MockBmcScenarioParse, ParsesYamlAndSortsByTimeKeepingFileOrderForTies) {
  auto s = ParseScenario(kYaml);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->name, "demo");
  ASSERT_EQ(s->steps.size(), 4u);
  EXPECT_EQ(s->steps[0].kind, StepKind::kSet);
  EXPECT_EQ(s->steps[0].value, json("Absent"));
  EXPECT_EQ(s->steps[1].kind, StepKind::kAppend);
  EXPECT_EQ(s->steps[1].value["Message"], "PSU lost");
  EXPECT_EQ(s->steps[2].kind, StepKind::kEvent);
  EXPECT_EQ(s->steps[2].event.message_args, (std::vector<std::string>{"Bay1", "3"}));
  EXPECT_EQ(s->steps[2].event.origin, "/redfish/v1/Chassis/1U");
  EXPECT_EQ(s->steps[3].kind, StepKind::kRamp);
  EXPECT_TRUE(s->steps[3].has_from);
  EXPECT_DOUBLE_EQ(s->steps[3].to, 40);
  EXPECT_DOUBLE_EQ(s->steps[3].until, 30);
}

TEST(MockBmcScenarioParse, ParsesJsonAndKeepsYamlScalarTypes) {
  auto s = ParseScenario(R"({"steps": [{"at": 1, "set": {"resource": "/redfish/v1/X", "pointer": "/A",
                             "value": {"n": 1.5, "b": true, "z": null}}}]})");
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->steps[0].value, json::parse(R"({"n": 1.5, "b": true, "z": null})"));
  auto y = ParseScenario(
      "steps:\n  - at: 1\n    set: {resource: /redfish/v1/X, pointer: /A, value: [12, '12', 1.5, true, ~]}\n");
  ASSERT_TRUE(y.ok()) << y.status().ToString();
  EXPECT_EQ(y->steps[0].value, json::parse(R"([12, "12", 1.5, true, null])"));
}

TEST(MockBmcScenarioParse, ShippedScenarioParses) {
  std::ifstream in(testing::DataDir() + "/scenarios/psu-loss-inlet-ramp.yaml");
  std::stringstream text;
  text << in.rdbuf();
  auto s = ParseScenario(text.str());
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->steps.size(), 9u);
}

struct BadCase {
  const char* name;
  std::string text;
};

class MockBmcScenarioBadInput : public ::testing::TestWithParam<BadCase> {};

TEST_P(MockBmcScenarioBadInput, IsRejectedWithAClearError) {
  auto s = ParseScenario(GetParam().text);
  ASSERT_FALSE(s.ok());
  EXPECT_FALSE(s.status().message().empty());
  EXPECT_TRUE(s.status().code() == StatusCode::kCorrupt || s.status().code() == StatusCode::kInvalidArgument);
}

std::string Nested(int depth) { return "{\"steps\": " + std::string(depth, '[') + std::string(depth, ']') + "}"; }

std::string AliasBomb() {
  std::string y = "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n";
  for (int i = 1; i < 12; ++i) {
    y += "a" + std::to_string(i) + ": &a" + std::to_string(i) + " [";
    for (int j = 0; j < 10; ++j) y += std::string(j ? ", " : "") + "*a" + std::to_string(i - 1);
    y += "]\n";
  }
  return y + "steps: []\n";
}

INSTANTIATE_TEST_SUITE_P(
    All, MockBmcScenarioBadInput,
    ::testing::Values(
        BadCase{"Empty", ""}, BadCase{"TruncatedJson", R"({"steps": [{"at": 1, "set": {"reso)"},
        BadCase{"TruncatedYaml", "steps:\n  - at: 1\n    set: {resource: /redfish/v1/X, pointer: /A"},
        BadCase{"NotAMap", "[1, 2, 3]"}, BadCase{"StepsNotAList", "steps: 3"},
        BadCase{"UnknownTopKey", "steps: []\nspeed: 2"}, BadCase{"UnknownStepKey", "steps:\n  - {at: 1, wait: 3}"},
        BadCase{"TwoActions",
                "steps:\n  - {at: 1, set: {resource: /redfish/v1/X, pointer: /A, value: 1}, "
                "event: {MessageId: M}}"},
        BadCase{"NoAction", "steps:\n  - {at: 1}"}, BadCase{"MissingAt", "steps:\n  - {event: {MessageId: M}}"},
        BadCase{"NegativeAt", "steps:\n  - {at: -1, event: {MessageId: M}}"},
        BadCase{"AtIsString", "steps:\n  - {at: soon, event: {MessageId: M}}"},
        BadCase{"SetWithoutValue", "steps:\n  - {at: 1, set: {resource: /redfish/v1/X, pointer: /A}}"},
        BadCase{"ResourceOutsideRedfish", "steps:\n  - {at: 1, set: {resource: /etc/passwd, pointer: /A, value: 1}}"},
        BadCase{"BadPointer", "steps:\n  - {at: 1, set: {resource: /redfish/v1/X, pointer: A~2, value: 1}}"},
        BadCase{"WholeResourcePointer", "steps:\n  - {at: 1, set: {resource: /redfish/v1/X, pointer: '', value: 1}}"},
        BadCase{"RampBackwards", "steps:\n  - {at: 9, ramp: {resource: /redfish/v1/X, pointer: /A, to: 1, until: 3}}"},
        BadCase{"RampNonNumeric",
                "steps:\n  - {at: 1, ramp: {resource: /redfish/v1/X, pointer: /A, to: hot, until: 3}}"},
        BadCase{"AppendNonObject", "steps:\n  - {at: 1, append: {collection: /redfish/v1/X, member: [1]}}"},
        BadCase{"EventWithoutId", "steps:\n  - {at: 1, event: {MessageArgs: [a]}}"},
        BadCase{"EventArgsObject", "steps:\n  - {at: 1, event: {MessageId: M, MessageArgs: [{a: 1}]}}"},
        BadCase{"DeepJson", Nested(100000)}, BadCase{"DeepYaml", std::string(5000, '[') + std::string(5000, ']')},
        BadCase{"AliasBomb", AliasBomb()}, BadCase{"Oversized", std::string(9u << 20, ' ')},
        BadCase{"Binary", std::string("\x00\xff\xfe{\x01steps", 10)},
        BadCase{"InvalidUtf8Json", "{\"steps\": [{\"at\": 1, \"event\": {\"MessageId\": \"\xc3\x28\"}}]}"}),
    [](const ::testing::TestParamInfo<BadCase>& info) { return std::string(info.param.name); });

// A target that records what the player does, over one in-memory document per resource.
class RecordingTarget : public ScenarioTarget {
 public:
  Status Set(const std::string& resource, const std::string& pointer, const json& value) override {
    if (resource == "/redfish/v1/Missing") return Status(StatusCode::kNotFound, "missing");
    docs[resource][json::json_pointer(pointer)] = value;
    return Status::Ok();
  }
  Result<json> Get(const std::string& resource, const std::string& pointer) const override {
    auto it = docs.find(resource);
    if (it == docs.end() || !it->second.contains(json::json_pointer(pointer))) {
      return Status(StatusCode::kNotFound, "absent");
    }
    return it->second.at(json::json_pointer(pointer));
  }
  Status Append(const std::string& collection, const json& member) override {
    appended[collection].push_back(member);
    return Status::Ok();
  }
  void Emit(const BmcEvent& event) override { events.push_back(event.message_id); }

  std::map<std::string, json> docs;
  std::map<std::string, std::vector<json>> appended;
  std::vector<std::string> events;
};

double Temp(const RecordingTarget& t) {
  return t.docs.at("/redfish/v1/Chassis/1U/Thermal")["Temperatures"][0]["ReadingCelsius"].get<double>();
}

TEST(MockBmcScenarioPlayer, AppliesStepsAtTheirTimesAndInterpolatesRamps) {
  auto s = ParseScenario(kYaml);
  ASSERT_TRUE(s.ok());
  ScenarioPlayer player(std::move(*s));
  RecordingTarget t;
  EXPECT_TRUE(player.AdvanceTo(4.9, t).empty());
  EXPECT_TRUE(t.docs.empty());
  EXPECT_TRUE(t.appended.empty());
  player.AdvanceTo(5, t);
  EXPECT_EQ(t.docs["/redfish/v1/Chassis/1U/Power"]["PowerSupplies"][0]["Status"]["State"], "Absent");
  EXPECT_EQ(t.appended["/redfish/v1/Systems/1/LogServices/SEL/Entries"].size(), 1u);
  EXPECT_TRUE(t.events.empty());
  player.AdvanceTo(7, t);
  EXPECT_EQ(t.events, std::vector<std::string>{"ResourceEvent.1.0.ResourceErrorsDetected"});
  EXPECT_FALSE(t.docs.count("/redfish/v1/Chassis/1U/Thermal"));
  player.AdvanceTo(10, t);
  EXPECT_DOUBLE_EQ(Temp(t), 20);
  player.AdvanceTo(15, t);
  EXPECT_DOUBLE_EQ(Temp(t), 25);
  player.AdvanceTo(12, t);  // backwards: ignored
  EXPECT_DOUBLE_EQ(Temp(t), 25);
  EXPECT_DOUBLE_EQ(player.now(), 15);
  player.AdvanceTo(100, t);
  EXPECT_DOUBLE_EQ(Temp(t), 40);
  t.docs["/redfish/v1/Chassis/1U/Thermal"]["Temperatures"][0]["ReadingCelsius"] = 33;
  player.AdvanceTo(200, t);  // a finished ramp no longer writes
  EXPECT_DOUBLE_EQ(Temp(t), 33);
  EXPECT_EQ(t.appended["/redfish/v1/Systems/1/LogServices/SEL/Entries"].size(), 1u);  // once only
  EXPECT_EQ(t.events.size(), 1u);
}

TEST(MockBmcScenarioPlayer, RampWithoutFromStartsAtTheCurrentValue) {
  auto s = ParseScenario("steps:\n  - {at: 0, ramp: {resource: /redfish/v1/S, pointer: /Reading, to: 50, until: 10}}");
  ASSERT_TRUE(s.ok());
  ScenarioPlayer player(std::move(*s));
  RecordingTarget t;
  t.docs["/redfish/v1/S"]["Reading"] = 30;
  player.AdvanceTo(0, t);
  player.AdvanceTo(5, t);
  EXPECT_DOUBLE_EQ(t.docs["/redfish/v1/S"]["Reading"].get<double>(), 40);
}

TEST(MockBmcScenarioPlayer, ReportsFailedStepsAndContinues) {
  auto s = ParseScenario(
      "steps:\n"
      "  - {at: 1, set: {resource: /redfish/v1/Missing, pointer: /A, value: 1}}\n"
      "  - {at: 1, ramp: {resource: /redfish/v1/S, pointer: /Reading, to: 5, until: 2}}\n"
      "  - {at: 1, set: {resource: /redfish/v1/T, pointer: /A, value: 2}}\n");
  ASSERT_TRUE(s.ok());
  ScenarioPlayer player(std::move(*s));
  RecordingTarget t;
  auto errors = player.AdvanceTo(1, t);
  EXPECT_EQ(errors.size(), 2u);  // missing resource; ramp with no from and no current value
  EXPECT_EQ(t.docs["/redfish/v1/T"]["A"], 2);
}

}  // namespace
}  // namespace faultline::sim
