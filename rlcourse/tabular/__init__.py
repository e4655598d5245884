"""Tabular methods: dynamic programming with a known model (``dp``), bandit agents
(``bandits``), and model-free prediction and control from sampled steps (``prediction``,
``control``, with their shared ``targets`` and ``exploration``)."""
