--[[
The hook's reading of `if` blocks, arrays and variables against bash
itself: random scripts of conditions (on the job's environment, unknown
to the hook, and on the script's own values), array and variable
assignments, appends, element sets, unsets, heredocs, strings spanning
lines and launches, each written to DIR as sN.sh with the hook's launch
lines beside it (sN.hook). hook_branches_differential.sh runs each
script under bash with every value of the environment's conditions:
every launch bash runs must be one of the hook's lines (the hook checks
each), unless the hook refused the script (an error, or a word it left
as written, which memgate refuses). A fixed seed, so that a failure is
reproduced.

  lua5.1 hook_branches_differential.lua HOOK_DIR DIR [SEED] [SCRIPTS]
]]
package.path = arg[1] .. "/?.lua;" .. package.path
local M = require("memgate_launch")
local dir = arg[2]
local launch = "printf '%s|' pretrain_gpt.py ${A[@]} ${B[@]} $M; echo"
local fragments = {
  'if [ "$C1" = 1 ]; then', 'if [ "$C2" = 1 ]; then', 'if [ "$K" = 1 ]; then',
  'elif [ "$K" != 0 ]; then',
  'if [[ "$K" == 0 ]] || [ -z "$K" ]; then', 'elif [ "$C2" = 1 ]; then',
  "else", "fi", "A=(a1 a2)", "A+=(a3)", 'B=("${A[@]}" b1)',
  'B+=("${B[@]}" b2)', "A=()", "K=1", "K=0", "B=(b3)", "unset A", "A[0]=z",
  'A+=("${B[@]}")', '[ "$C1" = 1 ] && A+=(c1)', '[ "$C2" = 1 ] || K=1',
  "true && true", "cat > /dev/null <<EOF\nA+=(h1)\nelse\nEOF",
  "echo \"usage: it's\nA+=(q1)\nfi\" > /dev/null", "M=m1", "M=m2",
  '[ "$C1" = 1 ] && M=m3', 'if [ "$M" = m1 ]; then', 'A+=("$M")', "E=e1",
  'if [ -z "$E" ]; then', "printf '%s|' pretrain_gpt.py --e $E; echo",
  'if [ "$1" = a1 ]; then', 'if [[ -z "$2" ]]; then', "shift",
  "N=2", "N=010", 'if [ "$N" -gt 8 ]; then', 'if [[ $N -le 8 ]]; then',
  launch,
}
math.randomseed(tonumber(arg[3] or "1"))
local written = 0
for _ = 1, tonumber(arg[4] or "300") do
  -- (K set first in most: tests on it decided, their dead branches
  -- skipped by the hook.)
  local lines, depth = { "A=(a0)", "B=(b0)", "M=m0" }, 0
  local k = math.random(0, 2)
  if k < 2 then lines[#lines + 1] = "K=" .. k end
  for _ = 1, math.random(3, 20) do
    local f = fragments[math.random(#fragments)]
    -- Well-formed blocks: else, elif and fi only inside one.
    if depth == 0 and (f == "fi" or f == "else" or f:find("^elif")) then
      f = "K=1"
    end
    if f:find("^if") then depth = depth + 1 end
    if f == "fi" then depth = depth - 1 end
    lines[#lines + 1] = f
  end
  for _ = 1, depth do lines[#lines + 1] = "fi" end
  -- (Half end naming E, which the job's environment holds.)
  lines[#lines + 1] = math.random(2) == 1 and launch or
                      launch:gsub(" %$M;", " $M $E;")
  local script = table.concat(lines, "\n") .. "\n"
  -- The job's environment holds E, its arguments are a1 (bash runs with
  -- E=e0 and a1 too).
  local ok, texts = pcall(M.find_launches, script,
                          M.script_argument_variables({ "a1" }), nil,
                          { E = "e0" })
  if not ok and type(texts) ~= "table" then
    io.stderr:write("hook error: " .. tostring(texts) .. "\n")
    os.exit(1)
  end
  if ok then
    written = written + 1
    local f = io.open(string.format("%s/s%d.sh", dir, written), "w")
    f:write(script)
    f:close()
    local g = io.open(string.format("%s/s%d.hook", dir, written), "w")
    for _, text in ipairs(texts) do g:write(text, "\n") end
    g:close()
  end
end
print(written)
