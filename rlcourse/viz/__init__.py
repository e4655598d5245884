"""Pictures of environments and of what the trainers produce.

:mod:`.plots` (learning curves, PPO diagnostics) and :mod:`.grid` (grid worlds with values and
policy arrows) draw with matplotlib; :mod:`.scene` (drawing primitives and a Pillow rasteriser),
:mod:`.renderers` (a state of each environment as a scene), :mod:`.player` (episodes recorded
into an offline HTML player or a GIF) and :mod:`.text` (language-model samples as a table)
animate episodes. matplotlib and Pillow are imported only when drawing. Imports numpy and
``rlcourse.envs`` only: never a trainer or the course layer.
"""
