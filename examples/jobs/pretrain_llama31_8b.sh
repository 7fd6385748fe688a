#!/bin/bash
#SBATCH --nodes=2 --gres=gpu:8
# Llama-3.1-8B on 2 x 8 A100 40GB, as the paper ran it.
torchrun --nnodes 2 --nproc-per-node 8 pretrain_gpt.py \
  --num-layers 32 --hidden-size 4096 --ffn-hidden-size 14336 \
  --num-attention-heads 32 --group-query-attention --num-query-groups 8 \
  --vocab-size 128256 --untie-embeddings-and-output-weights --swiglu \
  --normalization RMSNorm --disable-bias-linear --position-embedding-type rope --hidden-dropout 0 --attention-dropout 0 \
  --tensor-model-parallel-size 4 --pipeline-model-parallel-size 2 \
  --sequence-parallel --use-distributed-optimizer \
  --micro-batch-size 1 --global-batch-size 1024 --seq-length 8192 --bf16
