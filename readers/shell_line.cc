#include "readers/shell_line.h"

#include <algorithm>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

// bash(1), DEFINITIONS, QUOTING, REDIRECTION and SHELL GRAMMAR: what is a
// metacharacter, a control operator and a redirection operator. Only what
// tells the program's words apart from the shell's is modelled: no alias,
// brace, tilde, pathname or history expansion (they change a word, never
// where a command ends).

namespace memgate {
namespace {

bool IsBlank(char c) {
  return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}

bool IsOperatorByte(char c) {
  return c == ';' || c == '&' || c == '|' || c == '(' || c == ')' ||
         c == '<' || c == '>' || c == '\n';
}

// Redirection operators, longest first (a maximal munch).
constexpr absl::string_view kRedirections[] = {
    "&>>", "<<<", "<<-", "&>", "<<", "<>", "<&", ">>", ">|", ">&", "<", ">"};
// Control operators, longest first.
constexpr absl::string_view kControls[] = {";;&", ";;", ";&", "&&", "||",
                                           "|&",  ";",  "&",  "|",  "(",
                                           ")",   "\n"};

class Lexer {
 public:
  explicit Lexer(absl::string_view line) : line_(line) {}

  absl::StatusOr<std::vector<std::vector<std::string>>> Run() {
    while (i_ < line_.size()) {
      const char c = line_[i_];
      if (IsBlank(c)) {
        EndWord();
        ++i_;
      } else if (c == '#' && !in_word_) {
        break;  // a comment, to the line's end
      } else if (c == '\\') {
        // Quotes the next byte; before a newline, joins the lines.
        if (i_ + 1 < line_.size() && line_[i_ + 1] != '\n') {
          Keep(line_[i_ + 1], /*quoted=*/true);
        }
        i_ += 2;
      } else if (c == '\'') {
        const size_t close = line_.find('\'', i_ + 1);
        if (close == absl::string_view::npos) return Unclosed();
        word_.append(line_.data() + i_ + 1, close - i_ - 1);
        in_word_ = true;
        quoted_ = true;
        i_ = close + 1;
      } else if (c == '"') {
        if (absl::Status s = ReadDoubleQuoted(); !s.ok()) return s;
      } else if (OpensSubstitution()) {
        if (absl::Status s = CopySubstitution(); !s.ok()) return s;
      } else if (IsOperatorByte(c)) {
        Operator();
      } else {
        Keep(c, /*quoted=*/false);
        ++i_;
      }
    }
    EndCommand();
    return std::move(commands_);
  }

 private:
  void Keep(char c, bool quoted) {
    word_.push_back(c);
    in_word_ = true;
    quoted_ = quoted_ || quoted;
  }

  static absl::Status Unclosed() {
    return absl::InvalidArgumentError(
        "launch: a quote or a substitution (' ', \" \", $( ), ${ }, ` `) "
        "is not closed on its line");
  }

  bool OpensSubstitution() const {
    const char c = line_[i_];
    if (c == '`') return true;
    return c == '$' && i_ + 1 < line_.size() &&
           (line_[i_ + 1] == '(' || line_[i_ + 1] == '{');
  }

  // "...": \ quotes " \ $ ` (and joins lines before a newline); a
  // substitution inside is copied whole.
  absl::Status ReadDoubleQuoted() {
    ++i_;
    in_word_ = true;
    quoted_ = true;
    while (i_ < line_.size()) {
      const char c = line_[i_];
      if (c == '"') {
        ++i_;
        return absl::OkStatus();
      }
      if (c == '\\' && i_ + 1 < line_.size()) {
        const char next = line_[i_ + 1];
        if (next == '"' || next == '\\' || next == '$' || next == '`') {
          word_.push_back(next);
        } else if (next != '\n') {
          word_.push_back('\\');
          word_.push_back(next);
        }
        i_ += 2;
      } else if (OpensSubstitution()) {
        if (absl::Status s = CopySubstitution(); !s.ok()) return s;
      } else {
        word_.push_back(c);
        ++i_;
      }
    }
    return Unclosed();
  }

