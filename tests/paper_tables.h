#ifndef MEMGATE_TESTS_PAPER_TABLES_H_
#define MEMGATE_TESTS_PAPER_TABLES_H_

// The paper's experiments (tests/testdata/paper_tables.csv): for each
// configuration, the paper's estimate, its colour and what really happened.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace memgate::testing {

struct PaperRow {
  std::string table;  // e.g. "a100-8b-8192"
  std::string model;
  std::string gpu;
  uint32_t seq_length = 0;
  uint32_t tp = 0, cp = 0, pp = 0, mbs = 0, gpus = 0;
  double paper_estimate_gib = 0;
  // What the equations give where the paper's cell is a typo (from the
  // note); otherwise the paper's estimate.
  double expected_gib = 0;
  bool typo = false;
  std::string paper_zone;  // "green" / "yellow" / "red"
  std::optional<double> measured_tflops;  // empty: the run went OOM
};

// Loads the CSV from the test's runfiles; aborts on a malformed file so a
// broken copy can never pass as "zero rows checked".
std::vector<PaperRow> LoadPaperTables();

}  // namespace memgate::testing

#endif  // MEMGATE_TESTS_PAPER_TABLES_H_
