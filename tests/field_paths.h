#ifndef MEMGATE_TESTS_FIELD_PATHS_H_
#define MEMGATE_TESTS_FIELD_PATHS_H_

// The tests that hold every field of a message to a claim (a Job's to the
// estimate, a config.json's to the model read) list the message's fields
// from its descriptor, so that a field added without a row fails.

#include <set>
#include <string>
#include <vector>

#include "google/protobuf/descriptor.h"

namespace memgate::testing {

// Every field reachable from `message`, by dotted path
// ("model.moe.num_experts"), message fields included, except `containers`
// (fields that only hold others; their contents are listed).
std::set<std::string> FieldPaths(const google::protobuf::Descriptor* message,
                                 const std::set<std::string>& containers = {});

// Fails the running test for each path without a row, each row listed
// twice and each row that is not a path; `where` names the rows' file.
void ExpectEveryPathClassified(const std::set<std::string>& paths,
                               const std::vector<std::string>& rows,
                               const std::string& where);

// A gtest parameter name for a dotted path: "model_moe_num_experts".
std::string TestNameOfPath(const std::string& path);

}  // namespace memgate::testing

#endif  // MEMGATE_TESTS_FIELD_PATHS_H_
