// The query-string parser and the typed request checks (api/query.h): what they accept,
// and that every refusal names the parameter.
#include "api/query.h"

#include <gtest/gtest.h>

#include "core/time.h"

namespace faultline::api {
namespace {

constexpr int64_t kNow = 1764410400LL * 1'000'000'000;

QueryParams Parse(std::string_view q) {
  QueryParams p;
  auto e = ParseQueryString(q, p);
  EXPECT_FALSE(e) << q << ": " << (e ? e->message : "");
  return p;
}

std::optional<ParamError> ParseError(std::string_view q) {
  QueryParams p;
  return ParseQueryString(q, p);
}

TEST(ApiQuery, SplitsAndDecodes) {
  auto p = Parse("layer=gpu&component=gpu%2F3&text=a+b%20c&&empty=&flag");
  ASSERT_EQ(p.size(), 5u);
  EXPECT_EQ(p[0], (std::pair<std::string, std::string>{"layer", "gpu"}));
  EXPECT_EQ(p[1].second, "gpu/3");
  EXPECT_EQ(p[2].second, "a b c");
  EXPECT_EQ(p[3].second, "");
  EXPECT_EQ(p[4].first, "flag");
  EXPECT_TRUE(Parse("").empty());
}

TEST(ApiQuery, RefusesHostileQueries) {
  for (std::string_view q : {"a=%", "a=%4", "a=%zz", "a=%00", "a=%0a", "%=1", "=1", "a=1&a=2", "a=\x01"}) {
    EXPECT_TRUE(ParseError(q)) << q;
  }
  EXPECT_EQ(ParseError("limit=1&limit=2")->param, "limit");
  EXPECT_EQ(ParseError("since=%zz")->param, "since");
  EXPECT_TRUE(ParseError(std::string(5000, 'a')));        // whole query too long
  EXPECT_TRUE(ParseError("a=" + std::string(600, 'x')));  // value too long
  EXPECT_TRUE(ParseError(std::string(40, 'n') + "=1"));   // name too long
  std::string many;
  for (int i = 0; i < 17; ++i) many += "p" + std::to_string(i) + "=1&";
  EXPECT_TRUE(ParseError(many));
}

TEST(ApiQuery, Cursor) {
  EXPECT_EQ(ParseCursor(FormatCursor({kNow, 42})), (PageCursor{kNow, 42}));
  EXPECT_EQ(ParseCursor("-5.1"), (PageCursor{-5, 1}));
  for (std::string_view bad : {"", ".", "1.", ".1", "1.0", "1.-1", "a.1", "1.1x", " 1.1", "1e3.1",
                               "99999999999999999999.1", "1.99999999999999999999"}) {
    EXPECT_FALSE(ParseCursor(bad)) << bad;
  }
}

TEST(ApiQuery, Observations) {
  ObservationsRequest r;
  ASSERT_FALSE(ParseObservationsRequest(
      Parse("layer=gpu&component=gpu%2F3&kind=ecc_sbe&source=nvml&since=2h&until=2025-11-29T10:00:00Z&limit=50"), kNow,
      {}, r));
  EXPECT_EQ(r.layer, Layer::kGpu);
  EXPECT_EQ(r.component, "gpu/3");
  EXPECT_EQ(r.kind, ObsKind::kEccSbe);
  EXPECT_EQ(r.source, Source::kNvml);
  EXPECT_EQ(r.since_ns, kNow - int64_t{7200} * 1'000'000'000);
  EXPECT_EQ(r.until_ns, kNow);
  EXPECT_EQ(r.limit, 50u);
  ASSERT_FALSE(ParseObservationsRequest(Parse("since=1764410400000000000"), kNow, {}, r));
  EXPECT_EQ(r.since_ns, kNow);
  ASSERT_FALSE(ParseObservationsRequest(Parse(""), kNow, {.default_limit = 7, .max_limit = 9}, r));
  EXPECT_EQ(r.limit, 7u);
}

TEST(ApiQuery, BadObservationParametersAreNamed) {
  const std::pair<std::string_view, std::string_view> cases[] = {
      {"layer=cpu", "layer"},
      {"kind=ecc", "kind"},
      {"source=snmp", "source"},
      {"component=widget%2F3", "component"},
      {"component=gpu%2F3%20x", "component"},
      {"since=yesterday", "since"},
      {"until=2025-13-45T00:00:00Z", "until"},
      {"limit=abc", "limit"},
      {"limit=0", "limit"},
      {"limit=-1", "limit"},
      {"limit=1001", "limit"},
      {"limit=99999999999999999999999", "limit"},
      {"limit=1e3", "limit"},
      {"cursor=garbage", "cursor"},
      {"since=2025-11-29T11:00:00Z&until=2025-11-29T10:00:00Z", "since"},
      {"color=red", "color"},
  };
  for (const auto& [q, param] : cases) {
    ObservationsRequest r;
    auto e = ParseObservationsRequest(Parse(q), kNow, {}, r);
    ASSERT_TRUE(e) << q;
    EXPECT_EQ(e->param, param) << q << ": " << e->message;
    EXPECT_FALSE(e->message.empty());
  }
}

TEST(ApiQuery, RecordsAndWhySlow) {
  RecordsRequest rr;
  EXPECT_FALSE(ParseRecordsRequest(Parse("since=1h&limit=5&cursor=10.2"), kNow, {}, rr));
  EXPECT_EQ(rr.cursor, (PageCursor{10, 2}));
  EXPECT_EQ(ParseRecordsRequest(Parse("layer=gpu"), kNow, {}, rr)->param, "layer");
  WhySlowRequest w;
  EXPECT_FALSE(ParseWhySlowRequest(Parse("since=30m"), kNow, w));
  EXPECT_EQ(w.since_ns, kNow - int64_t{1800} * 1'000'000'000);
  EXPECT_EQ(ParseWhySlowRequest(Parse("limit=5"), kNow, w)->param, "limit");
  EXPECT_EQ(ExpectNoParams(Parse("x=1"))->param, "x");
}

TEST(ApiQuery, RowIds) {
  EXPECT_EQ(ParseRowId("17"), 17);
  for (std::string_view bad : {"", "0", "-1", "1a", "+1", "9223372036854775808", "1 "})
    EXPECT_FALSE(ParseRowId(bad)) << bad;
}

}  // namespace
}  // namespace faultline::api
