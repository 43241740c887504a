// DecodeInto: decoding message after message into one Envelope (as the consumer loop does,
// reusing its storage) gives exactly what a fresh Decode gives, whatever the previous
// message held (more or fewer observations, maps with more, fewer or other entries, set
// or unset optional fields, a record) and after a message that failed to decode.
#include <gtest/gtest.h>

#include <limits>
#include <string>
#include <vector>

#include "fleet/wire.h"

namespace faultline::fleet {
namespace {

Observation Rich(int i) {
  Observation o;
  o.time_ns = 1'760'000'000'000'000'000 + i;
  o.mono_us = 42 + i;
  o.seq = std::numeric_limits<uint64_t>::max() - static_cast<uint64_t>(i);
  o.node = "a-node-with-a-name-longer-than-sso-" + std::to_string(i);
  o.layer = Layer::kGpu;
  o.component = GpuComponent(std::to_string(i % 8));
  o.component.keys = {{"bdf", "0000:1b:00.0"}, {"serial", "1650921001234"}, {"uuid", "GPU-1b2c\t3d"}};
  o.kind = ObsKind::kClock;
  o.value = 1410.5 + i;
  o.code = -7 - i;
  o.text = "a text long enough to live on the heap, with a tab\there and a newline\n";
  o.source = Source::kNvml;
  o.raw = std::string("raw\r\n\x01 with a NUL \0 inside", 26);
  o.attrs = {{"clock", "sm"}, {"job", "train-7"}, {"rank", "3"}, {"step", "12"}, {"unit", "MHz"}};
  o.count = 3 + static_cast<uint64_t>(i);
  return o;
}

// Nothing optional set, no maps, short strings.
Observation Bare(int i) {
  Observation o;
  o.time_ns = 1'760'000'000'000'000'000 - i;
  o.node = "n" + std::to_string(i);
  o.layer = Layer::kWorkload;
  o.kind = ObsKind::kStepTime;
  o.source = Source::kWorkload;
  return o;
}

// Other keys than Rich's, in a different number.
Observation OtherMaps(int i) {
  Observation o = Bare(i);
  o.component = ComponentRef{ComponentType::kPsu, "PSU" + std::to_string(i), {{"slot", "2"}}};
  o.attrs = {{"role", "input"}, {"a", std::string(300, 'x')}};
  o.value = -0.0;
  return o;
}

Envelope Batch(const std::vector<Observation>& obs, int64_t first_row) {
  Envelope e;
  e.kind = RecordKind::kObservations;
  e.place = {.site = "dc-" + std::to_string(first_row), .rack = "r1", .node = "gpu-node-" + std::to_string(first_row)};
  e.sent_ns = 1'760'000'000'123'000'000 + first_row;
  e.observations = obs;
  for (size_t i = 0; i < obs.size(); ++i) e.observation_ids.push_back(first_row + static_cast<int64_t>(i));
  e.msg_id = MakeMsgId(e.place.node, e.kind, first_row, first_row + static_cast<int64_t>(obs.size()) - 1);
  return e;
}

Envelope FindingRecord() {
  Envelope e;
  e.kind = RecordKind::kFinding;
  e.place = {.site = "s", .rack = "r", .node = "n"};
  e.msg_id = "n/finding/9";
  e.row_id = 9;
  Finding f;
  f.component = GpuComponent("3");
  f.fault_class = FaultClass::kGpuThermal;
  f.summary = "GPU 3 hot";
  e.finding = f;
  return e;
}

std::vector<std::string> Messages() {
  std::vector<Observation> rich, bare, mixed, other;
  for (int i = 0; i < 6; ++i) rich.push_back(Rich(i));
  for (int i = 0; i < 9; ++i) bare.push_back(Bare(i));
  for (int i = 0; i < 4; ++i) mixed.push_back(i % 2 ? Rich(i) : OtherMaps(i));
  for (int i = 0; i < 2; ++i) other.push_back(OtherMaps(i));
  return {Encode(Batch(rich, 100)), Encode(Batch(bare, 200)),  Encode(Batch(mixed, 300)),
          Encode(FindingRecord()),  Encode(Batch(rich, 400)),  Encode(Batch(other, 500)),
          Encode(Batch({}, 600)),   Encode(Batch(mixed, 700)), Encode(Batch(rich, 800))};
}

TEST(FleetWireReuse, EveryMessageDecodesIntoAReusedEnvelopeAsIntoAFreshOne) {
  const std::vector<std::string> msgs = Messages();
  // Every order of two, and the whole sequence: what one message left behind never shows.
  for (const std::string& first : msgs) {
    for (const std::string& second : msgs) {
      Envelope e;
      ASSERT_TRUE(DecodeInto(first, e).ok());
      ASSERT_TRUE(DecodeInto(second, e).ok());
      auto fresh = Decode(second);
      ASSERT_TRUE(fresh.ok());
      EXPECT_EQ(e, *fresh);
    }
  }
  Envelope e;
  for (const std::string& m : msgs) {
    ASSERT_TRUE(DecodeInto(m, e).ok());
    EXPECT_EQ(e, *Decode(m));
  }
}

TEST(FleetWireReuse, AFailedDecodeLeavesNothingForTheNextOne) {
  const std::vector<std::string> msgs = Messages();
  const std::string& rich = msgs[0];
  const std::string& next = msgs[2];
  // Cut the rich batch at every point (each cut is refused), then decode the next message.
  for (size_t cut = 0; cut < rich.size(); cut += 7) {
    Envelope e;
    ASSERT_TRUE(DecodeInto(msgs[5], e).ok());
    EXPECT_FALSE(DecodeInto(std::string_view(rich).substr(0, cut), e).ok()) << cut;
    ASSERT_TRUE(DecodeInto(next, e).ok()) << cut;
    EXPECT_EQ(e, *Decode(next)) << cut;
  }
}

TEST(FleetWireReuse, ARepeatedMapKeyKeepsTheFirstValueAsDecodeDoes) {
  Envelope one = Batch({Rich(1)}, 10);
  std::string bytes = Encode(one);
  // attrs "clock=sm, job=..." -> "clock=sm, clock=other, job=..." (hostile: not key order).
  const std::string from = "clock\x1fsm\x1e";
  const size_t at = bytes.find(from);
  ASSERT_NE(at, std::string::npos);
  bytes.insert(at + from.size(), "clock\x1fother\x1e");
  auto fresh = Decode(bytes);
  ASSERT_TRUE(fresh.ok()) << fresh.status().ToString();
  EXPECT_EQ(fresh->observations[0].attrs.at("clock"), "sm");
  Envelope e;
  ASSERT_TRUE(DecodeInto(Encode(Batch({Rich(2), Rich(3)}, 20)), e).ok());
  ASSERT_TRUE(DecodeInto(bytes, e).ok());
  EXPECT_EQ(e, *fresh);
}

TEST(FleetWireReuse, BadMapEntriesAreRefusedWhateverTheEnvelopeHeld) {
  const std::string good = Encode(Batch({Rich(1)}, 10));
  const std::vector<std::pair<std::string, std::string>> cuts = {
      {"clock\x1fsm", "clocksm"},                  // a value without its key
      {"clock\x1fsm", "clock\x1fs\x1fm"},          // two key separators
      {"clock\x1fsm\x1e", "clock\x1fsm\x1e\x1e"},  // an empty entry
  };
  for (const auto& [from, to] : cuts) {
    std::string bad = good;
    bad.replace(bad.find(from), from.size(), to);
    Envelope e;
    ASSERT_TRUE(DecodeInto(Encode(Batch({Rich(4), Rich(5), Rich(6)}, 30)), e).ok());
    const Status s = DecodeInto(bad, e);
    EXPECT_EQ(s.code(), StatusCode::kCorrupt) << to;
    EXPECT_EQ(Decode(bad).status().code(), StatusCode::kCorrupt) << to;
    ASSERT_TRUE(DecodeInto(good, e).ok());
    EXPECT_EQ(e, *Decode(good));
  }
  // A map entry over the field limit.
  WireLimits small;
  small.max_field_bytes = 100;
  Envelope e;
  ASSERT_TRUE(DecodeInto(good, e).ok());
  EXPECT_EQ(DecodeInto(Encode(Batch({OtherMaps(1)}, 40)), e, small).code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace faultline::fleet
