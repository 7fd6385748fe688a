--[[
memgate_launch.find_launches over scripts made of random fragments of the
shell it reads (arrays, quotes, substitutions, assignments in every form,
launches, TransformerEngine switches): each must be read or refused with
one of its own errors (a limit, an unreadable launch), never a Lua error,
which job_submit would turn into the site's on_unavailable policy. Run by
hook_test.sh; a fixed seed, so that a failure is reproduced.

  lua5.1 hook_fragments_fuzz.lua HOOK_DIR [SEED] [SCRIPTS]

Prints "fragments: N scripts, M errors" and, for the first errors, the
error and the script.
]]
package.path = arg[1] .. "/?.lua;" .. package.path
local M = require("memgate_launch")
local fragments = {
  "ARGS=(", ")", "(", "$(", "$((", "\"", "'", "#", " ", "\n", "\\\n",
  "--num-layers 4", "pretrain_gpt.py", "${ARGS[@]}", "${X[*]}", "MBS=",
  "MBS+=(", "X=1", "export ", "NVTE_FLASH_ATTN=0", "unset ", "for ", " in ",
  "read ", "printf -v ", "${A:=", "}", ";", "&&", "|", "declare -a ",
  "local -a ", "shift", "set -- ", "$1", "\"$@\"", "`", "=", "+=",
  "torchrun ", "--tensor-model-parallel-size 2", "mapfile ", "((", "))",
  "if [ x ]; then", "fi", "$MBS", "${MBS}", "a", "Z", "source x.sh",
  ". ./env", "eval ", "export $(cat .env)", "=(", "[@]}", "--micro-batch-size ",
  "${MBS:-4}", "MBS=${MBS:-1}", "${X-", ":-", "run() {", "function f",
  "GPT_ARGS=\"", "$GPT_ARGS",
  -- `if` blocks the hook follows, their tests, and element assignments.
  "if [ \"$MBS\" = 2 ]; then", "elif [[ -z $X ]]; then", "else", "fi",
  "if [ -n \"$A\" ] || [ x == y ]; then", " # c", "ARGS+=(", "ARGS[1]=",
  "unset 'ARGS[0]'", "${ARGS[@]} ", "declare -n R=ARGS", "<<EOF", "EOF",
  "$'", "\\'", "\\\"", "echo \"", "<<-'E'",
}
math.randomseed(tonumber(arg[2] or "1"))
local scripts, errors = tonumber(arg[3] or "20000"), 0
for _ = 1, scripts do
  -- Lines of a few fragments each, as scripts are written.
  local lines = {}
  for _ = 1, math.random(1, 12) do
    local parts = {}
    for _ = 1, math.random(1, 6) do
      parts[#parts + 1] = fragments[math.random(#fragments)]
    end
    lines[#lines + 1] = table.concat(parts)
  end
  local script = table.concat(lines, "\n")
  local ok, err = pcall(M.find_launches, script, { ["1"] = "x", ["@"] = "x" },
                        nil, { NVTE_FUSED_ATTN = "0", MBS = "2" })
  -- The hook's own errors are tables (LimitExceeded, Unreadable).
  if not ok and type(err) ~= "table" then
    errors = errors + 1
    if errors <= 3 then print("error: " .. tostring(err) .. " in " ..
                              string.format("%q", script)) end
  end
end
print(string.format("fragments: %d scripts, %d errors", scripts, errors))
os.exit(errors == 0 and 0 or 1)
