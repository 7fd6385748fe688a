#ifndef MEMGATE_CLIENT_FLAGS_H_
#define MEMGATE_CLIENT_FLAGS_H_

// A small per-command flag parser. memgate's subcommands each take their own
// flags, bad values must exit 2 with a message naming the flag (not abort as
// a global flag library would), and `--help` must list exactly the flags of
// the command asked about.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace memgate::cli {

class FlagSet {
 public:
  // `usage` heads the help text: "memgate estimate [flags]" and a summary.
  explicit FlagSet(std::string usage) : usage_(std::move(usage)) {}

  // Targets keep their value when the flag is absent; `set` tells whether it
  // was given. `value_hint` names the value in the help ("N", "GIB", ...).
  void String(const std::string& name, const std::string& value_hint,
              const std::string& help, std::optional<std::string>* target);
  // A count of 0 is refused naming the flag: memgate's requests read 0 as
  // "unset" (a default), which a user who wrote --ep=0 did not ask for.
  // kAllowed where 0 is documented (--top=0: every layout).
  enum class ZeroIs { kRefused, kAllowed };
  void Uint32(const std::string& name, const std::string& help,
              std::optional<uint32_t>* target, ZeroIs zero = ZeroIs::kRefused);
  void Double(const std::string& name, const std::string& value_hint,
              const std::string& help, std::optional<double>* target);
  // `--name`, `--name=true|false`, `--no-name`.
  void Bool(const std::string& name, const std::string& help,
            std::optional<bool>* target);

  // Parses `args` (without the program and command names). Everything after
  // a bare `--` goes to `*rest`; other non-flag words are errors unless
  // `rest` is given. INVALID_ARGUMENT names the flag and the rule.
  absl::Status Parse(const std::vector<std::string>& args,
                     std::vector<std::string>* rest = nullptr);

  bool help_requested() const { return help_; }
  std::string Help() const;

 private:
  struct Flag {
    std::string name;
    std::string value_hint;  // empty for booleans
    std::string help;
    std::function<absl::Status(absl::string_view value)> set;
  };
  const Flag* Find(absl::string_view name) const;

  std::string usage_;
  std::vector<Flag> flags_;
  bool help_ = false;
};

}  // namespace memgate::cli

#endif  // MEMGATE_CLIENT_FLAGS_H_
