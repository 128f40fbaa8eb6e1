"""The fields of `FinetuneOptions`: each generic fine-tuning setting's name, default and help.

tools/finetune.py makes a flag of each field (`learning_rate` <-> `--learning-
rate`); `FinetuneOptions` is this class plus the checks of its values.

Field metadata: "help" (the flag's help), "choices", "metavar", "flag" (a
spelling other than --field-name) and "group" (the --help section; default
"training").
"""

import dataclasses

from keras_bert.config import DTYPES
from keras_bert.data.task_options import field

# Light copies of keras_bert.training.pretrain.JIT_SETTINGS and
# keras_bert.training.STRATEGIES, whose modules load TensorFlow;
# tests/test_tools.py checks that they agree.
JIT_COMPILE_CHOICES = ("auto", "on", "off")
STRATEGIES = ("auto", "cpu", "mirrored", "multiworker", "tpu")

CONTROLS = "fine-tuning controls"  # The --help section of the freezing and per-layer rates.


@dataclasses.dataclass
class FinetuneFields:
    """The fields of `keras_bert.training.finetune.FinetuneOptions` (use that class)."""

    learning_rate: float = field(5e-5, "Peak AdamW learning rate.")
    epochs: int = field(3, "Passes over the training data.")
    batch_size: int = field(32, "Global batch size (all replicas).")
    eval_batch_size: int = field(None, "Evaluation batch size (default: --batch-size).")
    warmup_fraction: float = field(
        0.1, "Share of the steps with linear warmup (then linear decay to 0).")
    weight_decay: float = field(
        0.01, "AdamW decoupled weight decay (not on LayerNorm weights, biases).")
    global_clipnorm: float = field(1.0, "Global gradient-norm clipping.")
    dropout_rate: float = field(None, "Head dropout (default: the encoder's dropout_rate).")
    max_seq_length: int = field(
        None, "Longest packed sequence (default: the model's task.json, else 128; span_qa 384).")
    # None: not given (a --lowercase / --no-lowercase switch).
    lowercase: bool = field(
        None, "Lower-case text (default: task.json's, else guessed from vocab.txt).")
    metric: str = field(
        None, "Early-stopping metric (default: accuracy / pearson / macro_f1 / f1).")
    early_stopping_patience: int = field(
        1, "Epochs without improvement before stopping; 0 = never.")
    dtype: str = field("float32", "Keras dtype policy.", choices=DTYPES)
    jit_compile: str = field(
        "auto", "XLA-compile the training step. auto: on with a GPU; off without (on CPU, XLA "
        "compiles every length bucket and was no faster; TPUStrategy compiles anyway).",
        choices=JIT_COMPILE_CHOICES)
    strategy: str = field(
        "auto", "auto: TPU if attached, multiworker if TF_CONFIG names >1 worker (TF_CONFIG "
        "unset: built from Vertex AI's CLUSTER_SPEC or KERAS_BERT_WORKER_HOSTS / a Kubernetes "
        "Indexed Job, see docs/cluster.md), mirrored if >1 GPU, else one device.",
        choices=STRATEGIES)
    seed: int = field(0, "Seed of the head's initialization, dropout and shuffling.")
    log_every: int = field(50, "Steps between log lines.")
    # A str on the command line; a dict {label: weight} too from Python.
    class_weights: object = field(
        None, "Weigh the loss per class (classification, token_classification): auto = "
        "inverse frequency N / (C * n_c), mean 1 over the training labels; FILE = JSON "
        "{label: weight}, one per label.", metavar="auto|FILE")
    freeze_layers: int = field(
        0, "Encoder blocks kept frozen, counted from the bottom.", group=CONTROLS)
    freeze_embeddings: bool = field(False, "Also keep the embedding layer frozen.",
                                    group=CONTROLS)
    layerwise_lr_decay: float = field(
        1.0, "Block k of L trains at lr * decay**(L-1-k), embeddings at lr * decay**L (1.0: no "
        "decay).", group=CONTROLS)
    encoder_lr_multiplier: float = field(
        1.0, "The encoder's learning rate as a fraction of the head's.", group=CONTROLS)
    lora_rank: int = field(
        0, "LoRA: train rank-N adapters on each block's query and value projections (and the "
        "head), the rest of the encoder frozen; the model directory gets merged weights plus "
        "the adapters (model.lora.h5). LoRA wants a much higher --learning-rate than full "
        "fine-tuning (1e-3 or more; BENCHMARKS.md). 0: full fine-tuning.", metavar="N", group=CONTROLS)
