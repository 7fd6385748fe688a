#ifndef MEMGATE_READERS_FILE_UTIL_H_
#define MEMGATE_READERS_FILE_UTIL_H_

#include <string>

#include "absl/status/statusor.h"

namespace memgate {

// The whole file; NOT_FOUND / INVALID_ARGUMENT name the path. Refuses files
// over `max_bytes`: configs are small, and a mistaken path to a checkpoint
// must not be read into memory.
absl::StatusOr<std::string> ReadSmallFile(const std::string& path,
                                          size_t max_bytes = 16 << 20);

}  // namespace memgate

#endif  // MEMGATE_READERS_FILE_UTIL_H_
