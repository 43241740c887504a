// NvmlCollector over an injected function table: a misbehaving library (strings without a
// terminator, unknown field value types) must not make the collector read out of bounds.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstring>
#include <map>
#include <string>

#include "core/clock.h"
#include "sources/nvml/nvml_collector.h"

namespace faultline::nvml {
namespace {

// One device; the handle value is never dereferenced by the collector.
NvmlDevice TheDevice() { return reinterpret_cast<NvmlDevice>(0x1000); }

NvmlReturn OneGpu(unsigned int* count) {
  *count = 1;
  return kSuccess;
}
NvmlReturn Handle(unsigned int, NvmlDevice* device) {
  *device = TheDevice();
  return kSuccess;
}
// Fills the whole buffer with 'x' and no terminator.
NvmlReturn Unterminated(NvmlDevice, char* buf, unsigned int length) {
  std::memset(buf, 'x', length);
  return kSuccess;
}
NvmlReturn BadFieldType(NvmlDevice, int count, NvmlFieldValue* values) {
  for (int i = 0; i < count; ++i) {
    values[i].nvml_return = kSuccess;
    values[i].value_type = 77;
  }
  return kSuccess;
}
NvmlReturn FieldNotSupported(NvmlDevice, int count, NvmlFieldValue* values) {
  for (int i = 0; i < count; ++i) values[i].nvml_return = kErrorNotSupported;
  return kSuccess;
}
NvmlReturn CountFails(unsigned int*) { return kErrorUnknown; }
NvmlReturn RetiredInsufficientSize(NvmlDevice, int, unsigned int* pages, unsigned long long*) {  // NOLINT
  *pages = 7;
  return kErrorInsufficientSize;
}

// Answers with a value derived from the enum arguments, so the test can check that the
// collector passes NVML's documented numbers and maps each answer to the right kind.
NvmlReturn LinkState(NvmlDevice, unsigned int link, int* active) {
  if (link >= 2) return kErrorInvalidArgument;
  *active = link == 0 ? 1 : 0;
  return kSuccess;
}
NvmlReturn LinkCounter(NvmlDevice, unsigned int link, int counter, unsigned long long* v) {  // NOLINT
  *v = 1000 * link + 100 * static_cast<unsigned>(counter);
  return kSuccess;
}
NvmlReturn Ecc(NvmlDevice, int type, int counter, unsigned long long* v) {  // NOLINT
  *v = 10 * static_cast<unsigned>(type) + static_cast<unsigned>(counter) + 1;
  return kSuccess;
}
NvmlReturn Clock(NvmlDevice, int type, unsigned int* mhz) {
  *mhz = 1000 + static_cast<unsigned>(type);
  return kSuccess;
}
NvmlReturn Threshold(NvmlDevice, int type, unsigned int* t) {
  *t = 80 + static_cast<unsigned>(type);
  return kSuccess;
}
NvmlReturn Temp(NvmlDevice, int sensor, unsigned int* t) {
  *t = 40 + static_cast<unsigned>(sensor);
  return kSuccess;
}
NvmlReturn Retired(NvmlDevice, int cause, unsigned int* pages, unsigned long long*) {  // NOLINT
  *pages = 5 + static_cast<unsigned>(cause);
  return kSuccess;
}

NvmlApi BaseTable() {
  NvmlApi api;
  api.get_count = OneGpu;
  api.get_handle_by_index = Handle;
  return api;
}

TEST(NvmlTableTest, UnterminatedStringsAreCutAtTheBuffer) {
  NvmlApi api = BaseTable();
  api.get_uuid = Unterminated;
  api.get_serial = Unterminated;
  FakeClock clock(5);
  NvmlOptions options;
  options.clock = &clock;
  NvmlCollector c(api, options);
  NvmlSample s = c.Sample();
  ASSERT_EQ(s.observations.size(), 1u);
  EXPECT_EQ(s.observations[0].attrs.at("uuid"), std::string(kUuidBufferSize, 'x'));
  EXPECT_EQ(s.observations[0].attrs.at("serial"), std::string(kSerialBufferSize, 'x'));
  EXPECT_EQ(s.observations[0].time_ns, 5);
}

TEST(NvmlTableTest, UnknownFieldValueTypeIsNotGuessed) {
  NvmlApi api = BaseTable();
  api.get_field_values = BadFieldType;
  FakeClock clock;
  NvmlOptions options;
  options.clock = &clock;
  NvmlCollector c(api, options);
  NvmlSample s = c.Sample();
  EXPECT_TRUE(s.errors.empty());
  for (const auto& o : s.observations) EXPECT_NE(o.kind, ObsKind::kTemperature);

  api.get_field_values = FieldNotSupported;
  NvmlCollector c2(api, options);
  NvmlSample s2 = c2.Sample();
  EXPECT_TRUE(s2.errors.empty());
  EXPECT_EQ(s2.observations.size(), 1u);  // identity only
}

TEST(NvmlTableTest, RetiredPageSizeQueryAnsweringInsufficientSizeCarriesTheCount) {
  NvmlApi api = BaseTable();
  api.get_retired_pages = RetiredInsufficientSize;
  FakeClock clock;
  NvmlOptions options;
  options.clock = &clock;
  NvmlCollector c(api, options);
  NvmlSample s = c.Sample();
  int seen = 0;
  for (const auto& o : s.observations) {
    if (o.kind != ObsKind::kRetiredPages) continue;
    ++seen;
    EXPECT_EQ(*o.value, 7);
  }
  EXPECT_EQ(seen, 2);
  EXPECT_TRUE(s.errors.empty());
}

TEST(NvmlTableTest, MissingFunctionsAreNotedOnceAndCountFailureIsReported) {
  NvmlApi api = BaseTable();
  api.get_count = CountFails;
  FakeClock clock;
  NvmlOptions options;
  options.clock = &clock;
  NvmlCollector c(api, options, {"nvmlDeviceGetRemappedRows", "nvmlDeviceGetCurrentClocksThrottleReasons"});
  NvmlSample s = c.Sample();
  ASSERT_EQ(s.notes.size(), 1u);
  EXPECT_NE(s.notes[0].find("nvmlDeviceGetRemappedRows"), std::string::npos);
  ASSERT_EQ(s.errors.size(), 1u);
  EXPECT_EQ(s.errors[0].code, kErrorUnknown);
  EXPECT_EQ(s.errors[0].call, "nvmlDeviceGetCount_v2");
  EXPECT_TRUE(c.Sample().notes.empty());
}

double Value(const NvmlSample& s, ObsKind kind, const std::string& component,
             const std::map<std::string, std::string>& attrs = {}) {
  for (const auto& o : s.observations) {
    if (o.kind != kind || o.component.Id() != component) continue;
    bool match = true;
    for (const auto& [k, v] : attrs) match = match && o.attrs.count(k) && o.attrs.at(k) == v;
    if (match && o.value) return *o.value;
  }
  ADD_FAILURE() << ToString(kind) << " " << component;
  return -1;
}

TEST(NvmlTableTest, PassesNvmlEnumValuesAndMapsAnswersToKinds) {
  NvmlApi api = BaseTable();
  api.get_nvlink_state = LinkState;
  api.get_nvlink_error_counter = LinkCounter;
  api.get_total_ecc_errors = Ecc;
  api.get_clock_info = Clock;
  api.get_temperature_threshold = Threshold;
  api.get_temperature = Temp;
  api.get_retired_pages = Retired;
  FakeClock clock;
  NvmlOptions options;
  options.clock = &clock;
  NvmlCollector c(api, options);
  NvmlSample s = c.Sample();
  EXPECT_TRUE(s.errors.empty());
  // NVML_NVLINK_ERROR_DL_REPLAY=0, DL_RECOVERY=1, DL_CRC_FLIT=2, DL_CRC_DATA=3.
  EXPECT_EQ(Value(s, ObsKind::kNvlinkReplay, "nvlink/0/1"), 1000);
  EXPECT_EQ(Value(s, ObsKind::kNvlinkRecovery, "nvlink/0/1"), 1100);
  EXPECT_EQ(Value(s, ObsKind::kNvlinkCrcFlit, "nvlink/0/1"), 1200);
  EXPECT_EQ(Value(s, ObsKind::kNvlinkCrcData, "nvlink/0/1"), 1300);
  EXPECT_EQ(Value(s, ObsKind::kNvlinkState, "nvlink/0/0"), 1);
  EXPECT_EQ(Value(s, ObsKind::kNvlinkState, "nvlink/0/1"), 0);
  // NVML_MEMORY_ERROR_TYPE_CORRECTED=0 / UNCORRECTED=1; NVML_VOLATILE_ECC=0 / AGGREGATE_ECC=1.
  EXPECT_EQ(Value(s, ObsKind::kEccSbe, "gpu/0", {{"counter", "volatile"}}), 1);
  EXPECT_EQ(Value(s, ObsKind::kEccSbe, "gpu/0", {{"counter", "aggregate"}}), 2);
  EXPECT_EQ(Value(s, ObsKind::kEccDbe, "gpu/0", {{"counter", "volatile"}}), 11);
  EXPECT_EQ(Value(s, ObsKind::kEccDbe, "gpu/0", {{"counter", "aggregate"}}), 12);
  // NVML_CLOCK_SM=1, NVML_CLOCK_MEM=2.
  EXPECT_EQ(Value(s, ObsKind::kClock, "gpu/0", {{"clock", "sm"}}), 1001);
  EXPECT_EQ(Value(s, ObsKind::kClock, "gpu/0", {{"clock", "mem"}}), 1002);
  // NVML_TEMPERATURE_GPU=0; thresholds SHUTDOWN=0, SLOWDOWN=1.
  EXPECT_EQ(Value(s, ObsKind::kTemperature, "gpu/0", {{"sensor", "gpu"}, {"shutdown", "80"}, {"slowdown", "81"}}), 40);
  // NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS=0, DOUBLE_BIT_ECC_ERROR=1.
  EXPECT_EQ(Value(s, ObsKind::kRetiredPages, "gpu/0", {{"cause", "sbe"}}), 5);
  EXPECT_EQ(Value(s, ObsKind::kRetiredPages, "gpu/0", {{"cause", "dbe"}}), 6);
}

// The shared ABI header is used by both the collector and the fake, so a wrong value
// there would pass every round-trip test; pin the documented NVML numbers here.
TEST(NvmlTableTest, AbiValuesMatchTheNvmlReference) {
  EXPECT_EQ(kErrorNotSupported, 3);
  EXPECT_EQ(kErrorNoPermission, 4);
  EXPECT_EQ(kErrorTimeout, 10);
  EXPECT_EQ(kErrorGpuIsLost, 15);
  EXPECT_EQ(kErrorResetRequired, 16);
  EXPECT_EQ(kErrorUnknown, 999);
  EXPECT_EQ(kFieldMemoryTemp, 82u);
  EXPECT_EQ(kLocationDram, 2);
  EXPECT_EQ(kLocationSram, 7);
  EXPECT_EQ(offsetof(NvmlPciInfo, bus_id), 36u);
  EXPECT_EQ(offsetof(NvmlFieldValue, value_type), 24u);
  EXPECT_EQ(offsetof(NvmlFieldValue, value), 32u);
}

}  // namespace
}  // namespace faultline::nvml
