// BMC log entries, Status.Conditions and SSE events (layer 1). Two vocabularies:
// Redfish registry MessageIds (parse/redfish_registry) and IPMI SEL sensor type +
// entry code (IPMI 2.0 table 42-3 event/reading types, as BMCs print them).
#include <vector>

#include "engine/detect/oob_detectors.h"
#include "engine/detect/oob_finding_book.h"
#include "engine/detect/oob_sensor_class.h"
#include "parse/redfish_registry.h"
#include "parse/text.h"

namespace faultline {
namespace {

std::string Segment(const std::string& uri, std::string_view collection) {
  size_t pos = uri.find(collection);
  if (pos == std::string::npos) return "";
  std::string rest = uri.substr(pos + collection.size());
  size_t slash = rest.find('/');
  return slash == std::string::npos ? rest : rest.substr(0, slash);
}

std::string FirstArg(const Observation& obs) {
  std::string args = OobAttr(obs, "message_args");
  return args.substr(0, args.find('|'));
}

std::string Clean(std::string s) {
  for (char& c : s) {
    if (c == '/' || c == ' ') c = '_';
  }
  return s.empty() ? "unknown" : s;
}

// Which part an event names: the origin URI when present, else its first argument.
ComponentRef PartOf(const Observation& obs, std::string_view part) {
  const std::string origin = OobAttr(obs, "origin");
  ComponentRef c;
  c.keys = obs.component.keys;
  if (!origin.empty()) c.keys["origin"] = origin;
  if (std::string id = Segment(origin, "/PowerSupplies/"); !id.empty()) return {ComponentType::kPsu, Clean(id), c.keys};
  if (std::string id = Segment(origin, "/Fans/"); !id.empty()) return {ComponentType::kFan, Clean(id), c.keys};
  if (std::string id = Segment(origin, "/Pumps/"); !id.empty())
    return {ComponentType::kCoolant, "pump-" + Clean(id), c.keys};
  if (std::string id = Segment(origin, "/LeakDetectors/"); !id.empty()) {
    return {ComponentType::kCoolant, "leak-" + Clean(id), c.keys};
  }
  const std::string arg = FirstArg(obs);
  if (part == "psu" && !arg.empty()) return {ComponentType::kPsu, Clean(arg), c.keys};
  if (part == "fan" && !arg.empty()) return {ComponentType::kFan, Clean(arg), c.keys};
  if ((part == "voltage" || part == "inlet") && !arg.empty()) return {ComponentType::kSensor, Clean(arg), c.keys};
  if (obs.component.type != ComponentType::kChassis) return obs.component;
  return {ComponentType::kChassis, obs.component.name, c.keys};
}

// The event names the chassis intake ("Inlet Temp", "Ambient"), not a part's own sensor
// ("PSU1 Inlet Temp", "CPU0 DTS"): same rules as the Redfish sensors (oob_sensor_class.h).
// The sensor name and message args name the sensor; without them the origin's last
// segment (its chassis path may say "GPU1" of a whole board), and last the message text.
bool MentionsInlet(const Observation& obs) {
  std::vector<std::string> names;
  for (const char* key : {"sensor", "message_args"}) {
    if (std::string v = OobAttr(obs, key); !v.empty()) names.push_back(v);
  }
  if (names.empty()) {
    std::string origin = OobAttr(obs, "origin");
    const size_t cut = origin.find_last_of("/#");
    if (cut != std::string::npos && cut + 1 < origin.size()) origin = origin.substr(cut + 1);
    if (!origin.empty()) names.push_back(origin);
    names.push_back(obs.text);
  }
  bool inlet = false;
  for (const std::string& s : names) {
    const TempSite site = ClassifySensorText(s);
    if (site == TempSite::kPart) return false;
    inlet |= site == TempSite::kInlet;
  }
  return inlet;
}

// A part taken out (or a bay reported empty) is a change to note, not a part to replace.
bool IsRemoval(std::string_view text) {
  return Contains(text, "Removed") || Contains(text, "Absent") || Contains(text, "absent") || Contains(text, "removed");
}

// IPMI sensor types faultline acts on, normalised ("Power Supply / Converter" is how
// Redfish spells IPMI's "Power Supply").
std::string SelFamily(std::string_view sensor_type) {
  for (std::string_view f : {"Power Supply", "Power Unit", "Voltage", "Temperature", "Fan", "Cooling Device"}) {
    if (StartsWith(sensor_type, f)) return std::string(f);
  }
  return "";
}

bool IsDeassertion(const Observation& obs) {
  const std::string a = OobAttr(obs, "assertion");
  if (a == "deasserted") return true;
  const std::string code = OobAttr(obs, "entry_code");
  return Contains(code, "Deassert") || Contains(code, "deassert") || Contains(code, "Fully Redundant");
}

// nullopt: the entry code is informational (presence detected, normal transitions).
std::optional<Severity> SelSeverity(const std::string& code) {
  // "Non-critical" must be tested before "critical"; thresholds without a level
  // ("going high") count as warnings.
  static constexpr std::string_view kMild[] = {"Non-critical", "non-critical", "Predictive",
                                               "predictive",   "Degraded",     "degraded"};
  static constexpr std::string_view kCritical[] = {"Critical",    "critical", "Non-recoverable", "Failure", "failure",
                                                   "lost",        "Lost",     "Power off",       "Fault",   "fault",
                                                   "Insufficient"};
  static constexpr std::string_view kWarning[] = {"going high", "going low", "Absent", "absent", "Warning"};
  for (auto s : kMild) {
    if (Contains(code, s)) return Severity::kWarning;
  }
  for (auto s : kCritical) {
    if (Contains(code, s)) return Severity::kCritical;
  }
  for (auto s : kWarning) {
    if (Contains(code, s)) return Severity::kWarning;
  }
  return std::nullopt;
}

class OobEventDetector final : public Detector {
 public:
  explicit OobEventDetector(const OobOptions& options) : book_(options.max_evidence) {}
  std::string_view name() const override { return "oob_events"; }

