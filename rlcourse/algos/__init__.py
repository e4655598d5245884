"""Deep RL trainers on vector environments: ``ppo``, ``actor_critic``, ``reinforce``, ``dqn``.

Every trainer is one function of the same shape that returns a :class:`~.trainer.TrainResult`
(see :mod:`.trainer` for the shared contract). ``rollout`` collects on-policy data, ``evaluate``
scores a frozen policy, ``models`` builds the networks the lessons use, ``sweep`` runs many
PPO or A2C runs (seeds, settings) side by side, ``dqn_sweep`` many DQN runs and
``reinforce_sweep`` many REINFORCE runs. The names are
re-exported at the top level (``rc.ppo``); this package only holds the modules, so
``rlcourse.algos.ppo`` is the module with the algorithm's docstring.
"""
