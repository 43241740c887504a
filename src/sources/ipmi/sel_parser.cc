#include "sources/ipmi/sel_parser.h"

#include <algorithm>
#include <array>
#include <optional>

#include "core/time.h"
#include "parse/text.h"

namespace faultline::ipmi {
namespace {

// IPMI 2.0 table 42-3 sensor type names as ipmitool prints them, longest first so
// "Power Supply" wins over "Power".
constexpr std::array<std::string_view, 44> kSensorTypes = {
    "System Firmware Progress",
    "Management Subsys Health",
    "System ACPI Power State",
    "Event Logging Disabled",
    "System Boot Initiated",
    "Cable / Interconnect",
    "Drive Slot / Bay",
    "Physical Security",
    "Platform Security",
    "Critical Interrupt",
    "Slot / Connector",
    "OS Critical Stop",
    "Version Change",
    "Cooling Device",
    "Entity Presence",
    "Microcontroller",
    "Module / Board",
    "Platform Alert",
    "Session Audit",
    "Add-in Card",
    "Power Supply",
    "Monitor ASIC",
    "System Event",
    "Temperature",
    "Boot Error",
    "Power Unit",
    "Other FRU",
    "Terminator",
    "Watchdog2",
    "FRU State",
    "Processor",
    "Chip Set",
    "Watchdog",
    "Voltage",
    "Current",
    "Chassis",
    "Battery",
    "OS Boot",
    "Button",
    "Memory",
    "Other",
    "Fan",
    "LAN",
    "Unknown",
};

std::vector<std::string_view> SplitPipes(std::string_view line) {
  std::vector<std::string_view> out;
  while (true) {
    size_t bar = line.find('|');
    out.push_back(Trim(line.substr(0, bar)));
    if (bar == std::string_view::npos) break;
    line.remove_prefix(bar + 1);
  }
  return out;
}

std::optional<int> Digits(std::string_view s) {
  auto v = ParseInt(s);
  if (!v || *v < 0 || *v > 99999) return std::nullopt;
  return static_cast<int>(*v);
}

std::optional<int64_t> TimeOfDay(std::string_view t) {
  if (t.size() != 8 || t[2] != ':' || t[5] != ':') return std::nullopt;
  auto h = Digits(t.substr(0, 2)), m = Digits(t.substr(3, 2)), s = Digits(t.substr(6, 2));
  if (!h || !m || !s || *h > 23 || *m > 59 || *s > 60) return std::nullopt;
  return (*h * 3600LL + *m * 60LL + *s) * kNsPerSec;
}

std::optional<int64_t> Date(int y, int mo, int d) {
  // Nanoseconds since 1970 end in 2262: a later year is no date here (and would overflow).
  if (y < 1971 || y > 2200 || mo < 1 || mo > 12 || d < 1 || d > 31) return std::nullopt;
  return DaysFromCivil(y, static_cast<unsigned>(mo), static_cast<unsigned>(d)) * 86400LL * kNsPerSec;
}

// ipmitool "11/15/2019" or ipmi-sel "Nov-15-2019".
std::optional<int64_t> ParseDate(std::string_view s) {
  if (s.size() == 10 && s[2] == '/' && s[5] == '/') {
    auto mo = Digits(s.substr(0, 2)), d = Digits(s.substr(3, 2)), y = Digits(s.substr(6, 4));
    if (!mo || !d || !y) return std::nullopt;
    return Date(*y, *mo, *d);
  }
  static constexpr std::string_view kMonths[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                                 "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  if (s.size() == 11 && s[3] == '-' && s[6] == '-') {
    auto it = std::find(std::begin(kMonths), std::end(kMonths), s.substr(0, 3));
    auto d = Digits(s.substr(4, 2)), y = Digits(s.substr(7, 4));
    if (it == std::end(kMonths) || !d || !y) return std::nullopt;
    return Date(*y, static_cast<int>(it - std::begin(kMonths)) + 1, *d);
  }
  return std::nullopt;
}

bool IsUnknownDate(std::string_view s) {
  return s == "Pre-Init" || s == "PostInit" || s == "Post-Init" || s == "N/A" || s == "PreInit";
}

// Column positions for one output format.
struct Columns {
  size_t id = 0, date = 1, time = 2, name = 3;
  std::optional<size_t> type, state, direction, event, reading;
  bool ipmitool = true;  // sensor type and name share the name column
};

Columns IpmitoolColumns() {
  Columns c;
  c.event = 4;
  c.direction = 5;
  c.reading = 6;
  return c;
}

Columns FreeIpmiColumns() {
  Columns c;
  c.ipmitool = false;
  c.type = 4;
  c.event = 5;
  return c;
}

std::optional<Columns> HeaderColumns(const std::vector<std::string_view>& f) {
  if (f.size() < 5 || f[0] != "ID") return std::nullopt;
  Columns c;
  c.ipmitool = false;
  for (size_t i = 0; i < f.size(); ++i) {
    if (f[i] == "Date") c.date = i;
    if (f[i] == "Time") c.time = i;
    if (f[i] == "Name") c.name = i;
    if (f[i] == "Type") c.type = i;
    if (f[i] == "State") c.state = i;
    if (f[i] == "Event Direction") c.direction = i;
    if (f[i] == "Event") c.event = i;
  }
  return c;
}

// "Reading 45 > Threshold 42 degrees C"
void AddReading(std::string_view s, Observation& o) {
  auto r = After(s, "Reading ");
  auto t = After(s, "Threshold ");
  if (r) {
    std::string_view num = r->substr(0, r->find(' '));
    if (auto v = ParseDouble(num)) {
      o.value = *v;
      o.attrs["reading"] = std::string(num);
    }
  }
  if (t) {
    std::string_view rest = *t;
    size_t sp = rest.find(' ');
    o.attrs["threshold"] = std::string(rest.substr(0, sp));
    if (sp != std::string_view::npos) o.attrs["units"] = std::string(Trim(rest.substr(sp + 1)));
  }
}

std::string Direction(std::string_view s) {
  if (Contains(s, "Deassert")) return "deasserted";
  return "asserted";
}

struct RowParser {
  const SelParseOptions& options;
  Columns columns;

