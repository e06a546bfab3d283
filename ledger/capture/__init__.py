"""Live capture: an agent's plan recorded while it works, through the importers' one mapping.

* :mod:`.identity`: each plan update's identity in the transcript (tool-use id, call id, task id, line).
* :mod:`.append`: the mapping of a whole (growing) transcript, appended where the log does not hold it yet
  (``import --append`` and ``--follow``, and every hook).
* :mod:`.journal`: the hook's own transcript of what the agent's hooks delivered.
* :mod:`.claude`, :mod:`.gemini`, :mod:`.opencode`: each agent's hook payloads, versioned adapters.
* :mod:`.hook`: one hook call, from payload bytes to the JSON the agent reads (never raises).
* :mod:`.acp_recorder`: the plans of an Agent Client Protocol stream that ``plantrail acp`` relays (never raises).
"""

from __future__ import annotations

__all__: list[str] = []
