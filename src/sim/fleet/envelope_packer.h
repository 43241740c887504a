// Packs the simulated agents' observation envelopes into fewer, bigger messages, the way an
// agent's publisher sends in one envelope every row its store took since its last publish
// (daemon/fleet_publisher.h): a node's consecutive observation batches are joined until a
// size bound, a count bound or a hold time would be passed.
//
// Why: through NATS the cost is per message (the server's delivery and one ack each, the
// consumer's fetch and header), and a simulated agent's 5-second batch holds about six
// observations. A fleet that produces the analyzer's target rate (1 M observations/s)
// makes each agent's store fill that much faster, so the same hold packs many more rows:
// replaying a scenario faster than real time is such a fleet, and its agents' hold, in
// scenario seconds, is the real hold times the replay's speed-up.
//
// Exact for deduplication: a packed envelope carries consecutive store rows of one node,
// its msg id names them ("<node>/obs/<first>-<last>", fleet::MakeMsgId), and the packing is
// a pure function of the envelopes given and the calls made, so publishing the same
// scenario again gives the same messages (the stream drops them by msg id). Envelopes whose
// row ids do not follow on are never joined; a node's records (diagnoses, findings) are not
// packed and flush that node's pending observations first, so each node's order is kept.
//
// Thread-compatible.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "fleet/wire.h"

namespace faultline::sim {

struct EnvelopePackOptions {
  // Encoded message bytes (header + lines) a packed envelope stays within; 0 = no packing
  // (every envelope passes as it is). An envelope alone over the bound passes as it is.
  size_t max_bytes = 64 << 10;
  size_t max_observations = fleet::WireLimits{}.max_observations;
  // The first row of a packed envelope is sent at most this long (on the envelopes'
  // sent_ns clock) after the batch that brought it.
  int64_t max_hold_ns = 1'000'000'000;
};

class EnvelopePacker {
 public:
  explicit EnvelopePacker(EnvelopePackOptions options);

  // Takes the next envelope of its node (in the node's publishing order) and appends to
  // `out` the envelopes that are complete.
  void Add(fleet::Envelope envelope, std::vector<fleet::Envelope>& out);
  // Sends what has waited its hold by now_ns.
  void FlushDue(int64_t now_ns, std::vector<fleet::Envelope>& out);
  // Sends everything held (the end of a run).
  void Flush(std::vector<fleet::Envelope>& out);

  size_t held_observations() const { return held_observations_; }

 private:
  struct Held {
    fleet::Envelope envelope;
    size_t bytes = 0;           // encoded size once sent
    int64_t first_sent_ns = 0;  // the batch that opened it
  };
  void Send(Held& h, std::vector<fleet::Envelope>& out);

  EnvelopePackOptions options_;
  std::map<std::string, Held> held_;  // by node; ordered, so flushing is deterministic
  size_t held_observations_ = 0;
};

// Bytes the header line of an observation envelope takes at most (its fixed keys, numbers
// at full width and its strings), so a packer can bound a message without encoding it.
size_t HeaderBytesBound(const fleet::Envelope& e);

}  // namespace faultline::sim
