#ifndef MEMGATE_CLIENT_JSON_OUTPUT_H_
#define MEMGATE_CLIENT_JSON_OUTPUT_H_

#include <string>

#include "google/protobuf/message.h"

namespace memgate::cli {

// proto3 JSON with the .proto field names (snake_case), every scalar printed
// even when zero, and enums by name: what scripts and checkers parse.
std::string ToJson(const google::protobuf::Message& message);

// The same on one line (JSON Lines), for one record a line.
std::string ToJsonLine(const google::protobuf::Message& message);

}  // namespace memgate::cli

#endif  // MEMGATE_CLIENT_JSON_OUTPUT_H_
