"""Training: optimizers and schedules, strategies, callbacks, input, the loop.

Imports keras_bert.models (never the reverse). The names below load on first
use (PEP 562): keras_bert/training/finetune_fields.py, the generic
fine-tuning settings that tools/finetune.py makes flags of, loads without
TensorFlow.
"""

from keras_bert._lazy import lazy_exports

__getattr__, __dir__, __all__ = lazy_exports(
    __name__,
    {
        "callbacks": ["StepLogger", "TensorBoard"],
        "distribute": ["STRATEGIES", "resolve_strategy", "strategy_name", "worker_info"],
        "input_pipeline": ["pretraining_dataset"],
        "optimizers": ["OPTIMIZERS", "WEIGHT_DECAY_EXCLUDE", "AdamW", "Lamb", "create_optimizer"],
        "pretrain": ["PretrainingConfig", "build_pretrainer", "cpu_has_amx",
                     "evaluate_pretraining", "resolve_jit_compile", "run_pretraining"],
        "schedules": ["LinearWarmupLinearDecay"],
        "trainer": ["Trainer", "TrainingInterrupted"],
    },
)
