"""Pictures of what the trainers produce: learning curves and PPO diagnostics (``plots``) and
grid worlds with values and policy arrows (``grid``). matplotlib is imported only when drawing."""
