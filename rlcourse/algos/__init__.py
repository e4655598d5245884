"""Deep RL algorithms on vector environments: each trainer is one function returning a result."""

from .actor_critic import *  # noqa: F401,F403
from .dqn import *  # noqa: F401,F403
from .dqn_diagnostics import *  # noqa: F401,F403
from .evaluate import *  # noqa: F401,F403
from .ppo import *  # noqa: F401,F403
from .reinforce import *  # noqa: F401,F403
from .rollout import *  # noqa: F401,F403
from .training import *  # noqa: F401,F403
