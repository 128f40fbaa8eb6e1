"""Training: optimizers and schedules, strategies, callbacks, input, the loop.

Imports keras_bert.models (never the reverse).
"""

from keras_bert.training.callbacks import StepLogger, TensorBoard
from keras_bert.training.distribute import STRATEGIES, resolve_strategy, strategy_name
from keras_bert.training.distribute import worker_info
from keras_bert.training.input_pipeline import pretraining_dataset
from keras_bert.training.optimizers import OPTIMIZERS, WEIGHT_DECAY_EXCLUDE, AdamW, Lamb
from keras_bert.training.optimizers import create_optimizer
from keras_bert.training.pretrain import PretrainingConfig, build_pretrainer, cpu_has_amx
from keras_bert.training.pretrain import evaluate_pretraining, resolve_jit_compile
from keras_bert.training.pretrain import run_pretraining
from keras_bert.training.schedules import LinearWarmupLinearDecay
from keras_bert.training.trainer import Trainer, TrainingInterrupted

__all__ = [
    "AdamW", "Lamb", "LinearWarmupLinearDecay", "OPTIMIZERS", "PretrainingConfig",
    "STRATEGIES", "StepLogger", "TensorBoard", "Trainer", "TrainingInterrupted",
    "WEIGHT_DECAY_EXCLUDE", "build_pretrainer", "cpu_has_amx", "create_optimizer",
    "evaluate_pretraining", "pretraining_dataset", "resolve_jit_compile", "resolve_strategy",
    "run_pretraining", "strategy_name", "worker_info",
]
