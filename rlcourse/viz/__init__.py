"""Presentation: draw environment states and play episodes as animations (offline HTML, GIF).

Layers: :mod:`.scene` (drawing primitives and the Pillow rasteriser), :mod:`.renderers` (a state
of each environment as a scene), :mod:`.player` (record episodes, the HTML player, GIFs) and
:mod:`.text` (language-model samples as a table). Imports numpy, matplotlib, Pillow and
``rlcourse.envs`` only.
"""

from .player import *  # noqa: F401,F403
from .player import __all__ as _player
from .renderers import *  # noqa: F401,F403
from .renderers import __all__ as _renderers
from .scene import *  # noqa: F401,F403
from .scene import __all__ as _scene
from .text import *  # noqa: F401,F403
from .text import __all__ as _text

__all__ = [*_scene, *_renderers, *_player, *_text]
