#ifndef MEMGATE_CLIENT_USER_PATH_H_
#define MEMGATE_CLIENT_USER_PATH_H_

#include <string>

namespace memgate::cli {

// A path the user typed, relative to where they typed it: under `bazel run`
// the process starts in the runfiles tree, and Bazel says where the user was
// in BUILD_WORKING_DIRECTORY.
std::string UserPath(const std::string& path);

}  // namespace memgate::cli

#endif  // MEMGATE_CLIENT_USER_PATH_H_
