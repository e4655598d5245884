"""Building blocks: pure functions on arrays, one of each, that the trainers are made of.

``autodiff`` (reverse-mode gradients), ``nn`` (layers, init, checkpoints), ``optim`` (Adam, SGD,
clipping, schedules), ``returns`` (discounted returns, n-step, GAE, group-relative advantages),
``distributions`` (categorical and Gaussian policies), ``sampling`` (token filters),
``importance`` (importance weights and estimators), ``losses`` (PPO's clip, Huber, preference
and GRPO losses), ``tokens`` and ``kl`` (token log-probs, masks and KL), ``tokenizer``,
``transformer`` and ``lm`` (a tiny causal transformer and the language-model API on it),
``blas`` and ``heap`` (process settings for small arrays). Nothing here imports a trainer or
the course layer.
"""
