// What agents publish to NATS JetStream and the fleet analyzer consumes (docs/fleet.md).
//
// One NATS message carries one Envelope: a batch of a node's stored observations (in
// store order, change-only as stored), or one finding, diagnosis, action, or one fleet
// diagnosis published by the analyzer. Subjects are
//   faultline.<site>.<rack>.<node>.<kind>
// with each token made safe for NATS (SubjectToken). The message id (JetStream's
// Nats-Msg-Id header) names the stored rows it carries, so a re-sent batch is dropped by
// the server's duplicate window and, past that window, by the analyzer (Envelope::msg_id).
//
// Messages come from the network: Decode never throws, bounds every size and count, and
// rejects what it cannot read whole with kCorrupt (malformed), kInvalidArgument (over
// the limits) or kUnsupported (a wire version this binary does not read). Encode/Decode
// round-trip every field of every record.
//
// Format (docs/fleet.md "Wire format"), version kWireVersion: one JSON header line
// ({"v":1,"kind":"obs","site":..,"rack":..,"node":..,"msg_id":..,"sent_ns":..,"row_id":..,"n":..}),
// then for kObservations n lines of tab-separated, backslash-escaped fields (one per
// observation; parsed with std::from_chars, several million a second on one core), and
// for the other kinds one line of the record's JSON (core/json.h field names). Decode reads
// a header of the form Encode writes with a small reader of its own and any other JSON
// spelling of it with the JSON parser; both give the same answer.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/json.h"
#include "core/status.h"
#include "core/types.h"
#include "store/records.h"

namespace faultline::fleet {

// Where a node sits: the first three subject tokens after "faultline".
struct NodePlace {
  std::string site = "default";
  std::string rack = "default";
  std::string node;
  bool operator==(const NodePlace&) const = default;
};

enum class RecordKind { kObservations, kFinding, kDiagnosis, kAction, kFleetDiagnosis };
std::string_view ToString(RecordKind k);  // "obs", "finding", "diagnosis", "action", "fleet"
std::optional<RecordKind> ParseRecordKind(std::string_view s);

// A diagnosis the fleet analyzer makes about several nodes or about one node among its
// peers (a straggler). `linked` names the per-node diagnoses it explains ("<node>#<row id>"),
// so the policy acts on this one and not on N per-node RMAs.
struct FleetDiagnosis {
  std::string id;         // stable across re-evaluations and restarts (e.g. "pdu/rack12-a/<first_ns>")
  std::string cause;      // "straggler", "pdu", "feed", "cooling_loop", "cable", "switch", "driver", "rack"
  std::string component;  // what to touch: "pdu/rack12-a", "cable/C-0193", "node/n07/gpu/3", "switch/leaf-07"
  FaultClass fault_class = FaultClass::kNone;
  Action action = Action::kNone;
  Severity severity = Severity::kWarning;
  double confidence = 0.0;
  int64_t first_ns = 0;
  int64_t last_ns = 0;
  std::vector<std::string> nodes;   // nodes affected, sorted
  std::vector<std::string> linked;  // "<node>#<diagnosis row id>", sorted
  std::string job;                  // straggler: the job whose peers it was compared with
  std::string summary;
  std::vector<Evidence> evidence;
  std::vector<Diagnosis> node_diagnoses;  // straggler: the node isolator's answer for the window
  bool operator==(const FleetDiagnosis&) const = default;
};

// JSON field names as for the core types (used in the wire format, snapshots and --json).
void to_json(Json& j, const FleetDiagnosis& v);
void from_json(const Json& j, FleetDiagnosis& v);

inline constexpr int kWireVersion = 1;

struct Envelope {
  RecordKind kind = RecordKind::kObservations;
  NodePlace place;
  std::string msg_id;  // "<node>/<kind>/<first row id>[-<last row id>]"; unique per record
  int64_t sent_ns = 0;
  int64_t row_id = 0;                     // finding/diagnosis/action: the agent's store row id
  std::vector<Observation> observations;  // kObservations, oldest first
  std::vector<int64_t> observation_ids;   // their store row ids (same length; Encode writes 0 for missing ones)
  std::optional<Finding> finding;
  std::optional<Diagnosis> diagnosis;
  std::optional<ActionRecord> action;
  std::optional<FleetDiagnosis> fleet;
  bool operator==(const Envelope&) const = default;
};

struct WireLimits {
  size_t max_message_bytes = 1 << 20;  // NATS' default max_payload is 1 MiB
  size_t max_observations = 20000;     // per batch
  size_t max_field_bytes = 64 << 10;   // any one string
};

// "faultline.<site>.<rack>.<node>.<kind>". Tokens: '.', '*', '>', whitespace and control
// characters become '_'; an empty token becomes "_".
std::string Subject(const NodePlace& place, RecordKind kind);
std::string SubjectToken(std::string_view s);

// "<node>/<kind>/<first>" or "<node>/<kind>/<first>-<last>" (last != first): the message
// id of a record or of a batch of stored rows.
std::string MakeMsgId(std::string_view node, RecordKind kind, int64_t first_row_id, int64_t last_row_id);

// Encode writes only the payload of e.kind (observations for kObservations, the finding
// for kFinding, ...). Encoding a record kind whose payload is unset writes "null", which
// Decode rejects.
std::string Encode(const Envelope& e);
Result<Envelope> Decode(std::string_view bytes, const WireLimits& limits = {});
// The same into `e`, reusing the storage it holds from an earlier decode (its observations'
// strings, their maps' nodes, the vectors), so a consumer decoding message after message
// into one Envelope seldom allocates. On success `e` equals what Decode returns; on an
// error it holds an unspecified part of the message (decode the next one into it again).
Status DecodeInto(std::string_view bytes, Envelope& e, const WireLimits& limits = {});

// Bytes one observation takes in an encoded batch (its line, with the newline), so a
// publisher can cut batches under WireLimits::max_message_bytes without encoding twice.
size_t EncodedSize(const Observation& obs, int64_t row_id);

}  // namespace faultline::fleet
