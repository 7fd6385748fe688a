--[[
memgate_launch.lua: what Slurm's memgate hooks share (job_submit.lua and
cli_filter.lua load it): find every Megatron-LM launch in a batch script,
run one `memgate check` on all of them, and turn its exit code into a
verdict.

job_submit runs inside slurmctld with its locks held, so everything here is
bounded by the script before it is done (see LIMITS): the script's size
and lines, the length of any line after variable expansion, the number of
variable substitutions and of launches. A script over a limit is refused
with a message naming the limit, whatever the site's on_unavailable policy
says: it is the user's script, not memgate, that is at fault. The launches
go to memgate in a file, one launch a line as shell text (memgate splits it
as bash does, readers/shell_line.h; each value substituted is written to
make the words bash makes of it), not on a shell command line, so no
length limit of the kernel applies.

What a batch-script hook can and cannot see: it reads the script as text.
A launch built at run time (eval, arguments read from a file, a wrapper
script the batch script calls) is invisible to it, and a user who wants to
hide a launch can. The script's own arguments ("$@", $1 to $9) are
substituted where the hook is given them (settings.script_arguments),
until a line moves them (`shift`, `set --`): a launch after it that uses
them is refused as unreadable (settings.on_invalid decides).
Words of a launch it finds that it cannot expand ($EXTRA_ARGS from the
submitting shell, a variable the script sets under a condition, $(...))
reach memgate as written, which refuses them by name where they would
supply arguments or change memory (readers/launch_arguments.h); an array
it cannot read is refused here, naming it (find_launches). Enforcement
on the real command line belongs in the launcher: `memgate exec --
torchrun ...` (or the preflight API) in the site's launch wrapper, or a
check at task launch. This hook is
the early, friendly check that catches honest mistakes before a job queues.
]]

local M = {}

M.LIMITS = {
  script_bytes = 4 * 1024 * 1024,  -- Slurm's default max_script_size
  line_bytes = 256 * 1024,         -- one launch line, after expansion
  substitutions = 4096,            -- $VAR expansions in the whole script
  variables = 4096,                -- assignments remembered
  launches = 64,                   -- Megatron launches checked per script
  -- Each line (and each command after an array or a quoted string that
  -- closes on its line) costs a few microseconds of fixed work: 4 MiB of
  -- two-byte lines took 6 s inside slurmctld's locks. Real scripts have
  -- hundreds; 4 MiB of 60-byte lines is 71,000.
  lines = 100000,
  -- What follows an array's `)` on its line is read again as a line of
  -- its own: `A=(x);` repeated over one line re-read the rest each time
  -- (120 KiB took 10 s). A launch after an array is a few KiB.
  reread_bytes = 1024 * 1024,
  -- Quotes and backslashes on a launch line, each followed in Lua to know
  -- where a value goes inside quotes (4 MiB of them took 0.6 s); a real
  -- launch line has tens.
  quotes = 4096,
  -- Words kept in arrays, each value an assignment makes counted (an
  -- array built from others copies them: 4,000 lines of
  -- B=("${A[@]}" i) over a 256 KiB A held 1 GB for 8.5 s). Megatron-LM's
  -- example scripts keep a few KiB.
  array_bytes = 4 * 1024 * 1024,
  -- The values an array may hold after the script's conditions (`if`
  -- blocks the hook follows), and the combinations of them a launch is
  -- checked with: each is one more launch for memgate (of `launches`).
  variants = 16,
  -- `if` blocks open inside one another that the hook follows.
  condition_depth = 16,
  -- Arrays recorded or restored where a branch of a condition ends (one
  -- a branch and array changed in the block: an `elif` chain of 50,000
  -- lines over 1,000 arrays would be 50 million).
  branch_work = 100000,
  -- Quotes and backslashes followed over the whole script, to know which
  -- lines are inside a string that spans lines (text, not commands).
  script_quotes = 1024 * 1024,
}

-- An error raised when a limit is exceeded: judge turns it into a refusal.
local LimitExceeded = {}
local function exceed(message)
  error(setmetatable({ message = message }, LimitExceeded), 0)
end

-- Takes `amount` from what is left of limits[name] (budget.left[name],
-- counted down as the work is done); past it, the script is refused:
-- `what`, a format of the limit.
local function spend(budget, name, amount, what)
  local left = budget.left[name] - amount
  budget.left[name] = left
  if left < 0 then exceed(string.format(what, budget.limits[name])) end
end

-- An error raised for a launch the hook cannot read as it will run: judge
-- treats it as memgate treats an invalid launch (settings.on_invalid).
local Unreadable = {}
local function unreadable(message)
  error(setmetatable({ message = message }, Unreadable), 0)
end

-- The script's own arguments, as a launch line names them.
local POSITIONAL = { ["1"] = true, ["2"] = true, ["3"] = true, ["4"] = true,
                     ["5"] = true, ["6"] = true, ["7"] = true, ["8"] = true,
                     ["9"] = true, ["@"] = true, ["*"] = true }

