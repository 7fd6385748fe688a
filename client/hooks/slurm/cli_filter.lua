--[[
memgate admission for Slurm's cli_filter/lua plugin: the same check as
job_submit.lua, run by sbatch on the submitting host instead of slurmctld
(no controller locks held, but a user can bypass it: pair it with the
job_submit hook where enforcement matters). Install beside slurm.conf with
memgate_launch.lua, and set CliFilterPlugins=lua.
]]

local SITE = {
  memgate = "/usr/local/bin/memgate",
  server = "",
  timeout_seconds = 2,
  on_unavailable = "refuse",
  on_invalid = "refuse",
  on_unreviewed = "admit",  -- an argument memgate has not reviewed (job_submit.lua)
  default_gpu = "h100-80gb",
  gpu_by_partition = {},
  gpu_by_gres_type = {},  -- GPU type -> catalog GPU (job_submit.lua)
  model = "",
  megatron_core = "",  -- the site's Megatron-Core release (job_submit.lua)
}

package.path = (debug.getinfo(1, "S").source:match("^@(.*/)") or "./") ..
               "?.lua;" .. package.path
local memgate = require("memgate_launch")

-- The batch script: sbatch's --wrap, or the script file named on the
-- command line (the first positional argument that is a readable file),
-- and the arguments after it (the script's "$@"; none for --wrap).
local function batch_script(options)
  if options["wrap"] and options["wrap"] ~= "" then
    return options["wrap"], {}
  end
  local argv = options["argv"]
  if type(argv) == "table" then
    for i, arg in ipairs(argv) do
      local f = io.open(arg, "r")
      if f then
        local text = f:read("*a")
        f:close()
        local rest = {}
        for j = i + 1, #argv do rest[#rest + 1] = argv[j] end
        return text, rest
      end
    end
  end
  return nil
end

-- The environment the job will run with, as a function of a variable's
-- name (memgate_launch.lua reads TransformerEngine's attention switches
-- and the values of variables the script sets from it): sbatch's own
-- (exported by default, or with ALL in --export), then NAME=value items
-- of --export.
local function job_environment(options)
  local export = options["export"] or ""
  local given = {}
  local all = export == ""
  for item in export:gmatch("[^,]+") do
    local name, value = item:match("^([%a_][%w_]*)=(.*)$")
    if item == "ALL" then
      all = true
    elseif name ~= nil then
      given[name] = value
    elseif item ~= "NONE" and item ~= "NIL" then
      given[item] = os.getenv(item) or false
    end
  end
  return function(name)
    local value = given[name]
    if value ~= nil then return value or nil end
    if all then return os.getenv(name) end
    return nil
  end
end

function slurm_cli_setup_defaults(options, early_pass)
  return slurm.SUCCESS
end

function slurm_cli_pre_submit(options, pack_offset)
  local settings = {}
  for k, v in pairs(SITE) do settings[k] = v end
  -- sbatch's --gpus* options hold "TYPE:N" or "N", its --gres "gpu:TYPE:N".
  local function gpus(option)
    return options[option] and ("gpu:" .. options[option]) or nil
  end
  settings.gpu, settings.gpu_problem, settings.gpu_memory_gib =
      memgate.gpu_for_job(SITE, options["partition"] or "", options["gres"],
                          gpus("gpus"), gpus("gpus-per-node"),
                          gpus("gpus-per-task"))
  local per_node = memgate.gpus_in_tres(options["gres"])
  local nodes = tonumber((options["nodes"] or ""):match("^(%d+)")) or 1
  settings.gpus = per_node and per_node * nodes or
                  tonumber(options["gpus"] or "")
  settings.environment = job_environment(options)
  local script
  script, settings.script_arguments = batch_script(options)
  local ok, message = memgate.judge(script, settings,
                                    function(m) slurm.log_info("%s", m) end)
  if ok then return slurm.SUCCESS end
  slurm.log_error("%s", message)
  return slurm.ERROR
end

function slurm_cli_post_submit(offset, job_id, step_id)
  return slurm.SUCCESS
end