  std::optional<std::string> Parse(std::string_view line, const std::vector<std::string_view>& f, Observation& o) {
    if (f.size() <= std::max({columns.id, columns.date, columns.time, columns.name})) return "too few fields";
    // ipmitool prints record ids in hex, ipmi-sel in decimal.
    std::optional<uint64_t> id = ParseHex(f[columns.id]);
    if (!columns.ipmitool) {
      auto dec = ParseInt(f[columns.id]);
      id = dec && *dec >= 0 ? std::optional<uint64_t>(static_cast<uint64_t>(*dec)) : std::nullopt;
    }
    if (!id) return "bad record id '" + std::string(f[columns.id].substr(0, 32)) + "'";
    o.layer = Layer::kOob;
    o.source = Source::kIpmi;
    o.kind = ObsKind::kSelEntry;
    o.node = options.node;
    o.component = ComponentRef{ComponentType::kChassis, "chassis", {}};
    o.seq = *id;
    o.raw = std::string(line);
    o.attrs["entry_id"] = std::string(f[columns.id]);
    o.attrs["entry_type"] = "SEL";
    if (auto err = SetTime(f[columns.date], f[columns.time], o)) return err;
    SetSensor(f, o);
    auto at = [&](std::optional<size_t> i) { return i && *i < f.size() ? f[*i] : std::string_view(); };
    o.attrs["entry_code"] = std::string(at(columns.event));
    o.text = o.attrs["entry_code"];
    o.attrs["assertion"] = Direction(at(columns.direction));
    if (columns.state) o.attrs["severity"] = std::string(at(columns.state));
    if (!at(columns.reading).empty()) AddReading(at(columns.reading), o);
    return std::nullopt;
  }

  std::optional<std::string> SetTime(std::string_view date, std::string_view time, Observation& o) {
    o.attrs["raw_time"] = std::string(date) + " " + std::string(time);
    if (IsUnknownDate(date)) {
      o.attrs["time_quality"] = "pre-init";
      return std::nullopt;
    }
    auto d = ParseDate(date);
    auto t = TimeOfDay(time);
    if (!d || !t) return "bad date/time '" + o.attrs["raw_time"].substr(0, 40) + "'";
    o.time_ns = *d + *t - options.bmc_offset_ns;
    return std::nullopt;
  }

  void SetSensor(const std::vector<std::string_view>& f, Observation& o) {
    if (columns.ipmitool) {
      auto [type, name] = SplitSensorField(f[columns.name]);
      o.attrs["sensor_type"] = type;
      o.attrs["sensor"] = name;
    } else {
      o.attrs["sensor"] = std::string(f[columns.name]);
      o.attrs["sensor_type"] = columns.type && *columns.type < f.size() ? std::string(f[*columns.type]) : "";
    }
  }
};

}  // namespace

std::pair<std::string, std::string> SplitSensorField(std::string_view field) {
  field = Trim(field);
  for (std::string_view type : kSensorTypes) {
    if (StartsWith(field, type) && (field.size() == type.size() || field[type.size()] == ' ')) {
      return {std::string(type), std::string(Trim(field.substr(type.size())))};
    }
  }
  return {"", std::string(field)};
}

SelParseResult ParseSelText(std::string_view text, const SelParseOptions& options) {
  SelParseResult result;
  RowParser parser{options, IpmitoolColumns()};
  size_t line_no = 0;
  while (!text.empty()) {
    size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    ++line_no;
    const std::string where = "line " + std::to_string(line_no) + ": ";
    if (Trim(line).empty()) continue;
    if (line.size() > options.max_line_bytes) {
      result.errors.push_back(where + "longer than " + std::to_string(options.max_line_bytes) + " bytes");
      continue;
    }
    if (result.observations.size() >= options.max_rows) {
      result.errors.push_back(where + "row limit reached; rest ignored");
      break;
    }
    auto fields = SplitPipes(line);
    if (auto header = HeaderColumns(fields)) {
      parser.columns = *header;
      continue;
    }
    if (fields.size() < 5) {
      result.errors.push_back(where + "not a SEL row");
      continue;
    }
    Observation o;
    // Headerless ipmi-sel rows: "id | date | time | name | <SensorType> | event".
    RowParser row_parser = parser;
    if (parser.columns.ipmitool && fields.size() == 6 && SplitSensorField(fields[3]).first.empty() &&
        SplitSensorField(fields[4]).second.empty()) {
      row_parser.columns = FreeIpmiColumns();
    }
    if (auto err = row_parser.Parse(line, fields, o)) {
      result.errors.push_back(where + *err);
      continue;
    }
    result.observations.push_back(std::move(o));
  }
  return result;
}

}  // namespace faultline::ipmi
