--[[
memgate_launch.lua: what Slurm's memgate hooks share (job_submit.lua and
cli_filter.lua load it): find the Megatron-LM launch in a batch script, run
`memgate check` on it, and turn the exit code into a verdict.
]]

local M = {}

-- Replaces $NAME and ${NAME} with values from `vars`; unknown names stay.
local function expand(line, vars)
  line = line:gsub("%${([%w_]+)}", function(name) return vars[name] end)
  return (line:gsub("%$([%w_]+)", function(name) return vars[name] end))
end

--[[
The first line of a batch script, after joining backslash continuations,
that launches Megatron-LM; nil when there is none (the job is not ours).
Plain assignments above it (NAME=value, export NAME=value; literal values
only) are substituted into it, as are `known` values (e.g. SLURM_NNODES,
which the request already fixes).
]]
function M.find_launch(script, known)
  if script == nil then return nil end
  local vars = {}
  for k, v in pairs(known or {}) do vars[k] = tostring(v) end
  local joined = script:gsub("\\\r?\n", " ")
  for line in joined:gmatch("[^\n]+") do
    local body = line:gsub("^%s+", "")
    local name, value = body:match("^export%s+([%a_][%w_]*)=(%S*)%s*$")
    if name == nil then
      name, value = body:match("^([%a_][%w_]*)=(%S*)%s*$")
    end
    if name ~= nil then
      value = value:gsub("^['\"]", ""):gsub("['\"]$", "")
      if not value:find("[%$`(]") then vars[name] = expand(value, vars) end
    elseif body:sub(1, 1) ~= "#" and (body:find("pretrain_gpt%.py")
        or body:find("%-%-tensor%-model%-parallel%-size")
        or body:find("%-%-num%-layers")) then
      return expand(body, vars)
    end
  end
  return nil
end

-- Whitespace-separated words of a launch line, shell quotes removed.
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

-- GPUs per node from a TRES string like "gres:gpu:8", "gres/gpu:a100:8".
function M.gpus_in_tres(tres)
  if tres == nil then return nil end
  local count = tres:match("gpu[%w_%-:]-:(%d+)%s*$") or
                tres:match("gpu[%w_%-:]-:(%d+),") or tres:match("gpu:(%d+)")
  return count and tonumber(count) or nil
end

--[[
Runs memgate check on the launch words. settings: memgate (path), gpu,
gpus (or nil: torchrun's), server, timeout_seconds, on_unavailable,
model. Returns the exit code (124: memgate itself timed out) and the
output. Lua 5.1's popen cannot report exit codes, so the shell echoes it.
]]
function M.check(words, settings)
  local args = { quote(settings.memgate), "check", "--gpu=" .. quote(settings.gpu) }
  if settings.gpus then args[#args + 1] = "--gpus=" .. settings.gpus end
  if settings.model and settings.model ~= "" then
    args[#args + 1] = "--model=" .. quote(settings.model)
  end
  if settings.server and settings.server ~= "" then
    args[#args + 1] = "--server=" .. quote(settings.server)
    args[#args + 1] = "--timeout=" .. settings.timeout_seconds
    args[#args + 1] = "--on-unavailable=" .. settings.on_unavailable
  end
  args[#args + 1] = "--"
  for _, w in ipairs(words) do args[#args + 1] = quote(w) end
  -- slurmctld holds locks while the hook runs: bound it whatever happens.
  local command = "timeout " .. (settings.timeout_seconds + 3) .. " " ..
                  table.concat(args, " ") .. " 2>&1; echo \"MEMGATE_EXIT=$?\""
  local pipe = io.popen(command)
  if pipe == nil then return 3, "memgate: cannot start " .. settings.memgate end
  local output = pipe:read("*a")
  pipe:close()
  local code = tonumber(output:match("MEMGATE_EXIT=(%d+)%s*$")) or 3
  output = output:gsub("MEMGATE_EXIT=%d+%s*$", "")
  return code, output
end

-- The message a refused user sees: memgate's verdict line and what fits.
function M.refusal_message(output)
  local lines = {}
  for line in output:gmatch("[^\n]+") do
    if #lines == 0 or line:find("fits instead") or line:find("or this layout")
        or line:find("peak stage") then
      lines[#lines + 1] = (line:gsub("^%s+", ""))
    end
    if #lines >= 6 then break end
  end
  return "memgate: " .. table.concat(lines, "\n  ")
end

--[[
The verdict for one batch script: true (let it through) or false and the
message for the user. settings.on_invalid / settings.on_unavailable are
"refuse" or "admit". `log` takes one plain string.
]]
local function judge(script, settings, log)
  local launch = M.find_launch(script, settings.known_variables)
  if launch == nil then return true end  -- not a Megatron job: untouched
  local code, output = M.check(M.words(launch), settings)
  if code == 0 then
    log("memgate admitted: " .. (output:match("[^\n]*") or ""))
    return true
  end
  if code == 1 then return false, M.refusal_message(output) end
  if code == 2 then
    if settings.on_invalid == "admit" then
      log("memgate could not read the launch (admitted by site policy): " ..
          output)
      return true
    end
    return false, "memgate: invalid training configuration: " ..
                  (output:gsub("^memgate check: ", ""):gsub("\n+$", ""))
  end
  -- 3 (unavailable, already refused by --on-unavailable) or a timeout.
  if settings.on_unavailable == "admit" then
    log("memgate unavailable, admitted by site policy: " .. output)
    return true
  end
  return false, "memgate: the memory check could not run (" ..
                (output:gsub("\n+$", "")) .. "); refusing by site policy"
end

-- judge, with any error in this code itself handled by the site's
-- on_unavailable policy instead of Slurm's default (which lets jobs in).
function M.judge(script, settings, log)
  local ok, admit, message = pcall(judge, script, settings, log)
  if ok then return admit, message end
  if settings.on_unavailable == "admit" then
    log("memgate hook error, admitted by site policy: " .. tostring(admit))
    return true
  end
  return false, "memgate: the memory check failed (" .. tostring(admit) ..
                "); refusing by site policy"
end

return M
