#include "parse/redfish_map.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <utility>

#include "core/json.h"
#include "core/time.h"
#include "parse/text.h"

namespace faultline::redfish {
namespace {

// Evidence keeps the JSON fragment, but a hostile BMC must not make every observation
// carry megabytes.
constexpr size_t kMaxRawBytes = 2048;

const Json* Field(const Json& j, std::string_view key) {
  if (!j.is_object()) return nullptr;
  auto it = j.find(std::string(key));
  return it == j.end() ? nullptr : &*it;
}

std::string Str(const Json& j, std::string_view key) {
  const Json* f = Field(j, key);
  return f && f->is_string() ? f->get<std::string>() : std::string();
}

std::optional<double> Num(const Json& j, std::string_view key) {
  const Json* f = Field(j, key);
  if (!f || !f->is_number()) return std::nullopt;
  return f->get<double>();
}

// {"Reading": x} objects used by the newer schemas (SensorExcerpt).
std::optional<double> Reading(const Json& j, std::string_view key) {
  const Json* f = Field(j, key);
  return f ? Num(*f, "Reading") : std::nullopt;
}

std::string FormatNum(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.10g", v);
  return buf;
}

std::string Dump(const Json& j) {
  std::string s = j.dump(-1, ' ', false, Json::error_handler_t::replace);
  if (s.size() > kMaxRawBytes) {
    s.resize(kMaxRawBytes);
    s += "...";
  }
  return s;
}

// Ids become component names: keep them readable and free of '/' (the id separator).
std::string CleanName(std::string s) {
  for (char& c : s) {
    if (c == '/' || c == ' ' || c == '\t' || c == '\n') c = '_';
  }
  return s;
}

std::string LastSegment(std::string_view uri) {
  while (!uri.empty() && uri.back() == '/') uri.remove_suffix(1);
  size_t slash = uri.rfind('/');
  return std::string(slash == std::string_view::npos ? uri : uri.substr(slash + 1));
}

std::string IdOf(const Json& j) {
  for (const char* key : {"Id", "MemberId", "Name"}) {
    std::string v = Str(j, key);
    if (!v.empty()) return CleanName(v);
  }
  return CleanName(LastSegment(Str(j, "@odata.id")));
}

// Deprecated arrays number members "0", "1", ...: the Name is what an operator reads.
std::string IdOfName(const Json& j) {
  std::string name = Str(j, "Name");
  return name.empty() ? IdOf(j) : CleanName(name);
}

ComponentRef Component(ComponentType type, std::string name, const MapContext& ctx, const Json& j) {
  ComponentRef c;
  c.type = type;
  c.name = name.empty() ? "unknown" : std::move(name);
  if (!ctx.chassis.empty()) c.keys["chassis"] = ctx.chassis;
  std::string uri = Str(j, "@odata.id");
  if (!uri.empty()) c.keys["uri"] = uri;
  std::string serial = Str(j, "SerialNumber");
  if (!serial.empty()) c.keys["serial"] = serial;
  return c;
}

ComponentRef ChassisComponent(const MapContext& ctx) {
  ComponentRef c;
  c.type = ComponentType::kChassis;
  c.name = ctx.chassis.empty() ? "chassis" : CleanName(ctx.chassis);
  return c;
}

Observation Base(const MapContext& ctx, ComponentRef component, ObsKind kind, const Json& j) {
  Observation o;
  o.time_ns = ctx.read_time_ns;
  o.node = ctx.node;
  o.layer = Layer::kOob;
  o.source = Source::kRedfish;
  o.component = std::move(component);
  o.kind = kind;
  o.raw = Dump(j);
  return o;
}

void AddStatusAttrs(const Json& j, Observation& o) {
  const Json* status = Field(j, "Status");
  if (!status) return;
  std::string health = Str(*status, "Health");
  std::string state = Str(*status, "State");
  if (!health.empty()) o.attrs["health"] = health;
  if (!state.empty()) o.attrs["state"] = state;
}

// Some BMCs (HPE iLO among them) fill an unset upper threshold with 0: no sensor that
// reads above zero has a real upper limit of exactly 0, so it is taken as "no threshold".
bool ZeroUpperPlaceholder(std::string_view attr, double v) { return v == 0 && attr.rfind("upper_", 0) == 0; }

// Deprecated Thermal/Power arrays spell thresholds as flat properties.
void AddFlatThresholds(const Json& j, Observation& o) {
  static constexpr std::pair<const char*, const char*> kNames[] = {
      {"UpperThresholdNonCritical", "upper_noncritical"},
      {"UpperThresholdCritical", "upper_critical"},
      {"UpperThresholdFatal", "upper_fatal"},
      {"LowerThresholdNonCritical", "lower_noncritical"},
      {"LowerThresholdCritical", "lower_critical"},
      {"LowerThresholdFatal", "lower_fatal"},
  };
  for (const auto& [key, attr] : kNames) {
    if (auto v = Num(j, key); v && !ZeroUpperPlaceholder(attr, *v)) o.attrs[attr] = FormatNum(*v);
  }
}

// Sensor.Thresholds: {"UpperCritical": {"Reading": 45}, "UpperCaution": ...}.
void AddSensorThresholds(const Json& j, Observation& o) {
  const Json* t = Field(j, "Thresholds");
  if (!t) return;
  static constexpr std::pair<const char*, const char*> kNames[] = {
      {"UpperCaution", "upper_noncritical"}, {"UpperCritical", "upper_critical"}, {"UpperFatal", "upper_fatal"},
      {"LowerCaution", "lower_noncritical"}, {"LowerCritical", "lower_critical"}, {"LowerFatal", "lower_fatal"},
  };
  for (const auto& [key, attr] : kNames) {
    if (auto v = Reading(*t, key); v && !ZeroUpperPlaceholder(attr, *v)) o.attrs[attr] = FormatNum(*v);
  }
}

void Warn(MapResult& r, std::string_view what, const Json& j) {
  std::string uri = Str(j, "@odata.id");
  r.warnings.push_back(std::string(what) + (uri.empty() ? "" : " at " + uri));
}

// A part's Status.State "Absent": an empty bay or slot, whatever Health says.
bool IsAbsent(const Json& j) {
  const Json* status = Field(j, "Status");
  return status && Str(*status, "State") == "Absent";
}

// Names for the object members of a deprecated array: the Name (IdOfName), but a Name
// shared by several members gets the MemberId (or the array index) appended, because
// two parts with the same Name are two parts (HPE names every supply alike).
std::vector<std::string> UniqueMemberNames(const Json& arr) {
  std::vector<std::string> names;
  std::map<std::string, int> uses;
  for (const Json& m : arr) {
    names.push_back(m.is_object() ? IdOfName(m) : std::string());
    ++uses[names.back()];
  }
  size_t i = 0;
  for (const Json& m : arr) {
    std::string& n = names[i];
    if (uses[n] > 1) {
      std::string member = m.is_object() ? Str(m, "MemberId") : std::string();
      if (member.empty() || CleanName(member) == n) member = std::to_string(i);
      n += "_" + CleanName(member);
    }
    ++i;
  }
  return names;
}

// A member of a deprecated array must be an object; anything else is a quirk. `fn` gets
// the member and its unique name.
template <typename Fn>
void ForEachMember(const Json& j, std::string_view key, MapResult& r, Fn fn) {
  const Json* arr = Field(j, key);
  if (!arr || arr->is_null()) return;
  if (!arr->is_array()) {
    Warn(r, std::string(key) + " is not an array", j);
    return;
  }
  const std::vector<std::string> names = UniqueMemberNames(*arr);
  size_t i = 0;
  for (const Json& m : *arr) {
    if (m.is_object()) {
      fn(m, names[i]);
    } else {
      Warn(r, std::string(key) + " has a non-object member", j);
    }
    ++i;
  }
}

void AddStatusObs(const Json& j, const MapContext& ctx, const ComponentRef& c, MapResult& r) {
  r.Append(MapStatus(j, ctx, c));
}

std::string JoinArgs(const Json& j) {
  const Json* args = Field(j, "MessageArgs");
  if (!args || !args->is_array()) return "";
  std::string out;
  for (const Json& a : *args) {
    if (!out.empty()) out += '|';
    out += a.is_string() ? a.get<std::string>() : Dump(a);
  }
  return out;
}

std::string OriginOf(const Json& j) {
  if (const Json* links = Field(j, "Links")) {
    if (const Json* origin = Field(*links, "OriginOfCondition")) return Str(*origin, "@odata.id");
  }
  if (const Json* origin = Field(j, "OriginOfCondition")) {
    return origin->is_string() ? origin->get<std::string>() : Str(*origin, "@odata.id");
  }
  return "";
}

// Sets time from a BMC timestamp: corrected by the offset, raw kept; placeholders
// ("0000-00-00T00:00:00", year 2000 resets are still plausible and kept) fall back to
// the read time and say so.
void SetBmcTime(std::string_view raw, const MapContext& ctx, Observation& o, MapResult& r, const Json& j) {
  if (raw.empty()) return;
  o.attrs["raw_time"] = std::string(raw);
  auto t = ParseIso8601(raw);
  if (!t) {
    o.attrs["time_corrected"] = "unknown";
    Warn(r, "unparseable timestamp '" + std::string(raw.substr(0, 64)) + "'", j);
    return;
  }
  o.time_ns = *t - (ctx.offset_known ? ctx.bmc_offset_ns : 0);
  o.attrs["time_corrected"] = ctx.offset_known ? "true" : "false";
}

void ReadingObs(MapResult& r, const MapContext& ctx, const ComponentRef& c, ObsKind kind, double value, const Json& j,
                std::string_view units) {
  Observation o = Base(ctx, c, kind, j);
  o.value = value;
  if (!units.empty()) o.attrs["units"] = std::string(units);
  r.observations.push_back(std::move(o));
}

}  // namespace

void MapResult::Append(MapResult&& other) {
  for (auto& o : other.observations) observations.push_back(std::move(o));
  for (auto& w : other.warnings) warnings.push_back(std::move(w));
}

int HealthLevel(std::string_view health) {
  if (health == "OK") return 0;
  if (health == "Warning") return 1;
  if (health == "Critical") return 2;
  return -1;
}

std::string ResourceType(const Json& j) {
  std::string t = Str(j, "@odata.type");
  if (!t.empty() && t[0] == '#') t.erase(0, 1);
  size_t dot = t.find('.');
  return dot == std::string::npos ? t : t.substr(0, dot);
}

MapResult MapStatus(const Json& j, const MapContext& ctx, const ComponentRef& component) {
  MapResult r;
  const Json* status = Field(j, "Status");
  if (!status) return r;
  const Json* conditions = Field(*status, "Conditions");
  if (conditions && conditions->is_array()) {
    for (const Json& cond : *conditions) {
      if (!cond.is_object()) continue;
      Observation o = Base(ctx, component, ObsKind::kHealth, cond);
      o.text = Str(cond, "Message");
      o.attrs["message_id"] = Str(cond, "MessageId");
      o.attrs["message_args"] = JoinArgs(cond);
      o.attrs["severity"] = Str(cond, "Severity");
      o.attrs["condition"] = "true";
      std::string origin = OriginOf(cond);
      if (!origin.empty()) o.attrs["origin"] = origin;
      SetBmcTime(Str(cond, "Timestamp"), ctx, o, r, cond);
      o.value = HealthLevel(Str(cond, "Severity"));
      r.observations.push_back(std::move(o));
    }
  }
  return r;
}

// An empty bay: one state observation saying so, nothing else (its readings are zeros
// or nulls and its Health is whatever the vendor leaves there).
Observation AbsentPart(const MapContext& ctx, const ComponentRef& c, ObsKind kind, const Json& j) {
  Observation o = Base(ctx, c, kind, j);
  AddStatusAttrs(j, o);
  o.attrs["present"] = "false";
  o.value = -1;
  o.text = "Absent";
  return o;
}

MapResult MapPower(const Json& j, const MapContext& ctx) {
  MapResult r;
  ForEachMember(j, "PowerControl", r, [&](const Json& m, const std::string&) {
    ComponentRef chassis = ChassisComponent(ctx);
    if (auto v = Num(m, "PowerConsumedWatts")) ReadingObs(r, ctx, chassis, ObsKind::kPower, *v, m, "W");
    if (auto v = Num(m, "PowerCapacityWatts")) ReadingObs(r, ctx, chassis, ObsKind::kPowerCapacity, *v, m, "W");
  });
  ForEachMember(j, "Voltages", r, [&](const Json& m, const std::string& name) {
    auto v = Num(m, "ReadingVolts");
    if (!v || IsAbsent(m)) return;  // a disabled or absent sensor has no reading: not a quirk
    Observation o = Base(ctx, Component(ComponentType::kSensor, name, ctx, m), ObsKind::kVoltage, m);
    o.value = *v;
    o.attrs["units"] = "V";
    o.attrs["physical_context"] = Str(m, "PhysicalContext");
    AddFlatThresholds(m, o);
    AddStatusAttrs(m, o);
    r.observations.push_back(std::move(o));
  });
  ForEachMember(j, "PowerSupplies", r, [&](const Json& m, const std::string& name) {
    ComponentRef psu = Component(ComponentType::kPsu, name, ctx, m);
    if (IsAbsent(m)) {
      r.observations.push_back(AbsentPart(ctx, psu, ObsKind::kPsuState, m));
      return;
    }
    Observation o = Base(ctx, psu, ObsKind::kPsuState, m);
    AddStatusAttrs(m, o);
    if (o.attrs.count("state") == 0 && o.attrs.count("health") == 0) Warn(r, "power supply without Status", m);
    std::string line = Str(m, "LineInputStatus");
    if (!line.empty()) o.attrs["line_input"] = line;
    o.value = HealthLevel(o.attrs["health"]);
    o.text = o.attrs["state"] + "/" + o.attrs["health"];
    r.observations.push_back(std::move(o));
    if (auto v = Num(m, "LineInputVoltage")) {
      Observation in = Base(ctx, psu, ObsKind::kVoltage, m);
      in.value = *v;
      in.attrs["units"] = "V";
      in.attrs["role"] = "input";
      AddStatusAttrs(m, in);
      r.observations.push_back(std::move(in));
    }
    if (auto v = Num(m, "PowerCapacityWatts")) {
      Observation cap = Base(ctx, psu, ObsKind::kPowerCapacity, m);
      cap.value = *v;
      cap.attrs["units"] = "W";
      r.observations.push_back(std::move(cap));
    }
    AddStatusObs(m, ctx, psu, r);
  });
  ForEachMember(j, "Redundancy", r, [&](const Json& m, const std::string&) {
    Observation o = Base(ctx, ChassisComponent(ctx), ObsKind::kHealth, m);
    AddStatusAttrs(m, o);
    o.attrs["redundancy"] = Str(m, "Mode");
    o.attrs["scope"] = "power";
    o.value = HealthLevel(o.attrs["health"]);
    r.observations.push_back(std::move(o));
  });
  return r;
}

MapResult MapThermal(const Json& j, const MapContext& ctx) {
  MapResult r;
  ForEachMember(j, "Temperatures", r, [&](const Json& m, const std::string& name) {
    auto v = Num(m, "ReadingCelsius");
    if (!v || IsAbsent(m)) return;
    Observation o = Base(ctx, Component(ComponentType::kSensor, name, ctx, m), ObsKind::kTemperature, m);
    o.value = *v;
    o.attrs["units"] = "Cel";
    o.attrs["physical_context"] = Str(m, "PhysicalContext");
    AddFlatThresholds(m, o);
    AddStatusAttrs(m, o);
    r.observations.push_back(std::move(o));
  });
  ForEachMember(j, "Fans", r, [&](const Json& m, const std::string& name) {
    ComponentRef fan = Component(ComponentType::kFan, name, ctx, m);
    if (IsAbsent(m)) {
      r.observations.push_back(AbsentPart(ctx, fan, ObsKind::kFanState, m));
      return;
    }
    Observation st = Base(ctx, fan, ObsKind::kFanState, m);
    AddStatusAttrs(m, st);
    st.value = HealthLevel(st.attrs["health"]);
    st.text = st.attrs["state"] + "/" + st.attrs["health"];
    r.observations.push_back(std::move(st));
    if (auto v = Num(m, "Reading")) {
      std::string units = Str(m, "ReadingUnits");
      ReadingObs(r, ctx, fan, ObsKind::kFanSpeed, *v, m, units == "Percent" ? "%" : "RPM");
    }
  });
  ForEachMember(j, "Redundancy", r, [&](const Json& m, const std::string&) {
    Observation o = Base(ctx, ChassisComponent(ctx), ObsKind::kHealth, m);
    AddStatusAttrs(m, o);
    o.attrs["scope"] = "cooling";
    o.value = HealthLevel(o.attrs["health"]);
    r.observations.push_back(std::move(o));
  });
  return r;
}

MapResult MapPowerSupply(const Json& j, const MapContext& ctx) {
  MapResult r;
  ComponentRef psu = Component(ComponentType::kPsu, IdOf(j), ctx, j);
  if (IsAbsent(j)) {
    r.observations.push_back(AbsentPart(ctx, psu, ObsKind::kPsuState, j));
    return r;
  }
  Observation o = Base(ctx, psu, ObsKind::kPsuState, j);
  AddStatusAttrs(j, o);
  if (o.attrs.count("state") == 0 && o.attrs.count("health") == 0) Warn(r, "power supply without Status", j);
  std::string line = Str(j, "LineInputStatus");
  if (!line.empty()) o.attrs["line_input"] = line;
  o.value = HealthLevel(o.attrs["health"]);
  o.text = o.attrs["state"] + "/" + o.attrs["health"];
  r.observations.push_back(std::move(o));
  if (auto v = Num(j, "PowerCapacityWatts")) ReadingObs(r, ctx, psu, ObsKind::kPowerCapacity, *v, j, "W");
  AddStatusObs(j, ctx, psu, r);
  return r;
}

MapResult MapPowerSupplyMetrics(const Json& j, const MapContext& ctx, std::string_view psu_id) {
  MapResult r;
  ComponentRef psu = Component(ComponentType::kPsu, CleanName(std::string(psu_id)), ctx, Json::object());
  if (auto v = Reading(j, "InputVoltage")) {
    Observation o = Base(ctx, psu, ObsKind::kVoltage, j);
    o.value = *v;
    o.attrs["units"] = "V";
    o.attrs["role"] = "input";
    r.observations.push_back(std::move(o));
  }
  const Json* rails = Field(j, "RailVoltage");
  if (rails && rails->is_array()) {
    for (const Json& rail : *rails) {
      auto v = Num(rail, "Reading");
      if (!v) continue;
      Observation o = Base(ctx, psu, ObsKind::kVoltage, rail);
      o.value = *v;
      o.attrs["units"] = "V";
      o.attrs["role"] = "rail";
      o.attrs["data_source"] = Str(rail, "DataSourceUri");
      r.observations.push_back(std::move(o));
    }
  }
  if (auto v = Reading(j, "InputPowerWatts")) ReadingObs(r, ctx, psu, ObsKind::kPower, *v, j, "W");
  return r;
}

MapResult MapPowerSubsystem(const Json& j, const MapContext& ctx) {
  MapResult r;
  if (auto v = Num(j, "CapacityWatts")) {
    ReadingObs(r, ctx, ChassisComponent(ctx), ObsKind::kPowerCapacity, *v, j, "W");
  }
  ForEachMember(j, "PowerSupplyRedundancy", r, [&](const Json& m, const std::string&) {
    Observation o = Base(ctx, ChassisComponent(ctx), ObsKind::kHealth, m);
    AddStatusAttrs(m, o);
    o.attrs["redundancy"] = Str(m, "RedundancyType");
    o.attrs["scope"] = "power";
    o.value = HealthLevel(o.attrs["health"]);
    r.observations.push_back(std::move(o));
  });
  return r;
}

MapResult MapFan(const Json& j, const MapContext& ctx) {
  MapResult r;
  ComponentRef fan = Component(ComponentType::kFan, IdOf(j), ctx, j);
  if (IsAbsent(j)) {
    r.observations.push_back(AbsentPart(ctx, fan, ObsKind::kFanState, j));
    return r;
  }
  Observation st = Base(ctx, fan, ObsKind::kFanState, j);
  AddStatusAttrs(j, st);
  st.value = HealthLevel(st.attrs["health"]);
  st.text = st.attrs["state"] + "/" + st.attrs["health"];
  r.observations.push_back(std::move(st));
  if (const Json* speed = Field(j, "SpeedPercent")) {
    if (auto rpm = Num(*speed, "SpeedRPM")) ReadingObs(r, ctx, fan, ObsKind::kFanSpeed, *rpm, j, "RPM");
    if (auto pct = Num(*speed, "Reading")) ReadingObs(r, ctx, fan, ObsKind::kFanSpeed, *pct, j, "%");
  }
  AddStatusObs(j, ctx, fan, r);
  return r;
}

MapResult MapThermalMetrics(const Json& j, const MapContext& ctx) {
  MapResult r;
  const Json* readings = Field(j, "TemperatureReadingsCelsius");
  if (readings && readings->is_array()) {
    for (const Json& m : *readings) {
      auto v = Num(m, "Reading");
      if (!v) continue;
      // The data source (a Sensor URI) is unique; DeviceName may repeat across parts.
      std::string name = LastSegment(Str(m, "DataSourceUri"));
      if (name.empty()) name = Str(m, "DeviceName");
      Observation o = Base(ctx, Component(ComponentType::kSensor, CleanName(name), ctx, m), ObsKind::kTemperature, m);
      o.value = *v;
      o.attrs["units"] = "Cel";
      o.attrs["data_source"] = Str(m, "DataSourceUri");
      if (std::string pc = Str(m, "PhysicalContext"); !pc.empty()) o.attrs["physical_context"] = pc;
      if (std::string dn = Str(m, "DeviceName"); !dn.empty()) o.attrs["device_name"] = dn;
      r.observations.push_back(std::move(o));
    }
  }
  // The summary's Intake reading is what the inlet rule needs when no Sensor says so.
  if (const Json* summary = Field(j, "TemperatureSummaryCelsius")) {
    if (auto v = Reading(*summary, "Intake")) {
      Observation o = Base(ctx, Component(ComponentType::kSensor, "intake_summary", ctx, Json::object()),
                           ObsKind::kTemperature, *Field(*summary, "Intake"));
      o.value = *v;
      o.attrs["units"] = "Cel";
      o.attrs["physical_context"] = "Intake";
      o.attrs["summary"] = "true";
      r.observations.push_back(std::move(o));
    }
  }
  return r;
}

MapResult MapPump(const Json& j, const MapContext& ctx) {
  MapResult r;
  ComponentRef pump = Component(ComponentType::kCoolant, "pump-" + IdOf(j), ctx, j);
  Observation o = Base(ctx, pump, ObsKind::kPumpState, j);
  AddStatusAttrs(j, o);
  o.value = HealthLevel(o.attrs["health"]);
  o.text = o.attrs["state"] + "/" + o.attrs["health"];
  if (const Json* speed = Field(j, "PumpSpeedPercent")) {
    if (auto pct = Num(*speed, "Reading")) o.attrs["speed_percent"] = FormatNum(*pct);
  }
  r.observations.push_back(std::move(o));
  AddStatusObs(j, ctx, pump, r);
  return r;
}

MapResult MapCoolantConnector(const Json& j, const MapContext& ctx) {
  MapResult r;
  ComponentRef loop = Component(ComponentType::kCoolant, IdOf(j), ctx, j);
  static constexpr std::pair<const char*, const char*> kPoints[] = {
      {"SupplyTemperatureCelsius", "supply"},
      {"ReturnTemperatureCelsius", "return"},
      {"DeltaTemperatureCelsius", "delta"},
  };
  for (const auto& [key, point] : kPoints) {
    if (auto v = Reading(j, key)) {
      Observation o = Base(ctx, loop, ObsKind::kCoolantTemp, j);
      o.value = *v;
      o.attrs["units"] = "Cel";
      o.attrs["point"] = point;
      AddStatusAttrs(j, o);
      r.observations.push_back(std::move(o));
    }
  }
  if (auto v = Reading(j, "FlowLitersPerMinute")) {
    Observation o = Base(ctx, loop, ObsKind::kCoolantFlow, j);
    o.value = *v;
    o.attrs["units"] = "L/min";
    if (auto rated = Num(j, "RatedFlowLitersPerMinute")) o.attrs["rated"] = FormatNum(*rated);
    r.observations.push_back(std::move(o));
  }
  AddStatusObs(j, ctx, loop, r);
  return r;
}

MapResult MapLeakDetector(const Json& j, const MapContext& ctx) {
  MapResult r;
  ComponentRef det = Component(ComponentType::kCoolant, "leak-" + IdOf(j), ctx, j);
  Observation o = Base(ctx, det, ObsKind::kLeak, j);
  AddStatusAttrs(j, o);
  std::string state = Str(j, "DetectorState");
  o.attrs["detector_state"] = state;
  // DetectorState is OK/Warning/Critical; some BMCs say "LeakDetected" or omit it and
  // only set Status.Health, so the worse of the two decides.
  int level = HealthLevel(state);
  if (level < 0 && !state.empty()) {
    Warn(r, "non-standard DetectorState '" + state.substr(0, 32) + "'", j);
    level = (Contains(state, "Leak") || Contains(state, "Detected")) ? 2 : -1;
  }
  int health = HealthLevel(o.attrs["health"]);
  o.value = std::max(level, health);
  o.text = state.empty() ? o.attrs["health"] : state;
  r.observations.push_back(std::move(o));
  return r;
}

MapResult MapSensor(const Json& j, const MapContext& ctx) {
  MapResult r;
  auto v = Num(j, "Reading");
  if (!v || IsAbsent(j)) return r;  // absent or disabled sensors carry no reading
  std::string type = Str(j, "ReadingType");
  std::string units = Str(j, "ReadingUnits");
  ObsKind kind = ObsKind::kOther;
  if (type == "Temperature" || units == "Cel") {
    kind = ObsKind::kTemperature;
  } else if (type == "Voltage") {
    kind = ObsKind::kVoltage;
  } else if (type == "Power") {
    kind = ObsKind::kPower;
  } else if (type == "Rotational" || units == "RPM") {
    kind = ObsKind::kFanSpeed;
  } else if (type == "LiquidFlowLPM" || type == "LiquidFlow") {
    kind = ObsKind::kCoolantFlow;
  }
  Observation o = Base(ctx, Component(ComponentType::kSensor, IdOf(j), ctx, j), kind, j);
  o.value = *v;
  if (!units.empty()) o.attrs["units"] = units;
  if (!type.empty()) o.attrs["reading_type"] = type;
  std::string context = Str(j, "PhysicalContext");
  if (!context.empty()) o.attrs["physical_context"] = context;
  AddSensorThresholds(j, o);
  AddStatusAttrs(j, o);
  r.observations.push_back(std::move(o));
  AddStatusObs(j, ctx, Component(ComponentType::kSensor, IdOf(j), ctx, j), r);
  return r;
}

MapResult MapEnvironmentMetrics(const Json& j, const MapContext& ctx) {
  MapResult r;
  ComponentRef chassis = ChassisComponent(ctx);
  if (auto v = Reading(j, "PowerWatts")) ReadingObs(r, ctx, chassis, ObsKind::kPower, *v, j, "W");
  return r;
}

MapResult MapLogEntry(const Json& j, const MapContext& ctx, std::string_view log_uri) {
  MapResult r;
  if (!j.is_object()) {
    r.warnings.push_back("log entry is not an object in " + std::string(log_uri));
    return r;
  }
  Observation o = Base(ctx, ChassisComponent(ctx), ObsKind::kSelEntry, j);
  std::string entry_type = Str(j, "EntryType");
  o.attrs["entry_type"] = entry_type;
  o.attrs["entry_id"] = Str(j, "Id");
  o.attrs["log"] = std::string(log_uri);
  o.attrs["severity"] = Str(j, "Severity");
  o.attrs["message_id"] = Str(j, "MessageId");
  o.attrs["message_args"] = JoinArgs(j);
  o.attrs["sensor_type"] = Str(j, "SensorType");
  o.attrs["entry_code"] = Str(j, "EntryCode");
  std::string origin = OriginOf(j);
  if (!origin.empty()) o.attrs["origin"] = origin;
  if (entry_type == "Oem") o.attrs["oem_type"] = Str(j, "OemRecordFormat");
  if (auto n = Num(j, "SensorNumber")) o.code = static_cast<int64_t>(*n);
  if (auto id = ParseInt(Str(j, "Id"))) {
    if (*id >= 0) o.seq = static_cast<uint64_t>(*id);
  }
  o.text = Str(j, "Message");
  std::string when = Str(j, "EventTimestamp");
  if (when.empty()) when = Str(j, "Created");
  if (when.empty()) Warn(r, "log entry without Created", j);
  SetBmcTime(when, ctx, o, r, j);
  r.observations.push_back(std::move(o));
  return r;
}

MapResult MapEvent(const Json& event, const MapContext& ctx) {
  MapResult r;
  if (!event.is_object()) {
    r.warnings.push_back("event is not an object");
    return r;
  }
  Observation o = Base(ctx, ChassisComponent(ctx), ObsKind::kSelEntry, event);
  o.attrs["entry_type"] = "Event";
  o.attrs["event_id"] = Str(event, "EventId");
  o.attrs["severity"] = Str(event, "MessageSeverity").empty() ? Str(event, "Severity") : Str(event, "MessageSeverity");
  o.attrs["message_id"] = Str(event, "MessageId");
  o.attrs["message_args"] = JoinArgs(event);
  std::string origin = OriginOf(event);
  if (!origin.empty()) o.attrs["origin"] = origin;
  o.text = Str(event, "Message");
  SetBmcTime(Str(event, "EventTimestamp"), ctx, o, r, event);
  r.observations.push_back(std::move(o));
  return r;
}

MapResult MapResource(const Json& j, const MapContext& ctx) {
  const std::string type = ResourceType(j);
  if (type == "Power") return MapPower(j, ctx);
  if (type == "Thermal") return MapThermal(j, ctx);
  if (type == "PowerSupply") return MapPowerSupply(j, ctx);
  if (type == "PowerSupplyMetrics") {
    // .../PowerSupplies/{id}/Metrics: the PSU is the parent segment of the URI.
    std::string uri = Str(j, "@odata.id");
    size_t slash = uri.rfind("/Metrics");
    std::string psu = slash == std::string::npos ? "unknown" : LastSegment(uri.substr(0, slash));
    return MapPowerSupplyMetrics(j, ctx, psu);
  }
  if (type == "PowerSubsystem") return MapPowerSubsystem(j, ctx);
  if (type == "Fan") return MapFan(j, ctx);
  if (type == "ThermalMetrics") return MapThermalMetrics(j, ctx);
  if (type == "Pump") return MapPump(j, ctx);
  if (type == "CoolantConnector") return MapCoolantConnector(j, ctx);
  if (type == "LeakDetector") return MapLeakDetector(j, ctx);
  if (type == "Sensor") return MapSensor(j, ctx);
  if (type == "EnvironmentMetrics") return MapEnvironmentMetrics(j, ctx);
  if (type == "LogEntry") return MapLogEntry(j, ctx, "");
  if (type == "Event") {
    MapResult r;
    const Json* events = Field(j, "Events");
    if (events && events->is_array()) {
      for (const Json& e : *events) r.Append(MapEvent(e, ctx));
    }
    return r;
  }
  if (type == "Chassis" || type == "ComputerSystem" || type == "Manager") {
    return MapStatus(j, ctx, ChassisComponent(ctx));
  }
  return {};
}

const std::vector<PlausibleRange>& PlausibleRanges() {
  // Wide on purpose: a reading inside these bounds is judged by the detectors; only one
  // no running part can produce is set aside as a quirk.
  static const std::vector<PlausibleRange> kRanges = {
      {ObsKind::kVoltage, "input", 40, 600, true,
       "PSU inputs run from -48 V DC telecom feeds to 480 V three-phase AC; a supply "
       "carrying load cannot read under 40 V (0 V is a lost input unless the PSU says OK), "
       "and nothing reads over 600 V (6553.5 is a raw 0xFFFF)"},
      {ObsKind::kVoltage, "", -60, 1000, false,
       "board rails are -12..54 V and PDU/shelf sensors up to 480 V AC; beyond 1000 V the "
       "value is raw or unscaled (millivolts)"},
      {ObsKind::kTemperature, "", -40, 150, false,
       "no running electronics or cooling air is outside -40..150 C; beyond that the value "
       "is unscaled (centi-degrees) or a sentinel (255, -128)"},
      {ObsKind::kCoolantTemp, "", -40, 150, false, "coolant is liquid well inside -40..150 C"},
      {ObsKind::kFanSpeed, "rpm", 0, 50000, false, "server fans spin under 40000 RPM; 65535 is an unread tachometer"},
      {ObsKind::kFanSpeed, "%", 0, 100, false, "a duty cycle is a percentage"},
      {ObsKind::kPower, "psu", 0, 20000, false,
       "the largest server and shelf supplies deliver a few kW; negative or >20 kW is raw"},
  };
  return kRanges;
}

namespace {

std::string AttrOf(const Observation& o, const std::string& key) {
  auto it = o.attrs.find(key);
  return it == o.attrs.end() ? std::string() : it->second;
}

// Which row of PlausibleRanges() covers a reading; nullptr when none does.
const PlausibleRange* RangeFor(const Observation& o) {
  const std::string role = AttrOf(o, "role");
  const std::string units = AttrOf(o, "units");
  for (const PlausibleRange& r : PlausibleRanges()) {
    if (r.kind != o.kind) continue;
    if (r.role.empty()) return &r;
    if (r.role == "input" && role == "input") return &r;
    if (r.role == "psu" && o.component.type == ComponentType::kPsu) return &r;
    if (r.role == "rpm" && (units == "RPM" || units.empty())) return &r;
    if (r.role == "%" && units == "%") return &r;
  }
  return nullptr;
}

// Same part in the same chassis (a PSU's state and its Metrics readings).
std::string PartKey(const Observation& o) {
  auto it = o.component.keys.find("chassis");
  return o.component.Id() + "@" + (it == o.component.keys.end() ? "" : it->second);
}

}  // namespace

std::string ImplausibleReason(const Observation& o, bool part_healthy) {
  if (!o.value) return "";
  const PlausibleRange* r = RangeFor(o);
  if (r == nullptr) return "";
  const double v = *o.value;
  const bool high = v > r->max;
  const bool low = v < r->min && (!r->below_min_means_loss || part_healthy);
  if (!high && !low) return "";
  return std::string(ToString(o.kind)) + " " + FormatNum(v) + " on " + o.component.Id() + " is " +
         (high ? "above " + FormatNum(r->max) : "below " + FormatNum(r->min)) +
         (part_healthy ? " while the BMC calls it healthy" : "") + ": vendor quirk, reading ignored (" +
         std::string(r->why.substr(0, r->why.find(';'))) + ")";
}

void MarkImplausibleReadings(std::vector<Observation>& observations, std::vector<std::string>& warnings) {
  std::map<std::string, std::string> psu_health;
  for (const Observation& o : observations) {
    if (o.kind == ObsKind::kPsuState) psu_health[PartKey(o)] = AttrOf(o, "health");
  }
  for (Observation& o : observations) {
    if (o.kind == ObsKind::kPsuState || o.kind == ObsKind::kFanState || !o.value) continue;
    auto psu = psu_health.find(PartKey(o));
    const bool healthy = AttrOf(o, "health") == "OK" || (psu != psu_health.end() && psu->second == "OK");
    std::string why = ImplausibleReason(o, healthy);
    if (why.empty()) continue;
    o.attrs["quirk"] = why;
    warnings.push_back(why);
  }
}

Result<Json> ParseBmcJson(std::string_view text, int max_depth) {
  const int depth = JsonNestingDepth(text);
  if (depth > max_depth) {
    return Status(StatusCode::kCorrupt, "JSON nested " + std::to_string(depth) + " levels deep (limit " +
                                            std::to_string(max_depth) + "): refused before parsing");
  }
  Json j = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return Status(StatusCode::kCorrupt, "malformed JSON");
  return j;
}

std::optional<int64_t> EstimateClockOffset(const Json& manager, int64_t host_ns) {
  auto bmc = ParseIso8601(Str(manager, "DateTime"));
  if (!bmc) return std::nullopt;
  return *bmc - host_ns;
}

}  // namespace faultline::redfish
