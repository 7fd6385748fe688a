--[[
memgate admission for Slurm's job_submit/lua plugin (slurmctld side).

Refuses, before any GPU is allocated, a batch job whose Megatron-LM launch
would not fit in GPU memory under the 80% rule, with memgate's reason and
the layouts that would fit; jobs without a Megatron launch pass untouched.
Install beside slurm.conf with memgate_launch.lua, and set
JobSubmitPlugins=lua. Site settings are all here:
]]

local SITE = {
  memgate = "/usr/local/bin/memgate",  -- the memgate CLI
  server = "",            -- "host:port" of memgate_server; "" runs embedded
  timeout_seconds = 2,    -- slurmctld holds locks while this runs: keep short
  on_unavailable = "refuse",  -- memgate cannot answer: "refuse" or "admit"
  on_invalid = "refuse",      -- launch memgate cannot read: "refuse" or "admit"
  -- A launch argument memgate has not reviewed (a newer Megatron's, a
  -- fork's, a script's own), or a training script other than Megatron-LM's,
  -- may change memory: "admit" reads past it with a note (memgate's
  -- default), "refuse" makes it an invalid launch, which on_invalid then
  -- decides.
  on_unreviewed = "admit",
  default_gpu = "h100-80gb",  -- catalog GPU when the partition is not below
  gpu_by_partition = {        -- partition -> catalog GPU
    -- a100 = "a100-40gb",
  },
  -- A job's GPU type (--gres=gpu:TYPE:N, --gpus=TYPE:N) -> catalog GPU, or
  -- { gpu = NAME, memory_gib = X } for a MIG slice; it wins over the
  -- partition's. A MIG type not here is refused (on_invalid decides): a
  -- whole GPU's memory would admit what a slice cannot hold.
  gpu_by_gres_type = {
    -- a100_40g = "a100-40gb",
    -- gb200 = "gb200-186gb",
    -- gb300 = "gb300-288gb",
    -- ["1g.10gb"] = { gpu = "a100-80gb", memory_gib = 9.5 },
  },
  model = "",             -- optional catalog model to fill what launches omit
  -- The Megatron-Core release this site trains with (e.g. "0.13.0"), as
  -- `memgate check --megatron-core` takes it: it says where MoE layers
  -- apply the routing probabilities, which sets their activations. ""
  -- counts the larger of the releases' terms (a launch that gives an
  -- argument only a newer release has still dates itself).
  megatron_core = "",
}

package.path = (debug.getinfo(1, "S").source:match("^@(.*/)") or "./") ..
               "?.lua;" .. package.path
local memgate = require("memgate_launch")

-- GPUs the job asks Slurm for, when it says: per node x nodes, or per job.
local function requested_gpus(job_desc)
  local per_job = memgate.gpus_in_tres(job_desc.tres_per_job)
  if per_job then return per_job end
  local per_node = memgate.gpus_in_tres(job_desc.tres_per_node)
  if per_node == nil then return nil end
  local nodes = tonumber(job_desc.min_nodes) or 1
  if nodes < 1 or nodes >= 0xfffffffe then nodes = 1 end  -- NO_VAL: unset
  return per_node * nodes
end

-- The job's partition, or the cluster's default one when it names none.
local function partition_of(job_desc, part_list)
  if job_desc.partition then return job_desc.partition end
  for name, part in pairs(part_list or {}) do
    if part.flag_default == 1 then return part.name or name end
  end
  return ""
end

function slurm_job_submit(job_desc, part_list, submit_uid)
  local settings = {}
  for k, v in pairs(SITE) do settings[k] = v end
  settings.gpu, settings.gpu_problem, settings.gpu_memory_gib =
      memgate.gpu_for_job(SITE, partition_of(job_desc, part_list),
                          job_desc.tres_per_node, job_desc.tres_per_job,
                          job_desc.tres_per_task, job_desc.tres_per_socket)
  settings.gpus = requested_gpus(job_desc)
  -- What the request already fixes, for launches written with Slurm's
  -- variables (torchrun --nnodes $SLURM_NNODES ...).
  local nodes = tonumber(job_desc.min_nodes) or 1
  if nodes < 1 or nodes >= 0xfffffffe then nodes = 1 end
  settings.known_variables = { SLURM_NNODES = nodes, SLURM_JOB_NUM_NODES = nodes }
  local per_node = memgate.gpus_in_tres(job_desc.tres_per_node)
  if per_node then
    settings.known_variables.SLURM_GPUS_ON_NODE = per_node
    settings.known_variables.SLURM_GPUS_PER_NODE = per_node
  end
  -- The job's environment (sbatch exports the submitting shell's by
  -- default): TransformerEngine's attention switches in it decide the
  -- launch's attention. Only batch jobs have one (Slurm logs an error
  -- when another's is asked for), and only they have a script to read.
  if job_desc.script ~= nil then
    local has_env, environment = pcall(function() return job_desc.environment end)
    if has_env then settings.environment = environment end
    -- The script's arguments ("$@" in its launch): Slurm's argv, the
    -- script's path first (at index 0 or 1), as far as it hands it over.
    local has_argv, argv = pcall(function() return job_desc.argv end)
    if has_argv and type(argv) == "table" then
      settings.script_arguments = {}
      for i = (argv[0] ~= nil) and 1 or 2, #argv do
        settings.script_arguments[#settings.script_arguments + 1] = argv[i]
      end
    end
  end
  local ok, message = memgate.judge(job_desc.script, settings, function(m)
    slurm.log_info("%s", m)
  end)
  if ok then return slurm.SUCCESS end
  slurm.log_info("memgate refused a job of uid %u: %s", submit_uid, message)
  slurm.log_user("%s", message)
  return slurm.ERROR
end

function slurm_job_modify(job_desc, job_rec, part_list, modify_uid)
  return slurm.SUCCESS
end

slurm.log_info("memgate job_submit hook loaded")
return slurm.SUCCESS
