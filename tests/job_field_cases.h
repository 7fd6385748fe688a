#ifndef MEMGATE_TESTS_JOB_FIELD_CASES_H_
#define MEMGATE_TESTS_JOB_FIELD_CASES_H_

// One row for every field of memgate.v1.Job: how to change it from a base
// job, and what that must do to the estimate. estimator/job_fields_test.cc
// checks each claim and that no field is without a row;
// planner/planner_test.cc plans each changed model and training template
// and checks every candidate against its job's estimate.

#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "proto/memgate.pb.h"

namespace memgate::testing {

enum class Effect {
  kChangesMemory,  // the estimate (or its decision) differs
  kRefused,        // INVALID_ARGUMENT naming the field
  kNoMemoryChange  // the estimate is the same, byte for byte
};

struct FieldCase {
  std::string field;  // its path from Job: "model.moe.num_experts"
  std::function<v1::Job()> base;
  std::function<void(v1::Job&)> setup;   // applied to both jobs
  std::function<void(v1::Job&)> change;  // applied to the second only
  Effect effect;
  std::string why = "";  // for kNoMemoryChange: why nothing changes
};

// gtest prints a case by its field alone.
void PrintTo(const FieldCase& c, std::ostream* os);

// Every row, in the proto's order.
std::vector<FieldCase> JobFieldCases();

}  // namespace memgate::testing

#endif  // MEMGATE_TESTS_JOB_FIELD_CASES_H_