-- `text` without its trailing whitespace. Not gsub("%s+$", ""): an
-- unanchored pattern is retried from every blank of a run, which is
-- quadratic in its length (80,000 blanks: 29 s of slurmctld's locks).
-- Anchored, `.*` backtracks once over the text.
local function without_trailing_blanks(text)
  return text:match("^(.*%S)") or ""
end

-- A name or line of the script as a message quotes it: its first 64
-- bytes (the script's, and so its length, are the user's).
local function quoted(text)
  text = without_trailing_blanks(text:sub(1, 65))
  if #text > 64 then text = text:sub(1, 64) .. "..." end
  return text
end

--[[
`value`, substituted into a launch line where the line is inside `quote`
(nil, or '"'), written so that bash's words of it come out of memgate's
reading of the line: inside double quotes one word (`each`: a word a
blank-separated element, as "${A[@]}" and "$@" expand), its \ " $ and `
quoted; outside, split at blanks (bash's field splitting), every other
byte the shell would read as syntax quoted with a backslash (a value
`a;b` is one word to bash, never the end of a command). One gsub each
(C loops; the value is at most a line's worth).
]]
local function shell_words(value, quote, each)
  if quote ~= '"' then
    return (value:gsub("[\\\"'$`;&|<>()#]", "\\%0"))
  end
  value = value:gsub('[\\"$`]', "\\%0")
  if each then
    value = without_trailing_blanks((value:gsub("^%s+", "")))
    value = value:gsub("%s+", '" "')
  end
  return value
end

--[[
$NAME and ${NAME} replaced with values from `vars` (unknown names stay as
written; NAME may be a positional parameter, 1 to 9, @ or *, where `vars`
has the script's arguments: M.script_argument_variables; where
`shifted` names the line that moved them, `shift` or `set --`, such a
NAME is refused: which arguments it holds is decided at run time), within
`budget` (what is left of its limits: spend): the result is built piece by
piece and abandoned as soon as it grows over the line limit,
so a 1 MB variable repeated a thousand times costs 256 KiB, not 1 GB.
Returns the line and its pieces; where `budget.record` is set, it is
called for each substitution with the name, how it was named ("var", or
"default" for ${NAME:-default}, "array", "positional"), the index of
the value's piece, the expansion as written and the value.

The line is shell text, which memgate splits as bash does (its
readers/shell_line.h): a value goes in as bash would make words of it
where it stands (shell_words), and inside single quotes nothing is
expanded. `raw`: the values as they are, for an array's words (whose
quotes are already gone), escaped where the array is expanded.
]]
local function expand(line, vars, budget, shifted, raw)
  local parts, size, pos = {}, 0, 1
  -- The quote the line is inside where the next '$' stands: nil, '"' or
  -- "'", followed over each piece copied from the line (one search a
  -- quote or backslash in it: linear).
  local quote = nil
  local quotes = 0
  local function follow(piece)
    local i = 1
    while true do
      local at
      if quote == "'" then
        at = piece:find("'", i, true)
      elseif quote == '"' then
        at = piece:find('["\\]', i)
      else
        at = piece:find("['\"\\]", i)
      end
      if at == nil then return end
      quotes = quotes + 1
      if quotes > budget.limits.quotes then
        exceed(string.format("a launch line holds more than %d quotes " ..
                             "and backslashes", budget.limits.quotes))
      end
      local c = piece:byte(at)
      if c == 92 then           -- a backslash quotes the next byte
        i = at + 2
      elseif quote == nil then
        quote = c == 39 and "'" or '"'
        i = at + 1
      else
        quote = nil
        i = at + 1
      end
    end
  end
  local function add(piece, copied)
    size = size + #piece
    if size > budget.limits.line_bytes then
      exceed(string.format("a launch line is longer than %d bytes after " ..
                           "variable expansion", budget.limits.line_bytes))
    end
    parts[#parts + 1] = piece
    if copied and not raw then follow(piece) end
  end
  -- `value` where it is known, else the expansion as written, from the
  -- '$' at `dollar` to `stop`.
  local function substitute(value, dollar, stop, name, kind)
    if value == nil then
      add(line:sub(dollar, stop - 1), true)
      return
    end
    spend(budget, "substitutions", 1, "more than %d variable substitutions")
    if budget.record ~= nil then
      budget.record(name, kind, #parts + 1, line:sub(dollar, stop - 1),
                    value)
    end
    if raw then
      add(value)
    else
      -- "${A[@]}" and "$@" are a word an element even inside quotes.
      local each = kind == "array" and line:byte(stop - 3) == 64 or
                   name == "@"
      -- Written once a value and context: a launch that repeats a
      -- variable (64 launches of four 60 KiB ones) copies it, and does
      -- not scan it again.
      local context = quote == '"' and (each and 2 or 1) or 0
      local cache = budget.written[context + 1]
      local words = cache[value]
      if words == nil then
        words = shell_words(value, quote, each)
        cache[value] = words
      end
      add(words)
    end
  end
  while true do
    local dollar = line:find("$", pos, true)
    if dollar == nil then
      add(line:sub(pos), true)
      break
    end
    add(line:sub(pos, dollar - 1), true)
    -- ${NAME[@]} and ${NAME[*]}: the elements of an array find_launches
    -- read (budget.arrays); any other array stays as written.
    -- (Inside single quotes, or after a backslash, nothing: bash expands
    -- none of it. The backslashes counted are this piece's: linear.)
    local literal = quote == "'"
    local before = dollar - 1
    while before >= pos and line:byte(before) == 92 do before = before - 1 end
    if (dollar - 1 - before) % 2 == 1 then literal = true end
    local array, stop
    if not literal then
      array, stop = line:match("^{([%a_][%w_]*)%[[@*]%]}()", dollar + 1)
    end
    -- ${NAME:-default} and ${NAME-default}: NAME's value where the script
    -- or the job's environment gives it one, else the default
    -- (budget.default_of); unknown, as written.
    local defaulted, default
    if array == nil and not literal then
      defaulted, default, stop =
          line:match("^{([%a_][%w_]*):?%-([^}$`]*)}()", dollar + 1)
    end
    local name
    if array == nil and defaulted == nil and not literal then
      name, stop = line:match("^{([%w_]+)}()", dollar + 1)
      if name == nil then name, stop = line:match("^{([@*])}()", dollar + 1) end
      if name == nil then name, stop = line:match("^([%w_]+)()", dollar + 1) end
      if name == nil then name, stop = line:match("^([@*])()", dollar + 1) end
    end
    if defaulted ~= nil then
      substitute(budget.default_of and budget.default_of(defaulted, default),
                 dollar, stop, defaulted, "default")
      pos = stop
    elseif array ~= nil then
      local value = budget.arrays and budget.arrays[array]
      local why = budget.unread_arrays and budget.unread_arrays[array]
      if value == nil and why ~= nil then
        unreadable(string.format(
            "the launch uses %s, an array the script %s: which words " ..
            "it holds when the launch runs is decided then (a condition " ..
            "or a loop may choose); write them into one assignment " ..
            "(%s=( ... )), or check the launch where it runs (memgate exec)",
            quoted(line:sub(dollar, stop - 1)), why, quoted(array)))
      end
      substitute(value, dollar, stop, array, "array")
      pos = stop
    elseif name == nil then
      add("$")
      pos = dollar + 1
    else
      if budget.in_function ~= nil and POSITIONAL[name] then
        unreadable(string.format(
            "the launch uses $%s inside a shell function ('%s'), where it " ..
            "is the function's argument, given where it is called: write " ..
            "the value into the launch, or check it where it runs " ..
            "(memgate exec)", name, budget.in_function))
      end
      if shifted ~= nil and POSITIONAL[name] then
        unreadable(string.format(
            "the launch uses the batch script's arguments ($%s) after the " ..
            "script moves them ('%s'): which of them the launch gets is " ..
            "decided when it runs; write the arguments into the launch, " ..
            "or check it where it runs (memgate exec)", name, shifted))
      end
      local value = vars[name]
      if budget.value_of ~= nil then value = budget.value_of(name) end
      substitute(value, dollar, stop, name,
                 POSITIONAL[name] and "positional" or "var")
      pos = stop
    end
  end
  return table.concat(parts), parts
end

-- The batch script's own arguments (`sbatch train.sh --mbs 4`: Slurm's
-- job_desc.argv, sbatch's argv after the script) as the variables a launch
-- line names them by: "1" to "9", and "@" and "*" for all of them (words
-- joined by blanks, at most a line's worth: LIMITS.line_bytes).
function M.script_argument_variables(args, limits)
  limits = limits or M.LIMITS
  local out, kept, size = {}, {}, 0
  for i, arg in ipairs(args or {}) do
    arg = tostring(arg)
    if i <= 9 then out[tostring(i)] = arg end
    size = size + #arg + 1
    if size > limits.line_bytes then
      exceed(string.format("the batch script's arguments are longer than " ..
                           "%d bytes", limits.line_bytes))
    end
    kept[#kept + 1] = arg
  end
  out["@"] = table.concat(kept, " ")
  out["*"] = out["@"]
  return out
end

-- A line that runs Megatron-LM with arguments (an `echo "starting
-- pretrain_gpt.py"` does not; an echo that carries a whole launch does,
-- and is checked too: the worst launch in a script decides).
local function looks_like_launch(body)
  if body:sub(1, 1) == "#" then return false end
  -- Plain searches: every line of a 4 MiB script comes here.
  local script = body:find("pretrain_gpt.py", 1, true)
  return (script ~= nil and (body:find("%-%-[%a]", script) ~= nil or
                             body:find("[@]}", script, true) ~= nil or
                             body:find("[*]}", script, true) ~= nil)) or
         body:find("--tensor-model-parallel-size", 1, true) ~= nil or
         body:find("--num-layers", 1, true) ~= nil
end

--[[
TransformerEngine's environment variables that change memory (memgate's
readers/te_attention_environment.h, te_backward_override.h): FlashAttention
and cuDNN's fused attention switched off leave its unfused attention, which
keeps the s x s scores (and, with NVTE_MASKED_SOFTMAX_FUSION=0, an fp32
copy of them); NVTE_BACKWARD_OVERRIDE=high_precision keeps fp8 GEMMs'
16-bit inputs. The job's environment (what sbatch exports) and the
script's exports reach the launch, so they go in front of its line as an
export (`export NAME=value ...; `), which memgate reads for every command
on the line.
]]
M.TE_VARIABLES = { "NVTE_FLASH_ATTN", "NVTE_FLASH_ATTN_V2",
                   "NVTE_FUSED_ATTN", "NVTE_UNFUSED_ATTN",
                   "NVTE_ALLOW_NONDETERMINISTIC_ALGO",
                   "NVTE_MASKED_SOFTMAX_FUSION",
                   "NVTE_BACKWARD_OVERRIDE" }
local te_variable = {}
for _, name in ipairs(M.TE_VARIABLES) do te_variable[name] = true end


-- A value as one word memgate reads as TE does (int(), which strips
-- surrounding whitespace): anything else int() refuses becomes "?", so
-- memgate refuses it by name instead of splitting or expanding it.
local function te_value(value)
  value = without_trailing_blanks((value:gsub("^%s+", "")))
  if #value > 64 or value:find("[^%w%+%-_]") then return "?" end
  return value
end

-- The value of `name` in `environment` (name -> value, or a function of
-- the name, as Slurm's job_desc.environment), or nil.
local function environment_value(environment, name)
  if environment == nil then return nil end
  local ok, value
  if type(environment) == "function" then
    ok, value = pcall(environment, name)
  else
    ok, value = pcall(function() return environment[name] end)
  end
  if ok and type(value) == "string" then return value end
  return nil
end

-- The TE attention variables of `environment`, as a table.
function M.te_attention_environment(environment)
  local out = {}
  for _, name in ipairs(M.TE_VARIABLES) do
    local value = environment_value(environment, name)
    if value ~= nil then out[name] = te_value(value) end
  end
  return out
end

-- An assignment to a TE attention variable (export NAME=..., or NAME=...
-- on a line that is not a launch): whether exported, the name, and its
-- value as written (a trailing comment and surrounding quotes removed).
local function te_assignment(body)
  local export, name, rest = body:match("^(export%s+)([%a_][%w_]*)=(.*)$")
  if name == nil then
    name, rest = body:match("^([%a_][%w_]*)=(.*)$")
    -- NAME=value in front of a launch is the launch's, not the script's.
    if name ~= nil and te_variable[name] and looks_like_launch(body) then
      return nil
    end
  end
  if name == nil or not te_variable[name] then return nil end
  -- A comment starts at a blank then '#' (found in one pass).
  local comment = rest:find("%s#")
  if comment ~= nil then rest = rest:sub(1, comment - 1) end
  rest = without_trailing_blanks(rest)
  rest = rest:gsub('^"(.*)"$', "%1"):gsub("^'(.*)'$", "%1")
  return export ~= nil, name, rest
end

-- That value as memgate will read it: a literal; one variable ($FLASH,
-- ${FLASH}) looked up; ${NAME:-default} as `default_of` (find_launches'
-- budget.default_of) takes it, the job's environment's NAME where the
-- script never set it (`export NVTE_FLASH_ATTN=${NVTE_FLASH_ATTN:-1}`,
-- once "?" and a refusal of a job that fits); anything computed at run
-- time (a command, an expression) unknown: "?", which memgate refuses by
-- name rather than guess.
local function te_resolve(rest, vars, default_of)
  if not rest:find("[%$`(%s]") then return te_value(rest) end
  local ref = rest:match("^%$([%a_][%w_]*)$") or rest:match("^%${([%a_][%w_]*)}$")
  if ref ~= nil and vars[ref] ~= nil then return te_value(vars[ref]) end
  local name, default = rest:match("^%${([%a_][%w_]*):?%-([^}$`%s]*)}$")
  if name ~= nil then
    local value = default_of(name, default)
    if value ~= nil then return te_value(value) end
  end
  return "?"
end

-- The exported TE attention variables, in order, as an export command in
-- front of the launch's line (`export NAME=value ...; `): the
-- environment of every command on it, as memgate reads an export.
local function environment_words(exported)
  local words = {}
  for _, name in ipairs(M.TE_VARIABLES) do
    if exported[name] ~= nil then
      words[#words + 1] = name .. "=" .. exported[name] .. " "
    end
  end
  if words[1] == nil then return "" end
  return "export " .. table.concat(words) .. "; "
end

-- Bytes that can end the word before a command (blank, ;, &, |, {, ():
-- "shift" after one of them, or at the start, is the command.
local COMMAND_START = { [32] = true, [9] = true, [59] = true, [38] = true,
                        [124] = true, [123] = true, [40] = true }
-- Bytes that continue a word (letters, digits, _ and -).
local function word_byte(b)
  return b ~= nil and (b == 95 or b == 45 or (b >= 48 and b <= 57) or
                       (b >= 65 and b <= 90) or (b >= 97 and b <= 122))
end

-- Whether `name` occurs in `body` as a command (a whole word where a
-- command starts), followed by what `after` accepts at the byte past it.
-- Plain searches (C speed) and a few byte tests an occurrence: this runs
-- on every line of a 4 MiB script inside slurmctld.
local function has_command(body, name, after)
  local pos = 1
  while true do
    local first, last = body:find(name, pos, true)
    if first == nil then return false end
    if (first == 1 or COMMAND_START[body:byte(first - 1)]) and
        after(body, last + 1) then
      return true
    end
    pos = first + 1
  end
end

local function ends_word(body, i) return not word_byte(body:byte(i)) end

-- `set` then blanks then `--` ending a word (anchored at `i`: one pass).
local function double_dash(body, i)
  return body:find("^%s+%-%-%f[%s;%z]", i) ~= nil
end

--[[
Whether a line moves the script's own arguments: `shift` (`shift 2`, in
an argument loop's `--mbs) MBS=$2; shift 2;;`) or `set --` as a command.
A loop or a condition around it decides at run time how far, so any such
line makes them unknown to every launch after it (a word "shift" inside
an echo's text is taken for one too: conservative).
]]
local function moves_arguments(body)
  if body:sub(1, 1) == "#" then return false end
  return has_command(body, "shift", ends_word) or
         has_command(body, "set", double_dash)
end

-- Bytes of a shell variable's name.
local function name_byte(b)
  return b ~= nil and (b == 95 or (b >= 48 and b <= 57) or
                       (b >= 65 and b <= 90) or (b >= 97 and b <= 122))
end

-- Bytes after which a word starts a command or an assignment: a blank,
-- ; & | ( ) { (an argument loop's `--mbs) MBS=$2;;`).
local ASSIGNMENT_START = { [32] = true, [9] = true, [59] = true, [38] = true,
                           [124] = true, [40] = true, [41] = true,
                           [123] = true }

-- The name that ends just before byte `stop` + 1 of `body` (walking back
-- over name bytes), if it is a whole word a command or assignment can
-- start with; nil otherwise.
local function name_before(body, stop)
  local start = stop
  while start >= 1 and name_byte(body:byte(start)) do start = start - 1 end
  start = start + 1
  if start > stop or (body:byte(start) >= 48 and body:byte(start) <= 57) then
    return nil
  end
  if start > 1 and not ASSIGNMENT_START[body:byte(start - 1)] then
    return nil
  end
  return body:sub(start, stop)
end

--[[
Whether a line may open a condition or a loop, or continue one onto the
next line: if, case, for, while, until, select or a function as a
command, a `{` or `(` word, a `&&`, `||` or `|` ending the line (a
comment after it). Broad on purpose (a word "if" in an echo counts): an
assignment after the first such line may sit under it, which the hook,
reading text, cannot tell. A `&&` or `||` with a command after it on its
line (`mkdir -p $DIR || exit 1`, `DIR="$(cd .. && pwd)"`) runs that
command under a condition, not the lines below: what it sets, other
assignments reads (set otherwise), and an array it opens is refused.
]]
-- Whether the last `&&` or `||` on a line ends it (only blanks or a
-- comment after it): the list goes on on the next line.
local LIST_OPERATORS = { "&&", "||" }
local function continues_after_list(body)
  local last = nil
  for _, op in ipairs(LIST_OPERATORS) do
    local pos = 1
    while true do
      local at = body:find(op, pos, true)
      if at == nil then break end
      if last == nil or at > last then last = at end
      pos = at + 2
    end
  end
  if last == nil then return false end
  local rest = body:match("^%s*(.?)", last + 2)
  return rest == "" or rest == "#"
end
-- Commands whose arguments may name what they set (`export $(...)`).
local DECLARING_COMMANDS = { "export", "declare", "typeset", "readonly",
                             "local" }

-- Calls `fn(body, at, extra)` at each occurrence of `needle` in `body` (a
-- plain search from past the last one: linear); true once one returns
-- true. `fn` is a function of the module, not a closure made per line:
-- every line of a 4 MiB script comes here.
local function each_occurrence(body, needle, fn, extra)
  local pos = 1
  while true do
    local at = body:find(needle, pos, true)
    if at == nil then return false end
    if fn(body, at, extra) then return true end
    pos = at + #needle
  end
end

-- Whether the '(' at `at` opens a subshell or an arithmetic command: where
-- a command starts, and not the second '(' of an arithmetic expansion
-- (`WORLD_SIZE=$(($GPUS_PER_NODE*$NUM_NODES))`, in Megatron-LM's own
-- example scripts, once made every array after it unread).
local function opens_subshell_at(body, at)
  if at > 1 and not COMMAND_START[body:byte(at - 1)] then return false end
  return not (at > 2 and body:byte(at - 1) == 40 and body:byte(at - 2) == 36)
end

-- A test's operand: a literal word (fp8, "fp8", 'fp8') or one variable
-- or script argument ("$X", "${X}", "$1", or $X where its value is one
-- word) whose value `value_of` knows; nil for anything else (a glob, an
-- expansion, ...).
local function test_operand(word, value_of)
  local inner = word:match('^"(.*)"$')
  local text = inner or word:match("^'(.*)'$") or word
  if word:byte(1) == 39 then  -- '...': nothing expanded
    return not text:find("'", 1, true) and text or nil
  end
  local name = text:match("^%$([%a_][%w_]*)$") or
               text:match("^%${([%a_][%w_]*)}$") or
               text:match("^%$(%d)$") or text:match("^%${(%d)}$")
  if name ~= nil then
    local value = value_of(name)
    if value ~= nil and inner == nil and
        (value == "" or value:find("[%s%*%?%[]")) then
      return nil  -- split, vanished or a pattern where it stands
    end
    return value
  end
  if text:find("[%$`\\\"'%*%?%[%]]") then return nil end
  return text
end

-- Integer comparisons of `test`: both operands whole numbers.
local NUMERIC_TESTS = {
  ["-eq"] = function(a, b) return a == b end,
  ["-ne"] = function(a, b) return a ~= b end,
  ["-lt"] = function(a, b) return a < b end,
  ["-le"] = function(a, b) return a <= b end,
  ["-gt"] = function(a, b) return a > b end,
  ["-ge"] = function(a, b) return a >= b end,
}
-- A test operand as a whole number (decimal, a sign, at most 15 digits:
-- exact in Lua's numbers), or nil. In `[[ ]]` (`arithmetic`) a leading
-- 0 makes it octal: not read.
local function whole_number(text, arithmetic)
  local digits = text and text:match("^[%+%-]?(%d+)$")
  if digits == nil or #digits > 15 or
      (arithmetic and digits:find("^0%d")) then
    return nil
  end
  return tonumber(text)
end

-- One test: `[ A = B ]`, `[ A == B ]`, `[ A != B ]` (or in `[[ ]]`, B a
-- word with no pattern in it), `[ -z A ]`, `[ -n A ]`, `[ A -gt B ]` and
-- the other integer comparisons of whole numbers: true or false, or nil
-- where an operand is not known or the test is another.
local function test_value(words, value_of)
  local n = #words
  local open, close = words[1], words[n]
  if not ((open == "[" and close == "]") or
          (open == "[[" and close == "]]")) then
    return nil
  end
  if n == 4 and (words[2] == "-z" or words[2] == "-n") then
    local a = test_operand(words[3], value_of)
    if a == nil then return nil end
    return (a == "") == (words[2] == "-z")
  end
  if n ~= 5 then return nil end
  local op = words[3]
  local numeric = NUMERIC_TESTS[op]
  if numeric ~= nil then
    local a = whole_number(test_operand(words[2], value_of), open == "[[")
    local b = whole_number(test_operand(words[4], value_of), open == "[[")
    if a == nil or b == nil then return nil end
    return numeric(a, b)
  end
  if op ~= "=" and op ~= "==" and op ~= "!=" then return nil end
  local a = test_operand(words[2], value_of)
  local b = test_operand(words[4], value_of)
  if a == nil or b == nil then return nil end
  return (a == b) == (op ~= "!=")
end

--[[
Whether an `if` condition holds where the script's values decide it:
tests (test_value) joined by && and || (left to right, as bash runs
them), each word blank-separated. true, false, or nil (decided when it
runs: a value not known, another command, a test the hook does not
evaluate). A few dozen words at most are looked at.
]]
local function condition_value(condition, value_of)
  local result, pending, words, count = nil, nil, {}, 0
  local function finish()
    local value = test_value(words, value_of)
    if pending == nil then
      result = value
    elseif pending == "&&" then
      if result == false or value == false then result = false
      elseif result == true then result = value
      else result = nil end
    else
      if result == true or value == true then result = true
      elseif result == false then result = value
      else result = nil end
    end
    words = {}
  end
  for word in condition:gmatch("%S+") do
    count = count + 1
    if count > 64 then return nil end
    if word == "&&" or word == "||" then
      finish()
      pending = word
    else
      words[#words + 1] = word
    end
  end
  finish()
  return result
end

-- Bytes before a `#` that starts a comment (it starts a word).
local WORD_BREAK = { [32] = true, [9] = true, [59] = true, [38] = true,
                     [124] = true, [40] = true, [41] = true, [60] = true,
                     [62] = true }
--[[
The quote a script line leaves open: nil, '"', "'" or "$'", from `quote`
(the one open where it starts), as bash reads them: a backslash quotes
the next byte outside single quotes, a `#` that starts a word outside
quotes ends the line (read from byte `from`, or 1). Each quote,
backslash or `#` costs one step of limits.script_quotes (spend).
]]
local function quote_after(line, quote, budget, from)
  local i = from or 1
  while true do
    local at
    if quote == "'" then
      at = line:find("'", i, true)
    elseif quote == "$'" then
      at = line:find("['\\]", i)
    elseif quote == '"' then
      at = line:find('["\\]', i)
    else
      at = line:find("['\"\\#]", i)
    end
    if at == nil then return quote end
    spend(budget, "script_quotes", 1, "the batch script holds more than " ..
                                      "%d quotes and backslashes")
    local c = line:byte(at)
    if c == 92 then
      i = at + 2
    elseif quote ~= nil then
      quote = nil
      i = at + 1
    elseif c == 35 then
      if at == 1 or WORD_BREAK[line:byte(at - 1)] then return nil end
      i = at + 1
    elseif c == 39 then
      quote = (at > 1 and line:byte(at - 1) == 36) and "$'" or "'"
      i = at + 1
    else
      quote = '"'
      i = at + 1
    end
  end
end

-- Commands that declare a name reference with -n.
local NAMEREF_COMMANDS = { "declare", "typeset", "local" }

-- Words that open, divide or close a compound command.
local BLOCK_KEYWORDS = { ["if"] = true, ["then"] = true, ["elif"] = true,
                         ["else"] = true, ["fi"] = true, ["case"] = true,
                         ["esac"] = true, ["for"] = true, ["while"] = true,
                         ["until"] = true, ["select"] = true, ["do"] = true,
                         ["done"] = true, ["function"] = true }
-- Those of `if` blocks.
local IF_KEYWORDS = { ["if"] = true, ["then"] = true, ["elif"] = true,
                      ["else"] = true, ["fi"] = true }
-- Whether any of `keywords` (BLOCK_KEYWORDS) is a command on the line.
local function each_keyword(body, keywords)
  for keyword in pairs(keywords or BLOCK_KEYWORDS) do
    if has_command(body, keyword, ends_word) then return true end
  end
  return false
end

local CONTROL_WORDS = { ["if"] = true, ["case"] = true, ["for"] = true,
                        ["while"] = true, ["until"] = true,
                        ["select"] = true, ["function"] = true }
local function opens_control_flow(body)
  -- A line of one command (no ; & | { ( in it, as most are) can only
  -- start one with its first word: one search. Otherwise each keyword
  -- wherever a command may start.
  -- (Plain searches: a character class costs ten times one.)
  if not (body:find(";", 1, true) or body:find("&", 1, true) or
          body:find("|", 1, true) or body:find("{", 1, true) or
          body:find("(", 1, true)) then
    return CONTROL_WORDS[body:match("^[%a_]+") or ""] == true
  end
  -- A comment is no command (`# Data cache path (for mock data)`, in
  -- Megatron-LM's own examples, once made every array after it unread),
  -- nor is a trailing one where nothing before it quotes.
  if body:byte(1) == 35 then return false end
  local hash = body:find(" #", 1, true) or body:find("\t#", 1, true)
  if hash ~= nil and not body:sub(1, hash):find("['\"\\]") then
    body = body:sub(1, hash)
  end
  if continues_after_list(body) or
      body:find("|%s*$") or body:find("^[%a_][%w_]*%s*%(%s*%)") or
      has_command(body, "{", ends_word) or
      each_occurrence(body, "(", opens_subshell_at) then
    return true
  end
  return each_keyword(body, CONTROL_WORDS)
end


-- other_assignments' three searches: NAME= and NAME+=, ${NAME:=, for NAME.
local function assignment_at(body, eq, f)
  local stop = eq - 1
  if body:byte(stop) == 43 then stop = stop - 1 end  -- NAME+=
  local name = name_before(body, stop)
  if name ~= nil then f(name) end
end
local function default_assignment_at(body, at, f)
  local name = body:match("^%${([%a_][%w_]*):?=", at)
  if name ~= nil then f(name) end
end
-- Whether the $NAME or ${NAME} at `at` names one of `names`.
local function expands_name_of(body, at, names)
  local name = body:match("^%$([%a_][%w_]*)", at) or
               body:match("^%${([%a_][%w_]*)}", at)
  return name ~= nil and names[name] ~= nil
end

-- Whether the ${NAME[@]} (or [*]) ending at `at` names one of `arrays`.
local function expands_one_of(body, at, arrays)
  local name = name_before(body, at - 1)
  return name ~= nil and arrays[name] ~= nil
end
-- NAME[i]=value and NAME[i]+=value (an element of an array set): the
-- name before a `[` on a line that holds `]=` (a `[` after a name that
-- starts a word; conservative: `X[0]=${A[1]}` counts A too).
local function element_at(body, at, f)
  local name = name_before(body, at - 1)
  if name ~= nil then f(name) end
end
local function for_loop_at(body, at, f)
  if at == 1 or ASSIGNMENT_START[body:byte(at - 1)] then
    local name = body:match("^for%s+([%a_][%w_]*)", at)
    if name ~= nil then f(name) end
  end
end

--[[
Calls `f(name)` for every variable a line may set other than as a line of
its own (NAME=value, which find_launches reads): NAME= or NAME+= after a
blank or ; & | ( ) { (an argument loop's `--mbs) MBS=$2;;`, `[ -n "$BIG" ]
&& MBS=4`, `export A=1 B=2`, `local`, `declare`, `let`), an element
NAME[i]= or NAME[i]+=, `for NAME in`, `printf -v NAME`, ${NAME:=value}
and ${NAME=value}, and on a line that runs `read`, `mapfile` /
`readarray`, `unset` (other than `unset NAME` alone, which find_launches
reads: several names, an element, -v) or arithmetic `((`, every name on
it. Plain searches and one walk back over each name: linear in the line,
which may be 256 KiB.
]]
local function other_assignments(body, f)
  each_occurrence(body, "=", assignment_at, f)
  each_occurrence(body, "${", default_assignment_at, f)
  each_occurrence(body, "for", for_loop_at, f)
  if body:find("]=", 1, true) or body:find("]+=", 1, true) then
    each_occurrence(body, "[", element_at, f)
  end
  local printf = body:find("printf", 1, true)
  if printf ~= nil then
    local printf_name = body:match("printf%s+%-v%s+([%a_][%w_]*)", printf)
    if printf_name ~= nil then f(printf_name) end
  end
  local arithmetic = body:find("((", 1, true)
  local every_word = (arithmetic ~= nil and body:byte(arithmetic - 1) ~= 36)
  if not every_word and body:find("read", 1, true) ~= nil then
    every_word = has_command(body, "read", ends_word) or
                 has_command(body, "readarray", ends_word)
  end
  if not every_word and body:find("mapfile", 1, true) ~= nil then
    every_word = has_command(body, "mapfile", ends_word)
  end
  if not every_word and body:find("unset", 1, true) ~= nil then
    every_word = has_command(body, "unset", ends_word)
  end
  if every_word then
    for word in body:gmatch("[%a_][%w_]*") do f(word) end
  end
end

-- Appends `piece` to an assignment being read over lines (`value`: an
-- array's or a quoted string's, with its parts, size and `shown`, how a
-- refusal names it), a line's worth (limits.line_bytes) at most.
local function keep_part(value, piece, limits)
  value.size = value.size + #piece
  if value.size > limits.line_bytes then
    exceed(string.format("%s is longer than %d bytes", value.shown,
                         limits.line_bytes))
  end
  value.parts[#value.parts + 1] = piece
end

--[[
Reads a bash array assignment's text (NAME=( ... ), over one line or
several) into `array`: its words with quotes and comments removed, joined
by blanks (a launch line's words are blank-separated), until the `)` that
closes it. Returns true and the position after that `)` once closed.
`array.computed` when it holds a substitution ($( ... ), $(( ... )),
<( ... ), `...`), whose words are decided at run time; the parentheses
it opens are counted, so that theirs does not close the array. Plain
searches, one pass over the text; `limits.line_bytes` bounds it.
]]
local function read_array_text(array, text, limits)
  local pos = 1
  local function keep(piece) keep_part(array, piece, limits) end
  array.depth = array.depth or 0
  while pos <= #text do
    if array.quote ~= nil then
      local close = text:find(array.quote, pos, true)
      local piece = text:sub(pos, (close or #text + 1) - 1)
      if array.quote == '"' and (piece:find("$(", 1, true) or
                                 piece:find("`", 1, true)) then
        array.computed = true
      end
      keep(piece)
      if close == nil then break end
      array.quote = nil
      pos = close + 1
    else
      local special = text:find("[\"'#()`\\]", pos)
      if special == nil then
        keep(text:sub(pos))
        break
      end
      keep(text:sub(pos, special - 1))
      local c = text:sub(special, special)
      local before = text:byte(special - 1)
      pos = special + 1
      if c == "(" then
        -- Inside an array only a substitution opens one ($(, $((, <().
        array.depth = array.depth + 1
        array.computed = true
        keep(c)
      elseif c == ")" then
        if array.depth == 0 then return true, pos end
        array.depth = array.depth - 1
        keep(c)
      elseif c == "#" then
        if special == 1 or before == 32 or before == 9 then break end
        keep(c)
      elseif c == "`" then
        array.computed = true
      elseif c == "\\" then
        keep(text:sub(pos, pos))
        pos = pos + 1
      else
        array.quote = c
      end
    end
  end
  keep(" ")
  return false
end

--[[
A launch's line as memgate reads it: the TransformerEngine switches it
runs with in front, and its pieces, where each name the script set again
after it (`launch.again`: a loop or a function may run it with the new
value) stays as written, the switches as "?", which memgate refuses by
name where they change memory; an array or the script's arguments so
changed are refused here, naming them and the line.
]]
local function launch_text(launch, limits)
  local exported, parts = launch.exported, launch.parts
  if next(launch.again) ~= nil then
    for _, sub in ipairs(launch.subs) do
      local line = launch.again[sub.name]
      if line ~= nil and sub.kind == "array" then
        unreadable(string.format(
            "the launch uses %s, an array the script changes after it " ..
            "('%s'), and a loop or a function may run the launch again " ..
            "with it: write its words into one assignment before the " ..
            "launch that nothing after changes, or check the launch " ..
            "where it runs (memgate exec)", quoted(sub.written), line))
      elseif line ~= nil and sub.kind == "positional" then
        unreadable(string.format(
            "the launch uses the batch script's arguments (%s), which the " ..
            "script moves after it ('%s'), and a loop or a function may " ..
            "run the launch again with others: write the arguments into " ..
            "the launch, or check it where it runs (memgate exec)",
            sub.written, line))
      elseif line ~= nil then
        parts[sub.index] = sub.written
      end
    end
    for _, name in ipairs(M.TE_VARIABLES) do
      if launch.again[name] ~= nil then exported[name] = "?" end
    end
  end
  local prefix = environment_words(exported)
  local size = #prefix
  for _, part in ipairs(parts) do size = size + #part end
  if size > limits.line_bytes then
    exceed(string.format("a launch line is longer than %d bytes after " ..
                         "variable expansion", limits.line_bytes))
  end
  return prefix .. table.concat(parts)
end

--[[
Every launch of Megatron-LM in a batch script, after joining backslash
continuations, with the script's variables above each substituted and the
TransformerEngine attention variables it runs with (from `environment`,
the job's, then the script's export, assignment to an exported name and
unset lines) in front. An empty list when there is none (the job is not
ours). Raises LimitExceeded past M.LIMITS (or `limits`), Unreadable for a
launch whose words are decided when it runs.

The hook reads the script as text, not as bash runs it, so a variable is
substituted only where every setting it sees agrees on one literal: lines
of their own (NAME=value, export NAME=value, a comment after), the job's
`environment` (what sbatch exports), and `known` (e.g. SLURM_NNODES,
which the request fixes). One set otherwise (under a condition or in a
loop on its line, `[ -n "$BIG" ] && MBS=4`, an argument loop's `--mbs)
MBS=$2;;`, computed, read, to two values, or before a line that runs
another file: `source`, `.`, `eval`, `export $(...)`) stays as written
(`$MBS`), and memgate refuses it by name where it changes memory.
${NAME:-default} is NAME's value where that is known, else the default.
Arrays, the style of Megatron-LM's own example scripts, are read the same
way: one NAME=( ... ) of literal words (and variables it knows) is
substituted for ${NAME[@]} and ${NAME[*]}, and NAME+=( ... ) appends to
it; one computed, set an element at a time or after another command on
its line is refused naming it where a launch uses it. `if` blocks written
a keyword a line (`if COND; then`, `elif COND; then`, `else`, `fi`),
before any other condition or loop, are followed (`frames`): an array or
a variable a branch changes holds after `fi` each value a branch may
leave it (`variants`, `svariants`), and a launch is checked with every
combination of those it uses (limits.variants; find_launches returns each
launch's `label`, the branches it took); a test the script's values
decide takes its branch alone (condition_value), and a branch no run
takes is not read. A line inside an array assignment is never a
launch of its own; a line that expands an array holding Megatron's
arguments is. Quoted strings, the style of Megatron-LM's older examples
(GPT_ARGS=" ... " over several lines), are read as one value the same
way, and a line that expands one holding Megatron's arguments is a
launch. A launch in a shell function that uses $1 or "$@" (its
caller's arguments) is refused naming it. A launch in a loop or a
function may run again with what the script sets after it (`for ...; do
torchrun ... $MBS; MBS=4; done`, a function called before and after
`MBS=4`): a name it takes that the script sets again after it, to another
value or otherwise (or sources a file, or moves the script's arguments),
stays as written (a TE switch "?"; an array or the script's arguments
refused naming the line), as one set under a condition before it.
]]
function M.find_launches(script, known, limits, environment)
  limits = limits or M.LIMITS
  if script == nil then return {} end
  if #script > limits.script_bytes then
    exceed(string.format("the batch script is larger than %d bytes",
                         limits.script_bytes))
  end
  local arrays = {}         -- NAME -> its words, where the hook reads them
  local unread_arrays = {}  -- NAME -> why it does not read them
  local launch_arrays = {}  -- NAME -> true: holds Megatron's arguments
  -- written: expand's cache of values written for a launch line, a table
  -- a quoting context (unquoted, in double quotes, an element a word).
  -- left: what is left of each limit counted as the work is done (spend).
  local left = {}
  for _, name in ipairs({ "substitutions", "array_bytes", "script_quotes",
                          "branch_work", "lines", "reread_bytes" }) do
    left[name] = limits[name]
  end
  local budget = { left = left, limits = limits,
                   arrays = arrays, unread_arrays = unread_arrays,
                   written = { {}, {}, {} } }
  -- vars: the names substituted; seen: each name's first literal value,
  -- or false where it was first set otherwise; conflicted: set otherwise
  -- or to different values, never substituted again.
  local vars, seen, conflicted, count = {}, {}, {}, 0
  -- Names substituted since the last line that runs another file
  -- (`source`, `.`, `eval`), which may set any of them again.
  local trusted, trusted_arrays = {}, {}
  -- Whether a line ran another file (`source`): an array the hook never
  -- saw set may hold words from it, not none.
  local sourced = false
  -- Arrays that the script's conditions leave with more than one value:
  -- NAME -> a list of { words = ..., label = the branches that leave
  -- it so }. A launch that uses them is checked with each combination.
  local variants = {}
  -- Scalars the same (NAME -> { words = value or false, label }: false
  -- stays as written); UNSET stands for a scalar a branch never set.
  local svariants = {}
  local UNSET = {}
  -- The `if` blocks the hook follows (opened before any other condition
  -- or loop, each keyword on a line of its own), innermost last.
  local frames = {}
  -- The first line that opens a heredoc whose end the hook cannot tell
  -- (`<<"$END"`): its lines, read as the script's, may hold `else` or
  -- `fi`; no block is followed after it (those open are abandoned).
  local heredoc = nil
  -- The first line that declares a name reference (declare -n).
  local nameref = nil
  local shifted = nil  -- the line that moved the script's arguments
  -- The first line that may open a condition or a loop, and the names
  -- set after it (budget.late: expand substitutes those only as values).
  local control_flow = nil
  local late = {}
  budget.late = late
  -- Every name seen is remembered, within bounds: those a line assigns
  -- (limits.variables), and, 16 times as many, names a line may set in a
  -- form the hook cannot follow (every word of a `read` line among them,
  -- which a heredoc of prose can hold).
  local otherwise_count = 0
  local function note(name, otherwise)
    if seen[name] == nil then
      if otherwise then
        otherwise_count = otherwise_count + 1
        if otherwise_count > 16 * limits.variables then
          exceed(string.format("more than %d names set in forms the hook " ..
                               "cannot follow (read, for, ((, ...)",
                               16 * limits.variables))
        end
      else
        count = count + 1
        if count > limits.variables then
          exceed(string.format("more than %d variable assignments",
                               limits.variables))
        end
      end
      -- The job's environment (what sbatch exports) holds a value the
      -- script's own may replace only under a condition: both are seen.
      local outside = environment_value(environment, name)
      if outside ~= nil then seen[name] = outside end
    end
  end
  local known_names = {}
  for k, v in pairs(known or {}) do
    vars[k] = tostring(v)
    seen[k] = vars[k]
    known_names[k] = true
  end
  local exported = M.te_attention_environment(environment)
  local removed = {}  -- names `unset` since the script last set them
  -- A launch after a line that may open a loop or a function (or on
  -- one) may run again: NAME -> { value -> the launches that took it },
  -- what each such launch took for NAME (a variable, an array, a TE
  -- switch: false where not exported). The script setting NAME to
  -- another value after it (any line, even below the loop: bash may come
  -- back) marks the launch's NAME set again (`launch.again`), and the
  -- launch keeps it as written, as a name set under a condition before
  -- it. One entry a launch and name (limits.launches x (substitutions +
  -- 7)); an assignment visits the values other than its own, which it
  -- removes: after one, NAME has one value left, and each costs O(1).
  local users = {}
  -- The names in `users` a sourced file may set (not TE's, not `known`).
  local forgettable = {}
  local reading = nil  -- the script line being read, for messages
  local function set_again(name, value)
    local groups = users[name]
    if groups == nil then return end
    local line = nil
    for taken, launches in pairs(groups) do
      if value == nil or taken ~= value then
        line = line or quoted(reading)
        for _, launch in ipairs(launches) do
          if launch.again[name] == nil then launch.again[name] = line end
        end
        groups[taken] = nil
      end
    end
    if next(groups) == nil then
      users[name] = nil
      forgettable[name] = nil
    end
  end
  local function use(launch, name, value)
    if launch.used[name] then return end
    launch.used[name] = true
    local groups = users[name] or {}
    users[name] = groups
    local launches = groups[value] or {}
    groups[value] = launches
    launches[#launches + 1] = launch
    if not te_variable[name] and not known_names[name] then
      forgettable[name] = true
    end
  end
  -- NAME's value where expand may substitute it: an argument of its own
  -- set after the first condition or loop (`late`) stays as written.
  budget.value_of = function(name)
    local value = vars[name]
    if value ~= nil and late[name] and value:sub(1, 1) == "-" then
      return nil
    end
    return value
  end
  -- A ${NAME:-default}'s default as bash takes it: its quotes removed
  -- (${X:-"localhost"} is localhost); other quoting unknown (nil).
  local function bash_default(default)
    local inner = default:match('^"([^"\'\\]*)"$') or
                  default:match("^'([^']*)'$")
    if inner ~= nil then return inner end
    if default:find("[\"'\\]") then return nil end
    return default
  end
  -- ${NAME:-default}: NAME's literal where the script set it to one, the
  -- job's environment's where the script never set it, else the default;
  -- nil (unknown) where the script set it otherwise.
  budget.default_of = function(name, default)
    -- ${1:-default}: the script's argument where the job's are known and
    -- nothing moved them (known_value), else the default.
    if POSITIONAL[name] then
      -- (In a function, its caller's arguments.)
      if shifted ~= nil or vars["@"] == nil or budget.in_function ~= nil then
        return nil
      end
      local given = vars[name]
      if given == nil or given == "" then return bash_default(default) end
      return given
    end
    local value = vars[name]
    -- (A scalar a block left several values: unknown but in a
    -- combination of them, each_variant's.)
    if value == nil and svariants[name] ~= nil then return nil end
    if value ~= nil and budget.value_of(name) == nil then return nil end
    if value == nil and not removed[name] then
      -- Set otherwise by the script, or no environment to look in (a hook
      -- that could not read the job's): unknown.
      if conflicted[name] or seen[name] == false or environment == nil then
        return nil
      end
      value = environment_value(environment, name)
    end
    if value == nil or value == "" then return bash_default(default) end
    return value
  end
  -- An array's state: a list of its values ({ words, label }; one where
  -- the script leaves it one), or { unread = why } where the hook does
  -- not read it. One never set holds no words (the environment holds no
  -- arrays), unless a file the script ran may have set it.
  local function state_of(name)
    if variants[name] ~= nil then return variants[name] end
    if arrays[name] ~= nil then return { { words = arrays[name] } } end
    if unread_arrays[name] ~= nil or conflicted[name] then
      return { unread = unread_arrays[name] or
                        "sets otherwise than in one NAME=( ... ) line" }
    end
    if seen[name] == nil and not sourced then return { { words = "" } } end
    return { unread = "appends to (" .. quoted(name) .. "+=( ... )) " ..
                      "without setting it first in a form the hook reads" }
  end
  local function set_state(name, state)
    if state.unread ~= nil then
      arrays[name], variants[name] = nil, nil
      unread_arrays[name] = state.unread
      conflicted[name] = true
      if seen[name] == nil then seen[name] = false end
      set_again(name, nil)
      return
    end
    unread_arrays[name], conflicted[name] = nil, nil
    seen[name] = state[1].words
    if #state == 1 then
      arrays[name], variants[name] = state[1].words, nil
      set_again(name, state[1].words)
    else
      arrays[name], variants[name] = nil, state
      set_again(name, nil)
    end
  end
  -- An array the script sets in a form the hook does not read.
  local function drop_array(name, why)
    if arrays[name] ~= nil or variants[name] ~= nil then
      arrays[name], variants[name] = nil, nil
      unread_arrays[name] = unread_arrays[name] or why
    end
  end
  -- Counts a branch's work on one array (recorded or restored).
  local function branch_step()
    spend(budget, "branch_work", 1, "more than %d arrays recorded or " ..
                                    "restored where branches of the " ..
                                    "script's conditions end")
  end
  -- What an `if` block records of a kind of variable: ARRAYS (their
  -- state: state_of) or SCALARS (a value, `false` where it stays as
  -- written, UNSET where the script never set it). `saved` is what a
  -- block restores at each branch; `view` the values it stands for.
  local ARRAYS = { part = "arrays" }
  function ARRAYS.saved(name) return state_of(name) end
  function ARRAYS.view(saved) return saved end
  function ARRAYS.restore(name, saved) set_state(name, saved) end
  local SCALARS = { part = "scalars" }
  function SCALARS.saved(name)
    return { value = vars[name], seen = seen[name],
             conflicted = conflicted[name], late = late[name],
             removed = removed[name], variants = svariants[name] }
  end
  function SCALARS.view(saved, name)
    if saved.variants ~= nil then return saved.variants end
    if saved.conflicted or saved.late then return { { words = false } } end
    if saved.value ~= nil then return { { words = saved.value } } end
    -- Never set by the script: unset, unless the job's environment may
    -- hold it (the hook reads none there but through ${NAME:-default}).
    if saved.removed or (saved.seen == nil and environment ~= nil and
                         environment_value(environment, name) == nil) then
      return { { words = UNSET } }
    end
    return { { words = false } }
  end
  function SCALARS.restore(name, saved)
    vars[name], seen[name] = saved.value, saved.seen
    conflicted[name], late[name] = saved.conflicted, saved.late
    removed[name], svariants[name] = saved.removed, saved.variants
  end
  -- Adds the values `state` gives `name` in `frame`'s branch `label` to
  -- what the block may leave it (a kind's `results`, distinct values, at
  -- most limits.variants; past them, or a branch that leaves it unread,
  -- the block leaves it unread).
  local function add_result(frame, kind, name, state, label)
    branch_step()
    local part = frame[kind.part]
    if part.unread[name] ~= nil then return end
    if state.unread ~= nil then
      part.unread[name] = state.unread
      return
    end
    local list = part.results[name]
    for _, value in ipairs(state) do
      if not list.has[value.words] then
        if #list >= limits.variants then
          part.unread[name] = string.format(
              "may hold more than %d lists of words after its conditions " ..
              "('%s')", limits.variants, frame.line)
          return
        end
        list.has[value.words] = true
        local both = value.label and (label .. ", " .. value.label) or label
        if #both > 256 then both = both:sub(1, 256) .. "..." end
        list[#list + 1] = { words = value.words, label = both }
      end
    end
  end
  -- Before a variable changes inside `if` blocks: each block that has not
  -- yet seen it change keeps what it held where the block opened (the
  -- branches before this one left it so).
  local function save_in_frames(name, kind)
    kind = kind or ARRAYS
    for _, frame in ipairs(frames) do
      local part = frame[kind.part]
      if part.saved[name] == nil then
        local saved = kind.saved(name)
        part.saved[name] = saved
        part.names[#part.names + 1] = name
        part.results[name] = { has = {} }
        if frame.first_label ~= nil then
          add_result(frame, kind, name, kind.view(saved, name),
                     frame.first_label)
        end
      end
    end
  end
  -- A branch of `frame` ends (at elif, else or fi): what it leaves each
  -- variable the block changed is recorded, and the variable restored to
  -- what it held where the block opened, for the next branch.
  local function end_branch(frame)
    for _, kind in ipairs({ ARRAYS, SCALARS }) do
      local part = frame[kind.part]
      for _, name in ipairs(part.names) do
        if not frame.dead then
          add_result(frame, kind, name, kind.view(kind.saved(name), name),
                     frame.branch)
        end
        branch_step()
        kind.restore(name, part.saved[name])
      end
    end
    frame.fresh = {}
    if not frame.dead then
      frame.first_label = frame.first_label or frame.branch
    end
  end
  -- A scalar's values after a block: one (a value, or as written), or
  -- several (svariants). UNSET, a branch that leaves it never set, is a
  -- value missing where the launch names it: dropped beside values (the
  -- launch stops at once without its value, as a value set under a
  -- condition always was read), as written beside an argument of its own
  -- (`SP=--sequence-parallel`: the job would run without it).
  local function merge_scalar(name, list, unread)
    local values, unset, own = {}, false, false
    for _, value in ipairs(list) do
      if value.words == UNSET then
        unset = true
      else
        values[#values + 1] = value
        if value.words == false or value.words:sub(1, 1) == "-" then
          own = true
        end
      end
    end
    if unset and (own or values[1] == nil) then
      values[#values + 1] = { words = false }
      unset = false
    end
    if unread ~= nil then values = { { words = false } } end
    -- (A value a branch may leave unset decides no test: late.)
    svariants[name], removed[name] = nil, nil
    late[name] = unset or nil
    if #values == 1 then
      local value = values[1].words
      vars[name] = value or nil
      conflicted[name] = value == false or nil
      if value == false and seen[name] == nil then seen[name] = false end
      if value ~= false then seen[name] = value end
    else
      vars[name], conflicted[name] = nil, nil
      svariants[name] = values
      seen[name] = seen[name] or false
    end
    trusted[#trusted + 1] = name
  end
  -- At fi: each variable the block changed holds any value a branch left
  -- it (and, without an else, the one it held before: no branch may run).
  local function close_frame(frame)
    end_branch(frame)
    for _, kind in ipairs({ ARRAYS, SCALARS }) do
      local part = frame[kind.part]
      for _, name in ipairs(part.names) do
        if not frame.has_else and not frame.taken then
          add_result(frame, kind, name, kind.view(part.saved[name], name),
                     "no branch of '" .. frame.line .. "'")
        end
        local list = part.results[name]
        list.has = nil
        if kind == SCALARS then
          if list[1] == nil then
            kind.restore(name, part.saved[name])
          else
            merge_scalar(name, list, part.unread[name])
          end
        elseif part.unread[name] ~= nil then
          set_state(name, { unread = part.unread[name] })
        else
          -- (Some branch always runs or none may: never empty; as it
          -- was, should a branch ever record nothing.)
          set_state(name, list[1] ~= nil and list or part.saved[name])
        end
      end
    end
  end
  -- A construct the hook does not follow inside open `if` blocks
  -- (control_flow, `line`): the variables they changed are left unread
  -- (as written), and the blocks are no longer followed.
  local function abandon_frames(line)
    for _, frame in ipairs(frames) do
      for _, name in ipairs(frame.arrays.names) do
        set_state(name, { unread = string.format(
            "sets under a condition ('%s') that holds a construct the " ..
            "hook does not follow ('%s')", frame.line, line) })
      end
      for _, name in ipairs(frame.scalars.names) do
        vars[name], svariants[name], conflicted[name] = nil, nil, true
        if seen[name] == nil then seen[name] = false end
      end
    end
    frames = {}
  end
  -- The arrays and scalars with several values (`variants`,
  -- `svariants`) that `text` expands: a list of { name, values, into
  -- (the table a combination is put in) }, and how many combinations of
  -- their values there are (counting stops past limits.variants).
  local function variant_names(text)
    local picks, listed, count = {}, {}, 1
    local function pick(name, values, into)
      if name ~= nil and values ~= nil and not listed[values] then
        listed[values] = true
        picks[#picks + 1] = { name = name, values = values, into = into }
        count = count * #values
      end
      return count > limits.variants
    end
    if next(variants) ~= nil then
      local function collect(body, at)
        local name = name_before(body, at - 1)
        return pick(name, name and variants[name], arrays)
      end
      local _ = each_occurrence(text, "[@]}", collect) or
                each_occurrence(text, "[*]}", collect)
    end
    if next(svariants) ~= nil then
      -- $NAME, ${NAME}, ${NAME:-default}: a scalar's.
      each_occurrence(text, "$", function(body, at)
        local name = body:match("^%$([%a_][%w_]*)", at) or
                     body:match("^%${([%a_][%w_]*)", at)
        return pick(name, name and svariants[name], vars)
      end)
    end
    return picks, count
  end
  -- The names of `picks`, for a message.
  local function pick_names(picks)
    local names = {}
    for i, pick in ipairs(picks) do names[i] = pick.name end
    return table.concat(names, ", ")
  end
  -- Calls fn(label) once for each combination of the values of `picks`
  -- (`count` of them), with `arrays` and `vars` holding that combination
  -- (a scalar's `false` leaves it as written); label: the branches that
  -- chose it (nil where none did).
  local function each_variant(picks, count, fn)
    local choice = {}
    for i = 1, #picks do choice[i] = 1 end
    for _ = 1, count do
      local labels, listed = {}, {}
      for i, pick in ipairs(picks) do
        local value = pick.values[choice[i]]
        pick.into[pick.name] = value.words or nil
        if value.label ~= nil and not listed[value.label] then
          listed[value.label] = true
          labels[#labels + 1] = value.label
        end
      end
      local label = labels[1] and table.concat(labels, "; ") or nil
      if label ~= nil and #label > 512 then
        label = label:sub(1, 512) .. "..."
      end
      local ok, err = pcall(fn, label)
      for _, pick in ipairs(picks) do pick.into[pick.name] = nil end
      if not ok then error(err, 0) end
      for i = 1, #picks do
        choice[i] = choice[i] + 1
        if choice[i] <= #picks[i].values then break end
        choice[i] = 1
      end
    end
  end
  -- `value` a literal, or nil for one the hook cannot evaluate.
  local function assign(name, value)
    -- ARRAY=value sets its first element.
    drop_array(name, "sets " .. quoted(name) .. "=value, its first element")
    -- Inside `if` blocks: the blocks keep what it held; its first
    -- assignment in a branch sets it there whatever it held before (the
    -- branch runs it), a second one as at the top.
    local frame = frames[#frames]
    if frame ~= nil and not te_variable[name] and not known_names[name] then
      save_in_frames(name, SCALARS)
      if not frame.fresh[name] then
        frame.fresh[name] = true
        note(name)
        set_again(name, value)
        svariants[name], removed[name], late[name] = nil, nil, nil
        vars[name], conflicted[name] = value, value == nil or nil
        seen[name] = value or false
        if value ~= nil then trusted[#trusted + 1] = name end
        return
      end
    end
    svariants[name] = nil
    removed[name] = nil
    note(name)
    set_again(name, value)
    if value ~= nil and not conflicted[name] and
        (seen[name] == nil or seen[name] == value) then
      seen[name] = value
      vars[name] = value
      trusted[#trusted + 1] = name
      -- After the script's first condition or loop, perhaps under it: a
      -- value (after an argument that takes it) that is not set leaves
      -- Megatron's parser short of one, and the job stops at once; an
      -- argument of its own (`SP=--sequence-parallel`) would be missing
      -- and the job run without it. expand keeps the second as written.
      late[name] = (control_flow ~= nil or frames[1] ~= nil) or nil
    else
      if seen[name] ~= nil then conflicted[name] = true end
      if seen[name] == nil then seen[name] = false end
      vars[name] = nil
    end
  end
  -- A name set in a form the hook cannot follow (other_assignments).
  local function set_otherwise(name)
    set_again(name, nil)
    if te_variable[name] then
      vars[name] = "?"
      exported[name] = "?"
      return
    end
    -- Already unread (conflicted: no array read under this name either;
    -- a branch that restores one clears it). A line of `read` sets every
    -- word on it: this is the path most take.
    if conflicted[name] then return end
    note(name, true)
    if seen[name] == nil then seen[name] = false end
    conflicted[name] = true
    vars[name], svariants[name] = nil, nil
    if arrays[name] ~= nil or variants[name] ~= nil or launch_arrays[name] then
      arrays[name], variants[name] = nil, nil
      unread_arrays[name] = unread_arrays[name] or
          "sets otherwise than in one NAME=( ... ) line"
    end
  end
  -- An array assignment read (NAME=( ... ) or NAME+=( ... )): its words
  -- as bash expands them where it stands, once for each combination of
  -- the values of arrays with several it uses; an append adds them to
  -- each value it held. Inside `if` blocks the hook follows, the blocks
  -- keep what it held before (save_in_frames).
  local function finish_array(array)
    local name = array.name
    local text = table.concat(array.parts)
    if looks_like_launch(text) then launch_arrays[name] = true end
    note(name)
    vars[name] = nil  -- $NAME of an array is its first word: not read
    if control_flow ~= nil then array.late = true end
    save_in_frames(name)
    local why = array.computed and "computes ($( ... ))" or
                array.inline and "sets after another command on its line" or
                array.late and string.format(
                    "sets after its first condition or loop ('%s'), " ..
                    "perhaps under it", control_flow) or
                conflicted[name] and "assigns more than once" or nil
    local empty = false
    if why == nil and array.append then
      local current = state_of(name)
      if current.unread ~= nil then
        why = current.unread
      else
        if arrays[name] == nil and variants[name] == nil then
          arrays[name], empty = "", true
        end
        text = "${" .. name .. "[@]} " .. text
      end
    end
    local values = {}
    if why == nil then
      local names, count = variant_names(text)
      if count > limits.variants then
        why = string.format("builds from arrays whose values after the " ..
                            "script's conditions combine in more than %d " ..
                            "ways", limits.variants)
      else
        local ok, err = pcall(each_variant, names, count, function(label)
          local words = expand(text, vars, budget, shifted, true)
          -- (Every value made counts, the same words twice too: the
          -- work is bounded, not only what is kept.)
          spend(budget, "array_bytes", #words,
                "the script's arrays hold more than %d bytes of words " ..
                "(each assignment's counted: an array built from others " ..
                "copies them)")
          values[#values + 1] = { words = words, label = label }
        end)
        if not ok then
          if getmetatable(err) ~= Unreadable then error(err, 0) end
          -- The script's arguments after a line that moved them, or an
          -- array the hook does not read.
          why = "builds from words decided when it runs (its arguments " ..
                "after a line moves them, or an array it does not read)"
        end
      end
    end
    if empty then arrays[name] = nil end
    if why ~= nil then
      set_state(name, { unread = unread_arrays[name] or why })
      return
    end
    -- Distinct values only (two combinations may give the same words).
    local state, has = {}, {}
    for _, value in ipairs(values) do
      if not has[value.words] then
        has[value.words] = true
        state[#state + 1] = value
      end
    end
    set_state(name, state)
    trusted_arrays[#trusted_arrays + 1] = name
  end
  -- A line that runs another file (`source config.sh`, `. env.sh`,
  -- `eval "$SETUP"`): what the script set before it may be set again
  -- there, unseen, so none of it is substituted from here on.
  local function runs_another_file(body)
    if body:find("^%.%s") ~= nil or has_command(body, "source", ends_word) or
        has_command(body, "eval", ends_word) then
      return true
    end
    -- `.` as a command after an operator or a keyword on the line (`[ -f
    -- env.sh ] && . ./env.sh`), not a word `.` (`find . -name x`).
    if (body:find(". ", 1, true) or body:find(".\t", 1, true)) and
        (body:find("[;&|({]%s*%.%s") or body:find("%f[%a]then%s+%.%s") or
         body:find("%f[%a]do%s+%.%s") or body:find("%f[%a]else%s+%.%s")) then
      return true
    end
    -- `export $(cat .env | xargs)`, `declare "$line"`: names the shell
    -- computes (a $ or ` before any =).
    local declares = false
    for _, command in ipairs(DECLARING_COMMANDS) do
      declares = declares or has_command(body, command, ends_word)
    end
    if not declares then return false end
    local dollar = body:find("[%$`]")
    if dollar == nil then return false end
    local eq = body:find("=", 1, true)
    return eq == nil or dollar < eq
  end
  -- A line that moves the script's arguments (`shift`, `set --`): every
  -- launch after it refuses them, and one before it that may run again
  -- takes others then.
  local function moved_arguments(body)
    if shifted == nil then
      shifted = without_trailing_blanks(body:sub(1, 65))
      if #shifted > 64 then shifted = shifted:sub(1, 64) .. "..." end
    end
    for name in pairs(POSITIONAL) do set_again(name, nil) end
  end
  local function forget_trusted(line)
    for _, name in ipairs(trusted) do
      if (vars[name] ~= nil or svariants[name] ~= nil) and
          not known_names[name] then
        vars[name], svariants[name] = nil, nil
        seen[name] = false
      end
    end
    for _, name in ipairs(trusted_arrays) do
      if arrays[name] ~= nil or variants[name] ~= nil then
        arrays[name], variants[name] = nil, nil
        seen[name] = false
        unread_arrays[name] = string.format(
            "sets before '%s', which may set it again", line)
      end
    end
    trusted, trusted_arrays = {}, {}
    sourced = true
    -- And what a launch before it took, where the launch may run again.
    for name in pairs(forgettable) do set_again(name, nil) end
  end
  -- Whether a line expands an array that holds Megatron's arguments.
  -- Variables whose value (a quoted string) holds Megatron's arguments.
  local launch_vars = {}
  local function uses_launch_array(body)
    return each_occurrence(body, "[@]}", expands_one_of, launch_arrays) or
           each_occurrence(body, "[*]}", expands_one_of, launch_arrays) or
           -- ($GPT_ARGS on a line that assigns, `X="$GPT_ARGS --y"`, is
           -- no launch: one assigns nothing, or runs pretrain_gpt.py.)
           (next(launch_vars) ~= nil and
            (not body:find("=", 1, true) or
             body:find("pretrain_gpt.py", 1, true) ~= nil) and
            each_occurrence(body, "$", expands_name_of, launch_vars))
  end
  -- A quoted string's words (NAME="--num-layers 32 ...", on one line or
  -- several, the classic Megatron-LM examples' GPT_ARGS): a literal is
  -- assigned as one value; one holding an expansion is computed.
  local function assign_words(name, text)
    if looks_like_launch(text) then launch_vars[name] = true end
    if text:find("[%$`]") then
      assign(name, nil)
    else
      local normal = text:gsub("%s+", " "):gsub("^ ", "")
      assign(name, without_trailing_blanks(normal))
    end
  end
  local launches = {}
  local open_array = nil  -- the array assignment being read
  local open_string = nil  -- the quoted string assignment being read
  -- A variable's value where every run has it: set to one literal before
  -- any condition or loop (or by the request); nil otherwise.
  local function known_value(name)
    -- The script's arguments where the job's are known and nothing moved
    -- them (one not given is empty).
    if POSITIONAL[name] then
      if shifted ~= nil or vars["@"] == nil then return nil end
      return vars[name] or ""
    end
    -- (TE's switches hold what memgate reads, "?" where unknown.)
    if late[name] or conflicted[name] or te_variable[name] then
      return nil
    end
    return vars[name]
  end
  -- A line of an `if` block the hook follows: `if COND; then`, `elif
  -- COND; then`, `else` or `fi` alone on its line (a comment after it),
  -- before any other condition or loop and outside functions, where COND
  -- sets nothing, runs no other file, moves no argument and holds no
  -- launch or other keyword. Returns true where it followed the line.
  local function follows_condition(body)
    -- (Every line comes here: a first byte other than i, e or f is none.)
    local first = body:byte(1)
    if first ~= 105 and first ~= 101 and first ~= 102 then return false end
    local word = body:match("^%a+")
    if BLOCK_KEYWORDS[word or ""] == nil or control_flow ~= nil or
        budget.in_function ~= nil or heredoc ~= nil then
      return false
    end
    local frame = frames[#frames]
    if word == "fi" or word == "else" then
      if frame == nil or not (body:find("^%a+%s*$") or
                              body:find("^%a+%s+#")) then
        return false
      end
      if word == "fi" then
        close_frame(frame)
        frames[#frames] = nil
      else
        end_branch(frame)
        frame.branch = "the else of '" .. frame.line .. "'"
        frame.dead = frame.parent_dead or frame.taken
        frame.has_else = true
      end
      return true
    end
    if word ~= "if" and word ~= "elif" then return false end
    local condition = body:match("^%a+%s+(.-);%s*then%s*$") or
                      body:match("^%a+%s+(.-);%s*then%s+#")
    if condition == nil or (word == "elif" and frame == nil) or
        (word == "if" and #frames >= limits.condition_depth) or
        looks_like_launch(body) or condition:find("<<", 1, true) or
        runs_another_file(condition) or moves_arguments(condition) then
      return false
    end
    if each_keyword(condition) then return false end
    local sets = false
    other_assignments(condition, function() sets = true end)
    if sets then return false end
    -- Decided by the script's values (a branch no run can take records
    -- nothing; one every run takes leaves no other): an elif's as the
    -- branch before it found them, not as it left them.
    if word == "elif" then end_branch(frame) end
    local holds = condition_value(condition, known_value)
    if word == "if" then
      -- (Inside a branch no run takes, every branch is one.)
      frame = { line = quoted(body), fresh = {},
                arrays = { names = {}, saved = {}, results = {}, unread = {} },
                scalars = { names = {}, saved = {}, results = {},
                            unread = {} },
                parent_dead = frame ~= nil and frame.dead }
      frames[#frames + 1] = frame
    end
    frame.branch = "the branch of '" .. quoted(body) .. "'"
    frame.dead = frame.parent_dead or frame.taken or holds == false
    frame.taken = frame.taken or holds == true
    return true
  end
  -- One line, or what follows an array's `)` on it (`ARGS=(...);
  -- torchrun ...`): returns that rest, to be read as a line of its own.
  local function read_line(body)
    -- A function's body (`run() {` or `function run` to a line that
    -- starts with `}`): its $1 and "$@" are its caller's arguments.
    -- One on a line of its own (`run() { torchrun ... "$1"; }`) ends
    -- with it.
    local function_line = false
    if budget.in_function == nil then
      if (body:find("(", 1, true) and body:find("^[%a_][%w_]*%s*%(%s*%)")) or
          body:find("^function%s") then
        budget.in_function = quoted(body)
        function_line = without_trailing_blanks(body):sub(-1) == "}"
      end
    elseif body:byte(1) == 125 then  -- }
      budget.in_function = nil
    end
    -- A line inside a quoted string that spans lines (NAME=" ... "): its
    -- words, never a launch.
    if open_string ~= nil then
      local close = body:find('"', 1, true)
      keep_part(open_string, body:sub(1, (close or #body + 1) - 1) .. " ",
                limits)
      if close == nil then return nil end
      assign_words(open_string.name, table.concat(open_string.parts))
      open_string = nil
      local rest = body:sub(close + 1):match("^[%s;&|]*(.*)$")
      return rest ~= "" and rest or nil
    end
    if open_array == nil and follows_condition(body) then return nil end
    -- A branch no run takes (its test decided false by the script's own
    -- values, or after the branch every run takes): its lines never run
    -- and are not read (an assignment there once made the variable two
    -- values, refused), loops and all, but for a keyword of `if` blocks
    -- on one in another form (`else echo`, `fi; x`, `then`), which may
    -- divide or close a block: the hook stops following them there.
    local dead = frames[#frames]
    if dead ~= nil and dead.dead and open_array == nil then
      if body:byte(1) == 35 or not each_keyword(body, IF_KEYWORDS) then
        return nil
      end
      control_flow = quoted(body)
      abandon_frames(control_flow)
    end
    -- Every form below that assigns holds '=': a line without one (most
    -- of a long script) skips them.
    local assigns = body:find("=", 1, true) ~= nil
    if open_array == nil and assigns then
      local name, text = body:match('^([%a_][%w_]*)="([^"]*)$')
      if name ~= nil then
        open_string = { name = name, parts = { text .. " " }, size = #text,
                        shown = string.format('a quoted assignment (%s=" ' ..
                                              '... ")', quoted(name)) }
        return nil
      end
    end
    local array_name, plus, array_text
    if open_array == nil and assigns then
      local declared = body:match("^declare%s+%-%a+%s+(.*)$") or
                       body:match("^local%s+%-%a+%s+(.*)$") or
                       body:match("^typeset%s+%-%a+%s+(.*)$") or body
      array_name, plus, array_text =
          declared:match("^([%a_][%w_]*)(%+?)=%((.*)$")
    end
    -- An array assigned after another command on its line (`[ -n "$X" ]
    -- && ARGS=(`, `then ARGS+=(`): read as one (its lines are its
    -- words), but set under a condition.
    local inline_array = false
    local inside_array = open_array ~= nil or array_name ~= nil
    if open_array == nil and array_name == nil and assigns then
      local pos = 1
      while true do
        local at = body:find("=(", pos, true)
        if at == nil then break end
        local stop = at - 1
        if body:byte(stop) == 43 then stop = stop - 1 end  -- NAME+=(
        local found = name_before(body, stop)
        if found ~= nil then
          other_assignments(body:sub(1, stop - #found), set_otherwise)
          array_name, plus, array_text = found, "", body:sub(at + 2)
          inline_array = true
          break
        end
        pos = at + 2
      end
    end
    -- NAME=value alone on its line, or before a comment.
    local export, name, value
    if assigns then
      export, name, value =
          body:match("^(export%s+)([%a_][%w_]*)=(%S*)%s*$")
      if name == nil then
        export, name, value =
            body:match("^(export%s+)([%a_][%w_]*)=(%S*)%s+#")
      end
      if name == nil then
        name, value = body:match("^([%a_][%w_]*)=(%S*)%s*$")
      end
      if name == nil then
        name, value = body:match("^([%a_][%w_]*)=(%S*)%s+#")
      end
    end
    -- NAME="words and blanks" on one line.
    local words = nil
    if assigns and name == nil then
      words, value = body:match('^([%a_][%w_]*)="([^"]*)"%s*$')
      if words == nil then
        words, value = body:match('^([%a_][%w_]*)="([^"]*)"%s+#')
      end
    end
    local bare = body:match("^export%s+([%a_][%w_]*)%s*$")
    local unset = body:match("^unset%s+([%a_][%w_]*)%s*$")
    local te_export, te_name, te_rest
    if open_array == nil and array_name == nil and assigns then
      te_export, te_name, te_rest = te_assignment(body)
    end
    -- What follows an array's `)` on its line (`ARGS=(...); torchrun
    -- ...`), read as a line of its own.
    local after_array = nil
    if open_array ~= nil then
      -- A line inside an array assignment: its words, never a launch.
      local closed, rest = read_array_text(open_array, body, limits)
      if closed then
        finish_array(open_array)
        open_array = nil
        after_array = body:sub(rest)
      end
    elseif array_name ~= nil then
      local array = { name = array_name, append = plus == "+", parts = {},
                      size = 0, inline = inline_array,
                      shown = string.format("an array assignment (%s=( " ..
                                            "... ))", quoted(array_name)) }
      local closed, rest = read_array_text(array, array_text, limits)
      if closed then
        finish_array(array)
        after_array = array_text:sub(rest)
      else
        open_array = array
      end
    elseif te_name ~= nil then  -- one of TE_VARIABLES: not counted
      local resolved = te_resolve(te_rest, vars, budget.default_of)
      -- Set twice to different values (the job's environment's counts):
      -- which holds is decided at run time (a condition may choose), and
      -- memgate refuses "?" by name.
      if seen[te_name] == nil then
        local outside = environment_value(environment, te_name)
        if outside ~= nil then seen[te_name] = te_value(outside) end
      end
      if seen[te_name] ~= nil and seen[te_name] ~= resolved then
        resolved = "?"
      end
      seen[te_name] = resolved
      vars[te_name] = resolved
      if te_export or exported[te_name] ~= nil then
        exported[te_name] = vars[te_name]
      end
      set_again(te_name, exported[te_name] or false)
    elseif words ~= nil then
      assign_words(words, value)
    elseif name ~= nil then
      -- MBS=4; and MBS="4" set 4; MBS=${MBS:-4} sets the environment's
      -- MBS or 4.
      value = value:gsub(";$", ""):gsub("^['\"]", ""):gsub("['\"]$", "")
      local inner, default = value:match("^%${([%a_][%w_]*):?%-([^}$`]*)}$")
      if inner == nil then
        inner, default = value:match("^%${(%d):?%-([^}$`]*)}$")
      end
      if inner ~= nil then
        assign(name, budget.default_of(inner, default))
      else
        assign(name, (not value:find("[%$`(]")) and value or nil)
      end
    elseif bare ~= nil then
      if te_variable[bare] and vars[bare] ~= nil then
        exported[bare] = te_value(vars[bare])
        set_again(bare, exported[bare])
      end
    elseif unset ~= nil then
      set_again(unset, te_variable[unset] and false or nil)
      vars[unset], svariants[unset] = nil, nil
      removed[unset] = true
      exported[unset] = nil
      if arrays[unset] ~= nil or variants[unset] ~= nil then
        arrays[unset], variants[unset] = nil, nil
        unread_arrays[unset] = "unsets"
      end
    elseif looks_like_launch(body) or uses_launch_array(body) then
      -- Its own line may set what it uses first (`for MBS in 1 4; do
      -- torchrun ... $MBS; done`); its TransformerEngine words in front
      -- are its own, which memgate reads.
      other_assignments(body, function(set)
        if not te_variable[set] then set_otherwise(set) end
      end)
      -- Once for each combination of the values the script's conditions
      -- leave the arrays it uses (each a launch of its own for memgate).
      local names, count = variant_names(body)
      if count > limits.variants then
        unreadable(string.format(
            "the launch uses arrays or variables (%s) whose values after " ..
            "the script's " ..
            "conditions combine in more than %d ways, each a launch to " ..
            "check: set them without conditions, or check the launch " ..
            "where it runs (memgate exec)",
            quoted(pick_names(names)), limits.variants))
      end
      each_variant(names, count, function(label)
        if #launches >= limits.launches then
          exceed(string.format("more than %d Megatron launches (each " ..
                               "combination of arrays its conditions " ..
                               "choose counted)", limits.launches))
        end
        local launch = { exported = {}, again = {}, used = {}, subs = {},
                         label = label }
        for _, name in ipairs(M.TE_VARIABLES) do
          launch.exported[name] = exported[name]
        end
        -- In a loop or a function (a line that may open one came before,
        -- or this one opens it), the launch may run again: what it takes
        -- is remembered (users), and checked against what comes after.
        if control_flow ~= nil or opens_control_flow(body) then
          for _, name in ipairs(M.TE_VARIABLES) do
            use(launch, name, exported[name] or false)
          end
          budget.record = function(name, kind, index, written, value)
            launch.subs[#launch.subs + 1] =
                { name = name, kind = kind, index = index, written = written }
            use(launch, name, value)
          end
        end
        local _, parts = expand(body, vars, budget, shifted)
        budget.record = nil
        launch.parts = parts
        launches[#launches + 1] = launch
      end)
      -- `while ...; do torchrun ... $1; shift; done`: moved after it.
      if moves_arguments(body) then moved_arguments(body) end
    else
      if (shifted == nil or next(users) ~= nil) and
          moves_arguments(body) then
        moved_arguments(body)
      end
      if body:sub(1, 1) ~= "#" then
        other_assignments(body, set_otherwise)
        if runs_another_file(body) then
          forget_trusted(quoted(body))
        end
        -- `declare -n REF=ARGS`: what is set through REF (REF+=(...),
        -- REF=4) changes ARGS, which the hook does not follow.
        -- (Its -n among the command's first two flags: `[ -n "$X" ]`
        -- beside a `local` is a test.)
        if nameref == nil and body:find("-", 1, true) then
          for _, command in ipairs(NAMEREF_COMMANDS) do
            if nameref == nil and body:find(command, 1, true) and
                (body:find("%f[%a]" .. command .. "%s+%-%a*n") or
                 body:find("%f[%a]" .. command .. "%s+%-%a+%s+%-%a*n")) and
                has_command(body, command, ends_word) then
              nameref = quoted(body)
            end
          end
        end
      end
    end
    if function_line then budget.in_function = nil end
    -- (Inside `if` blocks the hook follows, a keyword of one on a line
    -- it did not follow as one, `else echo`, `fi; torchrun`, is too.)
    if control_flow == nil and not inside_array and
        (opens_control_flow(body) or
         (frames[1] ~= nil and body:byte(1) ~= 35 and
          (heredoc ~= nil or each_keyword(body)))) then
      control_flow = quoted(body)
      if frames[1] ~= nil then abandon_frames(control_flow) end
    end
    if after_array ~= nil then
      after_array = after_array:match("^[%s;&|]*(.*)$")
      if after_array ~= "" then return after_array end
    end
    return nil
  end
  -- A heredoc's lines (`cat > run.sh <<EOF` to the line `EOF`) are text,
  -- not the script's commands: what they look like setting is set
  -- otherwise for the hook (it may be a `<<` that opens none), and a
  -- launch among them is checked as the script stands there (a script
  -- it writes and runs). The delimiters a line opens, in order.
  local heredocs = {}
  -- The quote a string spanning lines holds open (quote_after), or nil.
  local string_open = nil
  local function heredoc_line(body)
    other_assignments(body, set_otherwise)
    if (looks_like_launch(body) or uses_launch_array(body)) and
        not body:find("^[%a_][%w_]*%+?=") then
      read_line(body)
    end
  end
  local function open_heredocs(line)
    local pos = 1
    while true do
      local at = line:find("<<", pos, true)
      if at == nil then return end
      pos = at + 2
      if line:byte(at - 1) ~= 60 and line:byte(at + 2) ~= 60 then
        local dash, _, delimiter =
            line:match("^<<(%-?)%s*(['\"]?)\\?([%w_%.%-/]+)%2", at)
        if delimiter ~= nil then
          if #heredocs >= 16 then
            exceed("a line opens more than 16 heredocs")
          end
          heredocs[#heredocs + 1] = { delimiter = delimiter,
                                      tabs = dash == "-" }
        else
          -- One whose end the hook cannot tell (<<"$END"): its lines
          -- are read as the script's, and may hold else or fi.
          heredoc = heredoc or quoted(line)
        end
      end
    end
  end
  local joined = script:gsub("\\\r?\n", " ")
  -- Each line (a heredoc's, a string's, a command after an array on its
  -- line) costs fixed work: limits.lines of them.
  local function count_line()
    spend(budget, "lines", 1, "the batch script has more than %d lines " ..
                              "(and commands after an array on its line)")
  end
  for line in joined:gmatch("[^\n]+") do
    local first = line:find("%S")
    local pending = (first == 1 or first == nil) and line or line:sub(first)
    local again = false
    local body_of = heredocs[1]
    if string_open ~= nil then
      -- Inside a string that spans lines (`echo "usage:` ... `"`): text,
      -- as a heredoc's (the line that closes it too).
      count_line()
      reading = pending
      heredoc_line(pending)
      string_open = quote_after(line, string_open, budget)
      pending = nil
    elseif body_of ~= nil then
      count_line()
      local text = body_of.tabs and line:match("^\t*(.*)$") or line
      if text == body_of.delimiter or text == body_of.delimiter .. "\r" then
        table.remove(heredocs, 1)
      else
        reading = pending
        heredoc_line(pending)
      end
      pending = nil
    elseif open_array == nil and open_string == nil and
        line:find("<<", 1, true) and pending:byte(1) ~= 35 then
      open_heredocs(line)
    end
    -- (A line an array or a quoted assignment spanning lines reads is
    -- theirs: they follow its quotes.)
    local theirs = open_array ~= nil or open_string ~= nil
    local code = pending ~= nil
    while pending ~= nil do
      count_line()
      if again then
        spend(budget, "reread_bytes", #pending, "more than %d bytes of " ..
              "commands after arrays or quoted strings on their lines")
      end
      reading = pending
      pending = read_line(pending)
      again = true
    end
    if code and not theirs and open_array == nil and open_string == nil then
      -- (Plain searches first: every line comes here, most with none.)
      if line:find("'", 1, true) or line:find('"', 1, true) or
          line:find("\\", 1, true) then
        string_open = quote_after(line, nil, budget)
      end
    end
  end
  if nameref ~= nil and launches[1] ~= nil then
    unreadable(string.format(
        "the script declares a name reference ('%s'): what it sets through " ..
        "it changes another variable, which the hook does not follow; set " ..
        "the launch's arguments directly, or check the launch where it " ..
        "runs (memgate exec)", nameref))
  end
  local texts, labels = {}, {}
  for i, launch in ipairs(launches) do
    texts[i] = launch_text(launch, limits)
    labels[i] = launch.label
  end
  return texts, labels
end

-- The first launch, or nil (kept for callers of the one-launch API).
function M.find_launch(script, known)
  return M.find_launches(script, known)[1]
end

-- Whitespace-separated words of a launch line, one quote removed at
-- each end (a rough split, kept for callers of M.check: check_all takes
-- a launch's line as it is, which memgate splits as bash does).
function M.words(line)
  local out = {}
  for word in line:gmatch("%S+") do
    out[#out + 1] = word:gsub("^['\"]", ""):gsub("['\"]$", "")
  end
  return out
end

local function quote(word)
  return "'" .. tostring(word):gsub("'", "'\\''") .. "'"
end

-- GPUs from a TRES string like "gres:gpu:8", "gres/gpu:a100:8",
-- "gres/gpu:1g.10gb:8,gres/nic:1": the count ending its GPU item.
function M.gpus_in_tres(tres)
  if tres == nil then return nil end
  for item in tostring(tres):gmatch("[^,]+") do
    if item:find("gpu", 1, true) then
      local count = item:match("[:=](%d+)%s*$")
      if count then return tonumber(count) end
    end
  end
  return nil
end

-- The GPU type a TRES string names ("gres/gpu:a100_80g:8", "gres:gpu:
-- 3g.40gb:1" -> the type; "gres/gpu:8" -> nil).
function M.gpu_type_in_tres(tres)
  if tres == nil then return nil end
  for item in tostring(tres):gmatch("[^,]+") do
    local gpu_type = item:match("gpu:([^:,]+):%d+%s*$")
    if gpu_type and not gpu_type:match("^%d+$") then return gpu_type end
  end
  return nil
end

--[[
The GPU a job runs on: its GPU type's (a typed --gres or --gpus, looked up
in site.gpu_by_gres_type: a catalog name, or { gpu = NAME, memory_gib = X }
for a slice of one), else its partition's (site.gpu_by_partition), else
site.default_gpu. Returns the catalog name and the memory in GiB where the
site gives one; or nil and why, for a MIG slice (a type such as 1g.10gb or
nvidia_a100_3g.40gb) the site has not mapped: a whole GPU's memory would
admit what a slice cannot hold. `...` are the job's TRES strings.
]]
function M.gpu_for_job(site, partition, ...)
  local gpu_type
  for i = 1, select("#", ...) do
    gpu_type = gpu_type or M.gpu_type_in_tres(select(i, ...))
  end
  local mapped = gpu_type and (site.gpu_by_gres_type or {})[gpu_type]
  if type(mapped) == "string" then return mapped end
  if type(mapped) == "table" then
    return mapped.gpu or site.default_gpu, nil, tonumber(mapped.memory_gib)
  end
  -- The shape ends the type; its tail is searched, not the whole of it
  -- (an unanchored %d+ over a hostile type of digits is quadratic).
  if gpu_type and gpu_type:sub(-32):match("%d+g%.%d+gb$") then
    -- The request's: 64 bytes of it quoted.
    return nil, "the job asks for MIG slices (gpu:" .. gpu_type:sub(1, 64) ..
                "), which memgate cannot size: the site maps the type in " ..
                "gpu_by_gres_type (e.g. { gpu = \"a100-80gb\", " ..
                "memory_gib = 9.5 })"
  end
  return site.gpu_by_partition[partition] or site.default_gpu
end

--[[
Runs one memgate check on every launch (a list of word lists). settings:
memgate (path), gpu, gpu_memory_gib (or nil: the catalog GPU's), gpus (or
nil: torchrun's), server, timeout_seconds,
on_unavailable, model, megatron_core, on_unreviewed (and, for judge,
environment: the job's, as find_launches takes it). The launches travel in a temporary
file, one per line; the shell command itself is short and made of site
settings only.
Returns the exit code (124: memgate itself timed out) and the output. Lua
5.1's popen cannot report exit codes, so the shell echoes it.
]]
function M.check_all(launches, settings)
  local path = os.tmpname()
  local file = io.open(path, "w")
  if file == nil then return 3, "memgate: cannot write " .. path end
  -- A launch is its line (shell text), or its words (M.check's callers),
  -- each quoted so that it stays the one word it is.
  for _, launch in ipairs(launches) do
    if type(launch) == "table" then
      local words = {}
      for i, word in ipairs(launch) do words[i] = quote(word) end
      launch = table.concat(words, " ")
    end
    file:write(launch, "\n")
  end
  file:close()
  local args = { quote(settings.memgate), "check", "--gpu=" .. quote(settings.gpu),
                 "--launch-lines=" .. quote(path) }
  if settings.gpu_memory_gib then
    args[#args + 1] = "--gpu-memory-gib=" .. tonumber(settings.gpu_memory_gib)
  end
  if settings.gpus then args[#args + 1] = "--gpus=" .. tonumber(settings.gpus) end
  if settings.model and settings.model ~= "" then
    args[#args + 1] = "--model=" .. quote(settings.model)
  end
  if settings.megatron_core and settings.megatron_core ~= "" then
    args[#args + 1] = "--megatron-core=" .. quote(settings.megatron_core)
  end
  if settings.on_unreviewed == "refuse" then
    args[#args + 1] = "--refuse-unreviewed"
  end
  if settings.server and settings.server ~= "" then
    args[#args + 1] = "--server=" .. quote(settings.server)
    args[#args + 1] = "--timeout=" .. tonumber(settings.timeout_seconds)
    args[#args + 1] = "--on-unavailable=" .. quote(settings.on_unavailable)
  end
  -- slurmctld holds locks while the hook runs: bound it whatever happens.
  -- (memgate bounds its own output: the deciding launch in full, a line
  -- for each other one.)
  local command = "timeout -s KILL " .. (tonumber(settings.timeout_seconds) + 1) ..
                  " " .. table.concat(args, " ") ..
                  " 2>&1; echo \"MEMGATE_EXIT=$?\""
  local pipe = io.popen(command)
  if pipe == nil then
    os.remove(path)
    return 3, "memgate: cannot start " .. settings.memgate
  end
  local output = pipe:read("*a") or ""
  pipe:close()
  os.remove(path)
  local code = tonumber(output:match("MEMGATE_EXIT=(%d+)%s*$")) or 3
  output = output:gsub("MEMGATE_EXIT=%d+%s*$", "")
  return code, output
end

-- One launch (a word list): check_all of it.
function M.check(words, settings)
  return M.check_all({ words }, settings)
end

-- The message a refused user sees: memgate's verdict line and what fits.
function M.refusal_message(output)
  local lines = {}
  for line in output:gmatch("[^\n]+") do
    if #lines == 0 or line:find("fits instead") or line:find("or this layout")
        or line:find("fits with recomputation") or line:find("peak stage")
        or line:find("fits with TransformerEngine's fused attention") then
      lines[#lines + 1] = (line:gsub("^%s+", ""))
    end
    if #lines >= 7 then break end
  end
  return "memgate: " .. table.concat(lines, "\n  ")
end

-- A launch memgate (or the hook) cannot read as it will run, `why`: the
-- site's on_invalid policy decides.
local function invalid_launch(why, settings, log)
  if settings.on_invalid == "admit" then
    log("memgate could not read the launch (admitted by site policy): " .. why)
    return true
  end
  return false, "memgate: invalid training configuration: " .. why
end

--[[
The verdict for one batch script: true (let it through) or false and the
message for the user. settings.on_invalid / settings.on_unavailable are
"refuse" or "admit"; settings.script_arguments (or nil: unknown) the
script's own arguments. `log` takes one plain string.
]]
local function judge(script, settings, log)
  local known = {}
  for k, v in pairs(settings.known_variables or {}) do known[k] = v end
  if settings.script_arguments ~= nil then
    local positional = M.script_argument_variables(settings.script_arguments,
                                                   settings.limits)
    for k, v in pairs(positional) do known[k] = v end
  end
  local found, labels = M.find_launches(script, known, settings.limits,
                                        settings.environment)
  if #found == 0 then return true end  -- not a Megatron job: untouched
  if settings.gpu == nil then  -- gpu_for_job's why, in settings.gpu_problem
    if settings.on_invalid == "admit" then
      log("memgate cannot size the job's GPU (admitted by site policy): " ..
          tostring(settings.gpu_problem))
      return true
    end
    return false, "memgate: " .. tostring(settings.gpu_problem)
  end
  -- Each launch's line, as shell text: memgate splits it as bash does.
  local code, output = M.check_all(found, settings)
  -- The branches of the script's conditions the deciding launch takes
  -- (memgate names its line), where it has some.
  local line = tonumber(output:match(
      "%(launch %d+, line (%d+) of %-%-launch%-lines%) decides"))
  local taken = ""
  if line ~= nil and labels[line] ~= nil then
    taken = "\n  (the launch as the script runs it where it takes " ..
            labels[line] .. ")"
  end
  if code == 0 then
    log("memgate admitted: " .. (output:match("[^\n]*") or "") ..
        " (" .. #found .. " launch(es), each list of words the script's " ..
        "conditions may give one)")
    return true
  end
  if code == 1 then return false, M.refusal_message(output) .. taken end
  if code == 2 then
    return invalid_launch(
        (output:gsub("^memgate check: ", ""):gsub("\n+$", "")) .. taken,
        settings, log)
  end
  -- Killed at the time limit without a server: memgate's own work on the
  -- script ran past it, which only the script's launches can make long
  -- (their work is bounded, kMaxExpandedLayout; a loaded host may add to
  -- it). Not a service that did not answer: the site's policy for an
  -- unreadable launch decides, never its policy for an unavailable
  -- memgate (which may admit).
  if code ~= 3 and (settings.server == nil or settings.server == "") then
    return invalid_launch("memgate did not finish checking the script's " ..
                          #found .. " launch(es) within " ..
                          (tonumber(settings.timeout_seconds) + 1) .. " s",
                          settings, log)
  end
  -- 3 (unavailable, already refused by --on-unavailable) or a timeout.
  if settings.on_unavailable == "admit" then
    log("memgate unavailable, admitted by site policy: " .. output)
    return true
  end
  return false, "memgate: the memory check could not run (" ..
                (output:gsub("\n+$", "")) .. "); refusing by site policy"
end

-- judge, with a script over the limits refused by name, and any other
-- error in this code handled by the site's on_unavailable policy instead of
-- Slurm's default (which lets jobs in).
function M.judge(script, settings, log)
  local ok, admit, message = pcall(judge, script, settings, log)
  if ok then return admit, message end
  if getmetatable(admit) == LimitExceeded then
    return false, "memgate: refused: " .. admit.message ..
                  " (this site's limit for batch scripts it checks)"
  end
  if getmetatable(admit) == Unreadable then
    return invalid_launch(admit.message, settings, log)
  end
  if settings.on_unavailable == "admit" then
    log("memgate hook error, admitted by site policy: " .. tostring(admit))
    return true
  end
  return false, "memgate: the memory check failed (" .. tostring(admit) ..
                "); refusing by site policy"
end

return M
