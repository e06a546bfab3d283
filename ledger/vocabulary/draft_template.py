"""The commented TOML draft ``plantrail new`` writes: a goal, one criterion and two steps to edit, with every
optional term of the contract shown as a comment where it goes.

Pure text: the draft as written is a valid plan (``create`` accepts it unedited), and each commented line,
uncommented, is a term the draft parser takes (tests/vocabulary/test_draft_template.py).
"""

from __future__ import annotations

from typing import Final

__all__ = ["TEMPLATE"]

TEMPLATE: Final = """\
# A plantrail plan draft. Edit the texts, then:
#   plantrail check  DRAFT.toml                (every problem at once, nothing written)
#   plantrail create run.jsonl --plan DRAFT.toml
# Lines starting with # are comments: uncomment a term to use it.

goal = "Say in one sentence what the run is for"
# scope = { writes = ["src/**", "tests/**"], reads = ["**"] }   # what the whole task may touch

# A run ends "complete" only when every criterion has passed (plantrail criterion ... --passed).
[[acceptance_criteria]]
id = "done"
description = "What a reviewer checks to accept the work"
# A typed check: the criterion passes only when a --report observes the command's exit code.
# checks = [{ id = "tests-pass", kind = "command_exit", command = "pytest -q", expected_exit_code = 0 }]

[[steps]]
id = "first"
title = "The first thing to do"
completion_evidence = "What shows the first step is done"
# covers = ["done"]                  # the criteria this step's work covers
# priority = 1                       # among ready steps, higher goes first
# max_attempts = 3                   # a whole number >= 1, or "unlimited"
# timeout_s = 600                    # seconds an attempt may take
# writes = ["src/**"]                # the paths this step may change
# allowed_tools = ["Edit", "Bash"]   # the tools this step may use
# requires_approval = true           # start only after plantrail approve
# effects_require_approval = true    # record a side effect only after plantrail approve
# on_failure = "first"               # the step that repairs this one when it fails (itself: retry)
# max_cost_usd = 2.5                 # what this step may spend
# outputs = [{ name = "report" }]    # what it produces (complete ... --artifact report=sha256:...)
# notes = ["anything worth keeping about this step"]

[[steps]]
id = "second"
title = "The second thing to do"
depends_on = ["first"]
completion_evidence = "What shows the second step is done"
covers = ["done"]

# The run's policy: how many steps may run at once, and the run's budgets.
# [policy]
# max_in_progress = 1
# max_turns = 20
# max_cost_usd = 10.0
# deadline = "2030-01-01T00:00:00Z"
# allowed_partial = true
"""
