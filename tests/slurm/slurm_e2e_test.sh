#!/usr/bin/env bash
# memgate's Slurm hook against a real Slurm on this machine: installs
# Debian's slurmctld, slurmd, slurm-client and munge if missing, runs a
# one-node cluster on 127.0.0.1 with JobSubmitPlugins=lua and memgate's
# job_submit.lua, and submits Megatron jobs with sbatch:
#   - one that fits (Llama-3.1-8B, 8 x A100 40GB, TP 4, PP 2, MBS 1) must
#     get a job id;
#   - one that would run out of memory (MBS 4: 51.58 GiB, the paper's 58.33
#     plus Megatron's dataloader attention mask, less what the paper counts
#     beyond Megatron's fused SwiGLU) must be refused with memgate's reason
#     in sbatch's error;
#   - a job without a Megatron launch must pass untouched.
# Every daemon it starts is stopped on exit, also on failure. Needs root.
#
#   tests/slurm/slurm_e2e_test.sh PATH/TO/memgate
set -euo pipefail

memgate=$(readlink -f "${1:?usage: $0 PATH/TO/memgate}")
here=$(cd "$(dirname "$0")" && pwd)
hooks=$(cd "$here/../../client/hooks/slurm" && pwd)
[ "$(id -u)" -eq 0 ] || { echo "slurm e2e: needs root" >&2; exit 1; }

