// Writes the API tests' simulated incident (api_fixture.h) into a new store at argv[1],
// for the Prometheus test script (prometheus_test.sh).
#include <iostream>

#include "api_fixture.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: make_incident_store STORE\n";
    return 2;
  }
  auto store = faultline::Store::Open(argv[1]);
  if (!store.ok()) {
    std::cerr << store.status().ToString() << "\n";
    return 1;
  }
  const auto incident = faultline::api_test::FillIncident(**store);
  faultline::api_test::FillEveryMetric(**store);  // so promtool sees every metric name
  std::cout << "diagnosis " << incident.diagnosis_id << ", " << incident.observations << " observations\n";
  return ::testing::Test::HasFailure() ? 1 : 0;
}
