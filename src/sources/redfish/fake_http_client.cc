#include "sources/redfish/fake_http_client.h"

#include <fstream>
#include <sstream>

namespace faultline::redfish {

std::string FakeHttpClient::PathOf(const std::string& url) {
  size_t scheme = url.find("://");
  if (scheme == std::string::npos) return url;
  size_t slash = url.find('/', scheme + 3);
  return slash == std::string::npos ? "/" : url.substr(slash);
}

void FakeHttpClient::ServeDirectory(std::string dir) {
  std::lock_guard<std::mutex> lock(mu_);
  dir_ = std::move(dir);
}

void FakeHttpClient::Set(const std::string& method, const std::string& path, int status, std::string body,
                         std::map<std::string, std::string> headers) {
  std::lock_guard<std::mutex> lock(mu_);
  fixed_[method + " " + path] = HttpResponse{status, std::move(headers), std::move(body)};
}

void FakeHttpClient::AddHandler(Handler handler) {
  std::lock_guard<std::mutex> lock(mu_);
  handlers_.push_back(std::move(handler));
}

void FakeHttpClient::SetStream(const std::string& path, std::vector<std::string> chunks, int status) {
  std::lock_guard<std::mutex> lock(mu_);
  streams_[path] = {status, std::move(chunks)};
}

Result<HttpResponse> FakeHttpClient::Send(const HttpRequest& request) {
  std::vector<Handler> handlers;
  std::string dir;
  const std::string path = PathOf(request.url);
  {
    std::lock_guard<std::mutex> lock(mu_);
    requests_.push_back(request);
    handlers = handlers_;
    dir = dir_;
    auto it = fixed_.find(request.method + " " + path);
    if (it != fixed_.end()) return it->second;
  }
  for (const auto& h : handlers) {
    if (auto r = h(request)) return *r;
  }
  if (dir.empty() || request.method != "GET") return HttpResponse{404, {}, "{}"};
  std::string rel = path.substr(0, path.find('?'));
  const std::string root = "/redfish/v1";
  if (rel.rfind(root, 0) != 0 || rel.find("..") != std::string::npos) return HttpResponse{404, {}, "{}"};
  rel = rel.substr(root.size());
  while (!rel.empty() && rel.back() == '/') rel.pop_back();
  std::ifstream in(dir + rel + "/index.json");
  if (!in) return HttpResponse{404, {}, "{}"};
  std::stringstream ss;
  ss << in.rdbuf();
  return HttpResponse{200, {{"content-type", "application/json"}}, ss.str()};
}

Result<int> FakeHttpClient::Stream(const HttpRequest& request, const std::function<bool(std::string_view)>& on_data) {
  std::pair<int, std::vector<std::string>> stream;
  {
    std::lock_guard<std::mutex> lock(mu_);
    requests_.push_back(request);
    auto it = streams_.find(PathOf(request.url).substr(0, PathOf(request.url).find('?')));
    if (it == streams_.end()) return Status(StatusCode::kUnavailable, "no stream");
    stream = it->second;
  }
  for (const auto& chunk : stream.second) {
    if (!on_data(chunk)) break;
  }
  return stream.first;
}

std::vector<HttpRequest> FakeHttpClient::requests() const {
  std::lock_guard<std::mutex> lock(mu_);
  return requests_;
}

size_t FakeHttpClient::CountRequests(const std::string& method, const std::string& path) const {
  std::lock_guard<std::mutex> lock(mu_);
  size_t n = 0;
  for (const auto& r : requests_) n += (r.method == method && PathOf(r.url) == path) ? 1 : 0;
  return n;
}

}  // namespace faultline::redfish
