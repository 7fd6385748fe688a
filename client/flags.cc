#include "client/flags.h"

#include <cmath>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace memgate::cli {
namespace {

absl::Status BadValue(absl::string_view name, absl::string_view rule,
                      absl::string_view value) {
  return absl::InvalidArgumentError(
      absl::StrCat("--", name, ": ", rule, " (got '", value, "')"));
}

}  // namespace

void FlagSet::String(const std::string& name, const std::string& value_hint,
                     const std::string& help,
                     std::optional<std::string>* target) {
  flags_.push_back({name, value_hint, help, [=](absl::string_view v) {
                      if (v.empty()) {
                        return BadValue(name, "must not be empty", v);
                      }
                      *target = std::string(v);
                      return absl::OkStatus();
                    }});
}

void FlagSet::Uint32(const std::string& name, const std::string& help,
                     std::optional<uint32_t>* target, ZeroIs zero) {
  flags_.push_back({name, "N", help, [=](absl::string_view v) {
                      uint32_t n = 0;
                      // SimpleAtoi accepts "+5" and " 5"; flags want digits.
                      if (v.empty() || !absl::ascii_isdigit(v[0]) ||
                          !absl::SimpleAtoi(v, &n)) {
                        return BadValue(
                            name, "must be a whole number from 0 to 4294967295",
                            v);
                      }
                      if (n == 0 && zero == ZeroIs::kRefused) {
                        return BadValue(name, "must be at least 1", v);
                      }
                      *target = n;
                      return absl::OkStatus();
                    }});
}

void FlagSet::Double(const std::string& name, const std::string& value_hint,
                     const std::string& help, std::optional<double>* target) {
  flags_.push_back({name, value_hint, help, [=](absl::string_view v) {
                      double x = 0;
                      if (!absl::SimpleAtod(v, &x) || !std::isfinite(x)) {
                        return BadValue(name, "must be a finite number", v);
                      }
                      *target = x;
                      return absl::OkStatus();
                    }});
}

void FlagSet::Bool(const std::string& name, const std::string& help,
                   std::optional<bool>* target) {
  flags_.push_back({name, "", help, [=](absl::string_view v) {
                      bool b = false;
                      if (!absl::SimpleAtob(v, &b)) {
                        return BadValue(name, "must be true or false", v);
                      }
                      *target = b;
                      return absl::OkStatus();
                    }});
}

const FlagSet::Flag* FlagSet::Find(absl::string_view name) const {
  for (const Flag& f : flags_) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

absl::Status FlagSet::Parse(const std::vector<std::string>& args,
                            std::vector<std::string>* rest) {
  for (size_t i = 0; i < args.size(); ++i) {
    absl::string_view arg = args[i];
    if (arg == "--") {
      if (rest == nullptr) {
        return absl::InvalidArgumentError(
            "--: this command takes no launch command");
      }
      rest->insert(rest->end(), args.begin() + i + 1, args.end());
      return absl::OkStatus();
    }
    if (arg == "--help" || arg == "-h") {
      help_ = true;
      continue;
    }
    if (!absl::StartsWith(arg, "--")) {
      return absl::InvalidArgumentError(absl::StrCat(
          "unexpected argument '", arg, "' (flags look like --name=value)"));
    }
    arg.remove_prefix(2);
    absl::string_view name = arg, value;
    bool has_value = false;
    if (size_t eq = arg.find('='); eq != absl::string_view::npos) {
      name = arg.substr(0, eq);
      value = arg.substr(eq + 1);
      has_value = true;
    }
    const Flag* flag = Find(name);
    if (flag == nullptr && !has_value && absl::StartsWith(name, "no-")) {
      const Flag* negated = Find(name.substr(3));
      if (negated != nullptr && negated->value_hint.empty()) {
        if (absl::Status s = negated->set("false"); !s.ok()) return s;
        continue;
      }
    }
    if (flag == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("--", name, ": unknown flag (see --help)"));
    }
    if (!has_value) {
      if (flag->value_hint.empty()) {  // a boolean switch
        value = "true";
      } else if (i + 1 < args.size()) {
        value = args[++i];
      } else {
        return absl::InvalidArgumentError(
            absl::StrCat("--", name, ": needs a value"));
      }
    }
    if (absl::Status s = flag->set(value); !s.ok()) return s;
  }
  return absl::OkStatus();
}

std::string FlagSet::Help() const {
  std::string out = absl::StrCat(usage_, "\n\nFlags:\n");
  for (const Flag& f : flags_) {
    const std::string left =
        f.value_hint.empty() ? absl::StrCat("--", f.name)
                             : absl::StrCat("--", f.name, "=", f.value_hint);
    absl::StrAppendFormat(&out, "  %-26s %s\n", left, f.help);
  }
  absl::StrAppend(&out, "  --help                     this text\n");
  return out;
}

}  // namespace memgate::cli
