#pragma once

#include <fstream>
#include <sstream>
#include <string>

namespace faultline::testing {

inline std::string DcgmDataPath(const std::string& name) {
  return std::string(FAULTLINE_SOURCE_DIR) + "/tests/dcgm/data/" + name;
}

inline std::string ReadDcgmData(const std::string& name) {
  std::ifstream in(DcgmDataPath(name), std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace faultline::testing
