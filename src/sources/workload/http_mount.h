// Mounts the workload endpoint (http.h) on the agent's cpp-httplib server.
//
// Header-only on purpose: cpp-httplib's Request/Response layout depends on macros such
// as CPPHTTPLIB_OPENSSL_SUPPORT, so the adapter must be compiled in the same
// translation unit settings as the server that owns them. Include <httplib.h> (with
// your macros) before this header. Set server.set_payload_max_length to
// options.max_body_bytes so oversized bodies are refused before being read whole.
#pragma once

#include <httplib.h>

#include "sources/workload/http.h"

namespace faultline {

// `clock` must outlive the server.
inline void MountWorkloadEndpoint(httplib::Server& server, const WorkloadHttpOptions& options, const Clock& clock,
                                  ObservationSink sink) {
  server.Post(options.path,
              [options, &clock, sink = std::move(sink)](const httplib::Request& req, httplib::Response& res) {
                const HttpReply reply = HandleWorkloadPost(req.body, options, clock, sink);
                res.status = reply.status;
                res.set_content(reply.body, "application/json");
              });
}

}  // namespace faultline
