#include "tests/paper_tables.h"

#include <cstdlib>
#include <fstream>
#include <iostream>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"

namespace memgate::testing {
namespace {

constexpr char kPath[] = "tests/testdata/paper_tables.csv";
constexpr char kTypoNote[] = "paper typo: equations give ";

[[noreturn]] void Fail(const std::string& why, const std::string& line) {
  std::cerr << kPath << ": " << why << ": " << line << "\n";
  std::abort();
}

uint32_t Uint(absl::string_view field, const std::string& line) {
  uint32_t value = 0;
  if (!absl::SimpleAtoi(field, &value)) Fail("not an integer", line);
  return value;
}

double Double(absl::string_view field, const std::string& line) {
  double value = 0;
  if (!absl::SimpleAtod(field, &value)) Fail("not a number", line);
  return value;
}

}  // namespace

std::vector<PaperRow> LoadPaperTables() {
  std::ifstream in(kPath);
  if (!in) Fail("cannot open", "");
  std::string line;
  std::getline(in, line);  // header
  std::vector<PaperRow> rows;
  while (std::getline(in, line)) {
    // The shared copy has CRLF line ends.
    absl::string_view trimmed = absl::StripTrailingAsciiWhitespace(line);
    if (trimmed.empty()) continue;
    std::vector<absl::string_view> f = absl::StrSplit(trimmed, ',');
    if (f.size() != 14) Fail("expected 14 fields", line);
    PaperRow row;
    row.table = std::string(f[0]);
    row.model = std::string(f[1]);
    row.seq_length = Uint(f[2], line);
    row.gpu = std::string(f[3]);
    row.tp = Uint(f[5], line);
    row.cp = Uint(f[6], line);
    row.pp = Uint(f[7], line);
    row.mbs = Uint(f[8], line);
    row.gpus = Uint(f[9], line);
    row.paper_estimate_gib = Double(f[10], line);
    row.expected_gib = row.paper_estimate_gib;
    row.paper_zone = std::string(f[11]);
    if (f[12] != "OOM") row.measured_tflops = Double(f[12], line);
    absl::string_view note = f[13];
    if (absl::ConsumePrefix(&note, kTypoNote)) {
      row.typo = true;
      row.expected_gib = Double(note, line);
    } else if (!note.empty()) {
      Fail("unknown note", line);
    }
    rows.push_back(row);
  }
  if (rows.empty()) Fail("no rows", "");
  return rows;
}

}  // namespace memgate::testing
