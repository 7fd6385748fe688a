#include "tests/recipe_launches.h"

#include <fstream>
#include <map>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace memgate::testing {

std::string RecipeLaunch(const std::string& recipe,
                         const std::vector<std::string>& parts) {
  const std::string path =
      absl::StrCat("tests/testdata/launches/", recipe, ".txt");
  std::ifstream in(path);
  EXPECT_TRUE(in) << "cannot open " << path;
  std::map<std::string, std::string> lines;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    const size_t tab = line.find('\t');
    if (tab == std::string::npos) {
      ADD_FAILURE() << path << ": no tab in: " << line;
      continue;
    }
    lines[line.substr(0, tab)] = line.substr(tab + 1);
  }
  std::string words;
  for (const std::string& part : parts) {
    auto it = lines.find(part);
    if (it == lines.end()) {
      ADD_FAILURE() << path << ": no part '" << part << "'";
      continue;
    }
    absl::StrAppend(&words, words.empty() ? "" : " ", it->second);
  }
  return words;
}

}  // namespace memgate::testing
