"""The course layer: self-checking exercises (``exercises``, ``registry``, ``bank``), notebook
tooling (``notebooks``) and the ``rlcourse`` command (``cli``). No library module imports it."""
