#ifndef MEMGATE_TESTS_RECIPE_LAUNCHES_H_
#define MEMGATE_TESTS_RECIPE_LAUNCHES_H_

// Published training recipes as Megatron-LM launch lines
// (tests/testdata/launches/<recipe>.txt), shared by the tests that read
// them (readers/megatron_args_test) and plan them (cli_plan_test).

#include <string>
#include <vector>

namespace memgate::testing {

// The words of `parts` of the recipe, in order: each part is one line of
// the file ("name<TAB>words"; '#' starts a comment line). A missing file
// or part fails the calling test and gives what was found.
std::string RecipeLaunch(const std::string& recipe,
                         const std::vector<std::string>& parts);

}  // namespace memgate::testing

#endif  // MEMGATE_TESTS_RECIPE_LAUNCHES_H_
