"""The benchmarks of tools/benchmark.py, one module per family.

  harness   timing, the machine line, the markdown tables, the subcommand flags
  peers     keras-hub, PyTorch/transformers and tokenizers peer models
  model     encoder inference and training steps (inference, training, profile)
  text      tokenizers and real-text padding (tokenizer, realtext)
  serving   exported SavedModels (serving, serving-e2e, serving-accuracy)
  finetune  fine-tuning side by side (finetune, finetune-step)
  embedding text embeddings: quality before / after fine-tuning, export speed
  lora      low-rank adapters vs full fine-tuning
  data      corpus -> pretraining TFRecords (pretraining-data)

Each family lists its `BENCHMARKS` and adds their subcommands with
`add_parsers(subparsers)`. No module here imports TensorFlow, numpy or
keras_bert at import time, so that `--help` stays fast: each benchmark
imports them when it runs.
"""