need=()
for p in slurmctld slurmd slurm-client munge; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || need+=("$p")
done
if [ ${#need[@]} -gt 0 ]; then
  apt-get update -q
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${need[@]}"
fi

work=$(mktemp -d /tmp/memgate-slurm.XXXXXX)
started_munged=""
cleanup() {
  set +e
  for pidfile in "$work/slurmd.pid" "$work/slurmctld.pid"; do
    [ -f "$pidfile" ] && kill "$(cat "$pidfile")" 2>/dev/null
  done
  sleep 1
  for pidfile in "$work/slurmd.pid" "$work/slurmctld.pid"; do
    [ -f "$pidfile" ] && kill -9 "$(cat "$pidfile")" 2>/dev/null
  done
  if [ -n "$started_munged" ] && [ -f "$work/munged.pid" ]; then
    kill "$(cat "$work/munged.pid")" 2>/dev/null
  fi
  rm -rf "$work"
}
trap cleanup EXIT

fail() {
  echo "FAIL: $*" >&2
  echo "--- slurmctld.log (tail)" >&2
  tail -n 30 "$work/slurmctld.log" >&2 2>/dev/null || true
  exit 1
}

# munge: a key if there is none, and munged unless one already answers.
mkdir -p /etc/munge /run/munge /var/lib/munge /var/log/munge
if [ ! -s /etc/munge/munge.key ]; then
  dd if=/dev/urandom of=/etc/munge/munge.key bs=1024 count=1 status=none
fi
chown -R munge:munge /etc/munge /run/munge /var/lib/munge /var/log/munge
chmod 400 /etc/munge/munge.key
if ! munge -n >/dev/null 2>&1; then
  runuser -u munge -- /usr/sbin/munged
  started_munged=yes
  pgrep -n -u munge -x munged > "$work/munged.pid"
  for _ in $(seq 50); do munge -n >/dev/null 2>&1 && break; sleep 0.1; done
  munge -n >/dev/null || fail "munged did not start"
fi

# Two free ports on loopback for slurmctld and slurmd.
read -r ctld_port slurmd_port < <(python3 - <<'PY'
import socket
ports = []
socks = []
for _ in range(2):
    s = socket.socket(); s.bind(("127.0.0.1", 0)); socks.append(s)
    ports.append(s.getsockname()[1])
print(*ports)
PY
)

host=$(hostname -s)
node_line=$(slurmd -C | head -n 1)
cpus=$(sed -n 's/.*CPUs=\([0-9]*\).*/\1/p' <<< "$node_line")
memory=$(sed -n 's/.*RealMemory=\([0-9]*\).*/\1/p' <<< "$node_line")
mkdir -p "$work/state" "$work/spool"
cat > "$work/slurm.conf" <<CONF
ClusterName=memgate-e2e
SlurmctldHost=${host}(127.0.0.1)
SlurmctldPort=${ctld_port}
SlurmdPort=${slurmd_port}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
StateSaveLocation=${work}/state
SlurmdSpoolDir=${work}/spool
SlurmctldPidFile=${work}/slurmctld.pid
SlurmdPidFile=${work}/slurmd.pid
SlurmctldLogFile=${work}/slurmctld.log
SlurmdLogFile=${work}/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
JobSubmitPlugins=lua
GresTypes=gpu
ReturnToService=2
NodeName=${host} NodeAddr=127.0.0.1 CPUs=${cpus} RealMemory=${memory} Gres=gpu:8 State=UNKNOWN
PartitionName=a100 Nodes=${host} Default=YES MaxTime=INFINITE State=UP
CONF
# Eight stand-in device files: slurmd counts GPUs by their files.
for i in 0 1 2 3 4 5 6 7; do : > "$work/gpu$i"; done
cat > "$work/gres.conf" <<CONF
AutoDetect=off
NodeName=${host} Name=gpu File=${work}/gpu[0-7]
CONF
# The hook, with this test's memgate and the partition's GPU.
cp "$hooks/memgate_launch.lua" "$work/"
sed -e "s|memgate = \"/usr/local/bin/memgate\"|memgate = \"${memgate}\"|" \
    -e "s|-- a100 = \"a100-40gb\",|a100 = \"a100-40gb\",|" \
    "$hooks/job_submit.lua" > "$work/job_submit.lua"
grep -q "$memgate" "$work/job_submit.lua" || fail "could not configure the hook"

export SLURM_CONF="$work/slurm.conf"
slurmctld -i || fail "slurmctld did not start"
slurmd || fail "slurmd did not start"
for _ in $(seq 100); do
  sinfo -h -o %T 2>/dev/null | grep -qE '^(idle|mixed|allocated)' && break
  sleep 0.2
done
sinfo -h -o %T | grep -qE '^(idle|mixed|allocated)' || fail "node never came up: $(sinfo 2>&1)"

megatron_job() {  # $1: micro-batch size
  cat <<JOB
#!/bin/bash
#SBATCH --nodes=1 --gres=gpu:8 --output=/dev/null --partition=a100
# The launcher is echoed: this test checks admission, not training.
echo torchrun --nnodes 1 --nproc-per-node 8 pretrain_gpt.py \\
  --num-layers 32 --hidden-size 4096 --ffn-hidden-size 14336 \\
  --num-attention-heads 32 --group-query-attention --num-query-groups 8 \\
  --vocab-size 128256 --untie-embeddings-and-output-weights --swiglu \\
  --normalization RMSNorm --disable-bias-linear --position-embedding-type rope --hidden-dropout 0 --attention-dropout 0 \\
  --tensor-model-parallel-size 4 --pipeline-model-parallel-size 2 \\
  --sequence-parallel --use-distributed-optimizer \\
  --micro-batch-size $1 --global-batch-size 1024 --seq-length 8192 --bf16
JOB
}

passed=0
megatron_job 1 > "$work/fits.sh"
out=$(sbatch "$work/fits.sh" 2>&1) || fail "fitting job refused: $out"
grep -qE '^Submitted batch job [0-9]+' <<< "$out" || fail "no job id: $out"
echo "ok: fitting job accepted ($out)"; passed=$((passed + 1))

megatron_job 4 > "$work/oom.sh"
if out=$(sbatch "$work/oom.sh" 2>&1); then fail "OOM job accepted: $out"; fi
grep -q "sbatch: error: memgate: REFUSE \[RED\] peak 51.58 GiB (stage 0) vs limit 32.00 GiB" <<< "$out" ||
  fail "refusal without memgate's reason: $out"
grep -q "fits instead on 8 GPUs" <<< "$out" || fail "no suggestion: $out"
echo "ok: OOM job refused:"; sed 's/^/    /' <<< "$out"; passed=$((passed + 1))

# A launch written with variables, as real scripts are: assignments above
# it and Slurm's own (SLURM_NNODES, SLURM_GPUS_ON_NODE) are substituted.
cat > "$work/vars.sh" <<'JOB'
#!/bin/bash
#SBATCH --nodes=1 --gres=gpu:8 --output=/dev/null --partition=a100
export MBS=4
TP=4
GPT_ARGS="--swiglu"
echo torchrun --nnodes $SLURM_NNODES --nproc-per-node ${SLURM_GPUS_ON_NODE} pretrain_gpt.py \
  --num-layers 32 --hidden-size 4096 --ffn-hidden-size 14336 \
  --num-attention-heads 32 --group-query-attention --num-query-groups 8 \
  --tokenizer-type Llama3Tokenizer --untie-embeddings-and-output-weights --swiglu \
  --normalization RMSNorm --disable-bias-linear --position-embedding-type rope --hidden-dropout 0 --attention-dropout 0 \
  --tensor-model-parallel-size $TP --pipeline-model-parallel-size 2 \
  --sequence-parallel --use-distributed-optimizer \
  --micro-batch-size ${MBS} --global-batch-size 1024 --seq-length 8192 --bf16
JOB
if out=$(sbatch "$work/vars.sh" 2>&1); then fail "OOM job with variables accepted: $out"; fi
grep -q "memgate: REFUSE \[RED\]" <<< "$out" || fail "variables: $out"
echo "ok: a launch written with variables is judged too"; passed=$((passed + 1))

# A launch built from arrays, as Megatron-LM's example scripts write it
# (examples/gpt3, examples/mixtral): the arrays are read, and no line
# inside one is taken for a launch of its own. MBS 4: the OOM job.
cat > "$work/arrays.sh" <<'JOB'
#!/bin/bash
#SBATCH --nodes=1 --gres=gpu:8 --output=/dev/null --partition=a100
DISTRIBUTED_ARGS=(
    --nnodes 1
    --nproc-per-node 8
)
MODEL_ARGS=(
    --num-layers 32 --hidden-size 4096 --ffn-hidden-size 14336
    --num-attention-heads 32 --group-query-attention --num-query-groups 8
    --vocab-size 128256 --untie-embeddings-and-output-weights --swiglu
    --normalization RMSNorm --disable-bias-linear  # Llama's
    --position-embedding-type rope --hidden-dropout 0 --attention-dropout 0
)
TRAINING_ARGS=(
    --tensor-model-parallel-size 4 --pipeline-model-parallel-size 2
    --sequence-parallel --use-distributed-optimizer
    --micro-batch-size 4 --global-batch-size 1024 --seq-length 8192 --bf16
)
echo torchrun ${DISTRIBUTED_ARGS[@]} pretrain_gpt.py \
    ${MODEL_ARGS[@]} \
    ${TRAINING_ARGS[@]}
JOB
if out=$(sbatch "$work/arrays.sh" 2>&1); then fail "OOM job of arrays accepted: $out"; fi
grep -q "memgate: REFUSE \[RED\] peak 51.58 GiB" <<< "$out" || fail "arrays: $out"
echo "ok: a launch built from arrays is judged"; passed=$((passed + 1))

# The script's own arguments: a launch that ends in "$@" is judged with
# what sbatch passes the script (Slurm's job_desc.argv): none, the fitting
# job; --micro-batch-size 4, the OOM one.
sed -e 's|--bf16$|--bf16 "$@"|' "$work/fits.sh" > "$work/args.sh"
grep -qF -- '--bf16 "$@"' "$work/args.sh" || fail "could not write args.sh"
out=$(sbatch "$work/args.sh" 2>&1) || fail "job without arguments refused: $out"
if out=$(sbatch "$work/args.sh" --micro-batch-size 4 2>&1); then
  fail "job whose arguments make it OOM accepted: $out"
fi
grep -q "memgate: REFUSE \[RED\] peak 51.58 GiB" <<< "$out" ||
  fail "script arguments: refusal without memgate's reason: $out"
echo "ok: the script's own arguments (\"\$@\") are read"; passed=$((passed + 1))

# The fitting job submitted from a shell that switches TransformerEngine's
# FlashAttention and fused attention off: sbatch exports its environment to
# the job, whose launch then runs TE's unfused attention (58.33 GiB); the
# hook reads it from the job's environment.
if out=$(NVTE_FLASH_ATTN=0 NVTE_FUSED_ATTN=0 sbatch "$work/fits.sh" 2>&1); then
  fail "job whose environment runs the unfused attention accepted: $out"
fi
grep -q "memgate: REFUSE \[RED\] peak 58.33 GiB" <<< "$out" ||
  fail "environment: refusal without memgate's reason: $out"
# --export=NONE keeps the shell's environment from the job, and Slurm keeps
# it from the hook: the same job is admitted.
out=$(NVTE_FLASH_ATTN=0 NVTE_FUSED_ATTN=0 sbatch --export=NONE "$work/fits.sh" 2>&1) ||
  fail "a job that does not get the environment refused: $out"
echo "ok: the job's environment (TransformerEngine's attention switches) is read"
passed=$((passed + 1))

out=$(sbatch --wrap="hostname" --output=/dev/null 2>&1) || fail "plain job refused: $out"
grep -qE '^Submitted batch job [0-9]+' <<< "$out" || fail "plain job: $out"
echo "ok: job without a Megatron launch untouched"; passed=$((passed + 1))

# The client-side variant: sbatch itself runs cli_filter.lua (from the
# directory of the slurm.conf it reads) before contacting slurmctld.
mkdir -p "$work/cli"
sed 's/^JobSubmitPlugins=lua$/CliFilterPlugins=lua/' "$work/slurm.conf" > "$work/cli/slurm.conf"
cp "$work/gres.conf" "$work/memgate_launch.lua" "$work/cli/"
sed -e "s|memgate = \"/usr/local/bin/memgate\"|memgate = \"${memgate}\"|" \
    -e "s|gpu_by_partition = {},|gpu_by_partition = { a100 = \"a100-40gb\" },|" \
    "$hooks/cli_filter.lua" > "$work/cli/cli_filter.lua"
grep -q "$memgate" "$work/cli/cli_filter.lua" || fail "could not configure cli_filter"
if out=$(SLURM_CONF="$work/cli/slurm.conf" sbatch "$work/oom.sh" 2>&1); then
  fail "cli_filter accepted the OOM job: $out"
fi
grep -q "memgate: REFUSE \[RED\]" <<< "$out" || fail "cli_filter refusal: $out"
grep -q "cli_filter" <<< "$out" || fail "refused, but not by cli_filter: $out"
echo "ok: cli_filter refused the OOM job before it reached slurmctld"
passed=$((passed + 1))
out=$(SLURM_CONF="$work/cli/slurm.conf" sbatch "$work/fits.sh" 2>&1) ||
  fail "cli_filter refused the fitting job: $out"
echo "ok: cli_filter let the fitting job through ($out)"; passed=$((passed + 1))
if out=$(NVTE_FLASH_ATTN=0 NVTE_FUSED_ATTN=0 SLURM_CONF="$work/cli/slurm.conf" \
         sbatch "$work/fits.sh" 2>&1); then
  fail "cli_filter accepted the job whose environment runs the unfused attention: $out"
fi
grep -q "memgate: REFUSE \[RED\] peak 58.33 GiB" <<< "$out" ||
  fail "cli_filter environment refusal: $out"
# --export=NONE keeps the submitting shell's environment from the job.
out=$(NVTE_FLASH_ATTN=0 NVTE_FUSED_ATTN=0 SLURM_CONF="$work/cli/slurm.conf" \
      sbatch --export=NONE "$work/fits.sh" 2>&1) ||
  fail "cli_filter refused a job that does not get the environment: $out"
echo "ok: cli_filter reads the environment sbatch exports to the job"
passed=$((passed + 1))
# A variable the script sets only when the environment has not: with
# MBS=4 exported, the job runs MBS 4, so neither hook substitutes the
# script's 1 (memgate refuses '$MBS' by name); without it, it does.
sed -e 's|--micro-batch-size 1 |--micro-batch-size $MBS |' \
    -e 's|^echo torchrun|if [ -z "$MBS" ]; then\n  MBS=1\nfi\necho torchrun|' \
    "$work/fits.sh" > "$work/env_mbs.sh"
grep -qF -- '--micro-batch-size $MBS' "$work/env_mbs.sh" || fail "could not write env_mbs.sh"
out=$(env -u MBS SLURM_CONF="$work/cli/slurm.conf" sbatch "$work/env_mbs.sh" 2>&1) ||
  fail "cli_filter refused the job with its own MBS: $out"
if out=$(MBS=4 SLURM_CONF="$work/cli/slurm.conf" sbatch "$work/env_mbs.sh" 2>&1); then
  fail "cli_filter accepted the job whose environment sets MBS=4: $out"
fi
grep -qF "got '\$MBS'): a shell expansion" <<< "$out" ||
  fail "cli_filter environment variable: $out"
if out=$(MBS=4 sbatch "$work/env_mbs.sh" 2>&1); then
  fail "job_submit accepted the job whose environment sets MBS=4: $out"
fi
grep -qF "got '\$MBS'): a shell expansion" <<< "$out" ||
  fail "job_submit environment variable: $out"
echo "ok: both hooks read a variable the job's environment sets"
passed=$((passed + 1))
# The script's own arguments, from sbatch's command line.
out=$(SLURM_CONF="$work/cli/slurm.conf" sbatch "$work/args.sh" 2>&1) ||
  fail "cli_filter refused the job without arguments: $out"
if out=$(SLURM_CONF="$work/cli/slurm.conf" \
         sbatch "$work/args.sh" --micro-batch-size 4 2>&1); then
  fail "cli_filter accepted the job whose arguments make it OOM: $out"
fi
grep -q "memgate: REFUSE \[RED\] peak 51.58 GiB" <<< "$out" ||
  fail "cli_filter script arguments: $out"
grep -q "cli_filter" <<< "$out" || fail "refused, but not by cli_filter: $out"
echo "ok: cli_filter reads the script's own arguments"; passed=$((passed + 1))

scancel --user=root 2>/dev/null || true
echo "slurm e2e: ${passed} passed, 0 failed"
