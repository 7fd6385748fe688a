--[[
One hostile (or ordinary) batch script through memgate's real job_submit.lua,
with Slurm's `slurm` table stubbed: what slurmctld would do with it, and what
it cost. Run by hook_test.sh, one scenario per process so each one's peak
memory is its own:

  lua5.1 hook_scenarios.lua HOOK_DIR SCENARIO

Prints "verdict=<admit|refuse> hwm_kib=<peak RSS> message=<user message>".
]]

local hook_dir, scenario = arg[1], arg[2]

local user_messages = {}
slurm = {
  SUCCESS = 0,
  ERROR = -1,
  log_info = function() end,
  log_error = function() end,
  log_user = function(fmt, ...) user_messages[#user_messages + 1] = string.format(fmt, ...) end,
}
dofile(hook_dir .. "/job_submit.lua")

local function launch(layers, mbs, extra)
  return "torchrun --nnodes 1 --nproc-per-node 8 pretrain_gpt.py " ..
         "--num-layers " .. layers .. " --hidden-size 4096 --ffn-hidden-size 14336 " ..
         "--num-attention-heads 32 --group-query-attention --num-query-groups 8 " ..
         "--vocab-size 128256 --untie-embeddings-and-output-weights --swiglu " ..
         "--normalization RMSNorm --disable-bias-linear --position-embedding-type rope --hidden-dropout 0 --attention-dropout 0 " ..
         "--tensor-model-parallel-size 4 --pipeline-model-parallel-size 2 " ..
         "--sequence-parallel --use-distributed-optimizer " ..
         "--micro-batch-size " .. mbs .. " --global-batch-size 1024 --seq-length 8192 --bf16" ..
         (extra or "")
end
local header = "#!/bin/bash\n#SBATCH --nodes=1 --gres=gpu:8\n"
local fits, ooms = launch(32, 1), launch(32, 4)

local scripts = {}
-- 1 MB variable, referenced a thousand times on the launch line: ~1 GB if
-- expanded naively (the 74 s, 10 GB report).
scripts.expansion_bomb = function()
  return header .. "A=" .. string.rep("x", 1024 * 1024) .. "\n" ..
         fits .. " --run-name " .. string.rep("$A", 1000) .. "\n"
end
-- Slurm's largest default script: 4 MB of ordinary lines, then a launch.
local function filler(bytes)
  local line = "echo preparing data shard, nothing to see here 0123456789\n"
  return string.rep(line, math.floor(bytes / #line))
end
scripts.script_4mb_fits = function()
  local tail = fits .. "\n"
  return header .. filler(4 * 1024 * 1024 - #header - #tail - 64) .. tail
end
scripts.script_4mb_ooms = function()
  local tail = ooms .. "\n"
  return header .. filler(4 * 1024 * 1024 - #header - #tail - 64) .. tail
end
-- 4 MB of lines that hold "shift" and "set" but move nothing: every one
-- goes through the patterns that look for `shift` and `set --`.
scripts.script_4mb_shift_words = function()
  local line = "echo dataset offsets reset; upshift --set x setup shifts\n"
  local tail = fits .. "\n"
  return header ..
         string.rep(line, math.floor((4 * 1024 * 1024 - #header - #tail - 64) / #line)) ..
         tail
end
-- Lines cost fixed work each: 4 MiB of two-byte lines (2 million) is
-- refused past 100,000 lines, not read for 6 s; the rest of a line after
-- an array is read again, a MiB of it at most (one line of `A=(x);` was
-- quadratic: 120 KiB took 10 s).
scripts.short_lines_4mb = function()
  return header .. string.rep("x\n", 2 * 1024 * 1024 - 1024) .. fits .. "\n"
end
scripts.arrays_on_one_line = function()
  return header .. string.rep("A=(x);", 600 * 1024) .. fits .. "\n"
end
-- A launch line of 240 KiB of quotes, each followed in Lua to know
-- where a value goes inside them: refused past 4,096.
scripts.quotes_on_a_launch_line = function()
  return header .. "A=x\n" .. fits .. " --wandb-exp-name " ..
         string.rep('""', 120 * 1024) .. "$A\n"
end
scripts.script_over_limit = function()
  return header .. filler(4 * 1024 * 1024 + 4096) .. fits .. "\n"
end
-- A 200 KiB launch line (one long argument) must be checked, not fail to
-- start memgate.
scripts.long_line_ooms = function()
  return header .. ooms .. " --wandb-exp-name " .. string.rep("r", 200 * 1024) .. "\n"
end
scripts.long_line_fits = function()
  return header .. fits .. " --wandb-exp-name " .. string.rep("r", 200 * 1024) .. "\n"
end
-- A decoy above the real launch: every launch is checked.
scripts.decoy = function()
  return header .. "echo \"" .. launch(2, 1) .. "\"\n" .. ooms .. "\n"
end
-- A fitting launch echoed before it runs (a log line): both fit. Split as
-- bash splits it, the echo's one quoted word was no launch at all
-- (invalid: a refusal of a job that fits) until its text was read.
scripts.echoed_then_run = function()
  return header .. "echo \"Running: " .. fits .. "\"\n" .. fits .. "\n"
end
-- Two launches on one line (a warm-up, then the run): each is checked,
-- as each line is; once only the first of equals was.
scripts.two_launches_on_one_line = function()
  return header .. fits .. " && " .. ooms .. "\n"
end
scripts.decoy_below = function()
  return header .. ooms .. "\necho \"" .. launch(2, 1) .. "\"\n"
end
scripts.plain = function()
  return header .. "srun hostname\necho \"starting pretrain_gpt.py\"\n"
end
-- The most work the limits allow: 64 launches, each expanded to ~240 KiB
-- (15 MiB handed to memgate).
scripts.most_work_allowed = function()
  return header .. "V=" .. string.rep("v", 60 * 1024) .. "\n" ..
         string.rep(fits .. " --wandb-exp-name $V$V$V$V\n", 64)
end
scripts.too_many_launches = function()
  return header .. string.rep(fits .. "\n", 65)
end
scripts.too_many_substitutions = function()
  return header .. "B=1\n" .. fits .. " --run-name " .. string.rep("$B", 5000) .. "\n"
end
-- Arguments the script takes from somewhere the hook cannot see (the
-- submitting shell's $EXTRA_ARGS, an array, the script's own arguments):
-- refused by name rather than admitted without them.
scripts.hidden_arguments = function()
  return header .. fits .. " $EXTRA_ARGS\n"
end
-- An array assigned once, of literal words, is read as bash expands it:
-- its MBS 4 is the launch's.
scripts.array_read = function()
  return header .. "ARGS=(--micro-batch-size 4)\n" .. fits .. " \"${ARGS[@]}\"\n"
end
-- The style of Megatron-LM's example scripts (examples/gpt3, mixtral):
-- the arguments in arrays over several lines, with comments, quotes and
-- variables, the launch made of their expansions. The lines inside an
-- array are its words, not launches of their own (each was once checked
-- alone and refused: "--hidden-size: missing").
local function megatron_example(mbs)
  -- The arguments after "torchrun ... pretrain_gpt.py", an argument (and
  -- its value) a line; the model's in one array with backslashes, the
  -- rest in another without.
  local model, rest, list = {}, {}, nil
  local past_script = false
  for word in launch(32, mbs):gmatch("%S+") do
    if word == "--tensor-model-parallel-size" then list = rest end
    if past_script then
      if word:sub(1, 2) == "--" or #list == 0 then
        list[#list + 1] = word
      else
        list[#list] = list[#list] .. " " .. word
      end
    end
    if word == "pretrain_gpt.py" then past_script, list = true, model end
  end
  -- Its arithmetic and its comments with parentheses (both once taken
  -- for a subshell opening: every array after them unread).
  return header .. "GPUS_PER_NODE=8\nMBS=" .. mbs .. "\n" ..
         "NUM_NODES=1  # (one node)\n" ..
         "WORLD_SIZE=$(($GPUS_PER_NODE*$NUM_NODES))\n" ..
         "# Data cache path (useful for both mock and real data)\n" ..
         "DISTRIBUTED_ARGS=(\n    --nnodes 1\n" ..
         "    --nproc-per-node $GPUS_PER_NODE  # one node\n)\n" ..
         "MODEL_ARGS=(\n    " .. table.concat(model, " \\\n    ") .. "\n)\n" ..
         "TRAINING_ARGS=( \"--seed 1234\" # a comment\n    " ..
         table.concat(rest, "\n    "):gsub("%-%-micro%-batch%-size %d+",
                                           "--micro-batch-size ${MBS}") ..
         "\n)\n" ..
         "torchrun ${DISTRIBUTED_ARGS[@]} pretrain_gpt.py \\\n" ..
         "    ${MODEL_ARGS[@]} \\\n    \"${TRAINING_ARGS[@]}\"\n"
end
scripts.megatron_example_fits = function() return megatron_example(1) end
scripts.megatron_example_ooms = function() return megatron_example(4) end
-- An array and its launch on one line; an array whose words are computed
-- (a substitution's parentheses do not close it: its lines stay its
-- words), refused naming it where a launch uses it.
scripts.array_then_launch_on_one_line = function()
  return header .. "ARGS=(--micro-batch-size 4); " .. fits .. " ${ARGS[@]}\n"
end
scripts.array_computed = function()
  return header ..
         "ARGS=( $(cat extra_args)\n  --num-layers 32 $((2 * 2))\n)\n" ..
         fits .. " ${ARGS[@]}\n"
end
-- An array assigned after another command on its line, under a
-- condition: its lines are its words (not a launch of their own), and it
-- is refused naming it.
scripts.array_after_and = function()
  return header .. "[ -n \"$BIG\" ] && EXTRA=(\n  --num-layers 32 " ..
         "--micro-batch-size 4\n)\n" .. fits .. " ${EXTRA[@]}\n"
end
-- An array of a 100 KiB name, appended to after a sourced file (which
-- may have set it): the refusal quotes its first 64 bytes, not the name
-- whole (twice).
scripts.array_name_huge = function()
  local name = string.rep("A", 100 * 1024)
  return header .. ". ./config.sh\n" .. name ..
         "+=(--micro-batch-size 4)\n" .. fits .. " ${" .. name .. "[@]}\n"
end
-- After an `if` block the hook follows (closed by its `fi`), an array is
-- set whichever branch ran: read (it was refused as perhaps under the
-- condition). Under a condition the hook does not follow (a loop, a
-- function, ...), a variable that is an argument of its own
-- (--sequence-parallel), missing when it does not run, is left unread
-- (without sequence parallelism the job holds TP times the activations
-- it was judged by); a value is still read (the launch fails at once
-- without it).
scripts.array_after_condition = function()
  return header .. "if [ -n \"$PROFILE\" ]; then\n  echo profiling\nfi\n" ..
         "ARGS=(--micro-batch-size 1)\n" .. fits .. " ${ARGS[@]}\n"
end
scripts.switch_after_condition = function()
  return header .. "if [ \"$TP\" -gt 1 ]; then\n  SP=--sequence-parallel\n" ..
         "fi\n" .. fits:gsub("%-%-sequence%-parallel", "$SP") .. "\n"
end
scripts.value_after_condition = function()
  return header .. "for i in 1 2; do echo $i; done\nMBS=4\n" ..
         launch(32, "$MBS") .. "\n"
end
-- The classic Megatron-LM examples' style: the arguments in a quoted
-- string over several lines (GPT_ARGS=" ... "), the launch expanding it.
-- Its lines are its words, not a launch of their own; read as one value.
-- Extended under a condition (GPT_ARGS="$GPT_ARGS ..."), it is refused by
-- name: once, a line of the string holding --num-layers was checked as
-- the launch, and the extension was never seen.
local function string_args(mbs, extended)
  local args = launch(32, mbs):match("pretrain_gpt%.py (.*)$")
  return header .. "GPT_ARGS=\"\n    " ..
         args:gsub(" %-%-", " \\\n    --") .. "\n\"\n" ..
         (extended and "[ -n \"$BIG\" ] && GPT_ARGS=\"$GPT_ARGS " ..
                       "--micro-batch-size 4\"\n" or "") ..
         "torchrun --nnodes 1 --nproc-per-node 8 pretrain_gpt.py $GPT_ARGS\n"
end
scripts.string_args_fits = function() return string_args(1) end
scripts.string_args_ooms = function() return string_args(4) end
scripts.string_args_extended = function() return string_args(1, true) end
scripts.string_unclosed = function()
  return header .. "GPT_ARGS=\"\n" .. filler(4 * 1024 * 1024 - 4096) ..
         fits .. "\n"
end
scripts.string_args_one_line = function()
  local args = launch(32, 4):match("pretrain_gpt%.py (.*)$")
  return header .. "GPT_ARGS=\"" .. args .. "\"  # the model\n" ..
         "torchrun --nnodes 1 --nproc-per-node 8 pretrain_gpt.py $GPT_ARGS\n"
end
-- An array appended to under a condition (as Megatron-LM's llama3
-- example does with its fp8 arguments): the launch is checked with each
-- list of words the branches may leave it (here with and without MBS 4),
-- never as if every append ran or none did; the refusal names the
-- branch its launch took.
scripts.array_appended = function()
  return header .. "EXTRA=(--micro-batch-size 1)\n" ..
         "if [ \"$BIG\" = 1 ]; then\n  EXTRA+=(--micro-batch-size 4)\nfi\n" ..
         fits .. " ${EXTRA[@]}\n"
end
-- An element of an array set (ARGS[1]=4) or unset (`unset 'ARGS[2]'
-- 'ARGS[3]'`) changes its words: each ran MBS 4 where the hook read the
-- assignment alone (MBS 1: admitted). Refused naming the array.
scripts.array_element_set = function()
  return header .. "ARGS=(--micro-batch-size 1)\nARGS[1]=4\n" ..
         fits .. " ${ARGS[@]}\n"
end
scripts.array_elements_unset = function()
  return header .. "ARGS=(--micro-batch-size 4 --micro-batch-size 1)\n" ..
         "unset 'ARGS[2]' 'ARGS[3]'\n" .. fits .. " ${ARGS[@]}\n"
end
-- A name reference writes another variable (REF+=( ... ) appends to
-- ARGS: run at MBS 4, read as MBS 1, admitted): a script with a launch
-- and one is refused naming it; a `local` beside a test's -n is none.
scripts.name_reference = function()
  return header .. "ARGS=(--micro-batch-size 1)\ndeclare -n REF=ARGS\n" ..
         "REF+=(--micro-batch-size 4)\n" .. fits .. " ${ARGS[@]}\n"
end
scripts.local_beside_a_test = function()
  return header .. "pick() {\n  local x; [ -n \"$1\" ] && x=$1\n}\n" ..
         fits .. "\n"
end
-- Arrays built from arrays copy their words: 4,000 lines of
-- B=("${A[@]}" i) over a 256 KiB A held 1 GB for 8.5 s inside
-- slurmctld. Refused past 4 MiB of words kept.
scripts.arrays_built_from_arrays = function()
  local lines = { header, "A0=(" .. string.rep("x", 1000) .. ")\n" }
  for i = 1, 8 do
    lines[#lines + 1] = string.format('A%d=("${A%d[@]}" "${A%d[@]}")\n', i,
                                      i - 1, i - 1)
  end
  for i = 1, 4000 do
    lines[#lines + 1] = string.format('B%d=("${A8[@]}" %d)\n', i, i)
  end
  return table.concat(lines) .. fits .. " ${B4000[@]}\n"
end
-- Appended to with no condition around it: read as bash runs it.
scripts.array_appended_at_top = function()
  return header .. "EXTRA=(--micro-batch-size 1)\n" ..
         "EXTRA+=(--micro-batch-size 4)\n" .. fits .. " ${EXTRA[@]}\n"
end
-- Each branch of an if/elif/else sets the array: every branch is checked
-- (here the elif's OOMs).
scripts.array_in_each_branch = function()
  return header .. "if [ \"$SIZE\" = small ]; then\n" ..
         "  EXTRA=(--micro-batch-size 1)\n" ..
         "elif [ \"$SIZE\" = big ]; then  # the big one\n" ..
         "  EXTRA=(--micro-batch-size 4)\nelse\n  EXTRA=()\nfi\n" ..
         fits .. " ${EXTRA[@]}\n"
end
-- A condition the script's own values decide: a branch no run takes is
-- not checked (the small job admitted), one every run takes is (the big
-- one refused). A value set inside a branch decides nothing after it
-- (it may not be set): both branches are checked.
local function decided(size, where)
  return header .. (where or "SIZE=" .. size .. "\n") ..
         "EXTRA=()\nif [[ \"$SIZE\" == big ]] || [ -z \"$SIZE\" ]; then\n" ..
         "  EXTRA+=(--micro-batch-size 4)\nfi\n" .. fits .. " ${EXTRA[@]}\n"
end
scripts.condition_decided_small = function() return decided("small") end
scripts.condition_decided_big = function() return decided("big") end
-- Decided by the job's own arguments (sbatch train.sh big), through a
-- default (${1:-small}) or a test on $2 (empty: not given).
scripts.condition_on_script_argument_none = function()
  return decided("", "SIZE=${1:-\"small\"}\nif [ -z \"$2\" ]; then\n" ..
                     "  MBS_ARGS=(--micro-batch-size 1)\nfi\n")
end
scripts.condition_on_script_argument_big = function()
  return decided("", "SIZE=${1:-\"small\"}\n")
end
-- Integer comparisons of whole numbers decide too (`[ "$TP" -gt 1 ]`).
local function numeric(tp)
  return header .. "TP=" .. tp .. "\nEXTRA=()\nif [ \"$TP\" -gt 1 ]; then\n" ..
         "  EXTRA+=(--micro-batch-size 4)\nfi\n" .. fits .. " ${EXTRA[@]}\n"
end
scripts.numeric_test_false = function() return numeric("1") end
scripts.numeric_test_true = function() return numeric("4") end
scripts.condition_value_from_a_branch = function()
  return decided("", "if [ -n \"$X\" ]; then\n  SIZE=small\nfi\n")
end
-- A TE switch holds what memgate reads ("?" where the hook cannot
-- read it), not the string bash compares: a test on one is not decided
-- (the MBS 4 branch, which bash may take, was dropped: "?" is not 0).
scripts.condition_on_a_te_switch = function()
  return header .. "NVTE_FLASH_ATTN=$(cat attention.txt)\nEXTRA=()\n" ..
         "if [ \"$NVTE_FLASH_ATTN\" = 0 ]; then\n" ..
         "  EXTRA+=(--micro-batch-size 4)\nfi\n" .. fits .. " ${EXTRA[@]}\n"
end
-- A model-size switch the script's own value decides: the branch no run
-- takes is not read (its MBS=4 made MBS two values, refused by name),
-- nor is a launch in it; the branch every run takes is.
local function size_switch(size)
  return header .. "SIZE=${SIZE:-" .. size .. "}\n" ..
         "if [ \"$SIZE\" = small ]; then\n  MBS=1\nelse\n  MBS=4\n" ..
         "  for i in 1; do echo; done\nfi\n" ..
         "if [ \"$SIZE\" = test ]; then\n  " .. ooms .. "\nfi\n" ..
         launch(32, "$MBS") .. "\n"
end
scripts.size_switch_small = function() return size_switch("small") end
scripts.size_switch_big = function() return size_switch("big") end
-- Megatron-LM's llama3 example's style: fp8 arguments appended when
-- DTYPE is fp8 (decided: it is), data arguments by a condition on the
-- script's arguments (both checked), the arrays joined with +=.
scripts.megatron_example_conditional = function()
  return megatron_example(1):gsub("torchrun ", "DTYPE=bf16\nDTYPE_ARGS=()\n" ..
      "if [[ \"$DTYPE\" == \"fp8\" ]]; then\n" ..
      "    DTYPE_ARGS+=(\n        \"--fp8-format hybrid\"\n    )\nfi\n" ..
      "DATA_ARGS=()\nif [[ \"$1\" == \"MOCK\" ]] || [[ -z \"$1\" ]]; then\n" ..
      "    DATA_ARGS+=(--mock-data)\nelse\n" ..
      "    DATA_ARGS+=(\"--data-path $1\")\nfi\n" ..
      "DDP_ARGS=(--overlap-grad-reduce)\n" ..
      "TRAINING_ARGS+=(\"${DDP_ARGS[@]}\")\ntorchrun ", 1) ..
      "    ${DTYPE_ARGS[@]} ${DATA_ARGS[@]}\n"
end
-- What the hook does not follow inside a block: a loop (the arrays the
-- block set are unread), an `else` with a command on its line (once
-- taken for part of the branch above it, the MBS 4 of the else would
-- have replaced the MBS 1 and never been checked... here the reverse:
-- the else's MBS 4 is refused by name, not read as the then's).
scripts.array_in_branch_with_loop = function()
  return header .. "if [ -n \"$BIG\" ]; then\n" ..
         "  EXTRA=(--micro-batch-size 4)\n  for i in 1 2; do echo $i; done\n" ..
         "fi\n" .. fits .. " ${EXTRA[@]}\n"
end
scripts.else_with_a_command = function()
  return header .. "if [ -n \"$BIG\" ]; then\n" ..
         "  EXTRA=(--micro-batch-size 1)\nelse echo small\n" ..
         "  EXTRA=(--micro-batch-size 4)\nfi\n" .. fits .. " ${EXTRA[@]}\n"
end
-- A heredoc's lines are text, so its `else` ends no branch: the block
-- goes on (the branch's MBS 4 is checked). One whose end the hook cannot
-- tell (<<"$END") would leave its lines read as commands: inside a block
-- it stops the hook following it (its arrays unread).
local function heredoc_in_a_block(delimiter, ending)
  return header .. "if [ -n \"$X\" ]; then\n  EXTRA=(--micro-batch-size 1)\n" ..
         "  cat > notes.txt <<" .. delimiter .. "\nelse\n" .. ending .. "\n" ..
         "  EXTRA+=(--micro-batch-size 4)\nfi\n" .. fits .. " ${EXTRA[@]}\n"
end
scripts.heredoc_in_a_block = function() return heredoc_in_a_block("EOF", "EOF") end
scripts.heredoc_of_unknown_end_in_a_block = function()
  return heredoc_in_a_block("\"$END\"", "done")
end
-- A `&&` or `||` with its command on the line puts nothing below it
-- under a condition (`DIR="$(cd .. && pwd)"`, `mkdir -p $D || exit 1`,
-- in most training scripts, once made every array after them unread);
-- one that ends its line (a comment after it) does.
scripts.and_or_lines = function()
  return header .. "REPO=\"$(cd \"$(dirname \"$0\")\" && pwd)\"\n" ..
         "mkdir -p /tmp/logs || exit 1\nARGS=(--micro-batch-size 4)\n" ..
         fits .. " ${ARGS[@]}\n"
end
scripts.and_ending_its_line = function()
  return header .. "[ -n \"$BIG\" ] && # \"big\"\n" ..
         "ARGS=(--micro-batch-size 4)\n" .. fits .. " ${ARGS[@]}\n"
end
-- A heredoc's lines are text: an append written into a file is not the
-- script's (read as one, it gave the launch MBS 1 after the MBS 4 it
-- runs with); what they look like setting is unknown, and a launch
-- among them is checked (here the fitting one, with the script's MBS).
scripts.heredoc_body_is_text = function()
  return header .. "ARGS=(--micro-batch-size 4)\n" ..
         "cat > more_args.sh <<-'END'\n\tARGS+=(--micro-batch-size 1)\n" ..
         "\tEND\n" .. fits .. " ${ARGS[@]}\n"
end
scripts.heredoc_launch_checked = function()
  return header .. "cat > run.sh <<EOF\n" .. ooms .. "\nEOF\nbash run.sh\n"
end
-- A string spanning lines is text too (an append inside an echo's usage
-- text was read as the script's: MBS 1 after the MBS 4 it runs with);
-- quotes of every kind that close on their line leave the lines after
-- them commands (the append there is read: MBS 4 after MBS 1).
scripts.string_spanning_lines_is_text = function()
  return header .. "ARGS=(--micro-batch-size 4)\necho \"usage:\n" ..
         "ARGS+=(--micro-batch-size 1)\n\"\n" .. fits .. " ${ARGS[@]}\n"
end
scripts.quotes_that_close = function()
  return header .. "ARGS=(--micro-batch-size 1)\n" ..
         "X=\"$(cat \"$F\")\" # it's fine\n" ..
         "echo 'say \"hi\"' \"it's\" $'it\\'s' \\\\ \\\"\n" ..
         "ARGS+=(--micro-batch-size 4)\n" .. fits .. " ${ARGS[@]}\n"
end
-- Quotes are followed over the whole script, a step each: 2 million of
-- them (4 MiB of `"a" `) are refused past a million, not followed for
-- seconds.
scripts.quotes_4mb = function()
  local line = string.rep('"a" ', 1024) .. "\n"
  return header .. string.rep("echo " .. line, 1000) .. fits .. "\n"
end
-- Bounds: five conditions of two lists each are 32 launches to check,
-- past 16: refused naming the arrays; a 60,000-line elif chain over 1,000
-- arrays restores them at each branch: refused past 100,000 restores,
-- not run for minutes; a 4 MiB line of keywords inside a block, each
-- looked for as a command.
scripts.variants_too_many = function()
  local lines, uses = { header }, {}
  for i = 1, 5 do
    lines[#lines + 1] = "if [ -n \"$X" .. i .. "\" ]; then\n  A" .. i ..
                        "=(--seed " .. i .. ")\nfi\n"
    uses[#uses + 1] = "${A" .. i .. "[@]}"
  end
  return table.concat(lines) .. fits .. " " .. table.concat(uses, " ") .. "\n"
end
scripts.elif_chain_over_many_arrays = function()
  local lines = { header, "if [ \"$X\" = 0 ]; then\n" }
  for i = 1, 1000 do lines[#lines + 1] = "A" .. i .. "=(x)\n" end
  for i = 1, 60000 do
    lines[#lines + 1] = "elif [ \"$X\" = " .. i .. " ]; then\n"
  end
  return table.concat(lines) .. "fi\n" .. fits .. "\n"
end
scripts.keywords_4mb_in_a_block = function()
  local tail = "fi\n" .. fits .. "\n"
  local open = "if [ -n \"$X\" ]; then\n"
  local unit = "xfixifxdonexthenxelsexesac"
  return header .. open ..
         string.rep(unit, math.floor((4 * 1024 * 1024 - #header - #open -
                                      #tail - 64) / #unit)) ..
         "\n" .. tail
end
-- memgate splits a launch's line as bash does: a quoted value holding
-- an operator is the argument's (it once ended the command there, and the
-- MBS 4 after it went unread: admitted), an operator glued to the last
-- argument of a one-line loop is the shell's (`4;` was refused as no
-- number), and a variable's value is one word wherever it holds `;`.
scripts.quoted_value_with_operator = function()
  return header .. fits .. " --wandb-exp-name \"a | b\" --micro-batch-size 4\n"
end
scripts.operator_glued_in_one_line_loop = function()
  return header .. "for SEED in 1; do " .. fits ..
         " --micro-batch-size 4; done\n"
end
scripts.variable_with_operator = function()
  return header .. "RUN=\"a;b\"\n" .. fits ..
         " --wandb-exp-name $RUN --micro-batch-size 4\n"
end
-- A launch a node, through a shell run on a string (the launch's words
-- inside its quotes): read as the commands that string runs.
scripts.launch_in_bash_c = function()
  return header .. "MBS=4\nsrun bash -c \"cd $HOME && " ..
         launch(32, "$MBS") .. " 2>&1\" | tee train.log\n"
end
-- A backslash before $ keeps it literal in bash (Megatron is given
-- "$MBS"): not the script's MBS 1, refused by name.
scripts.escaped_dollar = function()
  return header .. "MBS=1\n" .. launch(32, "\\$MBS") .. "\n"
end
scripts.script_arguments_with_operator = function()
  return header .. fits .. " \"$@\"\n"
end

-- A variable the script sets in an argument loop or after `&&` (or to
-- two values) holds a value the hook cannot know: it stays as written,
-- and memgate refuses it by name where it changes memory. Set in a
-- branch of an `if` block the hook follows, the launch is checked with
-- each value a branch may leave it (here MBS 4, where no branch runs:
-- refused naming that). Each of these ran the MBS 4 job where the hook
-- once read MBS 1.
local mbs_launch = launch(32, "$MBS")
scripts.variable_under_condition = function()
  return header .. "MBS=4\nif [ \"$SMALL\" = 1 ]; then\n  MBS=1\nfi\n" ..
         mbs_launch .. "\n"
end
scripts.variable_in_argument_loop = function()
  return header .. "MBS=1\nwhile [[ $# -gt 0 ]]; do\n  case $1 in\n" ..
         "    --mbs) MBS=\"$2\"; shift 2;;\n    *) shift;;\n  esac\ndone\n" ..
         mbs_launch .. "\n"
end
scripts.variable_after_and = function()
  return header .. "MBS=1\n[ -n \"$BIG\" ] && MBS=4\n" .. mbs_launch .. "\n"
end
scripts.variable_computed_later = function()
  return header .. "MBS=1\nMBS=$((MBS * 4))\n" .. mbs_launch .. "\n"
end
-- A loop on the launch's own line sets what it uses.
scripts.variable_set_by_launch_loop = function()
  return header .. "MBS=1\nfor MBS in 1 4; do " .. mbs_launch .. "; done\n"
end
-- The job's environment (sbatch exports the submitting shell's) holds
-- MBS=4, which the script replaces only when it is empty: both are seen.
scripts.variable_in_environment = function()
  return header .. "if [ -z \"$MBS\" ]; then\n  MBS=1\nfi\n" ..
         mbs_launch .. "\n"
end
-- A launch in a loop or a function runs again with what the script sets
-- after it (bash comes back to it): each of these ran MBS 4 where the
-- hook read MBS 1, the value above the launch. Set after a launch that
-- runs once (no loop or function before it, or the value unchanged),
-- nothing changes.
scripts.variable_set_after_launch_in_loop = function()
  return header .. "MBS=1\nfor STEP in 1 2; do\n  " .. mbs_launch ..
         "\n  MBS=4\ndone\n"
end
scripts.variable_doubled_after_launch = function()
  return header .. "MBS=1\nwhile true; do\n  " .. mbs_launch ..
         " || break\n  MBS=$((MBS * 4))\ndone\n"
end
scripts.variable_set_between_function_calls = function()
  return header .. "MBS=1\ntrain() {\n  " .. mbs_launch .. "\n}\n" ..
         "train\nMBS=4\ntrain\n"
end
scripts.default_set_after_launch_in_loop = function()
  return header .. "for STEP in 1 2; do\n  " .. launch(32, "${MBS:-1}") ..
         "\n  MBS=4\ndone\n"
end
scripts.variable_sourced_after_launch_in_loop = function()
  return header .. "MBS=1\nfor STEP in 1 2; do\n  " .. mbs_launch ..
         "\n  source ./next_stage.sh\ndone\n"
end
scripts.array_set_after_launch_in_loop = function()
  return header .. "ARGS=(--micro-batch-size 1)\nfor STEP in 1 2; do\n  " ..
         fits .. " ${ARGS[@]}\n  ARGS=(--micro-batch-size 4)\ndone\n"
end
scripts.arguments_shifted_after_launch_in_loop = function()
  return header .. "while [ $# -gt 0 ]; do\n  " .. launch(32, "$1") ..
         "\n  shift\ndone\n"
end
scripts.arguments_shifted_on_launch_line = function()
  return header .. "while [ $# -gt 0 ]; do " .. launch(32, "$1") ..
         "; shift; done\n"
end
scripts.te_set_after_launch_in_loop = function()
  return header .. "for STEP in 1 2; do\n  " .. fits .. "\n" ..
         "  export NVTE_FLASH_ATTN=0\n  export NVTE_FUSED_ATTN=0\ndone\n"
end
-- The bound of that bookkeeping: 64 launches in a loop, each taking
-- $RUN and its own ${TAG:-tN}, then 4 MiB of assignments to both (the
-- first TAG=t1 sets 63 launches' TAG again, which stays as written in a
-- run name; every later one finds one value left): linear.
scripts.loop_launches_then_4mb_assignments = function()
  local launches = {}
  for i = 1, 64 do
    launches[i] = "  " .. fits .. " --wandb-exp-name $RUN-${TAG:-t" .. i .. "}"
  end
  local body = "RUN=x\nfor S in 1 2; do\n" .. table.concat(launches, "\n") ..
               "\ndone\n"
  local line = "RUN=x  # the run's name, set again as each stage ends\n" ..
               "TAG=t1  # its tag, the same for every stage of the run\n"
  return header .. body ..
         string.rep(line, math.floor((4 * 1024 * 1024 - #header - #body) /
                                     #line))
end
scripts.variable_set_after_launch_at_top = function()
  return header .. "MBS=1\n" .. mbs_launch .. "\nMBS=4\necho done\n"
end
scripts.variable_kept_after_launch_in_loop = function()
  return header .. "MBS=1\nfor STEP in 1 2; do\n  " .. mbs_launch ..
         "\n  MBS=1\n  unset OTHER\ndone\n"
end
-- ${MBS:-1}: the job's environment's MBS where it has one (MBS=4 runs
-- out of memory), else the default (the fitting MBS 1), as bash takes it;
-- in an assignment or in the launch itself.
scripts.default_from_environment = function()
  return header .. "MBS=${MBS:-1}\n" .. mbs_launch .. "\n"
end
scripts.default_without_environment = function()
  return header .. "MBS=\"${MBS:-1}\"\n" .. mbs_launch .. "\n"
end
scripts.default_in_launch = function()
  return header .. launch(32, "${MBS:-4}") .. "\n"
end
-- Where the hook could not read the job's environment, the default may
-- not be what runs: unknown, refused by name.
scripts.default_without_job_environment = function()
  return header .. launch(32, "${MBS:-1}") .. "\n"
end
scripts.default_after_unset = function()
  return header .. "unset MBS\n" .. launch(32, "${MBS:-1}") .. "\n"
end
-- A file the script sources may set again what it set before; what it
-- sets after is its own.
scripts.variable_before_source = function()
  return header .. "MBS=1\nsource ./config.sh\n" .. mbs_launch .. "\n"
end
-- `.` run after an operator (the file may set MBS: it was read as 1),
-- and a word `.` that runs nothing (MBS still read).
scripts.variable_before_dot_after_and = function()
  return header .. "MBS=1\n[ -f env.sh ] && . ./env.sh\n" .. mbs_launch .. "\n"
end
scripts.variable_before_find_dot = function()
  return header .. "MBS=4\nfind . -name '*.idx' | head -1\n" ..
         mbs_launch .. "\n"
end
scripts.variable_after_source = function()
  return header .. "source /etc/profile.d/modules.sh\nMBS=4\n" ..
         mbs_launch .. "\n"
end
scripts.variable_before_export_of_a_file = function()
  return header .. "MBS=1\nexport $(grep -v '^#' .env | xargs)\n" ..
         mbs_launch .. "\n"
end
scripts.array_before_source = function()
  return header .. "ARGS=(--micro-batch-size 1)\n. ./config.sh\n" ..
         fits .. " ${ARGS[@]}\n"
end
-- Set twice to the same value, or once before a comment: read.
scripts.variable_set_twice_alike = function()
  return header .. "MBS=4\nexport MBS=4\n" .. mbs_launch .. "\n"
end
scripts.variable_before_comment = function()
  local tp_launch = mbs_launch:gsub("tensor%-model%-parallel%-size 4",
                                    "tensor-model-parallel-size $TP")
  return header .. "MBS=4  # micro-batch size\nexport PATH=$PATH:/opt/bin\n" ..
         "TP=4;\n" .. tp_launch .. "\n"
end
-- TransformerEngine's switches set under a condition on one line, or to
-- two values: unknown, refused by name ("?").
scripts.te_under_condition = function()
  return header .. "if [ -n \"$SLOW\" ]; then export NVTE_FLASH_ATTN=0; fi\n" ..
         fits .. "\n"
end
-- The job's environment runs the unfused attention; the script turns
-- FlashAttention on only under a condition: unknown, refused by name.
scripts.te_environment_then_condition = function()
  return header .. "if [ -n \"$FAST\" ]; then\n  export NVTE_FLASH_ATTN=1\n" ..
         "fi\n" .. fits .. "\n"
end
scripts.te_set_twice = function()
  return header .. "export NVTE_FLASH_ATTN=1\nif [ -n \"$SLOW\" ]; then\n" ..
         "  export NVTE_FLASH_ATTN=0\nfi\n" .. fits .. "\n"
end
-- Bounds: an array that never closes is read a line's worth, then
-- refused; 4 MiB of assignments the hook cannot follow (every form it
-- looks for, on every line) is read in linear time.
scripts.array_unclosed = function()
  return header .. "ARGS=(\n" .. filler(4 * 1024 * 1024 - 4096) .. fits .. "\n"
end
scripts.assignments_4mb = function()
  local line = "A=1; [ -n \"$B\" ] && C=2; for D in 1 2; do E+=3; done; " ..
               "read F G; ((H++)); printf -v I x; : ${J:=4}\n"
  local tail = fits .. "\n"
  return header ..
         string.rep(line,
                    math.floor((4 * 1024 * 1024 - #header - #tail - 64) / #line)) ..
         tail
end
-- A heredoc of prose where lines start with "read": every word of such a
-- line may be set (read's), 6,000 of them: remembered, not refused; far
-- more are refused naming the bound.
local function read_lines(words)
  local lines = {}
  for i = 1, words / 6 do
    lines[#lines + 1] = string.format("read w%da w%db w%dc w%dd w%de w%df",
                                      i, i, i, i, i, i)
  end
  return table.concat(lines, "\n") .. "\n"
end
scripts.read_words_many = function()
  return header .. "cat > notes.txt <<EOF\n" .. read_lines(6000) .. "EOF\n" ..
         fits .. "\n"
end
scripts.read_words_too_many = function()
  return header .. read_lines(70000) .. fits .. "\n"
end
-- 5,000 variables assigned (arrays count too): over the 4,096 the hook
-- remembers, refused naming the bound.
scripts.too_many_variables = function()
  local lines = {}
  for i = 1, 4000 do lines[#lines + 1] = "V" .. i .. "=1" end
  for i = 1, 1000 do lines[#lines + 1] = "A" .. i .. "=(x)" end
  return header .. table.concat(lines, "\n") .. "\n" .. fits .. "\n"
end
scripts.assignment_names_huge = function()
  return header .. "echo " .. string.rep("a", 200 * 1024) .. "=" ..
         string.rep(" x=", 20 * 1024) .. string.rep("${", 20 * 1024) ..
         string.rep(" for", 20 * 1024) .. "\n" .. fits .. "\n"
end
-- The shell's redirections and pipes on the launch line are not
-- arguments: the fitting launch logged to a file is admitted.
scripts.logged = function()
  return header .. fits .. " 2>&1 | tee $LOG_DIR/train.log\n"
end
-- Another of Megatron-LM's entry points builds another model: refused by
-- name, not estimated as the GPT model its arguments describe.
scripts.vision_language = function()
  return header .. fits:gsub("pretrain_gpt%.py", "pretrain_vlm.py") .. "\n"
end
-- torchrun's GPU count computed when the job runs: the request's 8 GPUs
-- (which the hook passes as --gpus) stand for it.
scripts.gpus_at_run_time = function()
  return header .. "GPUS=$(nvidia-smi -L | wc -l)\n" ..
         fits:gsub("nproc%-per%-node 8", "nproc-per-node $GPUS") .. "\n"
end
scripts.variables = function()
  return header .. "export MBS=4\nTP=4\n" ..
         launch(32, "${MBS}"):gsub("tensor%-model%-parallel%-size 4", "tensor-model-parallel-size $TP") .. "\n"
end

-- A fine-grained MoE launch (64 experts, top 8) on 8 A100s, 6 layers at
-- 8k, TP 2, EP 8: 33.0 GiB with the release unknown (the larger of the two
-- releases' expert terms), 31.5 GiB under Megatron-Core 0.13.0, which
-- applies the routing probabilities in the experts: refused by default,
-- admitted where the site says it runs 0.13.0 (hook_test.sh runs both).
scripts.moe_release = function()
  return header .. launch(6, 1, " --num-experts 64 --moe-router-topk 8 " ..
         "--moe-ffn-hidden-size 1792 --expert-model-parallel-size 8 " ..
         "--expert-tensor-parallel-size 1 --moe-token-dispatcher-type alltoall")
         :gsub("tensor%-model%-parallel%-size 4", "tensor-model-parallel-size 2")
         :gsub("pipeline%-model%-parallel%-size 2", "pipeline-model-parallel-size 1") .. "\n"
end

-- The launch that fits, with an argument of no Megatron-LM memgate was
-- reviewed against (a fork's): admitted with a note by default, refused
-- where the site refuses what memgate has not reviewed (hook_test.sh runs
-- both).
scripts.fork_argument = function()
  return header .. launch(32, 1, " --my-fork-offload-experts 2") .. "\n"
end

-- TransformerEngine's attention switches (memgate_launch.lua): exported
-- by the script, or in the job's environment, FlashAttention and cuDNN's
-- fused attention off run TE's unfused attention, whose 8192^2 scores the
-- fitting launch cannot hold; not exported, or unset again, or with
-- cuDNN left on (which trains Llama's heads on an A100), they change
-- nothing.
local te_off = "export NVTE_FLASH_ATTN=0\nexport NVTE_FUSED_ATTN=0\n"
scripts.te_exported = function() return header .. te_off .. fits .. "\n" end
scripts.te_exported_after = function()
  return header .. "NVTE_FLASH_ATTN=0\nNVTE_FUSED_ATTN=0\nexport NVTE_FLASH_ATTN\n" ..
         "export NVTE_FUSED_ATTN\n" .. fits .. "\n"
end
scripts.te_not_exported = function()
  return header .. "NVTE_FLASH_ATTN=0\nNVTE_FUSED_ATTN=0\n" .. fits .. "\n"
end
scripts.te_unset = function()
  return header .. te_off .. "unset NVTE_FUSED_ATTN\n" .. fits .. "\n"
end
-- A value from another variable is looked up; one computed at run time
-- is unknown, and refused by name rather than guessed.
scripts.te_from_variable = function()
  return header .. "OFF=0\nexport NVTE_FLASH_ATTN=$OFF\nexport NVTE_FUSED_ATTN=${OFF}\n" ..
         fits .. "\n"
end
-- ${NAME:-default}: the job's environment's where it has one, else the
-- default; with neither, the default (FlashAttention on: it fits).
scripts.te_default_from_environment = function()
  return header .. "export NVTE_FLASH_ATTN=${NVTE_FLASH_ATTN:-1}\n" ..
         "export NVTE_FUSED_ATTN=${NVTE_FUSED_ATTN:-1}\n" .. fits .. "\n"
end
scripts.te_default_without_environment = function()
  return header .. "export NVTE_FLASH_ATTN=${NVTE_FLASH_ATTN:-1}\n" ..
         "export NVTE_FUSED_ATTN=${NVTE_FUSED_ATTN:-1}\n" .. fits .. "\n"
end
scripts.te_computed = function()
  return header .. "export NVTE_FLASH_ATTN=\"$(cat /etc/flash)\"\n" .. fits .. "\n"
end
-- Quoted, and with a comment: still a literal 0.
scripts.te_quoted = function()
  return header .. "export NVTE_FLASH_ATTN='0'  # debugging\n" ..
         "export NVTE_FUSED_ATTN=\"0\"\n" .. fits .. "\n"
end
-- NVTE_MASKED_SOFTMAX_FUSION=0 beside them: the unfused attention keeps
-- torch's fp32 softmax output too.
scripts.te_softmax_exported = function()
  return header .. te_off .. "export NVTE_MASKED_SOFTMAX_FUSION=0\n" .. fits .. "\n"
end
scripts.te_softmax_job_environment = function() return header .. fits .. "\n" end
-- NVTE_BACKWARD_OVERRIDE=high_precision beside an fp8 launch: its GEMMs
-- keep 16-bit inputs, which memgate does not model: refused by name.
scripts.te_backward_override = function()
  return header .. "export NVTE_BACKWARD_OVERRIDE=high_precision\n" ..
         launch(32, 1, " --fp8-format hybrid --fp8-recipe tensorwise") .. "\n"
end
scripts.te_job_environment = function() return header .. fits .. "\n" end
-- The job's environment turns cuDNN's fused attention off and the script
-- turns it on: which holds when the launch runs depends on whether that
-- line runs, which a reader of the text cannot tell (the line may sit
-- under a condition): refused by name.
scripts.te_job_environment_overridden = function()
  return header .. "export NVTE_FUSED_ATTN=1\n" .. fits .. "\n"
end
-- A value int() refuses (a space inside, a variable, 100 KiB of digits)
-- is refused by name, never split, expanded or echoed whole.
scripts.te_job_environment_odd = function() return header .. fits .. "\n" end
scripts.te_job_environment_huge = function() return header .. fits .. "\n" end
-- Runs of blanks before a last word, where a pattern that strips trailing
-- blanks (%s+$) retries from every blank: quadratic (80,000 blanks took
-- 29 s). In the job's environment, in the script's export, and after a
-- `shift`: each decided in linear time.
local blanks = string.rep(" ", 1024 * 1024)
scripts.te_job_environment_blanks = function() return header .. fits .. "\n" end
scripts.te_export_blanks = function()
  return header .. "export NVTE_FLASH_ATTN=1" .. blanks .. "x\n" .. fits .. "\n"
end
scripts.script_shifted_blanks = function()
  return header .. "shift" .. blanks .. "x\n" .. fits .. " \"$@\"\n"
end
local environments = {
  te_job_environment_blanks = {
    NVTE_FLASH_ATTN = "1" .. string.rep(" ", 100 * 1024) .. "x" },
  te_job_environment = { NVTE_FLASH_ATTN = "0", NVTE_FUSED_ATTN = " 0 " },
  te_softmax_job_environment = { NVTE_FLASH_ATTN = "0", NVTE_FUSED_ATTN = "0",
                                 NVTE_MASKED_SOFTMAX_FUSION = "0" },
  te_job_environment_overridden = { NVTE_FLASH_ATTN = "0", NVTE_FUSED_ATTN = "0" },
  te_job_environment_odd = { NVTE_FLASH_ATTN = "0 $HOME" },
  te_job_environment_huge = { NVTE_UNFUSED_ATTN = string.rep("1", 100 * 1024) },
  variable_in_environment = { MBS = "4" },
  default_from_environment = { MBS = "4" },
  default_after_unset = { MBS = "4" },
  default_without_job_environment = false,
  te_default_from_environment = { NVTE_FLASH_ATTN = "0",
                                  NVTE_FUSED_ATTN = "0" },
  te_environment_then_condition = { NVTE_FLASH_ATTN = "0",
                                    NVTE_FUSED_ATTN = "0" },
}

-- The GPU the job asks for by type: mapped by the site (a100_80g, in the
-- a100 partition of 40 GB cards), a MIG slice the site sizes (1g.10gb:
-- 9.5 GiB), and one it does not (3g.40gb).
scripts.typed_gpu = function() return header .. ooms .. "\n" end
scripts.mig_sized = function() return header .. fits .. "\n" end
scripts.mig_unsized = function() return header .. fits .. "\n" end
scripts.mig_not_megatron = function() return header .. "python eval.py\n" end
-- A hostile request: a 100 KiB GPU type of a MIG shape, quoted 64 bytes.
scripts.gpu_type_huge = function() return header .. fits .. "\n" end
-- A 100 KiB type of digits: the MIG shape is looked for at its end only
-- (an unanchored %d+ over it is quadratic); not a slice, the partition's.
scripts.gpu_type_digits = function() return header .. fits .. "\n" end
local tres = {
  gpu_type_digits = "gres/gpu:" .. string.rep("1", 100 * 1024) .. "x:8",
  typed_gpu = "gres/gpu:a100_80g:8",
  mig_sized = "gres/gpu:1g.10gb:8",
  mig_unsized = "gres/gpu:3g.40gb:8",
  mig_not_megatron = "gres/gpu:3g.40gb:1",
  gpu_type_huge = "gres/gpu:" .. string.rep("x", 100 * 1024) .. "_1g.10gb:8",
}

-- The script's own arguments (sbatch train.sh --micro-batch-size 4):
-- Slurm's job_desc.argv, the script's path first, at index 0 or 1. "$@"
-- with none is nothing; with the MBS-4 override, the 51.58 GiB job; $1
-- one of them; unknown (no argv), refused by name.
local at_args = header .. fits .. " \"$@\"\n"
scripts.script_no_arguments = function() return at_args end
scripts.script_arguments = function() return at_args end
scripts.script_positional = function()
  return header .. launch(32, "$1") .. "\n"
end
scripts.script_arguments_unknown = function() return at_args end
scripts.script_arguments_huge = function() return at_args end
-- The script moves its arguments before the launch reads them: a config
-- taken off the front (`shift`), or an argument loop; which ones "$@"
-- holds is decided at run time: refused naming the line. An argument loop
-- whose launch names no positional parameter is read as before.
scripts.script_shifted = function()
  return header .. "CONFIG=$1\nshift\n" .. at_args
end
scripts.script_set_arguments = function()
  return header .. "set -- --micro-batch-size 1\n" .. at_args
end
scripts.script_shifted_positional = function()
  return header .. "WARMUP_MBS=$1\nshift\n" .. launch(32, "$1") .. "\n"
end
-- An array of the script's arguments: taken before a line moves them,
-- they are the job's (its MBS 4); after, refused naming the line.
scripts.script_arguments_array = function()
  return header .. "ARGS=(\"$@\")\nshift\n" .. fits .. " ${ARGS[@]}\n"
end
scripts.script_arguments_array_shifted = function()
  return header .. "shift\nARGS=(\"$@\")\n" .. fits .. " ${ARGS[@]}\n"
end
-- A launch in a shell function: its $1 is the function's argument (8
-- here), not the script's: refused naming the function; one-line
-- functions too. After the function's end, $1 is the script's again.
scripts.script_positional_in_function = function()
  return header .. "train() {\n  " .. launch(32, "$1") .. "\n}\ntrain 4\n"
end
scripts.script_positional_after_function = function()
  return header .. "function setup {\n  echo ready\n}\n" ..
         "log() { echo \"$1\"; }\n" .. launch(32, "$1") .. "\n"
end
scripts.script_positional_in_one_line_function = function()
  return header .. "train() { " .. launch(32, "$1") .. "; }\ntrain 4\n"
end
scripts.script_argument_loop = function()
  return header .. "while [[ $# -gt 0 ]]; do\n  case $1 in\n" ..
         "    --mbs) MBS=$2; shift 2;;\n    *) shift;;\n  esac\ndone\n" ..
         fits .. "\n"
end
-- The script named by a variable the job's environment sets: the words
-- after it are Megatron's arguments all the same, and one the shell
-- supplies among them is refused by name.
scripts.script_variable_hidden = function()
  return header .. fits:gsub("pretrain_gpt%.py", "$SCRIPT") ..
         " $EXTRA_ARGS\n"
end
local argvs = {
  script_shifted = { [0] = "train.sh", "cfg.yaml", "--micro-batch-size", "4" },
  script_shifted_positional = { [0] = "train.sh", "1", "4" },
  script_set_arguments = { [0] = "train.sh", "--micro-batch-size", "4" },
  script_shifted_blanks = { [0] = "train.sh", "--micro-batch-size", "4" },
  script_argument_loop = { [0] = "train.sh", "--mbs", "4" },
  script_arguments_array = { [0] = "train.sh", "--micro-batch-size", "4" },
  script_arguments_array_shifted = { [0] = "train.sh", "x",
                                     "--micro-batch-size", "4" },
  variable_in_argument_loop = { [0] = "train.sh", "--mbs", "4" },
  arguments_shifted_after_launch_in_loop = { [0] = "train.sh", "1", "4" },
  arguments_shifted_on_launch_line = { [0] = "train.sh", "1", "4" },
  script_no_arguments = { [0] = "train.sh" },
  script_arguments = { [0] = "train.sh", "--micro-batch-size", "4" },
  script_arguments_with_operator = { [0] = "train.sh", "--wandb-exp-name",
                                     "a;b", "--micro-batch-size", "4" },
  script_positional = { "train.sh", "4" },
  condition_on_script_argument_none = { "train.sh" },
  condition_on_script_argument_big = { "train.sh", "big" },
  script_positional_in_function = { "train.sh", "1" },
  script_positional_after_function = { "train.sh", "4" },
  script_positional_in_one_line_function = { "train.sh", "1" },
  script_arguments_huge = { [0] = "train.sh", string.rep("x", 300 * 1024) },
}

local make = scripts[scenario]
if make == nil then
  io.stderr:write("unknown scenario " .. tostring(scenario) .. "\n")
  os.exit(2)
end
local job_desc = {
  script = make(),
  min_nodes = 1,
  tres_per_node = tres[scenario] or "gres/gpu:8",
  argv = argvs[scenario],
  partition = "a100",
  -- A batch job's environment, empty unless the scenario gives one
  -- (false: none the hook can read).
  environment = environments[scenario] == nil and {} or
                environments[scenario] or nil,
}
local rc = slurm_job_submit(job_desc, {}, 1000)
job_desc = nil
local hwm = 0
for line in io.lines("/proc/self/status") do
  local kib = line:match("^VmHWM:%s+(%d+)")
  if kib then hwm = tonumber(kib) end
end
print(string.format("verdict=%s hwm_kib=%d message=%s",
                    rc == slurm.SUCCESS and "admit" or "refuse", hwm,
                    (table.concat(user_messages, " | "):gsub("\n", " "))))
