// An in-memory HttpClient for unit tests of the Redfish client: serves a mockup tree
// from disk (<root>/<path>/index.json) or explicit responses, records every request,
// and lets a test script failures per path. Thread-safe.
#pragma once

#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "sources/redfish/http_client.h"

namespace faultline::redfish {

class FakeHttpClient final : public HttpClient {
 public:
  // A handler may answer a request (return a response or an error) or decline
  // (return nullopt) to let the next rule / the tree answer.
  using Handler = std::function<std::optional<Result<HttpResponse>>(const HttpRequest&)>;

  // GETs of /redfish/v1/X are answered from `dir`/X/index.json (or `dir`/index.json for
  // the service root, the DMTF public mockup layout); absent -> 404.
  void ServeDirectory(std::string dir);
  // An exact answer for METHOD + path (no scheme/host; query included when present).
  void Set(const std::string& method, const std::string& path, int status, std::string body,
           std::map<std::string, std::string> headers = {});
  // Rules run first, in the order added.
  void AddHandler(Handler handler);
  // Chunks a Stream() of `path` delivers, then the stream ends.
  void SetStream(const std::string& path, std::vector<std::string> chunks, int status = 200);

  Result<HttpResponse> Send(const HttpRequest& request) override;
  Result<int> Stream(const HttpRequest& request, const std::function<bool(std::string_view)>& on_data) override;

  std::vector<HttpRequest> requests() const;
  size_t CountRequests(const std::string& method, const std::string& path) const;

  // "https://h:1/redfish/v1/X?y" -> "/redfish/v1/X?y".
  static std::string PathOf(const std::string& url);

 private:
  mutable std::mutex mu_;
  std::string dir_;
  std::map<std::string, HttpResponse> fixed_;
  std::vector<Handler> handlers_;
  std::map<std::string, std::pair<int, std::vector<std::string>>> streams_;
  std::vector<HttpRequest> requests_;
};

}  // namespace faultline::redfish