  // $( ... ), ${ ... } or ` ... ` from i_, as written, to its matching
  // end: what is nested inside (quotes, further substitutions, a
  // subshell's parentheses) is followed on a stack of the bytes that
  // close each, so that a blank or an operator inside does not end the
  // word or the command.
  absl::Status CopySubstitution() {
    std::string closers;
    auto open = [&](char closer) {
      if (closers.size() >= kMaxShellNesting) {
        return absl::InvalidArgumentError(absl::StrCat(
            "launch: quotes and substitutions nested more than ",
            kMaxShellNesting, " deep"));
      }
      closers.push_back(closer);
      return absl::OkStatus();
    };
    in_word_ = true;
    quoted_ = true;
    if (line_[i_] == '`') {
      word_.push_back('`');
      ++i_;
      closers.push_back('`');
    } else {
      word_.append(line_.data() + i_, 2);
      closers.push_back(line_[i_ + 1] == '(' ? ')' : '}');
      i_ += 2;
    }
    while (!closers.empty()) {
      if (i_ >= line_.size()) return Unclosed();
      const char c = line_[i_];
      const char closer = closers.back();
      word_.push_back(c);
      ++i_;
      if (closer == '\'') {
        if (c == '\'') closers.pop_back();
        continue;
      }
      if (c == '\\') {
        if (i_ < line_.size()) word_.push_back(line_[i_++]);
        continue;
      }
      if (c == closer) {
        closers.pop_back();
        continue;
      }
      if (closer == '`') continue;  // inside backquotes only \ and `
      absl::Status opened = absl::OkStatus();
      if (c == '$' && i_ < line_.size() &&
          (line_[i_] == '(' || line_[i_] == '{')) {
        opened = open(line_[i_] == '(' ? ')' : '}');
        word_.push_back(line_[i_++]);
      } else if (c == '`') {
        opened = open('`');
      } else if (closer != '"' && c == '\'') {
        opened = open('\'');
      } else if (closer != '"' && c == '"') {
        opened = open('"');
      } else if (closer == ')' && c == '(') {
        opened = open(')');  // a subshell, or $(( )) arithmetic
      }
      if (!opened.ok()) return opened;
    }
    return absl::OkStatus();
  }

  // An operator at i_: a redirection (its file descriptor, a word of
  // unquoted digits glued before it, and its target dropped) or a control
  // operator (the command ends).
  void Operator() {
    const absl::string_view rest = line_.substr(i_);
    for (absl::string_view op : kRedirections) {
      if (!absl::StartsWith(rest, op)) continue;
      const bool descriptor =
          in_word_ && !quoted_ && !word_.empty() &&
          std::all_of(word_.begin(), word_.end(), [](char d) {
            return absl::ascii_isdigit(static_cast<unsigned char>(d));
          });
      if (descriptor) {
        word_.clear();
        in_word_ = false;
      } else {
        EndWord();
      }
      i_ += op.size();
      drop_next_word_ = true;
      return;
    }
    for (absl::string_view op : kControls) {
      if (!absl::StartsWith(rest, op)) continue;
      i_ += op.size();
      EndCommand();
      return;
    }
    ++i_;  // not reached: every operator byte starts one of the above
  }

  void EndWord() {
    if (!in_word_) return;
    if (drop_next_word_) {
      drop_next_word_ = false;  // a redirection's target
    } else {
      command_.push_back(std::move(word_));
    }
    word_.clear();
    in_word_ = false;
    quoted_ = false;
  }

  void EndCommand() {
    EndWord();
    drop_next_word_ = false;
    if (!command_.empty()) commands_.push_back(std::move(command_));
    command_.clear();
  }

  absl::string_view line_;
  size_t i_ = 0;
  std::string word_;
  bool in_word_ = false;  // a word has begun (quotes make an empty one)
  bool quoted_ = false;   // and some of it was quoted
  bool drop_next_word_ = false;
  std::vector<std::string> command_;
  std::vector<std::vector<std::string>> commands_;
};

}  // namespace

absl::StatusOr<std::vector<std::vector<std::string>>> ShellLineCommands(
    absl::string_view line) {
  return Lexer(line).Run();
}

}  // namespace memgate