  void Observe(const Observation& obs) override {
    if (obs.layer != Layer::kOob) return;
    ++revision_;
    if (obs.kind != ObsKind::kSelEntry && !(obs.kind == ObsKind::kHealth && obs.attrs.count("message_id"))) return;
    if (auto key = redfish::ParseMessageId(OobAttr(obs, "message_id"))) {
      if (auto meaning = redfish::LookupMessage(*key)) {
        ObserveMessage(obs, *key, *meaning);
        return;
      }
    }
    if (obs.kind == ObsKind::kSelEntry) ObserveSel(obs);
  }

  std::vector<Finding> Findings() const override { return book_.All(); }
  std::optional<uint64_t> Revision() const override { return revision_; }

 private:
  void ObserveMessage(const Observation& obs, const redfish::MessageKey& key, const redfish::MessageMeaning& m) {
    FaultClass fc = m.fault_class;
    double confidence = 0.85;
    // A temperature message about a CPU or DIMM is cooling, not the inlet air.
    if (fc == FaultClass::kThermalInlet && !MentionsInlet(obs)) {
      fc = FaultClass::kCoolingDegraded;
      confidence = 0.5;
    }
    const ComponentRef part = PartOf(obs, m.part);
    const std::string book_key = std::string(ToString(fc)) + ":" + OobPartKey(part);
    if (m.clears) {
      book_.Clear(book_key, obs);
      return;
    }
    const bool feed = key.key == "LossOfInputPower" || key.key == "LineInputPowerFault";
    const bool part_rma = (m.part == "psu" && !feed) || m.part == "fan";
    Action action = part_rma ? Action::kRma : Action::kFacilityTicket;
    if (IsRemoval(key.key)) action = Action::kMonitor;
    book_.Raise(book_key, obs, part, fc, m.severity, action, confidence,
                key.registry + "." + key.key + " on " + part.Id() + (obs.text.empty() ? "" : ": " + obs.text));
  }

  void ObserveSel(const Observation& obs) {
    const std::string family = SelFamily(OobAttr(obs, "sensor_type"));
    if (family.empty()) return;
    std::string sensor = OobAttr(obs, "sensor");
    if (sensor.empty()) sensor = obs.code ? "sensor-" + std::to_string(*obs.code) : obs.component.name;
    ComponentRef part{ComponentType::kSensor, Clean(sensor), obs.component.keys};
    FaultClass fc = FaultClass::kNone;
    Action action = Action::kFacilityTicket;
    if (family == "Power Supply") {
      part.type = ComponentType::kPsu;
      fc = FaultClass::kPowerSupply;
      action = Contains(OobAttr(obs, "entry_code"), "AC lost") || Contains(OobAttr(obs, "entry_code"), "input lost")
                   ? Action::kFacilityTicket
                   : Action::kRma;
    } else if (family == "Power Unit") {
      part.type = ComponentType::kChassis;
      fc = FaultClass::kPowerSupply;
    } else if (family == "Voltage") {
      fc = FaultClass::kVoltageOutOfRange;
    } else if (family == "Temperature") {
      fc = MentionsInlet(obs) ? FaultClass::kThermalInlet : FaultClass::kCoolingDegraded;
    } else if (family == "Fan") {
      part.type = ComponentType::kFan;
      fc = FaultClass::kCoolingDegraded;
      action = Action::kRma;
    } else {
      part.type = ComponentType::kCoolant;
      fc = FaultClass::kCoolingDegraded;
    }
    const std::string key = "sel:" + family + ":" + OobPartKey(part);
    if (IsDeassertion(obs)) {
      book_.Clear(key, obs);
      return;
    }
    auto sev = SelSeverity(OobAttr(obs, "entry_code"));
    if (!sev) return;
    if (IsRemoval(OobAttr(obs, "entry_code"))) action = Action::kMonitor;
    book_.Raise(key, obs, part, fc, *sev, action,
                fc == FaultClass::kCoolingDegraded && family == "Temperature" ? 0.5 : 0.8,
                family + " event on " + part.Id() + ": " + OobAttr(obs, "entry_code"));
  }

  OobFindingBook book_;
  uint64_t revision_ = 0;
};

}  // namespace

std::unique_ptr<Detector> MakeOobEventDetector(const OobOptions& options) {
  return std::make_unique<OobEventDetector>(options);
}

std::vector<std::unique_ptr<Detector>> MakeOobDetectors(const OobOptions& options) {
  std::vector<std::unique_ptr<Detector>> out;
  out.push_back(MakeOobPowerDetector(options));
  out.push_back(MakeOobThermalDetector(options));
  out.push_back(MakeOobEventDetector(options));
  return out;
}

}  // namespace faultline
