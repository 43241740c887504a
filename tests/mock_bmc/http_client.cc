#include "http_client.h"

#include <algorithm>
#include <cctype>

namespace faultline::sim::testing {
namespace {

struct Sink {
  const HttpRequest* req;
  HttpResult* res;
};

size_t OnBody(char* data, size_t size, size_t n, void* user) {
  auto* sink = static_cast<Sink*>(user);
  const std::string chunk(data, size * n);
  if (sink->req->keep_body) sink->res->body += chunk;
  if (sink->req->on_data && !sink->req->on_data(chunk)) return 0;
  return size * n;
}

size_t OnHeader(char* data, size_t size, size_t n, void* user) {
  auto* res = static_cast<HttpResult*>(user);
  std::string line(data, size * n);
  size_t colon = line.find(':');
  if (colon != std::string::npos) {
    std::string name = line.substr(0, colon);
    std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
    std::string value = line.substr(colon + 1);
    value.erase(0, value.find_first_not_of(' '));
    while (!value.empty() && (value.back() == '\r' || value.back() == '\n')) value.pop_back();
    res->headers[name] = value;
  }
  return size * n;
}

}  // namespace

HttpResult Fetch(const HttpRequest& request) {
  HttpSession session;
  return session.Fetch(request);
}

HttpResult HttpSession::Fetch(const HttpRequest& request) {
  HttpResult result;
  CURL* curl = curl_;
  curl_easy_reset(curl);  // options only; the connection cache survives
  Sink sink{&request, &result};
  curl_slist* headers = nullptr;
  for (const std::string& h : request.headers) headers = curl_slist_append(headers, h.c_str());
  curl_easy_setopt(curl, CURLOPT_URL, request.url.c_str());
  curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, request.method.c_str());
  if (request.method == "POST" || !request.body.empty())
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, request.body.c_str());
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, OnBody);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &sink);
  curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, OnHeader);
  curl_easy_setopt(curl, CURLOPT_HEADERDATA, &result);
  curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, request.timeout_ms);
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  if (!request.ca_path.empty()) curl_easy_setopt(curl, CURLOPT_CAINFO, request.ca_path.c_str());
  if (!request.user.empty()) {
    curl_easy_setopt(curl, CURLOPT_HTTPAUTH, CURLAUTH_BASIC);
    curl_easy_setopt(curl, CURLOPT_USERNAME, request.user.c_str());
    curl_easy_setopt(curl, CURLOPT_PASSWORD, request.password.c_str());
  }
  result.curl = curl_easy_perform(curl);
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &result.status);
  curl_slist_free_all(headers);
  return result;
}

}  // namespace faultline::sim::testing
