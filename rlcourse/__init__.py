"""rlcourse: tested numpy reference implementations behind the rlcourse lessons.

``import rlcourse as rc`` exposes every public name of the submodules (see API.md).
"""

__version__ = "0.1.0"

from . import exercises  # noqa: E402,F401
from .algos import *  # noqa: E402,F401,F403
from .autodiff import *  # noqa: E402,F401,F403
from .bandits import *  # noqa: E402,F401,F403
from .blas import *  # noqa: E402,F401,F403
from .distributions import *  # noqa: E402,F401,F403
from .dp import *  # noqa: E402,F401,F403
from .envs import *  # noqa: E402,F401,F403
from .importance import *  # noqa: E402,F401,F403
from .llm import *  # noqa: E402,F401,F403
from .lm import *  # noqa: E402,F401,F403
from .nn import *  # noqa: E402,F401,F403
from .optim import *  # noqa: E402,F401,F403
from .plot import *  # noqa: E402,F401,F403
from .preference import *  # noqa: E402,F401,F403
from .returns import *  # noqa: E402,F401,F403
from .sampling import *  # noqa: E402,F401,F403
from .search import *  # noqa: E402,F401,F403
from .tabular import *  # noqa: E402,F401,F403
from .viz import *  # noqa: E402,F401,F403
