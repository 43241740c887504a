// A fake Kubernetes API server for the Kubernetes actuator's tests (no API server is
// packaged for Debian). It serves HTTPS (a certificate generated at test time) or plain
// HTTP on 127.0.0.1, port 0, holds nodes, pods and events in memory, and checks every
// request against the API's rules the actuator relies on:
//  - bearer token (401 otherwise);
//  - method and path (404 unknown path or object, 405 wrong method);
//  - node lists (GET /api/v1/nodes) paged by `limit` with `continue` tokens (410 for one it
//    did not hand out);
//  - content type: PATCH takes merge-patch+json or strategic-merge-patch+json (415
//    otherwise; json-patch is not implemented by the fake and also answers 415), POST
//    application/json (415);
//  - body: not a JSON object -> 400; invalid fields (unschedulable not a bool, bad taints,
//    condition status not True/False/Unknown, times not RFC 3339, an Event without
//    involvedObject/reason or a bad type, an Eviction that is not policy/v1 or names another
//    pod) -> 422, like the API server's validation;
//  - metadata.resourceVersion in a patch that is not the current one -> 409; a duplicate
//    Event name -> 409 AlreadyExists;
//  - strategic-merge patches merge status.conditions by type, other lists are replaced
//    (spec.taints has no merge key); a PATCH on the node never changes its status and a
//    PATCH on node/status changes nothing but the status;
//  - an Eviction of a pod "protected by a PodDisruptionBudget" answers 429 a set number of
//    times (or always), then deletes the pod (201); evicted pods may stay listed as
//    terminating for a set number of list calls.
// Every request is recorded with its answer; `Violations()` lists the rule breaks seen.
// Faults: the next N requests answer a given status (5xx), or every answer is delayed.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace faultline::testing_kube {

using Json = nlohmann::json;

struct RecordedRequest {
  std::string method;
  std::string path;
  std::string query;  // decoded "k=v&k=v"
  std::string content_type;
  std::string authorization;
  std::string body;
  int status = 0;
};

struct PodSpec {
  std::string ns = "default";
  std::string name;
  std::string node;
  std::string owner_kind;  // "ReplicaSet", "DaemonSet", "" (bare pod)
  bool mirror = false;     // has the kubernetes.io/config.mirror annotation
  std::string phase = "Running";
};

class FakeKubeApi {
 public:
  // `cert_dir` must exist when tls is on; the certificate and key are written there. With
  // `client_ca_file`, the TLS handshake requires a client certificate signed by it.
  static std::unique_ptr<FakeKubeApi> Start(bool tls, const std::string& token, const std::string& cert_dir,
                                            const std::string& client_ca_file = "");
  ~FakeKubeApi();

  std::string url() const;      // https://127.0.0.1:PORT
  std::string ca_file() const;  // the server certificate (its own CA); "" without TLS

  void AddNode(const std::string& name);
  // Overwrites fields of a node as another party would (bumps resourceVersion).
  void MergeIntoNode(const std::string& name, const Json& patch);
  void AddPod(const PodSpec& pod);
  // The next `times` evictions of ns/name answer 429 (-1 = always).
  void ProtectByPdb(const std::string& ns, const std::string& name, int times);
  // Evicted pods stay in pod lists (with deletionTimestamp) for this many more lists.
  void SetTerminatingLists(int lists);
  // The next `count` requests (whose path contains `path_part`, when given) answer `status`
  // with a Status body.
  void FailNext(int count, int status, const std::string& path_part = "");
  // Node lists answer with this continue token on every page ("" = honest paging): a
  // hostile or broken server.
  void SetNodeListContinue(const std::string& token);
  // Every answer waits this long first (to exercise client timeouts).
  void SetDelayMs(int ms);
  // The next `count` resourceVersion-guarded node PATCHes find the node changed (409).
  void ConflictNext(int count);

  Json Node(const std::string& name) const;
  bool HasPod(const std::string& ns, const std::string& name) const;
  std::vector<Json> Events() const;
  std::vector<RecordedRequest> Requests() const;
  std::vector<std::string> Violations() const;

  struct Impl;

 private:
  explicit FakeKubeApi(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace faultline::testing_kube
