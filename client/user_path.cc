#include "client/user_path.h"

#include <cstdlib>

namespace memgate::cli {

std::string UserPath(const std::string& path) {
  const char* cwd = std::getenv("BUILD_WORKING_DIRECTORY");
  if (path.empty() || path[0] == '/' || cwd == nullptr || *cwd == '\0') {
    return path;
  }
  return std::string(cwd) + "/" + path;
}

}  // namespace memgate::cli
