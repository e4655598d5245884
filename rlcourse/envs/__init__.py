"""Environments: the vector protocol (:mod:`.base`), CartPole, gridworlds, bandits, TicTacToe.

Every environment runs ``n`` copies and resets finished copies in the same step; see
:mod:`rlcourse.envs.base` for the exact time semantics of :class:`Step`.
"""

from .bandit import *  # noqa: F401,F403
from .bandit import __all__ as _bandit
from .base import *  # noqa: F401,F403
from .base import __all__ as _base
from .cartpole import *  # noqa: F401,F403
from .cartpole import __all__ as _cartpole
from .gridworld import *  # noqa: F401,F403
from .gridworld import __all__ as _gridworld
from .gym_adapter import *  # noqa: F401,F403
from .gym_adapter import __all__ as _gym
from .tabular import *  # noqa: F401,F403
from .tabular import __all__ as _tabular
from .tictactoe import *  # noqa: F401,F403
from .tictactoe import __all__ as _tictactoe

__all__ = [*_base, *_cartpole, *_tabular, *_gridworld, *_bandit, *_tictactoe, *_gym]
