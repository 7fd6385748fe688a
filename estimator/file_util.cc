#include "estimator/file_util.h"

#include <fstream>
#include <sstream>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace memgate {

absl::StatusOr<std::string> ReadSmallFile(const std::string& path,
                                          size_t max_bytes) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat(path, ": cannot open"));
  std::string content;
  char buffer[1 << 16];
  while (in.read(buffer, sizeof buffer) || in.gcount() > 0) {
    content.append(buffer, static_cast<size_t>(in.gcount()));
    if (content.size() > max_bytes) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": larger than ", max_bytes, " bytes"));
    }
  }
  if (in.bad()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": read error"));
  }
  return content;
}

}  // namespace memgate
