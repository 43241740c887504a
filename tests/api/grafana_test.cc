// deploy/grafana/faultline-node.json: every query names only series the exposition has
// (rendered from a store holding one reading per metric), and the board is well formed.
#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "api/metrics.h"
#include "api_fixture.h"

namespace faultline::api_test {
namespace {

Json Board() {
  std::ifstream in(std::string(FAULTLINE_SOURCE_DIR) + "/deploy/grafana/faultline-node.json");
  std::stringstream ss;
  ss << in.rdbuf();
  return Json::parse(ss.str());
}

// Metric names in an exposition: the first word of each sample line.
std::set<std::string> ExposedNames(const std::string& text) {
  std::set<std::string> names;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    names.insert(line.substr(0, line.find_first_of("{ ")));
  }
  return names;
}

TEST(GrafanaBoard, EveryQueryNamesAnExposedSeries) {
  TempDir dir;
  auto store = Store::Open(dir.File("store.db"));
  ASSERT_TRUE(store.ok());
  FillIncident(**store);
  FillEveryMetric(**store);
  api::StoreProvider provider(**store, {.node = kNode});
  auto text = api::RenderMetrics(provider);
  ASSERT_TRUE(text.ok()) << text.status().ToString();
  const std::set<std::string> exposed = ExposedNames(*text);
  ASSERT_GT(exposed.size(), 40u) << *text;

  const Json board = Board();
  const std::regex metric("faultline_[a-z0-9_]+");
  size_t queries = 0;
  for (const Json& panel : board.at("panels")) {
    ASSERT_FALSE(panel.value("title", "").empty());
    ASSERT_FALSE(panel.at("targets").empty()) << panel.at("title");
    for (const Json& target : panel.at("targets")) {
      const std::string expr = target.at("expr");
      ++queries;
      size_t named = 0;
      for (auto it = std::sregex_iterator(expr.begin(), expr.end(), metric); it != std::sregex_iterator(); ++it) {
        EXPECT_TRUE(exposed.count(it->str())) << panel.at("title") << ": " << it->str() << " is not exported";
        ++named;
      }
      EXPECT_GT(named, 0u) << expr;
    }
  }
  EXPECT_GE(queries, 20u);
  // The node variable is filled from a series every scrape has.
  const std::string node_query = board.at("templating").at("list").at(1).at("query");
  std::smatch m;
  ASSERT_TRUE(std::regex_search(node_query, m, metric));
  EXPECT_TRUE(exposed.count(m.str())) << node_query;
}

TEST(GrafanaBoard, PanelsHaveUniqueIdsAndDoNotOverlap) {
  const Json board = Board();
  EXPECT_EQ(board.at("uid"), "faultline-node");
  std::set<int> ids;
  std::set<std::pair<int, int>> cells;  // (x, y) cells covered, on Grafana's 24-column grid
  for (const Json& panel : board.at("panels")) {
    EXPECT_TRUE(ids.insert(panel.at("id").get<int>()).second);
    const Json& g = panel.at("gridPos");
    EXPECT_LE(g.at("x").get<int>() + g.at("w").get<int>(), 24);
    for (int x = g.at("x"); x < g.at("x").get<int>() + g.at("w").get<int>(); ++x) {
      for (int y = g.at("y"); y < g.at("y").get<int>() + g.at("h").get<int>(); ++y) {
        EXPECT_TRUE(cells.insert({x, y}).second) << panel.at("title") << " overlaps at " << x << "," << y;
      }
    }
  }
}

}  // namespace
}  // namespace faultline::api_test
